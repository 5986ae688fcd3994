// Errors and checks. DS_CHECK is always on and throws ds::Error with the call site and a
// formatted message naming the offending values; DS_DCHECK is compiled out in release builds.
// Input errors (files, traces, flags, HTTP) are reported through ds::Error too, one line each.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#if __has_include(<source_location>)
#include <source_location>
#endif

namespace ds {

// std::source_location where the library has it; clang 14 + libstdc++ 12 (the fuzz build) lacks
// it, so fall back to the __builtin_FILE/__builtin_LINE pair that every supported compiler has.
#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
struct SourceLocation {
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
  constexpr const char* file_name() const { return file_; }
  constexpr unsigned line() const { return unsigned(line_); }
  const char* file_ = "";
  int line_ = 0;
};
#endif

// One-line, user-facing error. what() is the message alone (what is wrong, where in the input,
// the offending value); where() is file:line of the code that threw, and check() the condition
// text of a failed DS_CHECK (empty otherwise): both for logs and bug reports, never part of what().
class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg, SourceLocation loc = SourceLocation::current(), std::string check = {});
  const std::string& where() const { return where_; }
  const std::string& check() const { return check_; }

 private:
  std::string where_;
  std::string check_;
};

// A format string checked at compile time plus the location of the call that passed it, so that
// fail() can report its caller.
template <typename... Args>
struct FormatAt {
  fmt::format_string<Args...> format;
  SourceLocation loc;
  template <typename S>
  consteval FormatAt(const S& s, SourceLocation l = SourceLocation::current())  // NOLINT: implicit
      : format(s), loc(l) {}
};

// Throws ds::Error(message) located at the caller. Use for input validation where a condition
// reads badly.
template <typename... Args>
[[noreturn]] void fail(FormatAt<std::type_identity_t<Args>...> f, Args&&... args) {
  throw Error(fmt::format(f.format, std::forward<Args>(args)...), f.loc);
}

}  // namespace ds

// DS_CHECK(cond, "fmt {}", value): throws ds::Error("fmt value") located here, with check() = "cond".
#define DS_CHECK(cond, ...)                                                                  \
  do {                                                                                       \
    if (!(cond)) [[unlikely]]                                                                \
      throw ::ds::Error(::fmt::format(__VA_ARGS__), ::ds::SourceLocation::current(), #cond); \
  } while (0)

#ifdef NDEBUG
#define DS_DCHECK(cond, ...) \
  do {                       \
  } while (0)
#else
#define DS_DCHECK(cond, ...) DS_CHECK(cond, __VA_ARGS__)
#endif
