// The `topotune-bench` command line: flags (CLI11) to BenchOptions, the help
// text, the JSON Lines writer and the progress bar. main.cc only calls Main.
//
// Flags are parsed before MPI_Init, so --help and usage errors need no MPI
// runtime; under a launcher only the first rank prints them (the rank is read
// from OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID).
//
// Thread-safety: ParseCommandLine shares no state; Main initialises and
// finalises MPI and so runs once per process.
#pragma once

#include <iosfwd>
#include <string>

#include "bench_kernels/driver/bench.h"

namespace topotune::bench {

enum class ProgressMode { kAuto, kAlways, kNever };

struct CommandLine {
  BenchOptions options;
  std::string out_path;    // Empty: stdout.
  std::string trace_path;  // --phase-trace; empty: none.
  ProgressMode progress = ProgressMode::kAuto;
  bool with_times = false;  // --times: add every iteration's time to each line.
};

// Parses argv into *cl. Returns -1 when the benchmark should run, else the
// exit status (kExitOk after --help or --version, kExitUsage on a usage error,
// with the message on `err`). Needs no MPI.
int ParseCommandLine(int argc, const char* const* argv, CommandLine* cl, std::ostream& out, std::ostream& err);

// The whole program: parse, MPI_Init, run on MPI_COMM_WORLD, MPI_Finalize.
int Main(int argc, char** argv);

}  // namespace topotune::bench
