// DS_CHECK and fail(): one-line messages with the values, no internal condition text in what(), and
// the location of the code that threw (not check.h).
#include <gtest/gtest.h>

#include <string>

#include "core/check.h"

namespace {

void fail_here(int n) {
  ds::fail("value {} is out of range", n);  // the expected location: this line
}

}  // namespace

TEST(Check, ThrowsWithValuesAndKeepsTheConditionOutOfTheMessage) {
  int n = 3;
  try {
    DS_CHECK(n == 4, "n is {}", n);
    FAIL() << "no throw";
  } catch (const ds::Error& e) {
    EXPECT_EQ(std::string(e.what()), "n is 3");
    EXPECT_EQ(e.check(), "n == 4");
    EXPECT_NE(e.where().find("test_check.cpp"), std::string::npos) << e.where();
  }
}

TEST(Check, FailReportsItsCallerNotCheckH) {
  try {
    fail_here(7);
    FAIL() << "no throw";
  } catch (const ds::Error& e) {
    EXPECT_EQ(std::string(e.what()), "value 7 is out of range");
    EXPECT_EQ(e.check(), "");
    EXPECT_NE(e.where().find("test_check.cpp:12"), std::string::npos) << e.where();
  }
}
