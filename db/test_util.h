// Helpers for the db tests: a temporary directory under /tmp removed with
// everything in it at the end of the scope, a fake clock, and unwrapping of
// StatusOr values that a test cannot go on without.
//
// Thread-safety: FakeClock may be read and advanced from many threads; the
// rest is for one thread.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>

#include "db/store.h"
#include "tuner/status.h"

namespace topotune::db::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/topotune-db-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A clock that moves only when told: times are `ms` milliseconds after the epoch.
struct FakeClock {
  std::atomic<int64_t> ms{1'700'000'000'000};
  TimePoint Now() const { return TimePoint(std::chrono::milliseconds(ms.load())); }
  void Advance(int64_t by_ms = 1) { ms += by_ms; }
  std::function<TimePoint()> Fn() {
    return [this] { return Now(); };
  }
};

// The value of `s`; fails the test and aborts when it is an error (the tests
// below cannot go on without it).
template <typename T>
T Must(StatusOr<T> s) {
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    std::fprintf(stderr, "fatal: %s\n", s.status().ToString().c_str());
    std::abort();
  }
  return std::move(s).value();
}

}  // namespace topotune::db::testing
