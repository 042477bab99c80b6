#pragma once
// Registration: declare ops and register kernels, by hand, greppable by op name.
//
//   LIBRARY(xten, m) { m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
//   } LIBRARY_IMPL(xten, CPU, m) { m.impl("add.Tensor", add_tensor); } LIBRARY_IMPL(_, AutogradCPU,
//   m) { m.fallback(KernelFunction::fallthrough()); }
//
// A Library made in a scope (a test) withdraws what it registered when it is destroyed; the
// macro-made ones live for the program. Every registration records the file and line it came
// from, so a duplicate names both places.
#include <optional>
#include <string>
#include <vector>

#include <xten/dispatch/dispatcher.h>

namespace xten {

class Library {
 public:
  enum class Kind { Def, Impl };
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, int line);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // Declares an op: "name.overload(Tensor self, ...) -> Tensor" (namespace added if absent).
  Library& def(const std::string& schema, const char* file = __builtin_FILE(),
               int line = __builtin_LINE());
  // Declares an op with the C++ signature its kernels and callers use: checked against the
  // schema now, and every kernel against it when registered.
  template <class Sig>
  Library& def(const std::string& schema, const char* file = __builtin_FILE(),
               int line = __builtin_LINE()) {
    return def_with_signature(schema, &cpp_signature_of<Sig>(), file, line);
  }

  // Registers a kernel: a function (or captureless lambda) of the op's C++ signature.
  template <class F>
  Library& impl(const std::string& name, F&& fn, const char* file = __builtin_FILE(),
                int line = __builtin_LINE()) {
    return impl_kernel(name, to_kernel(std::forward<F>(fn)), file, line);
  }
  // Registers a kernel for every op on this library's key (a "backend fallback").
  Library& fallback(KernelFunction k, const char* file = __builtin_FILE(),
                    int line = __builtin_LINE());
  Library& fallback(BoxedKernel k, const char* file = __builtin_FILE(),
                    int line = __builtin_LINE()) {
    return fallback(KernelFunction::from_boxed(std::move(k)), file, line);
  }

 private:
  static KernelFunction to_kernel(KernelFunction k) { return k; }
  static KernelFunction to_kernel(BoxedKernel k) {
    return KernelFunction::from_boxed(std::move(k));
  }
  template <class F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, KernelFunction> &&
                                          !std::is_same_v<std::decay_t<F>, BoxedKernel>,
                                      int> = 0>
  static KernelFunction to_kernel(F&& fn) {
    return KernelFunction::from_unboxed(+fn);
  }
  Library& impl_kernel(const std::string& name, KernelFunction k, const char* file, int line);
  Library& def_with_signature(const std::string& schema, const CppSignature* sig, const char* file,
                              int line);
  std::string qualify(const std::string& name) const;

  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  std::string site_;
  std::vector<uint64_t> ids_;
};

namespace detail {
struct LibraryInit {
  LibraryInit(void (*fn)(Library&), Library::Kind kind, const char* ns,
              std::optional<DispatchKey> key, const char* file, int line)
      : library(new Library(kind, ns, key, file, line)) {
    fn(*library);
  }
  // Never deleted: registrations made at load time stay for the whole program, also while
  // other static destructors still call ops.
  Library* library;
};
}  // namespace detail

}  // namespace xten

#define XTEN_CONCAT_(a, b) a##b
#define XTEN_CONCAT(a, b) XTEN_CONCAT_(a, b)

#define LIBRARY(ns, m)                                                                           \
  static void XTEN_CONCAT(xten_library_def_##ns##_, __LINE__)(::xten::Library&);                 \
  static const ::xten::detail::LibraryInit XTEN_CONCAT(xten_library_def_init_##ns##_, __LINE__)( \
      &XTEN_CONCAT(xten_library_def_##ns##_, __LINE__), ::xten::Library::Kind::Def, #ns,         \
      std::nullopt, __FILE__, __LINE__);                                                         \
  static void XTEN_CONCAT(xten_library_def_##ns##_, __LINE__)(::xten::Library & m)

#define LIBRARY_IMPL(ns, key, m)                                                                   \
  static void XTEN_CONCAT(xten_library_impl_##ns##_##key##_, __LINE__)(::xten::Library&);          \
  static const ::xten::detail::LibraryInit XTEN_CONCAT(xten_library_impl_init_##ns##_##key##_,     \
                                                       __LINE__)(                                  \
      &XTEN_CONCAT(xten_library_impl_##ns##_##key##_, __LINE__), ::xten::Library::Kind::Impl, #ns, \
      ::xten::DispatchKey::key, __FILE__, __LINE__);                                               \
  static void XTEN_CONCAT(xten_library_impl_##ns##_##key##_, __LINE__)(::xten::Library & m)
