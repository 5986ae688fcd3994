// JsonCursor: nested values, syntax errors naming file and line, integers reject fractions and overflow.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trace/json_cursor.h"

namespace ds {
namespace {

TEST(JsonCursor, ReadsNestedValues) {
  JsonCursor cur(R"( {"a": [1, -2, 3.5e1], "s": "x\"y\u00e9", "skip": {"k": [true, false, null]}} )", "t");
  cur.begin_object();
  bool first = true;
  std::string_view key;
  ASSERT_TRUE(cur.next_member(first, key));
  EXPECT_EQ(key, "a");
  cur.begin_array();
  bool f = true;
  ASSERT_TRUE(cur.next_element(f));
  EXPECT_EQ(cur.integer("a"), 1);
  ASSERT_TRUE(cur.next_element(f));
  EXPECT_EQ(cur.integer("a"), -2);
  ASSERT_TRUE(cur.next_element(f));
  EXPECT_DOUBLE_EQ(cur.number("a"), 35.0);
  EXPECT_FALSE(cur.next_element(f));
  ASSERT_TRUE(cur.next_member(first, key));
  EXPECT_EQ(key, "s");
  EXPECT_EQ(cur.string_value(), "x\"y\xc3\xa9");
  ASSERT_TRUE(cur.next_member(first, key));
  cur.skip_value();
  EXPECT_FALSE(cur.next_member(first, key));
  cur.expect_end();
}

std::string error_of(const std::string& text) {
  try {
    JsonCursor cur(text, "f.json", 7);
    cur.skip_value();
    cur.expect_end();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonCursor, SyntaxErrorsNameFileAndLine) {
  EXPECT_EQ(error_of("{\"a\": 1,\n \"b\" 2}"), "f.json:8: expected ':', got '2'");
  EXPECT_EQ(error_of("[1, 2"), "f.json:7: expected ',', got end of input");
  EXPECT_EQ(error_of("[01]"), "f.json:7: number with a leading zero");
  EXPECT_EQ(error_of("\"abc"), "f.json:7: unterminated string");
  EXPECT_EQ(error_of("[1] x"), "f.json:7: unexpected 'x' after the JSON value");
  EXPECT_EQ(error_of("tru"), "f.json:7: expected true, false or null");
  EXPECT_EQ(error_of(std::string(200, '[')), "f.json:7: nesting deeper than 128");
  EXPECT_EQ(error_of(""), "f.json:7: expected a value, got end of input");
}

TEST(JsonCursor, IntegerRejectsFractionsAndOverflow) {
  JsonCursor a("1.5", "f");
  EXPECT_THROW(a.integer("in"), Error);
  JsonCursor b("99999999999999999999", "f");
  EXPECT_THROW(b.integer("in"), Error);
  JsonCursor c("\"7\"", "f");
  EXPECT_THROW(c.integer("in"), Error);
}

}  // namespace
}  // namespace ds
