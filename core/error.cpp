#include <xten/core/error.h>

#include <cstring>

namespace xten::detail {

const char*& called_op() {
  thread_local const char* op = nullptr;
  return op;
}

std::string error_message(const char* op, const std::string& msg) {
  const char* called = called_op();
  if (called && std::strcmp(called, op) != 0)
    return fmt::format("[{}] {} (in {})", called, msg, op);
  return fmt::format("[{}] {}", op, msg);
}

void throw_internal(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(fmt::format("[internal] assertion `{}` failed at {}:{}{}{} (a bug in xten)",
                                  cond, file, line, msg.empty() ? "" : ": ", msg));
}

}  // namespace xten::detail
