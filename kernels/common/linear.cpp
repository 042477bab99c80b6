// linear's checks and decomposition (linear.h).
#include <xten/kernels/common/linear.h>

#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/op_checks.h>

namespace xten {

void check_linear(const char* op, const Tensor& input, const Tensor& weight,
                  const std::optional<Tensor>& bias) {
  XTEN_CHECK(weight.dim() == 2, ValueError, op,
             "weight must be 2-D [out_features, in_features], but got {}-D", weight.dim());
  XTEN_CHECK(input.dim() > 0 && input.size(-1) == weight.size(1), ValueError, op,
             "input's last dim ({}) must equal weight's in_features ({})",
             input.dim() ? input.size(-1) : 0, weight.size(1));
  check_same_dtype(op, input, weight, "input", "weight");
  if (bias && bias->defined()) {
    XTEN_CHECK(bias->dim() == 1 && bias->size(0) == weight.size(0), ValueError, op,
               "bias must have shape ({}), but got {}", weight.size(0), bias->sizes());
    check_same_dtype(op, weight, *bias, "weight", "bias");
    check_same_device(op, {&input, &weight, &*bias});
  } else {
    check_same_device(op, {&input, &weight});
  }
  XTEN_CHECK(input.dtype() != kBool, NotImplementedError, op, "not implemented for dtype Bool");
}

Tensor linear_unfused(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      bool relu) {
  Tensor out = matmul(input, weight.t());
  if (bias && bias->defined()) out = out + *bias;
  return relu ? xten::relu(out) : out;
}

}  // namespace xten
