#include "base/hash.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

// The published FNV-1a 64 test vectors; a hash continued over two parts equals the whole.
TEST(HashTest, Fnv1aMatchesTheReferenceValues) {
  EXPECT_EQ(Fnv1aString(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1aString("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1aString("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(Fnv1aString("bar", Fnv1aString("foo")), Fnv1aString("foobar"));
}

}  // namespace
}  // namespace kite
