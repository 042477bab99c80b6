#pragma once
// nn::Module: the base of every layer and model (docs/nn.md). A module owns named parameters
// (tensors that require grad), named buffers (running statistics) and named submodules, in
// registration order; everything that walks a model (parameters(), to(), state_dict(), the
// printed repr) walks these three lists. Layers are held by ModuleHolder, as libtorch's are:
//
//   nn::Linear lin(784, 256);   // a std::shared_ptr<LinearImpl> inside
//   lin->weight;                // the parameter
//   Tensor y = lin(x);          // forward
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xten/core/arg.h>
#include <xten/core/tensor.h>

namespace xten::nn {

// Names and tensors in registration order (PyTorch's OrderedDict), dotted for submodules.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Note [Forward interception]: how quantization/ (prepare, convert, quantize_dynamic;
// docs/quantization.md) changes what a module computes while the model keeps holding it by its
// type. The modules that honour an interceptor (Linear, Conv2d, BatchNorm2d, ReLU, Add) hand it
// their inputs and their own computation; without one they compute as written, at the cost of
// one null check.
class ForwardInterceptor {
 public:
  using Original = std::function<Tensor(const std::vector<Tensor>&)>;
  virtual ~ForwardInterceptor() = default;
  virtual Tensor forward(const std::vector<Tensor>& inputs, const Original& original) = 0;
  // Appended to the module's repr line ("scale=0.05, zero_point=60").
  virtual std::string describe() const { return ""; }
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string name = "Module") : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The type's name, as the repr prints it ("Linear").
  const std::string& name() const { return name_; }

  // Registers a parameter (it is made to require grad unless requires_grad is false) and
  // returns a handle to the stored tensor. An undefined tensor registers an absent parameter
  // (Linear without bias), which the walks skip. Names are unique per module and have no dots.
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  // A buffer: state that is not trained (running_mean), saved in the state dict.
  Tensor& register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  template <class Holder, class = decltype(std::declval<Holder&>().ptr())>
  Holder register_module(const std::string& name, Holder holder) {
    add_child(name, holder.ptr());
    return holder;
  }

  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  // This module and every descendant, depth first (self first unless include_self is false).
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules(
      bool include_self = true);
  // Calls fn on every module, children first, then this one (PyTorch's order).
  void apply(const std::function<void(Module&)>& fn);

  // Training mode for this module and its descendants (Dropout, BatchNorm read it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves or casts every parameter and buffer in place (their handles stay valid, so an
  // optimizer made before keeps working) and their gradients. to(dtype) casts floating tensors
  // only, as PyTorch does.
  void to(Device device);
  void to(const char* device) { to(Device(device)); }
  void to(ScalarType dtype);
  // Lays out every 4-d parameter and buffer (and gradient) in `format` (Contiguous or
  // ChannelsLast), as PyTorch's module.to(memory_format=...); others are left as they are.
  void to(MemoryFormat format);

  // Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // Parameters and buffers by dotted name ("layer1.0.conv1.weight"): the tensors themselves.
  NamedTensors state_dict() const;
  // Copies values in. strict: missing and unexpected keys raise a ValueError listing them;
  // a shape or dtype mismatch always raises, naming the key.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // One line of this module's own settings, between the parentheses of its repr
  // ("in_features=784, out_features=256, bias=true"); empty by default.
  virtual std::string extra_repr() const { return ""; }

  // Note [Forward interception]; null removes it.
  void set_interceptor(std::shared_ptr<ForwardInterceptor> i) { interceptor_ = std::move(i); }
  const std::shared_ptr<ForwardInterceptor>& interceptor() const { return interceptor_; }

 protected:
  bool training_ = true;
  // What an interceptable module's forward returns: `original(inputs)`, or the interceptor's.
  template <class F>
  Tensor intercepted(std::vector<Tensor> inputs, F&& original) const {
    if (!interceptor_) return original(inputs);
    return interceptor_->forward(inputs, std::forward<F>(original));
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name, const char* what) const;
  void for_each_tensor(const std::function<void(Tensor&, bool is_param)>& f);
  template <class F>
  void walk(const std::string& prefix, bool recurse, F&& f) const;

  std::string name_;
  NamedTensors parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::shared_ptr<ForwardInterceptor> interceptor_;
};

// Clears (set_to_none) or zeroes the gradients of `params` (Module's and Optimizer's
// zero_grad).
void zero_grads(const std::vector<Tensor>& params, bool set_to_none);

// PyTorch's module repr: "Name(extra)" or, with children, one indented "(name): child" line
// each.
std::ostream& operator<<(std::ostream& os, const Module& m);
std::string repr(const Module& m);

// Shared ownership of a module (libtorch's ModuleHolder): constructs the Impl from the
// arguments, -> reaches it, () calls its forward.
template <class Impl>
class ModuleHolder {
 public:
  using ImplType = Impl;
  template <class... Args, class = std::enable_if_t<
                               std::is_constructible_v<Impl, Args&&...> &&
                               !(sizeof...(Args) == 1 &&
                                 (std::is_base_of_v<ModuleHolder, std::decay_t<Args>> && ...))>>
  explicit ModuleHolder(Args&&... args)
      : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::nullptr_t) {}  // NOLINT: an empty holder, filled later
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    XTEN_CHECK(impl_ != nullptr, ValueError, "ModuleHolder", "the module is empty (nullptr)");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  template <class... Args>
  auto operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << *m;
}

}  // namespace xten::nn

// Declares `Name` as the holder of `NameImpl` (libtorch's TORCH_MODULE).
#define XTEN_MODULE(Name)                                     \
  class Name : public ::xten::nn::ModuleHolder<Name##Impl> {  \
   public:                                                    \
    using ::xten::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
