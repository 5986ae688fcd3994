#include "core/check.h"

namespace ds {

Error::Error(std::string msg, SourceLocation loc, std::string check)
    : std::runtime_error(std::move(msg)),
      where_(fmt::format("{}:{}", loc.file_name(), loc.line())),
      check_(std::move(check)) {}

}  // namespace ds
