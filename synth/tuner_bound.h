// tuner_bound.h — a lower bound that sees layer granularity, for the tuner's gap figures.
//
// Every device runs M microbatches of the layers placed on it, so the makespan of any partition,
// placement and order is at least M × (the largest per-device load), and the largest load is at
// least the optimum of packing the layers' F+I+W costs c_l onto P devices (P||Cmax), whatever the
// contiguity. With the costs sorted in decreasing order c_(1) ≥ c_(2) ≥ …, among the k·P+1 largest
// layers some device holds k+1 of them (pigeonhole), so it carries at least the k+1 smallest of
// those: c_(kP−k+1) + … + c_(kP+1). The bound is M × the maximum of that over k ≥ 0 (k = 0 is the
// heaviest layer). It complements synth/global_bound.h, whose total-work term assumes work can be
// split evenly: for a 32-layer model on 8 devices with a head, that term is 12 % below what any
// plan can reach, this one is exact.
#pragma once

#include "ir/model.h"

namespace ps {

// Milliseconds; 0 when devices or microbatches < 1.
double layer_packing_bound_ms(const Model& model, int devices, int microbatches);

}  // namespace ps
