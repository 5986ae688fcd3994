#include "trace/json_cursor.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "core/check.h"

namespace ds {
namespace {

constexpr int kMaxDepth = 128;

bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace

JsonCursor::JsonCursor(std::string_view text, std::string name, int64_t first_line)
    : text_(text), name_(std::move(name)), first_line_(first_line) {}

int64_t JsonCursor::line() const {
  return line_at(pos_);
}

int64_t JsonCursor::line_at(size_t offset) const {
  size_t end = std::min(offset, text_.size());
  return first_line_ + std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(end), '\n');
}

void JsonCursor::error(std::string_view what) const {
  throw Error(fmt::format("{}:{}: {}", name_, line(), what));
}

void JsonCursor::skip_ws() {
  while (pos_ < text_.size() && is_ws(text_[pos_])) ++pos_;
}

void JsonCursor::expect(char c) {
  skip_ws();
  if (pos_ >= text_.size()) error(fmt::format("expected '{}', got end of input", c));
  if (text_[pos_] != c) error(fmt::format("expected '{}', got '{}'", c, text_[pos_]));
  ++pos_;
}

char JsonCursor::peek() {
  skip_ws();
  if (pos_ >= text_.size()) error("expected a value, got end of input");
  char c = text_[pos_];
  if (c == '-' || (c >= '0' && c <= '9')) return '0';
  if (c == '{' || c == '[' || c == '"' || c == 't' || c == 'f' || c == 'n') return c;
  error(fmt::format("expected a value, got '{}'", c));
}

void JsonCursor::begin_object() {
  expect('{');
}
void JsonCursor::begin_array() {
  expect('[');
}

bool JsonCursor::next_member(bool& first, std::string_view& key) {
  skip_ws();
  if (pos_ < text_.size() && text_[pos_] == '}') {
    ++pos_;
    return false;
  }
  if (!first) expect(',');
  first = false;
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != '"') error("expected a member name");
  key = raw_string();  // member names in traces are plain ASCII; escapes stay encoded
  expect(':');
  return true;
}

bool JsonCursor::next_element(bool& first) {
  skip_ws();
  if (pos_ < text_.size() && text_[pos_] == ']') {
    ++pos_;
    return false;
  }
  if (!first) expect(',');
  first = false;
  return true;
}

std::string_view JsonCursor::raw_string() {
  expect('"');
  size_t start = pos_;
  raw_has_escape_ = false;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') return text_.substr(start, pos_++ - start);
    if (static_cast<unsigned char>(c) < 0x20) error("control character in string");
    if (c == '\\') {
      raw_has_escape_ = true;
      ++pos_;
      if (pos_ >= text_.size()) break;
      char e = text_[pos_];
      if (e == 'u') {
        if (pos_ + 4 >= text_.size()) break;
        for (int i = 1; i <= 4; ++i)
          if (!std::isxdigit(static_cast<unsigned char>(text_[pos_ + i]))) error("bad \\u escape");
        pos_ += 4;
      } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        error(fmt::format("bad escape '\\{}'", e));
      }
    }
    ++pos_;
  }
  error("unterminated string");
}

std::string JsonCursor::string_value() {
  if (peek() != '"') error("expected a string");
  std::string_view raw = raw_string();
  if (!raw_has_escape_) return std::string(raw);
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out += raw[i];
      continue;
    }
    char e = raw[++i];
    switch (e) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        std::from_chars(raw.data() + i + 1, raw.data() + i + 5, cp, 16);
        append_utf8(out, cp);
        i += 4;
        break;
      }
      default:
        out += e;  // " \ /
    }
  }
  return out;
}

std::string_view JsonCursor::number_text() {
  skip_ws();
  size_t start = pos_;
  auto digits = [&] {
    size_t d = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    return pos_ - d;
  };
  if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
  size_t int_start = pos_;
  size_t n_int = digits();
  if (n_int == 0) error("expected a number");
  if (n_int > 1 && text_[int_start] == '0') error("number with a leading zero");
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (digits() == 0) error("expected digits after '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (digits() == 0) error("expected digits in exponent");
  }
  return text_.substr(start, pos_ - start);
}

double JsonCursor::number(std::string_view what) {
  if (peek() != '0') error(fmt::format("field `{}` must be a number", what));
  std::string_view t = number_text();
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || !std::isfinite(v)) error(fmt::format("field `{}` = {} is out of range", what, t));
  return v;
}

int64_t JsonCursor::integer(std::string_view what) {
  if (peek() != '0') error(fmt::format("field `{}` must be an integer", what));
  std::string_view t = number_text();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size())
    error(fmt::format("field `{}` = {} is not an integer in int64 range", what, t));
  return v;
}

void JsonCursor::skip_value() {
  skip_value_at(0);
}

void JsonCursor::skip_value_at(int depth) {
  if (depth > kMaxDepth) error(fmt::format("nesting deeper than {}", kMaxDepth));
  char k = peek();
  bool first = true;
  std::string_view key;
  switch (k) {
    case '{':
      begin_object();
      while (next_member(first, key)) skip_value_at(depth + 1);
      return;
    case '[':
      begin_array();
      while (next_element(first)) skip_value_at(depth + 1);
      return;
    case '"':
      raw_string();
      return;
    case '0':
      number_text();
      return;
    default:
      break;
  }
  std::string_view word = k == 't' ? "true" : k == 'f' ? "false" : "null";
  if (text_.substr(pos_, word.size()) != word) error("expected true, false or null");
  pos_ += word.size();
}

void JsonCursor::expect_end() {
  skip_ws();
  if (pos_ != text_.size()) error(fmt::format("unexpected '{}' after the JSON value", text_[pos_]));
}

}  // namespace ds
