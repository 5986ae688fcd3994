// Errors and checks. DS_CHECK is always on and throws ds::Error with the call site and a
// formatted message naming the offending values; DS_DCHECK is compiled out in release builds.
// Input errors (files, traces, flags, HTTP) are reported through ds::Error too, one line each.
#pragma once

#include <fmt/format.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace ds {

// One-line, user-facing error. what() is the message alone; where() is file:line of the check.
class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg, std::source_location loc = std::source_location::current());
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
#define DS_CHECK(cond, ...)                                                                \
  do {                                                                                     \
    if (!(cond)) [[unlikely]]                                                              \
      throw ::ds::Error(::fmt::format(__VA_ARGS__) + " (check `" #cond "` failed)");      \
  } while (0)

#ifdef NDEBUG
#define DS_DCHECK(cond, ...) \
  do {                       \
  } while (0)
#else
#define DS_DCHECK(cond, ...) DS_CHECK(cond, __VA_ARGS__)
#endif
