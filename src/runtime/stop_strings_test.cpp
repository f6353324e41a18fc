#include "runtime/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kite {
namespace {

TEST(StopStringFilterTest, WithoutStopStringsEverythingPassesAtOnce) {
  StopStringFilter filter({});
  EXPECT_EQ(filter.Push("Hello"), "Hello");
  EXPECT_EQ(filter.Push(" world"), " world");
  EXPECT_EQ(filter.Flush(), "");
  EXPECT_FALSE(filter.stopped());
}

TEST(StopStringFilterTest, HoldsBackAPossibleStartAndReleasesIt) {
  const std::vector<std::string> stops = {"<|end|>"};
  StopStringFilter filter(stops);
  EXPECT_EQ(filter.Push("a <|"), "a ");  // "<|" may begin "<|end|>"
  EXPECT_EQ(filter.Push("x"), "<|x");    // it did not
  EXPECT_EQ(filter.Push("<|en"), "");
  EXPECT_EQ(filter.Flush(), "<|en");  // generation ended without the stop string
  EXPECT_FALSE(filter.stopped());
}

TEST(StopStringFilterTest, StopsBeforeAStopStringSplitAcrossPieces) {
  const std::vector<std::string> stops = {"\n\n", "User:"};
  StopStringFilter filter(stops);
  EXPECT_EQ(filter.Push("Yes.\n"), "Yes.");
  EXPECT_EQ(filter.Push("\nmore"), "");
  EXPECT_TRUE(filter.stopped());
  EXPECT_EQ(filter.Push("ignored"), "");
  EXPECT_EQ(filter.Flush(), "");
}

TEST(StopStringFilterTest, TheEarliestStopStringWins) {
  const std::vector<std::string> stops = {"cd", "bc"};
  StopStringFilter filter(stops);
  EXPECT_EQ(filter.Push("abcd"), "a");
  EXPECT_TRUE(filter.stopped());
}

TEST(StopStringFilterTest, EmptyStopStringsAreIgnored) {
  const std::vector<std::string> stops = {"", "zz"};
  StopStringFilter filter(stops);
  EXPECT_EQ(filter.Push("abc"), "abc");
  EXPECT_EQ(filter.Push("z"), "");
  EXPECT_EQ(filter.Push("z"), "");
  EXPECT_TRUE(filter.stopped());
}

}  // namespace
}  // namespace kite
