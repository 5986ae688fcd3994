// Test helper: the message of the ds::Error that `f` throws, or "" when it throws none.
#pragma once

#include <string>

#include "core/check.h"

namespace ds::testing {

template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace ds::testing
