#pragma once
// visit_dtype: the one way a kernel turns a runtime dtype into a C++ type.
//
//   visit_dtype<dtypes::kFloating>("gelu", t.dtype(), [&](auto tag) {
//     using T = typename decltype(tag)::type;  ...
//   });
//
// Only the dtypes in the set are instantiated; any other raises NotImplementedError naming
// the op and the dtype.
#include <cstdint>

#include <xten/core/error.h>
#include <xten/core/scalar_type.h>

namespace xten {

template <class T>
struct TypeTag {
  using type = T;
};

constexpr uint32_t dtype_bit(ScalarType t) {
  return 1u << static_cast<int>(t);
}

namespace dtypes {
constexpr uint32_t kBoolOnly = dtype_bit(kBool);
constexpr uint32_t kIntegral =
    dtype_bit(kByte) | dtype_bit(kChar) | dtype_bit(kShort) | dtype_bit(kInt) | dtype_bit(kLong);
constexpr uint32_t kIntegralAndBool = kIntegral | kBoolOnly;
constexpr uint32_t kFloating =
    dtype_bit(kHalf) | dtype_bit(kBFloat16) | dtype_bit(kFloat) | dtype_bit(kDouble);
constexpr uint32_t kAllButBool = kIntegral | kFloating;
constexpr uint32_t kAll = kAllButBool | kBoolOnly;
}  // namespace dtypes

[[noreturn]] void throw_unsupported_dtype(const char* op, ScalarType t);

template <uint32_t Set, class F>
decltype(auto) visit_dtype(const char* op, ScalarType t, F&& f) {
  switch (t) {
#define XTEN_VISIT_CASE(T, N)                                                    \
  case ScalarType::N:                                                            \
    if constexpr ((Set & dtype_bit(ScalarType::N)) != 0) return f(TypeTag<T>{}); \
    break;
    XTEN_FORALL_SCALAR_TYPES(XTEN_VISIT_CASE)
#undef XTEN_VISIT_CASE
    default:
      break;
  }
  throw_unsupported_dtype(op, t);
}

}  // namespace xten
