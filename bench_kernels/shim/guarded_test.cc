// Guarded, the library's exception barrier: the body's result, or the
// fallback's when anything escapes the body; never an exception out.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

#include "bench_kernels/shim/runtime.h"

namespace topotune::shim {
namespace {

TEST(Guarded, ReturnsTheBodysResultAndLeavesTheFallbackAlone) {
  bool fell = false;
  EXPECT_EQ(Guarded(
                nullptr, "MPI_Test",
                [&] {
                  fell = true;
                  return -1;
                },
                [] { return 7; }),
            7);
  EXPECT_FALSE(fell);
}

TEST(Guarded, AnyExceptionGivesTheFallbacksResult) {
  EXPECT_EQ(Guarded(
                nullptr, "MPI_Test", [] { return 1; }, []() -> int { throw std::bad_alloc(); }),
            1);
  EXPECT_EQ(Guarded(
                nullptr, "MPI_Test", [] { return 2; }, []() -> int { throw std::out_of_range("index 9"); }),
            2);
  EXPECT_EQ(Guarded(
                nullptr, "MPI_Test", [] { return 3; }, []() -> int { throw 42; }),
            3);
}

TEST(Guarded, VoidBodiesToo) {
  int ran = 0;
  Guarded(
      nullptr, "MPI_Test", [&] { ran += 10; }, [&] { ran += 1; });
  EXPECT_EQ(ran, 1);
  Guarded(
      nullptr, "MPI_Test", [&] { ran += 10; }, [] { throw std::runtime_error("bookkeeping"); });
  EXPECT_EQ(ran, 11);
}

TEST(Guarded, IsNoexcept) {
  static_assert(noexcept(Guarded(
      nullptr, "MPI_Test", [] { return 0; }, [] { return 0; })));
  // The fallback runs after the handler: what it returns is used as is.
  auto kept = Guarded(
      nullptr, "MPI_Test", [] { return std::string("fallback"); }, []() -> std::string { throw std::bad_alloc(); });
  EXPECT_EQ(kept, "fallback");
}

}  // namespace
}  // namespace topotune::shim
