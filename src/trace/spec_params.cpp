#include "trace/spec_params.h"

#include <charconv>
#include <cmath>

#include "core/check.h"

namespace ds {

bool SpecParams::next() {
  while (!rest_.empty()) {
    size_t comma = rest_.find(',');
    std::string_view item = rest_.substr(0, comma);
    rest_ = comma == std::string_view::npos ? std::string_view() : rest_.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("{}: `{}` is not key=value", what_, item);
    key_ = item.substr(0, eq);
    value_ = item.substr(eq + 1);
    return true;
  }
  return false;
}

int64_t SpecParams::integer(int64_t lo, int64_t hi) const {
  int64_t x = 0;
  auto [ptr, ec] = std::from_chars(value_.data(), value_.data() + value_.size(), x);
  if (ec != std::errc() || ptr != value_.data() + value_.size() || x < lo || x > hi)
    fail("{}: `{}={}` must be an integer in [{}, {}]", what_, key_, value_, lo, hi);
  return x;
}

double SpecParams::number(double lo, double hi) const {
  double x = 0;
  auto [ptr, ec] = std::from_chars(value_.data(), value_.data() + value_.size(), x);
  if (ec != std::errc() || ptr != value_.data() + value_.size() || !std::isfinite(x) || x < lo || x > hi)
    fail("{}: `{}={}` must be a number in [{}, {}]", what_, key_, value_, lo, hi);
  return x;
}

void SpecParams::unknown(std::string_view known_keys) const {
  fail("{}: unknown key `{}` (keys: {})", what_, key_, known_keys);
}

}  // namespace ds
