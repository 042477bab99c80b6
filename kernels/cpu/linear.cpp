// linear and _linear_relu on the CPU (docs/cpu_kernels.md, "Fused post-ops"): one oneDNN matmul
// that adds the bias, then relu in place on its output (or each thread's part of the product
// with its bias and relu, Note [Rows to threads]), where oneDNN is chosen and takes the case
// (float32, bfloat16, float16 where the CPU has the instructions); otherwise the product, the
// bias and the relu as separate ops (kernels/common/linear.h), whose product takes the Eigen
// path. Not oneDNN's relu post-op: it turns NaN into 0, where relu keeps NaN.
#include <xten/core/cpu_backend.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/linear.h>
#include <xten/kernels/cpu/onednn.h>

namespace xten::cpu {
namespace {

// Rows or columns dense: a layout oneDNN's matmul reads without a copy.
bool dense_2d(const Tensor& t) {
  const bool row_major = t.stride(1) == 1 && (t.stride(0) == t.size(1) || t.size(0) == 1);
  const bool col_major = t.stride(0) == 1 && (t.stride(1) == t.size(0) || t.size(1) == 1);
  return row_major || col_major;
}

Tensor linear_cpu(const char* op, const Tensor& input, const Tensor& weight,
                  const std::optional<Tensor>& bias, bool relu) {
  check_linear(op, input, weight, bias);
  if (cpu_gemm() == CpuGemm::OneDnn) {
    const int64_t out_features = weight.size(0);
    const Tensor x = leading_dims_as_rows(input);  // a view for a contiguous input
    const Tensor xd = dense_2d(x) ? x : x.contiguous();
    const Tensor w = dense_2d(weight) ? weight : weight.contiguous();
    const Tensor b = bias && bias->defined() ? bias->contiguous() : Tensor();
    Tensor out = empty_tensor({x.size(0), out_features}, input.dtype(), input.device());
    if (onednn::linear(xd, w, b, relu, out)) {
      count_cpu_gemm(CpuGemm::OneDnn);
      DimVector shape(input.sizes());
      shape.back() = out_features;
      return out.view(shape);
    }
  }
  return linear_unfused(input, weight, bias, relu);
}

Tensor linear_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  return linear_cpu("linear", input, weight, bias, false);
}

Tensor linear_relu_kernel(const Tensor& input, const Tensor& weight,
                          const std::optional<Tensor>& bias) {
  return linear_cpu("_linear_relu", input, weight, bias, true);
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("linear", linear_kernel);
  m.impl("_linear_relu", linear_relu_kernel);
}

}  // namespace xten::cpu
