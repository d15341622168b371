#include "runtime/host_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/memory_rule.h"

namespace ps::rt {

namespace {

uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t sat_mul(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

std::string gb(uint64_t bytes) { return fmt::format("{:.1f} GB", static_cast<double>(bytes) / 1e9); }

// `whole` times `share`, the sequential reference kept whole or left out.
MemoryEstimate scaled(const MemoryEstimate& whole, double share, bool keep_reference) {
  auto part = [&](uint64_t b) { return static_cast<uint64_t>(static_cast<double>(b) * share); };
  MemoryEstimate e;
  e.params_bytes = part(whole.params_bytes);
  e.activations_bytes = part(whole.activations_bytes);
  e.buffers_bytes = part(whole.buffers_bytes);
  e.reference_bytes = keep_reference ? whole.reference_bytes : 0;
  return e;
}

}  // namespace

std::string MemoryEstimate::describe() const {
  std::string out = fmt::format("{} (parameters and gradients {}, activations {}, buffers {}", gb(total()),
                                gb(params_bytes), gb(activations_bytes), gb(buffers_bytes));
  if (reference_bytes > 0) out += fmt::format(", sequential reference {}", gb(reference_bytes));
  return out + ")";
}

MemoryEstimate estimate_run_memory(const Schedule& schedule, const ExecModel& model, bool reference) {
  MemoryEstimate e;
  const int S = model.num_stages();
  uint64_t params = 0, largest_stage = 0, one_mb_slots = 0, boundary = 0;
  std::vector<uint64_t> slot(S, 0);
  for (int s = 0; s < S; ++s) {
    const uint64_t p = sat_mul(model.stage_param_count(s), 4);
    params = sat_add(params, p);
    largest_stage = std::max(largest_stage, p);
    const StageBytes b = stage_slot_bytes(model, s);
    slot[s] = std::max(b.after_forward, b.after_input);
    one_mb_slots = sat_add(one_mb_slots, slot[s]);
    boundary = sat_add(boundary, sat_mul(model.boundary_count(s), 4));
  }
  e.params_bytes = sat_add(sat_mul(params, 3), largest_stage);
  for (const RuleMemory& r : memory_by_rule(schedule, model)) e.activations_bytes = sat_add(e.activations_bytes, r.peak_bytes);
  for (size_t d = 0; d < schedule.programs.size(); ++d) {
    uint64_t scratch = 0;
    for (const Action& a : schedule.programs[d])
      if (a.stage.value() >= 0 && a.stage.value() < S) scratch = std::max(scratch, at(slot, a.stage));
    e.activations_bytes = sat_add(e.activations_bytes, scratch);
  }
  const uint64_t ids = sat_mul(sat_mul(static_cast<uint64_t>(model.tokens), 8), static_cast<uint64_t>(model.microbatches));
  e.buffers_bytes = sat_add(sat_mul(boundary, 2), ids);
  if (reference) e.reference_bytes = sat_add(sat_mul(params, 2), one_mb_slots);
  return e;
}

MemoryEstimate this_machines_share(const MemoryEstimate& whole) {
  auto env_count = [](const char* name) -> long {
    const char* v = std::getenv(name);
    if (v == nullptr) return 0;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end != v && *end == '\0' && n > 0 ? n : 0;
  };
  const long local = env_count("OMPI_COMM_WORLD_LOCAL_SIZE"), world = env_count("OMPI_COMM_WORLD_SIZE");
  if (local == 0 || world == 0 || local >= world) return whole;
  return scaled(whole, static_cast<double>(local) / static_cast<double>(world), true);
}

MemoryEstimate one_gpus_share(const MemoryEstimate& whole, int devices) {
  return scaled(whole, 1.0 / std::max(1, devices), false);
}

Status check_fits_gpu(const MemoryEstimate& need, uint64_t gpu_free, const std::string& what) {
  if (need.total() <= gpu_free) return Status::ok();
  return Status::bad_input(fmt::format("{} needs about {} on each GPU, more than the {} free on the fullest GPU "
                                       "(cudaMemGetInfo)",
                                       what, need.describe(), gb(gpu_free)));
}

uint64_t HostMemory::available() const {
  const uint64_t meminfo = mem_available_bytes > 0 ? mem_available_bytes : UINT64_MAX;
  return std::min(meminfo, address_space_left);
}

HostMemory host_memory() {
  HostMemory h;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemAvailable:") {
      h.mem_available_bytes = kb * 1024;
      break;
    }
  }
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    uint64_t mapped = 0;
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    if (statm >> pages) mapped = pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    h.address_space_left = rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 0;
  }
  return h;
}

Status check_fits(const MemoryEstimate& need, const HostMemory& have, const std::string& what) {
  const uint64_t avail = have.available();
  if (need.total() <= avail) return Status::ok();
  std::string sources;
  if (have.mem_available_bytes > 0) sources = "MemAvailable " + gb(have.mem_available_bytes);
  if (have.address_space_left != UINT64_MAX)
    sources += fmt::format("{}ulimit -v leaves {}", sources.empty() ? "" : "; ", gb(have.address_space_left));
  return Status::bad_input(fmt::format("{} needs about {}, more than the {} available ({})", what,
                                       need.describe(), gb(avail), sources));
}

}  // namespace ps::rt
