#pragma once
// IValue: one boxed argument or result. A boxed kernel sees an op's arguments as a Stack of
// IValues, so one boxed function (a backend fallback) can serve every op whatever its
// signature. ivalue_traits<T> converts each C++ argument type to and from its IValue.
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <xten/core/tensor.h>

namespace xten {

class IValue {
 public:
  using Payload =
      std::variant<std::monostate, Tensor, Scalar, int64_t, double, bool, std::vector<int64_t>,
                   std::string, ScalarType, Device, std::vector<Tensor>>;
  IValue() = default;
  template <class T, std::enable_if_t<std::is_constructible_v<Payload, T&&>, int> = 0>
  IValue(T&& v) : v_(std::forward<T>(v)) {}  // NOLINT

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_tensor_list() const { return std::holds_alternative<std::vector<Tensor>>(v_); }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  template <class T>
  T& get() {
    return std::get<T>(v_);
  }
  template <class T>
  const T& get() const {
    return std::get<T>(v_);
  }
  // "Tensor", "int", ... for messages.
  std::string type_name() const;

 private:
  Payload v_;
};

using Stack = std::vector<IValue>;

template <class T, class = void>
struct ivalue_traits;

template <class T>
struct ivalue_traits<T,
                     std::enable_if_t<std::is_same_v<T, Tensor> || std::is_same_v<T, Scalar> ||
                                      std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                                      std::is_same_v<T, bool> || std::is_same_v<T, std::string> ||
                                      std::is_same_v<T, ScalarType> || std::is_same_v<T, Device> ||
                                      std::is_same_v<T, std::vector<Tensor>>>> {
  static IValue to(T v) { return IValue(std::move(v)); }
  static const T& from(const IValue& v) { return v.get<T>(); }
};
template <>
struct ivalue_traits<IntArrayRef> {
  static IValue to(IntArrayRef v) { return IValue(v.vec()); }
  static IntArrayRef from(const IValue& v) { return v.get<std::vector<int64_t>>(); }
};
template <class T>
struct ivalue_traits<std::optional<T>> {
  static IValue to(const std::optional<T>& v) { return v ? ivalue_traits<T>::to(*v) : IValue(); }
  static std::optional<T> from(const IValue& v) {
    if (v.is_none()) return std::nullopt;
    return T(ivalue_traits<T>::from(v));
  }
};

// Pushing a result: a tuple or vector of tensors is several values, as in a schema.
template <class T>
void push_result(Stack& s, T&& v) {
  s.push_back(ivalue_traits<std::decay_t<T>>::to(std::forward<T>(v)));
}
template <class... Ts>
void push_result(Stack& s, std::tuple<Ts...>&& v) {
  std::apply([&](auto&&... e) { (push_result(s, std::move(e)), ...); }, std::move(v));
}
template <class T>
struct is_tensor_tuple : std::false_type {};
template <class... Ts>
struct is_tensor_tuple<std::tuple<Ts...>>
    : std::bool_constant<(std::is_same_v<Ts, Tensor> && ...)> {};
template <class Tuple, size_t... I>
Tuple pop_tensors(Stack& s, std::index_sequence<I...>) {
  const size_t first = s.size() - sizeof...(I);
  Tuple r{s[first + I].get<Tensor>()...};
  s.resize(first);
  return r;
}
template <class T>
T pop_result(Stack& s) {
  if constexpr (std::is_void_v<T>) {
    return;
  } else if constexpr (is_tensor_tuple<std::decay_t<T>>::value) {
    using Tuple = std::decay_t<T>;
    return pop_tensors<Tuple>(s, std::make_index_sequence<std::tuple_size_v<Tuple>>{});
  } else {
    std::decay_t<T> r(ivalue_traits<std::decay_t<T>>::from(s.back()));
    s.pop_back();
    return r;
  }
}

}  // namespace xten
