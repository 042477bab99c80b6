#pragma once
// User errors and internal invariants. See Note [Errors] in docs/architecture.md.
//
//   XTEN_CHECK(cond, ValueError, "add", "shapes {} and {} are not broadcastable", a, b);
//     -> throws xten::ValueError("[add] shapes (2, 3) and (4, 3) are not broadcastable")
//   XTEN_ASSERT(cond, "why") -> throws xten::InternalError: a bug in xten, not in the caller.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace xten {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

#define XTEN_DECLARE_ERROR(Name)                          \
  class Name : public Error {                             \
   public:                                                \
    explicit Name(const std::string& msg) : Error(msg) {} \
  };
XTEN_DECLARE_ERROR(ValueError)           // a bad value: shape, size, dim, string
XTEN_DECLARE_ERROR(TypeError)            // a dtype that does not fit the op
XTEN_DECLARE_ERROR(IndexError)           // an index or dim out of range
XTEN_DECLARE_ERROR(NotImplementedError)  // the op has no kernel for this dtype/device
XTEN_DECLARE_ERROR(OutOfMemoryError)     // an allocator could not satisfy a request
XTEN_DECLARE_ERROR(DeviceError)          // a device or its runtime failed
XTEN_DECLARE_ERROR(InternalError)        // an invariant of xten itself is broken
#undef XTEN_DECLARE_ERROR

namespace detail {
// The op the user called, while its composite kernel runs (set by the dispatcher, null
// otherwise): an error raised by an op inside it is reported under the called op's name, with
// the inner op after it, "[embedding] ... (in index_select)". Note [Errors] in
// docs/architecture.md.
const char*& called_op();
std::string error_message(const char* op, const std::string& msg);

template <class E, class... Args>
[[noreturn]] void throw_error(const char* op, fmt::format_string<Args...> f, Args&&... args) {
  throw E(error_message(op, fmt::format(f, std::forward<Args>(args)...)));
}
[[noreturn]] void throw_internal(const char* cond, const char* file, int line,
                                 const std::string& msg);
}  // namespace detail

}  // namespace xten

// User error: `cond` false means the caller passed something the op cannot take.
#define XTEN_CHECK(cond, ErrorType, op, ...)                           \
  do {                                                                 \
    if (__builtin_expect(!(cond), 0))                                  \
      ::xten::detail::throw_error<::xten::ErrorType>(op, __VA_ARGS__); \
  } while (0)

// Unconditional user error.
#define XTEN_FAIL(ErrorType, op, ...) \
  ::xten::detail::throw_error<::xten::ErrorType>(op, __VA_ARGS__)

// Invariant: `cond` false is a bug in xten.
#define XTEN_ASSERT(cond, ...)                                                                \
  do {                                                                                        \
    if (__builtin_expect(!(cond), 0))                                                         \
      ::xten::detail::throw_internal(#cond, __FILE__, __LINE__, fmt::format("" __VA_ARGS__)); \
  } while (0)
