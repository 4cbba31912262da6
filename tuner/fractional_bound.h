// A lower bound on the transfer time of every capacity-respecting
// host-combined all-to-all schedule (the model of capacity_model.h), from a
// linear program over whole phases: tighter than CapacityLowerBound's
// link-by-link count where several links and demands interact.
//
// The program (a fractional phase cover, in the spirit of the preemptive
// open shop's decomposition into matchings, Gonzalez-Sahni, and of
// Faraj-Yuan §4's phases): a column is a configuration, how many messages
// of each host pair one phase can hold so that on every directed link the
// demands add up to at most the link's speed; x_c >= 0 is the time the
// configuration runs. A pair p (W_p = r_H x r_G blocks at demand d_p) moves
// at most a_pc x d_p x x_c bytes in it, so every schedule satisfies
//   sum_c a_pc x_c >= T_p = W_p x msize / d_p        for every host pair p,
// and its phases last sum_c x_c or more (the phase lasts at least each of
// its messages' bytes / demand). min sum_c x_c is solved by column
// generation with GLPK's simplex; new columns are priced by a greedy pass
// on the duals and, when that finds none, by an exact integer program
// (GLPK's branch and cut) over all configurations. Any dual solution pi
// divided by the exact pricing optimum M >= 1 is feasible for the dual, so
// sum_p T_p pi_p / M bounds every schedule's transfer time from below
// (Farley's bound); at M <= 1 it is the program's optimum.
//
// Accepts: a RankTree with positive finite network link speeds, the
//   model's message size, and CoverOptions (a seed schedule, the most hosts
//   to try: the pricing program has one variable per host pair).
// Returns: the bound when an exact pricing was solved to optimality, with
//   proven = false otherwise (too many hosts, or every integer program ran
//   out of time): then transfer_s is 0 and claims nothing.
// Cost: up to 300 greedy pricing rounds (and rounds x host pairs <= 3e5),
//   each a warm-started simplex on |host pairs| rows, and up to 4 exact
//   pricings of at most 2 s each.
//   Seeded with capacity_scheduled's phases: 0.1 s for the sweep's tree 7
//   (30 hosts), 7 s for its tree 121 (44 hosts, one pricing at its limit).
//   Used by the tests' stated reasons (WhyBelowTarget), not by generators.
//
// Thread-safety: pure function. GLPK keeps its environment in thread-local
// storage (Debian's libglpk 5.0 has a TLS segment).
#pragma once

#include "tuner/capacity_model.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct CoverOptions {
  // A host-combined schedule for the tree (such as capacity_scheduled's):
  // the program starts from its capacity-respecting phases, and finds the
  // same bound in fewer rounds (0.1 s instead of 9 s for the sweep's tree 7).
  const Schedule* seed = nullptr;
  int max_hosts = 64;  // Beyond, nothing is tried (proven = false).
};

struct FractionalBound {
  bool proven = false;    // transfer_s bounds every schedule's transfer time.
  double transfer_s = 0;  // Sum of the phases' durations without alpha, at least.
  bool optimal = false;   // transfer_s is the program's optimum (M <= 1).
  int columns = 0;        // Configurations generated.
  int exact_pricings = 0;
};

// Errors: InvalidArgument for bad model parameters or a link without a
// positive finite speed.
StatusOr<FractionalBound> FractionalTransferBound(const RankTree& tree, const ModelOptions& options,
                                                  const CoverOptions& cover = {});

}  // namespace topotune
