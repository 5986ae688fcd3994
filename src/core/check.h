// Errors and checks. DS_CHECK is always on and throws ds::Error with the call site and a
// formatted message naming the offending values; DS_DCHECK is compiled out in release builds.
// Input errors (files, traces, flags, HTTP) are reported through ds::Error too, one line each.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
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

// One-line, user-facing error. what() is the message alone; where() is file:line of the check.
class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg, SourceLocation loc = SourceLocation::current());
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

// Throws ds::Error(message). Use for input validation where a condition reads badly.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ds

// DS_CHECK(cond, "fmt {}", value): throws ds::Error("fmt value (check `cond` failed)").
#define DS_CHECK(cond, ...)                                                          \
  do {                                                                               \
    if (!(cond)) [[unlikely]]                                                        \
      throw ::ds::Error(::fmt::format(__VA_ARGS__) + " (check `" #cond "` failed)"); \
  } while (0)

#ifdef NDEBUG
#define DS_DCHECK(cond, ...) \
  do {                       \
  } while (0)
#else
#define DS_DCHECK(cond, ...) DS_CHECK(cond, __VA_ARGS__)
#endif
