// Running a helper program (lldpcli) with a time limit and capturing its
// output, without a shell. posix_spawn, not fork: the agent has gRPC threads,
// and only exec-like calls are safe in a forked child of a threaded process.
//
// Thread-safety: RunProcess and FindExecutable share no state and may run
// concurrently.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "tuner/status.h"

namespace topotune::agent {

struct ProcessResult {
  int exit_status = -1;  // The exit status; 128 + N when killed by signal N.
  std::string out;       // Everything written to stdout.
  std::string err;       // Everything written to stderr.
};

// Runs argv[0] (a path) with argv, stdin from /dev/null. Kills it with SIGKILL
// and fails with Internal("... did not finish within ...") after `timeout`.
// IoError when it cannot be started. At most `max_output` bytes of each stream
// are kept (the rest is read and dropped).
StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                   size_t max_output = 4 << 20);

// The path of executable `name` in $PATH or else in /usr/sbin, /sbin and
// /usr/local/sbin (where lldpcli lives, often outside a user's PATH); "" when
// none is executable.
std::string FindExecutable(const std::string& name);

}  // namespace topotune::agent
