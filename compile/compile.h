#pragma once
// xten::compile: graph mode (docs/compile.md).
//
//   auto f = xten::compile([](const Tensor& x, const Tensor& b) {
//     return xten::layer_norm(x * xten::sigmoid(x) + b, {1024});
//   });
//   Tensor y = f(x, b);  // first call: captures and compiles; later calls run the graph
//
//   auto model = xten::models::resnet18();
//   model->eval();
//   auto compiled = xten::compile(model, xten::CompileOptions().freeze(true));
//   Tensor logits = compiled(images);
//
// A compiled program is captured by running it once (Note [Capture] in compile/capture.cpp),
// optimized (compile/passes.h) and run by compile/runtime.h on later calls whose guards hold.
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <xten/nn/module.h>

namespace xten {

struct CompileOptions {
  // An unsupported construct (a graph break) raises instead of running eagerly.
  CompileOptions& fullgraph(bool v) {
    fullgraph_ = v;
    return *this;
  }
  // Parameters and buffers are constants: folded with what depends only on them (weight casts,
  // transposes); a changed parameter (its version) recompiles.
  CompileOptions& freeze(bool v) {
    freeze_ = v;
    return *this;
  }
  // "default", or "reduce-overhead": intermediates of fused groups are allocated once and reused
  // by every call (one call at a time per compiled program).
  CompileOptions& mode(std::string v) {
    mode_ = std::move(v);
    return *this;
  }
  // "inductor": passes and fused kernels; "eager": runs the captured graph as it is (debugging).
  CompileOptions& backend(std::string v) {
    backend_ = std::move(v);
    return *this;
  }
  // true is not supported yet (NotImplementedError): every input signature is its own graph.
  CompileOptions& dynamic(bool v) {
    dynamic_ = v;
    return *this;
  }
  // Graphs kept per program; past it, new signatures run eagerly (one warning).
  CompileOptions& cache_limit(int v) {
    cache_limit_ = v;
    return *this;
  }
  // A folder for the captured graph, the optimized graph and the fused programs of each compile
  // (also XTEN_COMPILE_DEBUG=DIR).
  CompileOptions& debug_dir(std::string v) {
    debug_dir_ = std::move(v);
    return *this;
  }

