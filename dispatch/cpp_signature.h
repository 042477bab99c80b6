#pragma once
// CppSignature: a C++ function type described in schema types, so that a kernel's (or a
// caller's) signature can be checked against the op's FunctionSchema when it is registered
// (Note [Schema and C++ signature] in dispatch/function_schema.h).
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <xten/core/tensor.h>
#include <xten/dispatch/function_schema.h>

namespace xten {

struct CppSignature {
  const std::type_info* id = nullptr;  // typeid(Ret(Args...))
  std::vector<SchemaType> arguments;
  std::vector<SchemaType> returns;
  // Empty if the signature fits the schema, else what differs, for an error message.
  std::string mismatch(const FunctionSchema& schema) const;
};

namespace detail {

template <class T>
struct schema_type_of;  // no schema type: a compile error at the registration that used it
template <SchemaBaseType B, bool kList = false>
struct schema_type_is {
  static constexpr SchemaType value() { return SchemaType{B, kList, false}; }
};
template <>
struct schema_type_of<Tensor> : schema_type_is<SchemaBaseType::Tensor> {};
template <>
struct schema_type_of<std::vector<Tensor>> : schema_type_is<SchemaBaseType::Tensor, true> {};
template <>
struct schema_type_of<Scalar> : schema_type_is<SchemaBaseType::Scalar> {};
template <>
struct schema_type_of<int64_t> : schema_type_is<SchemaBaseType::Int> {};
template <>
struct schema_type_of<IntArrayRef> : schema_type_is<SchemaBaseType::Int, true> {};
template <>
struct schema_type_of<double> : schema_type_is<SchemaBaseType::Float> {};
template <>
struct schema_type_of<bool> : schema_type_is<SchemaBaseType::Bool> {};
template <>
struct schema_type_of<std::string> : schema_type_is<SchemaBaseType::Str> {};
template <>
struct schema_type_of<ScalarType> : schema_type_is<SchemaBaseType::ScalarType> {};
template <>
struct schema_type_of<Device> : schema_type_is<SchemaBaseType::Device> {};
template <class T>
struct schema_type_of<std::optional<T>> {
  static constexpr SchemaType value() {
    SchemaType t = schema_type_of<T>::value();
    t.optional = true;
    return t;
  }
};

template <class T>
SchemaType arg_schema_type() {
  return schema_type_of<std::decay_t<T>>::value();
}
// The vectors are filled out of line (dispatch/function_schema.cpp) from arrays: a kernel file
// compiled once per CPU level (Note [CPU capability] in core/cpu_backend.h) that registers a
// kernel instantiates this code, and an std::vector constructor it instantiated could be the
// one copy the linker keeps for the whole library, with AVX-512 instructions in it
// (cpu_levels_isolated found one).
std::vector<SchemaType> schema_types(const SchemaType* types, size_t n);
template <class... Ts>
std::vector<SchemaType> schema_types_of() {
  const SchemaType types[] = {SchemaType{}, arg_schema_type<Ts>()...};  // never empty
  return schema_types(types + 1, sizeof...(Ts));
}
template <class R>
struct return_schema_types {
  static std::vector<SchemaType> get() { return schema_types_of<R>(); }
};
template <>
struct return_schema_types<void> {
  static std::vector<SchemaType> get() { return schema_types_of<>(); }
};
template <class... Rs>
struct return_schema_types<std::tuple<Rs...>> {
  static std::vector<SchemaType> get() { return schema_types_of<Rs...>(); }
};

template <class Sig>
struct cpp_signature_maker;
template <class Ret, class... Args>
struct cpp_signature_maker<Ret(Args...)> {
  static CppSignature make() {
    return CppSignature{&typeid(Ret(Args...)), schema_types_of<Args...>(),
                        return_schema_types<std::decay_t<Ret>>::get()};
  }
};

}  // namespace detail

// The description of Sig, made once per signature.
template <class Sig>
const CppSignature& cpp_signature_of() {
  // Never destroyed: ops run until the process ends (static destructors, other threads).
  static const CppSignature* s = new CppSignature(detail::cpp_signature_maker<Sig>::make());
  return *s;
}

}  // namespace xten
