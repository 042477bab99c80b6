#pragma once
// The XPU elementwise path: one preparation for every pointwise op (dtype rule, broadcast,
// the output's layout from its operands' as on the CPU, output checks, inputs brought to the
// device and to the compute dtype), then one strided launch. Mirrors the CPU engine's checks and
// messages (kernels/cpu/elementwise.cpp) so that bad input gives the same error on both devices.
#include <optional>
#include <vector>

#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {

class Elementwise {
 public:
  // `out` undefined: a new tensor of the result dtype. inputs: 1 to 3 tensors, brought to the
  // compute dtype except those whose bit is set in `keep` (where's bool condition); CPU 0-dim
  // tensors (wrapped numbers) are allowed and copied to the device.
  Elementwise(const char* op, const Tensor& out, std::vector<Tensor> inputs,
              std::optional<ScalarType> compute = std::nullopt,
              std::optional<ScalarType> result = std::nullopt, uint32_t keep = 0);

  ScalarType compute() const { return compute_; }
  Device device() const { return target_.device(); }
  // Launches `kernel_<tag of compute>` from `family` over (target, inputs...), passing `extra`
  // values before the geometry; then writes the target into out if they differ. Returns out.
  template <class... Extra>
  Tensor run(const std::string& kernel, const char* family, const Extra&... extra);

 private:
  const char* op_;
  Tensor out_, target_;
  std::vector<Tensor> inputs_;
  ScalarType compute_, result_;
  DimVector shape_;
  DimVector order_;  // the dims outermost first (Note [Pointwise layout]); empty: identity
};

template <class... Extra>
Tensor Elementwise::run(const std::string& kernel, const char* family, const Extra&... extra) {
  if (target_.numel() > 0) {
    const size_t arity = inputs_.size();
    // Every operand seen in the walk's order (outermost first), so that merged dims and the
    // innermost one follow memory.
    auto walked = [&](const Tensor& t) {
      const Tensor e = t.expand(shape_);
      return order_.empty() ? e : e.permute(order_);
    };
    const Tensor o_view = walked(target_);
    const Tensor a = walked(inputs_[0]);
    const Tensor b = arity > 1 ? walked(inputs_[1]) : Tensor();
    const Tensor c = arity > 2 ? walked(inputs_[2]) : Tensor();
    const IntArrayRef shape = o_view.sizes();
    const IntArrayRef ot = o_view.strides();
    const Geometry g = arity == 3
                           ? geometry(op_, shape, {ot, a.strides(), b.strides(), c.strides()})
                       : arity == 2 ? geometry(op_, shape, {ot, a.strides(), b.strides()})
                                    : geometry(op_, shape, {ot, a.strides()});
    // The one-dim variant where the space merges to one dim (contiguous operands, or a
    // broadcast scalar with stride 0): one stride per operand instead of the geometry.
    const std::string name = kernel + "_" + dtype_tag(compute_) + (g.ndim == 1 ? "_1d" : "");
    Kernel& k = get_kernel(device_of(target_), op_, family_for(family, {compute_}), name);
    const Stream s = stream_of(target_);
    void* o = target_.data_ptr();
    if (arity == 3 && g.ndim == 1)
      launch(s, k, g.numel, o, a.data_ptr(), b.data_ptr(), c.data_ptr(), extra..., g.numel,
             g.st[0][0], g.st[1][0], g.st[2][0], g.st[3][0]);
    else if (arity == 3)
      launch(s, k, g.numel, o, a.data_ptr(), b.data_ptr(), c.data_ptr(), extra..., g.numel, g.ndim,
             g.sizes, g.st[0], g.st[1], g.st[2], g.st[3]);
    else if (arity == 2 && g.ndim == 1)
      launch(s, k, g.numel, o, a.data_ptr(), b.data_ptr(), extra..., g.numel, g.st[0][0],
             g.st[1][0], g.st[2][0]);
    else if (arity == 2)
      launch(s, k, g.numel, o, a.data_ptr(), b.data_ptr(), extra..., g.numel, g.ndim, g.sizes,
             g.st[0], g.st[1], g.st[2]);
    else if (g.ndim == 1)
      launch(s, k, g.numel, o, a.data_ptr(), extra..., g.numel, g.st[0][0], g.st[1][0]);
    else
      launch(s, k, g.numel, o, a.data_ptr(), extra..., g.numel, g.ndim, g.sizes, g.st[0], g.st[1]);
  }
  if (!target_.is_same(out_)) device_copy(out_, target_);
  return out_;
}

}  // namespace xten::xpu