  bool fullgraph_ = false, freeze_ = false, dynamic_ = false;
  std::string mode_ = "default", backend_ = "inductor", debug_dir_;
  int cache_limit_ = 8;
};

// What a compiled program did so far.
struct CompileStats {
  int64_t captures = 0;        // graphs captured (the first, and each recompile)
  int64_t recompiles = 0;      // captures after the first (a guard missed)
  int64_t compiled_calls = 0;  // calls that ran a compiled graph
  int64_t eager_calls = 0;     // calls that ran the program eagerly (break, training, cache limit)
  int64_t graph_breaks = 0;    // captures that broke
  std::string last_break;      // the op of the last break ("item", "nonzero")
  std::string last_eager_reason;
  int64_t nodes_captured = 0;  // of the last compile: nodes as captured
  int64_t nodes_after = 0;     // ... after the passes (a fused group counts as one)
  int64_t fused_groups = 0;
  int64_t peak_bytes = 0;  // ... the largest total of intermediates alive at once
};

namespace compile_detail {
using Program = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

class CompiledProgram {
 public:
  CompiledProgram(CompileOptions options, std::shared_ptr<nn::Module> module);
  ~CompiledProgram();
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const Program& program);
  const CompileStats& stats() const;
  std::string graph_string() const;  // the graph of the last compile, after the passes

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline void flatten_into(std::vector<Tensor>& out, const Tensor& t) {
  out.push_back(t);
}
inline void flatten_into(std::vector<Tensor>& out, const std::vector<Tensor>& ts) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <class... Ts>
void flatten_into(std::vector<Tensor>& out, const std::tuple<Ts...>& t) {
  std::apply([&](const auto&... e) { (flatten_into(out, e), ...); }, t);
}

template <class R>
struct Unflatten;
template <>
struct Unflatten<Tensor> {
  static Tensor from(std::vector<Tensor>& v) { return v.at(0); }
};
template <>
struct Unflatten<std::vector<Tensor>> {
  static std::vector<Tensor> from(std::vector<Tensor>& v) { return v; }
};
template <class... Ts>
struct Unflatten<std::tuple<Ts...>> {
  static std::tuple<Ts...> from(std::vector<Tensor>& v) {
    static_assert((std::is_same_v<Ts, Tensor> && ...), "compile: a tuple result holds Tensors");
    return from_impl(v, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> from_impl(std::vector<Tensor>& v, std::index_sequence<I...>) {
    return std::tuple<Ts...>(v.at(I)...);
  }
};

// Whether M reaches a module through `*` (a ModuleHolder, a shared_ptr to a module).
template <class M, class = void>
struct is_module_handle : std::false_type {};
template <class M>
struct is_module_handle<M, std::void_t<decltype(*std::declval<const M&>())>>
    : std::is_base_of<nn::Module, std::decay_t<decltype(*std::declval<const M&>())>> {};
template <class I>
std::shared_ptr<nn::Module> module_ptr(const nn::ModuleHolder<I>& h) {
  return h.ptr();
}
template <class I>
std::shared_ptr<nn::Module> module_ptr(const std::shared_ptr<I>& p) {
  return p;
}
}  // namespace compile_detail

// A compiled callable: call it as the function it was made from (tensor arguments; a Tensor,
// std::vector<Tensor> or std::tuple of Tensors as result).
template <class F>
class Compiled {
 public:
  Compiled(F fn, CompileOptions options, std::shared_ptr<nn::Module> module = nullptr)
      : fn_(std::make_shared<F>(std::move(fn))),
        impl_(std::make_shared<compile_detail::CompiledProgram>(std::move(options),
                                                                std::move(module))) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert((std::is_convertible_v<const Args&, const Tensor&> && ...),
                  "compile: a compiled program takes tensors");
    using R = std::decay_t<std::invoke_result_t<F&, const Args&...>>;
    const std::vector<Tensor> inputs{Tensor(args)...};
    auto fn = fn_;
    const compile_detail::Program program = [fn](const std::vector<Tensor>& xs) {
      std::vector<Tensor> out;
      compile_detail::flatten_into(out, call_with(*fn, xs, std::index_sequence_for<Args...>{}));
      return out;
    };
    std::vector<Tensor> outs = impl_->call(inputs, program);
    return compile_detail::Unflatten<R>::from(outs);
  }
  // A program of a list of tensors.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const {
    auto fn = fn_;
    return impl_->call(inputs, [fn](const std::vector<Tensor>& xs) {
      std::vector<Tensor> out;
      compile_detail::flatten_into(out, (*fn)(xs));
      return out;
    });
  }

  const CompileStats& stats() const { return impl_->stats(); }
  std::string graph_string() const { return impl_->graph_string(); }

 private:
  template <size_t... I>
  static auto call_with(F& fn, const std::vector<Tensor>& xs, std::index_sequence<I...>) {
    return fn(xs[I]...);
  }
  std::shared_ptr<F> fn_;
  std::shared_ptr<compile_detail::CompiledProgram> impl_;
};

// Compiles a callable of tensors.
template <class F, std::enable_if_t<!compile_detail::is_module_handle<F>::value, int> = 0>
Compiled<F> compile(F fn, CompileOptions options = {}) {
  return Compiled<F>(std::move(fn), std::move(options));
}

// Compiles a module's forward (a ModuleHolder such as models::ResNet, or a shared_ptr to a
// module). The module's training flag is part of the guards.
template <class M, std::enable_if_t<compile_detail::is_module_handle<M>::value, int> = 0>
Compiled<std::function<Tensor(const Tensor&)>> compile(M module, CompileOptions options = {}) {
  std::function<Tensor(const Tensor&)> fn = [module](const Tensor& x) {
    return module->forward(x);
  };
  std::shared_ptr<nn::Module> base = compile_detail::module_ptr(module);
  return Compiled<std::function<Tensor(const Tensor&)>>(std::move(fn), std::move(options),
                                                        std::move(base));
}

}  // namespace xten
