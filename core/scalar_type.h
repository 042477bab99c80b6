#pragma once
// The dtype list. XTEN_FORALL_SCALAR_TYPES is the one X-macro over it; visit_dtype (in
// core/dtype_dispatch.h) is the one way kernels turn a runtime dtype into a C++ type.
#include <cstdint>
#include <iosfwd>
#include <string>

#include <xten/core/half.h>

namespace xten {

// (C++ type, enum name). Order is the enum order and the promotion table's order.
#define XTEN_FORALL_SCALAR_TYPES(_) \
  _(bool, Bool)                     \
  _(uint8_t, Byte)                  \
  _(int8_t, Char)                   \
  _(int16_t, Short)                 \
  _(int32_t, Int)                   \
  _(int64_t, Long)                  \
  _(::xten::Half, Half)             \
  _(::xten::BFloat16, BFloat16)     \
  _(float, Float)                   \
  _(double, Double)

// The quantized dtypes follow the plain ones and are not in the X-macro: no kernel visits them
// as a C++ type. Their values are integers (uint8, int8, int32) read through the tensor's
// quantizer (core/quantizer.h, docs/quantization.md).
enum class ScalarType : int8_t {
#define XTEN_ENUM(T, N) N,
  XTEN_FORALL_SCALAR_TYPES(XTEN_ENUM)
#undef XTEN_ENUM
      QUInt8,
  QInt8,
  QInt32,
  Undefined,
};
// The plain dtypes (the promotion table's size).
constexpr int kNumScalarTypes = static_cast<int>(ScalarType::QUInt8);

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kQUInt8 = ScalarType::QUInt8;
constexpr ScalarType kQInt8 = ScalarType::QInt8;
constexpr ScalarType kQInt32 = ScalarType::QInt32;

// "Float", "Long", ... (the enum names, as PyTorch's C++ toString).
const char* to_string(ScalarType t);
// "float32", "int64", ... (the names PyTorch prints in a tensor's repr).
const char* dtype_name(ScalarType t);
std::ostream& operator<<(std::ostream& os, ScalarType t);

size_t element_size(ScalarType t);

constexpr bool is_floating_type(ScalarType t) {
  return t == kHalf || t == kBFloat16 || t == kFloat || t == kDouble;
}
constexpr bool is_integral_type(ScalarType t, bool include_bool) {
  return (t >= kByte && t <= kLong) || (include_bool && t == kBool);
}
constexpr bool is_quantized_type(ScalarType t) {
  return t == kQUInt8 || t == kQInt8 || t == kQInt32;
}
// The integer dtype a quantized dtype stores (int_repr's dtype): uint8, int8, int32.
constexpr ScalarType underlying_type(ScalarType t) {
  return t == kQUInt8 ? kByte : t == kQInt8 ? kChar : t == kQInt32 ? kInt : t;
}
constexpr bool is_signed_type(ScalarType t) {
  return t != kBool && t != kByte;
}

// The C++ type -> ScalarType map.
template <class T>
struct scalar_type_of;
#define XTEN_TYPE_MAP(T, N)                            \
  template <>                                          \
  struct scalar_type_of<T> {                           \
    static constexpr ScalarType value = ScalarType::N; \
  };
XTEN_FORALL_SCALAR_TYPES(XTEN_TYPE_MAP)
#undef XTEN_TYPE_MAP
template <class T>
constexpr ScalarType scalar_type_of_v = scalar_type_of<T>::value;

// The type arithmetic happens in: float for the 16-bit floats, the type itself otherwise.
template <class T>
struct opmath {
  using type = T;
};
template <>
struct opmath<Half> {
  using type = float;
};
template <>
struct opmath<BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename opmath<T>::type;

// PyTorch's promotion lattice for two dtypes (no category rules; see core/meta.h).
ScalarType promote_types(ScalarType a, ScalarType b);
// Whether a value of `from` may be written into `to` by an in-place op (no category drop).
bool can_cast(ScalarType from, ScalarType to);

}  // namespace xten
