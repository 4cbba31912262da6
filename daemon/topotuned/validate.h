// Validation of every topotune.v1 request against the limits of
// proto/limits.h and the rules the .proto comments state. topotuned calls
// Validate before it touches a request; a failure becomes INVALID_ARGUMENT
// with the message of the first rule broken (in field order), which names
// the field (with its index for repeated fields: "rank_hosts[3]", and its
// path for nested ones: "stats[5].algorithm"), the offending value or size,
// and the limit by its limits.h name and value, or the rule, e.g.
//   "rank_hosts: 70000 entries, more than kMaxRanks (65536)"
//   "host.macs[2]: \"00:11\" is not a MAC address (six hex pairs joined by
//    ':', as in \"00:1b:21:bb:e6:f0\")"
// A quoted value is cut to 64 bytes (then "...") and has '"', '\\', control
// bytes and every non-ASCII byte escaped as \xNN, so that a message is one
// line of printable ASCII whatever the client sent.
//
// Only what can be checked from the message alone is checked here (sizes,
// ranges, formats, duplicates, enum values, consistency between fields of
// one message). Whether a host is in the topology or a task id exists is the
// handler's business. Rules beyond the limits the .proto comments list, each
// read from a field's own comment:
//  - enums: a number the enum does not define is rejected everywhere (proto3
//    enums are open); UNSPECIFIED where the comment requires a value;
//  - host names (HostFacts.hostname, rank_hosts, FetchBenchTask.hostname when
//    set): ASCII letters, digits, '-', '_' and '.' (see ValidateHostname);
//  - HostFacts.mpi_mac: empty, or a MAC that is one of HostFacts.macs;
//  - AlltoallvPattern: UNSPECIFIED unless the collective is alltoallv;
//  - HeartbeatRequest.task_id: set exactly when state is BENCHMARKING;
//  - BenchSample: ranks_per_node 1 to nprocs, msize 1 to kMaxMsizeBytes,
//    iterations >= 1, min_s <= median_s <= p95_s <= max_s, times_s empty or
//    one per iteration, fallbacks <= iterations, bytes_per_s unset when
//    median_s is 0, fraction_of_bound only with bound_s; counts not negative;
//  - BenchTask: nprocs equal to the size of rank_hosts, iterations 0 only
//    with a time_budget; BenchTask and ReportJobRequest: ranks_per_node 1 to
//    nprocs; CollectiveCallStats: fallbacks <= calls;
//  - Durations, when set, valid and more than zero (unset means "none"; a
//    zero would read as "no budget" or kill a task at launch); Timestamps
//    valid, and ReportJob's finished_at not before started_at;
//  - counts, sizes, versions and ids of the numeric kind never negative;
//    filters (ListDecisions, ExportRules) 0 to kMaxRanks.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "topotune/v1/admin.pb.h"
#include "topotune/v1/agents.pb.h"
#include "topotune/v1/plans.pb.h"
#include "tuner/status.h"

namespace topotune::daemon {

// Agents.
Status Validate(const v1::RegisterRequest& req);
Status Validate(const v1::HeartbeatRequest& req);
Status Validate(const v1::FetchBenchTaskRequest& req);
// One message of the stream, on its own (the handler checks that every
// message names the same task, and counts messages against
// kMaxSamplesPerStream).
Status Validate(const v1::ReportSamplesRequest& req);
// A task as the server is about to hand it out (a self-check of the
// orchestrator; also what the agent checks on receipt).
Status Validate(const v1::BenchTask& task);

// Plans.
Status Validate(const v1::GetPlanRequest& req);

// Admin.
Status Validate(const v1::GetTopologyRequest& req);
Status Validate(const v1::DiscoverRequest& req);
Status Validate(const v1::StartTuningRequest& req);
Status Validate(const v1::TuningStatusRequest& req);
Status Validate(const v1::ListDecisionsRequest& req);
Status Validate(const v1::ExportRulesRequest& req);
Status Validate(const v1::ReportJobRequest& req);
// No fields: always valid (the response's lists are cut by the handler).
Status Validate(const v1::ListDemandRequest& req);
Status Validate(const v1::ListAgentsRequest& req);

// A value from a request as error messages show it: in double quotes, cut
// to 64 bytes (then "..."), with '"', '\\', control bytes and every byte
// outside ASCII escaped (\xNN), so that a message stays one printable line
// whatever the client sent. Handlers quote ids the same way.
std::string Quote(std::string_view s);

// A host name as HostFacts.hostname and placements use it: 1 to
// kMaxHostnameBytes bytes of ASCII letters, digits, '-', '_' and '.' (no
// spaces, control bytes or UTF-8: names must match the launcher's and the
// topology file's byte for byte). `field` names it in the message.
Status ValidateHostname(std::string_view field, std::string_view name);

}  // namespace topotune::daemon
