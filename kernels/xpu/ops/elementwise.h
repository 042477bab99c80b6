#pragma once
// The XPU elementwise path: one preparation for every pointwise op (dtype rule, broadcast,
// output checks, inputs brought to the device and to the compute dtype), then one strided
// launch. Mirrors the CPU engine's checks and messages (kernels/cpu/elementwise.cpp) so that
// bad input gives the same error on both devices.
#include <optional>
#include <vector>

#include "xpu_ops.h"

namespace xten::xpu {

class Elementwise {
 public:
  // `out` undefined: a new tensor of the result dtype. inputs: 1 or 2 tensors; CPU 0-dim
  // tensors (wrapped numbers) are allowed and copied to the device.
  Elementwise(const char* op, const Tensor& out, std::vector<Tensor> inputs,
              std::optional<ScalarType> compute = std::nullopt,
              std::optional<ScalarType> result = std::nullopt);

  ScalarType compute() const { return compute_; }
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
};

template <class... Extra>
Tensor Elementwise::run(const std::string& kernel, const char* family, const Extra&... extra) {
  if (target_.numel() > 0) {
    const bool binary = inputs_.size() == 2;
    const Tensor a = inputs_[0].expand(shape_);
    const Tensor b = binary ? inputs_[1].expand(shape_) : Tensor();
    const Geometry g = binary ? geometry(op_, shape_, {target_.strides(), a.strides(), b.strides()})
                              : geometry(op_, shape_, {target_.strides(), a.strides()});
    // The one-dim variant where the space merges to one dim (contiguous operands, or a
    // broadcast scalar with stride 0): one stride per operand instead of the geometry.
    const std::string name = kernel + "_" + dtype_tag(compute_) + (g.ndim == 1 ? "_1d" : "");
    Kernel& k = get_kernel(device_of(target_), op_, family_for(family, {compute_}), name);
    const Stream s = stream_of(target_);
    if (binary && g.ndim == 1)
      launch(s, k, g.numel, target_.data_ptr(), a.data_ptr(), b.data_ptr(), extra..., g.numel,
             g.st[0][0], g.st[1][0], g.st[2][0]);
    else if (binary)
      launch(s, k, g.numel, target_.data_ptr(), a.data_ptr(), b.data_ptr(), extra..., g.numel,
             g.ndim, g.sizes, g.st[0], g.st[1], g.st[2]);
    else if (g.ndim == 1)
      launch(s, k, g.numel, target_.data_ptr(), a.data_ptr(), extra..., g.numel, g.st[0][0],
             g.st[1][0]);
    else
      launch(s, k, g.numel, target_.data_ptr(), a.data_ptr(), extra..., g.numel, g.ndim, g.sizes,
             g.st[0], g.st[1]);
  }
  if (!target_.is_same(out_)) device_copy(out_, target_);
  return out_;
}

}  // namespace xten::xpu
