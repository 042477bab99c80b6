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
template <class R>
struct return_schema_types {
  static std::vector<SchemaType> get() { return {arg_schema_type<R>()}; }
};
template <>
struct return_schema_types<void> {
  static std::vector<SchemaType> get() { return {}; }
};
template <class... Rs>
struct return_schema_types<std::tuple<Rs...>> {
  static std::vector<SchemaType> get() { return {arg_schema_type<Rs>()...}; }
};

template <class Sig>
struct cpp_signature_maker;
template <class Ret, class... Args>
struct cpp_signature_maker<Ret(Args...)> {
  static CppSignature make() {
    return CppSignature{&typeid(Ret(Args...)),
                        {arg_schema_type<Args>()...},
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
