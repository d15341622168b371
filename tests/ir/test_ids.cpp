// Strong ids (ir/ids.h): explicit from int, `.value()`, ordered and hashed within their kind, printed
// by fmt as their number, and not interchangeable with each other or with int.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <type_traits>
#include <unordered_set>

#include "ir/comm_insert.h"
#include "ir/ids.h"
#include "ir/partition.h"
#include "ir/schedule.h"

using namespace ps;

static_assert(!std::is_convertible_v<int, StageId>, "an id is made from an int explicitly");
static_assert(!std::is_convertible_v<StageId, int>, "an id is read with .value()");
static_assert(!std::is_convertible_v<StageId, DeviceId>, "a stage is not a device");
static_assert(!std::is_constructible_v<DeviceId, MicrobatchId>, "a microbatch is not a device");
static_assert(!std::is_constructible_v<LayerId, StageId>, "a stage is not a layer");
static_assert(std::is_constructible_v<DeviceId, int>);
static_assert(sizeof(DeviceId) == sizeof(int) && std::is_trivially_copyable_v<DeviceId>);
static_assert(DeviceId{3}.value() == 3 && DeviceId{} == DeviceId{0});
// The typed boundary: the wait-for witness names devices, not ints.
static_assert(std::is_same_v<decltype(BlockedOp::device), DeviceId>);
static_assert(std::is_same_v<decltype(BlockedOp::waits_for_device), std::optional<DeviceId>>);
// An action names its stage and microbatch by id, and the per-stage and per-layer queries take only
// the id of their own kind: an int, a microbatch or a layer where a stage is meant does not compile.
static_assert(std::is_same_v<decltype(Action::stage), StageId>);
static_assert(std::is_same_v<decltype(Action::mb), MicrobatchId>);
template <class I> constexpr bool device_of_takes = requires(const Problem& p, I i) { p.device_of(i); };
template <class I> constexpr bool model_state_takes = requires(const Problem& p, I i) { p.model_state_mb(i); };
template <class I> constexpr bool held_state_takes = requires(const Problem& p, I i) { p.held_state_mb(i); };
template <class I> constexpr bool transfer_takes = requires(const Problem& p, I i) { p.boundary_transfer_ms(i); };
template <class I> constexpr bool least_bwd_takes = requires(const Problem& p, I i) { p.least_backward_ms(i); };
template <class I> constexpr bool compute_ms_takes = requires(const Problem& p, I i) { compute_ms(p, i, OpType::F); };
template <class I>
constexpr bool dp_ms_takes = requires(const Problem& p, I i) { data_parallel_ms(p, i, OpType::REDUCE_GRAD); };
template <class I> constexpr bool layer_time_takes = requires(const Model& m, I i) { layer_time_ms(m, i); };
template <class I> constexpr bool layer_floor_takes = requires(const Model& m, I i) { layer_time_floor_ms(m, i); };
template <class I> constexpr bool layer_memory_takes = requires(const Spec& s, I i) { layer_memory_mb(s, i); };
static_assert(device_of_takes<StageId> && !device_of_takes<int> && !device_of_takes<DeviceId>);
static_assert(model_state_takes<StageId> && !model_state_takes<int> && !model_state_takes<LayerId>);
static_assert(held_state_takes<StageId> && !held_state_takes<int> && !held_state_takes<MicrobatchId>);
static_assert(transfer_takes<StageId> && !transfer_takes<int> && !transfer_takes<DeviceId>);
static_assert(least_bwd_takes<StageId> && !least_bwd_takes<int> && !least_bwd_takes<MicrobatchId>);
static_assert(compute_ms_takes<StageId> && !compute_ms_takes<int> && !compute_ms_takes<MicrobatchId>);
static_assert(dp_ms_takes<StageId> && !dp_ms_takes<int> && !dp_ms_takes<DeviceId>);
static_assert(layer_time_takes<LayerId> && !layer_time_takes<int> && !layer_time_takes<StageId>);
static_assert(layer_floor_takes<LayerId> && !layer_floor_takes<int> && !layer_floor_takes<StageId>);
static_assert(layer_memory_takes<LayerId> && !layer_memory_takes<int> && !layer_memory_takes<StageId>);

TEST_CASE("ids: compare, order, hash and format as their number") {
  const StageId a{2}, b{5};
  CHECK(a == StageId{2});
  CHECK(a != b);
  CHECK(a < b);
  CHECK(b >= a);
  std::map<MicrobatchId, double> loss{{MicrobatchId{3}, 0.5}, {MicrobatchId{1}, 0.25}};
  CHECK(loss.begin()->first == MicrobatchId{1});
  std::unordered_set<LayerId> layers{LayerId{7}, LayerId{7}, LayerId{8}};
  CHECK(layers.size() == 2);
  CHECK(layers.count(LayerId{8}) == 1);
  CHECK(fmt::format("device {} stage {:>3}", DeviceId{4}, a) == "device 4 stage   2");
  BlockedOp op;
  CHECK(!op.waits_for_device);
  op.waits_for_device = DeviceId{1};
  CHECK(op.waits_for_device == DeviceId{1});
}

TEST_CASE("ids: at() indexes a vector numbered by one kind of id") {
  std::vector<int> stage_device{0, 1, 1, 0};
  CHECK(at(stage_device, StageId{2}) == 1);
  at(stage_device, StageId{3}) = 7;
  CHECK(stage_device[3] == 7);
  const std::vector<double> loss{0.5, 0.25};
  CHECK(at(loss, MicrobatchId{1}) == 0.25);
}

TEST_CASE("ids: an action read from text carries its stage and microbatch as ids") {
  Result<Action> a = parse_action("12SEND_B3");
  REQUIRE(a.ok());
  CHECK(a->stage == StageId{12});
  CHECK(a->mb == MicrobatchId{3});
  CHECK(partner_action(*a).stage == StageId{11});
  CHECK(to_string(partner_action(*a)) == "11RECV_B3");
}
