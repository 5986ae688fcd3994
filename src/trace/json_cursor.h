// JsonCursor: a small pull parser over one JSON text, for trace files (tens of MB of integer
// arrays, where a DOM costs more than the replay's start-up budget). Strict RFC 8259 syntax,
// nesting depth <= 128; every error is a ds::Error "<name>:<line>: <what>" naming the value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ds {

class JsonCursor {
 public:
  // `name` prefixes error messages; `first_line` is the line number of text[0].
  JsonCursor(std::string_view text, std::string name, int64_t first_line = 1);

  // Kind of the next value without consuming it: '{', '[', '"', '0' (number), 't', 'f', 'n'.
  char peek();

  // Objects: begin_object(); bool first = true; while (next_member(first, key)) { ...value... }
  void begin_object();
  bool next_member(bool& first, std::string_view& key);  // false after the closing '}'
  // Arrays: begin_array(); bool first = true; while (next_element(first)) { ...value... }
  void begin_array();
  bool next_element(bool& first);  // false after the closing ']'

  std::string string_value();
  double number(std::string_view what);    // any finite JSON number
  int64_t integer(std::string_view what);  // an integral number that fits int64
  void skip_value();                       // any value, nested or not
  void expect_end();                       // only whitespace may follow

  int64_t line() const;                                  // line of the current position
  size_t offset() const { return pos_; }                 // byte offset of the current position
  int64_t line_at(size_t offset) const;                  // line of a byte offset (counts newlines)
  [[noreturn]] void error(std::string_view what) const;  // throws "<name>:<line>: <what>"

 private:
  void skip_ws();
  void expect(char c);
  std::string_view raw_string();   // body between quotes; escapes left encoded
  std::string_view number_text();  // the number's characters, validated
  void skip_value_at(int depth);

  std::string_view text_;
  std::string name_;
  int64_t first_line_;
  size_t pos_ = 0;
  bool raw_has_escape_ = false;
};

}  // namespace ds
