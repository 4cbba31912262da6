#include "tuner/hash.h"

#include <gtest/gtest.h>

namespace topotune {
namespace {

TEST(Fnv1a64Test, KnownVectors) {
  // From the FNV reference test suite (Fowler, Noll, Vo).
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(Fnv1a64Hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(Fnv1a64Hex(""), "cbf29ce484222325");
  static_assert(Fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
}

TEST(Fnv1a64Test, GoesOnFromAPreviousHash) {
  EXPECT_EQ(Fnv1a64("bar", Fnv1a64("foo")), Fnv1a64("foobar"));
  EXPECT_EQ(Fnv1a64("", Fnv1a64("foo")), Fnv1a64("foo"));
  static_assert(Fnv1a64("obar", Fnv1a64("fo")) == 0x85944171f73967e8ULL);
}

TEST(Fnv1a32Test, KnownVectors) {
  EXPECT_EQ(Fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968u);
  static_assert(Fnv1a32("a") == 0xe40c292cu);
}

}  // namespace
}  // namespace topotune
