// infeasible.h — why no schedule fits the memory limit, in terms of the inputs.
//
// The exact condition (docs/synth.md derives it): a device d can run some schedule iff
//   model states of its stages + one microbatch of activation of each of its stages <= limit,
// because F(s,0) of every stage s on d precedes the F of d's last stage, whose I comes after, so
// one microbatch of each is live at once; and the serial schedule (one microbatch at a time, W
// right after I) reaches exactly that peak. With recomputing stages the activation term is the
// largest, over d's stages s in chain order, of what F keeps of every stage of d up to s plus what
// R(s,0) allocates: when R(s,0) runs, no I(t,0) of an earlier stage t of d has run (it needs
// I(s,0)); the serial schedule reaches that too. Without recomputation it is the sum above.
// explain_infeasibility encodes each failing device's sum as tracked Z3 assertions, one per input
// contribution ("states_s6", "act_s7", "limit_d3"), takes a minimal unsat core and words it:
//   "device 3 needs at least 41.2 GB but the limit is 40.0 GB: model states of stages 6–7 are
//    38.0 GB and one microbatch of activation of stages 6–7 is 3.2 GB"
// plus the layers of those stages and where the limit comes from.
#pragma once

#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

struct DeviceNeed {
  int device = 0;
  double need_mb = 0;        // model states + one microbatch of activation of each stage
  double states_mb = 0;
  double activation_mb = 0;  // the activation term (see above)
  std::vector<int> stages;
  std::vector<double> act_of;  // per entry of `stages`: its share of activation_mb (0: none)
};

// Per-device minimum peak (MB), for every device.
std::vector<DeviceNeed> device_memory_needs(const Problem& problem);

// Empty when the limit is met on every device (or there is no limit). `spec` (optional) adds layer
// names and file locations.
std::string explain_infeasibility(const Problem& problem, const Spec* spec = nullptr);

// The same as a kInfeasible Status (ok when feasible).
Status check_memory_feasible(const Problem& problem, const Spec* spec = nullptr);

}  // namespace ps
