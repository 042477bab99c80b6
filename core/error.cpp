#include <xten/core/error.h>

namespace xten::detail {

void throw_internal(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(fmt::format("[internal] assertion `{}` failed at {}:{}{}{} (a bug in xten)",
                                  cond, file, line, msg.empty() ? "" : ": ", msg));
}

}  // namespace xten::detail
