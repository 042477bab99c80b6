#pragma once
// linear and _linear_relu (docs/cpu_kernels.md, "Fused post-ops"): the argument checks every
// backend's kernel makes, and the product-then-bias-then-relu decomposition that the XPU kernel
// runs and the CPU kernel runs where oneDNN does not take the case.
#include <optional>

#include <xten/core/tensor.h>

namespace xten {

// input [..., in] (at least 1-D), weight [out, in], bias [out] or none; one dtype (the bias's
// too: no promotion, as PyTorch's linear) and one device; not bool.
void check_linear(const char* op, const Tensor& input, const Tensor& weight,
                  const std::optional<Tensor>& bias);

// t [..., k] as [rows, k] (rows: the product of the leading dims; -1 would be ambiguous when k
// is 0). Header-only: linear's derivative uses it too.
inline Tensor leading_dims_as_rows(const Tensor& t) {
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) rows *= t.size(d);
  return t.reshape({rows, t.size(-1)});
}

// input @ weight.t() (+ bias) (then relu), as separate ops on the tensors' device.
Tensor linear_unfused(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      bool relu);

}  // namespace xten
