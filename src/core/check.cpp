#include "core/check.h"

namespace ds {

Error::Error(std::string msg, SourceLocation loc)
    : std::runtime_error(std::move(msg)), where_(fmt::format("{}:{}", loc.file_name(), loc.line())) {}

}  // namespace ds
