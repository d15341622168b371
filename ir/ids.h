// ids.h — strong ids for the objects numbered across folder lines: StageId, DeviceId, MicrobatchId,
// LayerId (house habit 6). An id is made from an int explicitly (`DeviceId{3}`), read back with
// `.value()`, compared and hashed only with ids of its own kind, and formatted by fmt as its number
// (`fmt::format("device {}", d)` prints "device 3"); passing a stage where a device is meant does not
// compile. Ids are as cheap as the int they hold.
//
// Where they are used — the boundaries typed, and what is deliberately left int:
//   * ir/schedule.h's Action: `stage` is a StageId, `mb` a MicrobatchId — the widest boundary, read by
//     ir/, verify/, report/, export/, runtime/, kernels/, run/, synth/, cli/ and bench/. The cost queries
//     that take an action's stage take the id too: compute_ms and data_parallel_ms (ir/schedule.h),
//     Problem's device_of, model_state_mb, held_state_mb, boundary_transfer_ms and least_backward_ms
//     (ir/problem.h); so do ir/partition.h's layer queries (layer_time_ms, layer_time_floor_ms,
//     layer_memory_mb: a LayerId).
//   * ir/comm_insert.h's BlockedOp (device, waits_for_device) and runtime/executor.h's waits_for():
//     the wait-for witness that the comm insertion (ir/), the executor's watchdog (runtime/), the
//     checker's deadlock report (verify/) and run_schedule (run/) pass between them.
//   * verify/report_types.h's Violation::device: what the checker (verify/) hands the reports
//     (report/: text, JSON) and the bindings (python/src: Violation.device).
//   * Left int: the numbers inside one library's own tables, keyed and indexed by position — StageSpec
//     (its index is the stage, its `device` an int, so device_of returns an int), the op DAG's DagOp and
//     the checker's OpTable slots (OpTable::find also takes the ids), the PyTorch lowering's keys, the
//     layer ranges of a Partition, Model::type_of. Code there unwraps an id once with `.value()` where an
//     Action enters it, and builds the id (`StageId{s}`) where an Action or a query leaves it; a loop
//     over stages keeps an int counter. The bindings (python/src) hand schedules to Python as action
//     strings ("3F1"), so no id reaches Python.
// at(v, id) indexes a vector by an id where the vector is numbered by that kind of id.
#pragma once

#include <fmt/format.h>

#include <compare>
#include <cstddef>
#include <functional>

namespace ps {

template <class Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(int v) : v_(v) {}
  constexpr int value() const { return v_; }
  friend constexpr bool operator==(Id a, Id b) = default;
  friend constexpr auto operator<=>(Id a, Id b) = default;

 private:
  int v_ = 0;
};

struct StageTag {};
struct DeviceTag {};
struct MicrobatchTag {};
struct LayerTag {};

using StageId = Id<StageTag>;            // a stage of a plan: 0 .. S-1
using DeviceId = Id<DeviceTag>;          // a device (pipeline rank): 0 .. P-1
using MicrobatchId = Id<MicrobatchTag>;  // a microbatch: 0 .. M-1
using LayerId = Id<LayerTag>;            // a layer of the model: 0 .. L-1

// The element of a vector indexed by one kind of id: at(stage_device, a.stage) is stage_device[s].
// Unchecked, as operator[] is.
template <class Vec, class Tag>
constexpr decltype(auto) at(Vec& v, Id<Tag> id) {
  return v[static_cast<size_t>(id.value())];
}

}  // namespace ps

template <class Tag>
struct std::hash<ps::Id<Tag>> {
  size_t operator()(ps::Id<Tag> id) const noexcept { return std::hash<int>()(id.value()); }
};

template <class Tag>
struct fmt::formatter<ps::Id<Tag>> : fmt::formatter<int> {
  auto format(ps::Id<Tag> id, fmt::format_context& ctx) const { return fmt::formatter<int>::format(id.value(), ctx); }
};
