#include <gtest/gtest.h>

#include "core/check.h"

TEST(Check, ThrowsWithValues) {
  int n = 3;
  try {
    DS_CHECK(n == 4, "n is {}", n);
    FAIL() << "no throw";
  } catch (const ds::Error& e) {
    EXPECT_NE(std::string(e.what()).find("n is 3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("n == 4"), std::string::npos);
    EXPECT_NE(e.where().find("test_check.cpp"), std::string::npos);
  }
}

TEST(Check, PassesSilently) {
  EXPECT_NO_THROW(DS_CHECK(1 + 1 == 2, "math"));
}
