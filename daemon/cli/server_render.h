// Text renderings of topotuned's answers for the `topotune` commands that talk
// to the daemon (server_cmd.h): decision tables, plans, topology and
// discovery summaries, tuning status and its one-line progress bar, and the
// JSON form of any response. Pure functions of their arguments, so that the
// tests build a response in code and compare text; no network here.
//
// Sizes are written with tuner/topology.h FormatBytes ("64KiB"), times with
// cli.h FormatSeconds, instants as RFC 3339 UTC ("2026-11-21T10:34:18Z").
//
// Thread-safety: pure functions; they may run concurrently.
#pragma once

#include <google/protobuf/message.h>
#include <google/protobuf/timestamp.pb.h>

#include <cstddef>
#include <string>

#include "topotune/v1/admin.pb.h"
#include "topotune/v1/plans.pb.h"

namespace topotune::cli {

// The message in protobuf's JSON mapping, on one line, ending in '\n': field
// names as in the .proto (snake_case), enums by name, fields at their zero
// value included, 64-bit integers as strings (the mapping's rule).
std::string ToJson(const google::protobuf::Message& message);

// "2026-11-21T10:34:18Z"; "-" when unset (zero).
std::string FormatTimestamp(const google::protobuf::Timestamp& t);

// "queued", "running", "succeeded", "failed", "cancelled", "unspecified".
std::string TuningStateName(v1::TuningState state);

// A decision table as rows "  0B - 4KiB  native", the last range "and up".
// Every line is indented by `indent` spaces.
std::string FormatDecisionTable(const v1::DecisionTable& table, int indent);

// Every decision of a (merged) ListDecisions answer: a heading line naming
// the collective, the layout, the topology version, the samples and the
// update time; the table's ranges; and per measured size the algorithm
// chosen and the fastest with their medians, the regret and whether the
// choice is significant. Decisions are separated by a blank line; none gives
// "no decisions\n".
std::string FormatDecisions(const v1::ListDecisionsResponse& response);

// A plan: a heading (plan id, ranks, ranks per node, topology version), then
// per collective its source and the layout the table was measured on, the
// table, each compiled schedule (algorithm, ranks, phases, bottleneck load,
// syncs, total steps over all programs, or why the programs were left out)
// and the ring order's size.
std::string FormatPlan(const v1::GetPlanResponse& response);

// A ListDemand answer: a heading with the window's totals (jobs, time in
// collectives, the share on tuned tables, the time at stake), then one row
// per cell by time spent: collective, layout, size bucket, class, calls,
// jobs, time, the share of each decision source the jobs ran, the most
// hosts and switches a communicator spanned, how the cell is served now and
// its time at stake. No cells gives a line saying so.
std::string FormatDemand(const v1::ListDemandResponse& response);

// The line above the drawing of a served topology:
// "topology version 7 from discovery (198.18.0.1), 2026-11-21T10:34:18Z: 4 switches, 6 hosts, 9 links".
std::string FormatTopologyHeader(const v1::GetTopologyResponse& response);

// The summary of a remote discovery, one fact per line (version, changed,
// switches walked, hosts found, warnings count, time). The warnings
// themselves are not included (the command prints them on stderr).
std::string FormatDiscoverResult(const v1::DiscoverResponse& response);

// The status of a sweep, one field per line (state, runs, samples, message
// and the three instants).
std::string FormatTuningStatus(const v1::TuningStatusResponse& status);

// One progress line, at most `max_width` bytes (the message is shortened
// with "..." to fit; at least the state and the counts are kept):
//   "running   [#######.................]  5/17 runs  1234 samples  alltoall 8x2 tree_scheduled 64KiB"
std::string ProgressLine(const v1::TuningStatusResponse& status, size_t max_width = 100);

}  // namespace topotune::cli
