// time_budget.h — how a synth run shares out its time limit (and the Z3 budget derived from it): one
// named table for synthesize_model (the plan search, then Z3), synthesize (the order) and the tuner.
#pragma once

namespace ps::time_budget {

// synthesize_model: the plan search's share of the whole limit, counted from the run's start (inputs
// read included); Z3 on the order gets the rest.
inline constexpr double kPlanSearch = 0.6;
// ... and the least the plan search gets of the whole limit however long reading the inputs took.
inline constexpr double kPlanSearchFloor = 0.1;

// synthesize: the one-resource Z3 relaxations' share of one context's Z3 budget (step 3c).
inline constexpr double kSmtBound = 0.2;
// synthesize: the no-queue model's share of Z3's time (its rlimit: three quarters, in integers).
inline constexpr double kNoQueue = 0.75;
// synthesize: the destructive bound's search share of the time limit and of the Z3 budget (step 3b).
inline constexpr double kDestructiveBound = 0.1;

// tuner: a search that converged early widens its beam while at most this share of its time is spent.
inline constexpr double kTunerWidenUntil = 0.8;
// tuner: polishing and Z3 refinement of the best candidates end by this share of its time limit.
inline constexpr double kTunerFinishBy = 0.9;

}  // namespace ps::time_budget
