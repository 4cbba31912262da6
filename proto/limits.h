// The size limits of the topotune.v1 gRPC API, shared by the server (which
// enforces them: a request that breaks one fails with INVALID_ARGUMENT naming
// the field, the value and the limit), its clients and the tests. The .proto
// comments of every request message name the constants that apply.
//
// They bound what one request may make the server allocate or store, and
// they are far above what real clusters need: the largest placement is
// kMaxRanks ranks, the same bound as a host's slots in topology files
// (tuner/topology.h kMaxSlots). A whole request is further bounded by the
// server's max_message_size (topotuned.yaml, default 4 MiB).
//
// Thread-safety: constants only.
#pragma once

#include <cstdint>

namespace topotune::v1::limits {

// --- Identifiers and names ------------------------------------------------

// Job, task, plan, tuning and agent ids, page tokens.
inline constexpr int64_t kMaxIdBytes = 128;
// A host name: a DNS name (RFC 1035). Also a discovery seed.
inline constexpr int64_t kMaxHostnameBytes = 253;
// An algorithm name (registry names are far shorter).
inline constexpr int64_t kMaxAlgorithmNameBytes = 64;
// A sample's label (BenchTask.native_label, BenchSample.label).
inline constexpr int64_t kMaxLabelBytes = 128;
// An agent's version string.
inline constexpr int64_t kMaxVersionBytes = 64;

// --- Agents ---------------------------------------------------------------

// MAC addresses per host.
inline constexpr int kMaxMacs = 64;
// Each string of an LLDP neighbour: IEEE 802.1AB's maximum for the chassis
// id, port id, port description and system name TLVs. Also bounds
// HostFacts.mpi_interface, an interface name like local_interface.
inline constexpr int64_t kMaxLldpStringBytes = 255;
// CPU cores of one host (HostFacts.cores).
inline constexpr int kMaxCores = 65536;
// Samples in one ReportSamples stream.
inline constexpr int64_t kMaxSamplesPerStream = int64_t{1} << 20;
// Per-call times in one sample (BenchSample.times_s).
inline constexpr int kMaxTimesPerSample = 100000;
// BenchSample.dropped: why an algorithm left a size.
inline constexpr int64_t kMaxDroppedBytes = 512;
// BenchTask.matrices and BenchSample.matrices: size matrices per class.
inline constexpr int kMaxMatrices = 16;

// --- Placements, collectives, sweeps --------------------------------------

// Ranks in one placement (GetPlanRequest.rank_hosts, BenchTask.rank_hosts,
// ReportJobRequest.nprocs, node count x ranks per node in StartTuning).
inline constexpr int kMaxRanks = 65536;
// Collectives named in one request.
inline constexpr int kMaxCollectives = 64;
// Algorithms named in one task.
inline constexpr int kMaxAlgorithms = 64;
// Message sizes in one task or tuning sweep.
inline constexpr int kMaxMsizes = 256;
// One message size, bytes per block (MPI counts are int; 1 GiB keeps
// bytes per block x ranks reasonable for a benchmark).
inline constexpr int64_t kMaxMsizeBytes = int64_t{1} << 30;
// Timed iterations per (algorithm, size).
inline constexpr int kMaxIterations = 1000000;
// Node counts, and ranks-per-node values, in one StartTuning request.
inline constexpr int kMaxLayoutValues = 64;
// Discovery seeds in one Discover request.
inline constexpr int kMaxSeeds = 256;
// (collective, algorithm, size) entries in one ReportJob request.
inline constexpr int kMaxJobStats = 4096;
// Decisions per ListDecisions page, and the default when page_size is 0.
inline constexpr int kMaxPageSize = 1000;
inline constexpr int kDefaultPageSize = 100;
// Agents, and hosts without an agent, listed in one ListAgents response
// (each list; the counts beside them are complete).
inline constexpr int kMaxListedAgents = 4096;

// --- Topologies -----------------------------------------------------------

// A topology YAML file (BenchTask.topology_yaml, GetTopologyResponse.yaml).
inline constexpr int64_t kMaxTopologyYamlBytes = int64_t{1} << 20;

// --- Rules export ---------------------------------------------------------

// MPICH's selection JSON sent to start an export from
// (ExportRulesRequest.mpich_base). MPICH 4.0.2's MPIR tree is 14.5 KB.
inline constexpr int64_t kMaxMpichBaseBytes = int64_t{1} << 20;

// --- Plans (responses) ----------------------------------------------------

// Steps over all compiled programs of one plan. A step costs 9 to 12 bytes
// on the wire (uncompressed), so this keeps a plan under 48 MiB; above it
// the server leaves the programs out (CompiledSchedule.omitted_reason). An
// alltoall tree_scheduled plan of N ranks has 1.2 to 1.9 x N(N-1) steps
// (two-level trees of 8 to 1024 ranks), so programs are sent up to about
// 1500 to 1800 ranks.
inline constexpr int64_t kMaxPlanSteps = int64_t{1} << 22;
// The largest GetPlan response; clients (libtopotune-mpi.so) must raise
// gRPC's 4 MiB receive limit to this.
inline constexpr int kMaxPlanResponseBytes = 64 << 20;

}  // namespace topotune::v1::limits
