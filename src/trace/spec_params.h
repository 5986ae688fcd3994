// SpecParams: reader of "key=value,key=value" workload specs (`synthetic:...`, `random:...`). One
// pair at a time; numbers are range-checked and every error names the spec kind, key and value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ds {

class SpecParams {
 public:
  // `what` names the spec in errors ("synthetic trace"); `kv` is the text after the colon.
  SpecParams(std::string what, std::string_view kv) : what_(std::move(what)), rest_(kv) {}

  // Advances to the next pair; false at the end. Empty items are skipped; "k" without "=" throws.
  bool next();
  std::string_view key() const { return key_; }
  std::string_view value() const { return value_; }

  int64_t integer(int64_t lo, int64_t hi) const;  // the value as an integer in [lo, hi]
  double number(double lo, double hi) const;      // the value as a finite number in [lo, hi]
  [[noreturn]] void unknown(std::string_view known_keys) const;

 private:
  std::string what_;
  std::string_view rest_, key_, value_;
};

}  // namespace ds
