#include <xten/core/scalar_type.h>

#include <algorithm>
#include <ostream>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/error.h>

namespace xten {

const char* to_string(ScalarType t) {
  switch (t) {
#define XTEN_NAME(T, N) \
  case ScalarType::N:   \
    return #N;
    XTEN_FORALL_SCALAR_TYPES(XTEN_NAME)
#undef XTEN_NAME
    case ScalarType::QUInt8:
      return "QUInt8";
    case ScalarType::QInt8:
      return "QInt8";
    case ScalarType::QInt32:
      return "QInt32";
    case ScalarType::Undefined:
      return "Undefined";
  }
  return "Unknown";
}

const char* dtype_name(ScalarType t) {
  static const char* names[] = {"bool",   "uint8",   "int8",     "int16",   "int32",
                                "int64",  "float16", "bfloat16", "float32", "float64",
                                "quint8", "qint8",   "qint32"};
  return t == ScalarType::Undefined ? "undefined" : names[static_cast<int>(t)];
}

std::ostream& operator<<(std::ostream& os, ScalarType t) {
  return os << to_string(t);
}
std::ostream& operator<<(std::ostream& os, Half h) {
  return os << static_cast<float>(h);
}
std::ostream& operator<<(std::ostream& os, BFloat16 b) {
  return os << static_cast<float>(b);
}

size_t element_size(ScalarType t) {
  switch (t) {
#define XTEN_SIZE(T, N) \
  case ScalarType::N:   \
    return sizeof(T);
    XTEN_FORALL_SCALAR_TYPES(XTEN_SIZE)
#undef XTEN_SIZE
    case ScalarType::QUInt8:
    case ScalarType::QInt8:
      return 1;
    case ScalarType::QInt32:
      return 4;
    case ScalarType::Undefined:
      break;
  }
  XTEN_FAIL(TypeError, "element_size", "dtype {} has no element size", to_string(t));
}

// The lattice PyTorch uses: bool < unsigned/signed ints < floats; uint8 with a signed int
// needs the next signed width that holds both; float16 with bfloat16 meets at float32.
ScalarType promote_types(ScalarType a, ScalarType b) {
  XTEN_CHECK(a != ScalarType::Undefined && b != ScalarType::Undefined, TypeError, "promote_types",
             "cannot promote {} with {}", to_string(a), to_string(b));
  XTEN_CHECK(!is_quantized_type(a) && !is_quantized_type(b), TypeError, "promote_types",
             "cannot promote {} with {}: quantized tensors take part in no type promotion "
             "(dequantize() them first)",
             dtype_name(a), dtype_name(b));
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  const bool ai = is_integral_type(a, false), bi = is_integral_type(b, false);
  if (ai && bi) {
    if (a == kByte || b == kByte) {
      const ScalarType other = a == kByte ? b : a;
      return other == kChar ? kShort : other;
    }
    return std::max(a, b);  // Char < Short < Int < Long in enum order
  }
  if (ai) return b;
  if (bi) return a;
  if ((a == kHalf && b == kBFloat16) || (a == kBFloat16 && b == kHalf)) return kFloat;
  return std::max(a, b);  // Half, BFloat16 < Float < Double
}

void throw_unsupported_dtype(const char* op, ScalarType t) {
  XTEN_FAIL(NotImplementedError, op, "not implemented for dtype {}", to_string(t));
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_quantized_type(from) || is_quantized_type(to)) return from == to;
  if (is_floating_type(from) && is_integral_type(to, /*include_bool=*/true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

}  // namespace xten
