#pragma once
// KernelFunction: one entry of an op's dispatch table. It holds the unboxed function pointer
// (the fast path: a direct call, no allocation) and a boxed entry point over a Stack (the
// general path: fallbacks, boxed calls). Special kinds: fallthrough (skip to the next key)
// and missing (raise the missing-kernel error).
#include <functional>
#include <typeinfo>
#include <utility>

#include <xten/dispatch/cpp_signature.h>
#include <xten/dispatch/ivalue.h>

namespace xten {

class OperatorHandle;

// A boxed kernel: reads its arguments from the stack and leaves its results there.
using BoxedKernel = std::function<void(const OperatorHandle&, DispatchKeySet, Stack*)>;

class KernelFunction {
 public:
  enum class Kind : uint8_t { Missing, Normal, Fallthrough };

  KernelFunction() = default;

  // A kernel written as a plain function (or captureless lambda) of the op's C++ signature.
  template <class Ret, class... Args>
  static KernelFunction from_unboxed(Ret (*fn)(Args...)) {
    KernelFunction k;
    k.kind_ = Kind::Normal;
    k.unboxed_ = reinterpret_cast<void*>(fn);
    k.signature_ = &cpp_signature_of<Ret(Args...)>();
    k.boxed_from_unboxed_ = &call_unboxed_from_stack<Ret, Args...>;
    return k;
  }
  static KernelFunction from_boxed(BoxedKernel fn) {
    KernelFunction k;
    k.kind_ = Kind::Normal;
    k.boxed_ = std::move(fn);
    return k;
  }
  static KernelFunction fallthrough() {
    KernelFunction k;
    k.kind_ = Kind::Fallthrough;
    return k;
  }

  Kind kind() const { return kind_; }
  bool is_fallthrough() const { return kind_ == Kind::Fallthrough; }
  bool is_missing() const { return kind_ == Kind::Missing; }
  void* unboxed() const { return unboxed_; }
  // The C++ signature of an unboxed kernel (null for boxed and special kernels).
  const CppSignature* signature() const { return signature_; }

  // Runs the kernel on a stack: arguments in, results out.
  void call_boxed(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) const;

 private:
  template <class Ret, class... Args, size_t... I>
  static void call_unboxed_impl(void* fn, Stack* s, std::index_sequence<I...>) {
    constexpr size_t n = sizeof...(Args);
    auto* f = reinterpret_cast<Ret (*)(Args...)>(fn);
    const size_t base = s->size() - n;
    if constexpr (std::is_void_v<Ret>) {
      f(ivalue_traits<std::decay_t<Args>>::from((*s)[base + I])...);
      s->resize(base);
    } else {
      Ret r = f(ivalue_traits<std::decay_t<Args>>::from((*s)[base + I])...);
      s->resize(base);
      push_result(*s, std::move(r));
    }
  }
  template <class Ret, class... Args>
  static void call_unboxed_from_stack(void* fn, Stack* s) {
    call_unboxed_impl<Ret, Args...>(fn, s, std::index_sequence_for<Args...>{});
  }

  Kind kind_ = Kind::Missing;
  void* unboxed_ = nullptr;
  const CppSignature* signature_ = nullptr;
  void (*boxed_from_unboxed_)(void*, Stack*) = nullptr;
  BoxedKernel boxed_;
};

}  // namespace xten
