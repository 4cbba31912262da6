// Helpers of the tests that drive the `topotune` command line in-process
// (cli::Run): one run's exit status and streams, an example topology's path,
// an environment variable set for a scope, and a temporary file.
//
// Thread-safety: RunCli shares no state; ScopedEnv changes the process's
// environment, so no other thread may read it meanwhile.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/cli/cli.h"

namespace topotune::cli::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

// `topotune ARGS...`.
inline Result RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "topotune");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Result r;
  r.code = Run(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// deploy/examples/NAME in the source tree.
inline std::string Example(const std::string& name) {
  return std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/" + name;
}

// Sets (or, with nullptr, unsets) an environment variable for the scope,
// restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A file in the test's temporary directory holding `text`, removed at the end.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) : path_(::testing::TempDir() + "/cli_test_" + name) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace topotune::cli::testing
