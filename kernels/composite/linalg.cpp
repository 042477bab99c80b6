// The matrix-product family written with bmm (valid on every backend that has it): mm, matmul,
// addmm, baddbmm, dot, mv, outer. linear has kernels per backend (kernels/common/linear.h) and
// a derivative of its own.
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/op_checks.h>

namespace xten {
namespace {

// A batch of one: mm's checks (and its errors), then bmm, which each backend implements.
Tensor mm_kernel(const Tensor& a, const Tensor& b) {
  check_mm(a, b);
  return bmm(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0);
}

Tensor dot_kernel(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() == 1 && b.dim() == 1, ValueError, "dot",
             "expected 1-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  XTEN_CHECK(a.size(0) == b.size(0), ValueError, "dot",
             "inconsistent tensor size: self has {} elements, but tensor has {}", a.size(0),
             b.size(0));
  XTEN_CHECK(a.dtype() == b.dtype(), TypeError, "dot",
             "expected both vectors to have the same dtype, but got {} and {}",
             to_string(a.dtype()), to_string(b.dtype()));
  return mm(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
}

Tensor mv_kernel(const Tensor& m, const Tensor& v) {
  XTEN_CHECK(m.dim() == 2 && v.dim() == 1, ValueError, "mv",
             "expected a 2-D matrix and a 1-D vector, but got {}-D and {}-D", m.dim(), v.dim());
  XTEN_CHECK(m.size(1) == v.size(0), ValueError, "mv", "size mismatch: matrix {} and vector {}",
             m.sizes(), v.sizes());
  return mm(m, v.unsqueeze(1)).squeeze(1);
}

Tensor outer_kernel(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() == 1 && b.dim() == 1, ValueError, "outer",
             "expected 1-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  return a.unsqueeze(1) * b.unsqueeze(0);
}

// Whether t's leading dims merge with its row dim (-2) into one without a copy: t.view({-1, k}).
bool rows_merge(const Tensor& t) {
  for (int64_t i = 0; i + 2 < t.dim(); ++i)
    if (t.stride(i) != t.stride(i + 1) * t.size(i + 1)) return false;
  return true;
}

// PyTorch's matmul: 1-D . 1-D is dot; a 1-D operand gains a dim (prepended on the left,
// appended on the right) that is dropped again; more than 2 dims broadcast as a batch. A 3-D or
// larger left operand times a matrix or vector is one product over its rows folded together
// (PyTorch's fold), where its leading dims merge without a copy: a batch would expand the
// matrix to one copy per batch element, and its backward sum them again (linear's input
// gradient, [32, 128, 1024] x [1024, 256] in the GPT step: 32 weight copies and 32 small
// products, 47 of 1,090 ms a step on one VM thread).
Tensor matmul_kernel(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() > 0 && b.dim() > 0, ValueError, "matmul",
             "both arguments need at least 1 dimension, but got {}-D and {}-D", a.dim(), b.dim());
  if (a.dim() == 1 && b.dim() == 1) return dot(a, b);
  if (a.dim() == 2 && b.dim() == 1) return mv(a, b);
  if (a.dim() == 1 && b.dim() == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (a.dim() == 2 && b.dim() == 2) return mm(a, b);
  const Tensor a3 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b3 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t n = a3.size(-2), k = a3.size(-1), m = b3.size(-1);
  XTEN_CHECK(k == b3.size(-2), ValueError, "matmul",
             "shapes {} and {} cannot be multiplied ({} != {})", a.sizes(), b.sizes(), k,
             b3.size(-2));
  if (a.dim() >= 3 && b.dim() <= 2 && rows_merge(a)) {
    DimVector shape(a.sizes().slice(0, a.dim() - 1));
    int64_t r = 1;  // not view({-1, k}): k may be 0
    for (int64_t s : shape) r *= s;
    if (b.dim() == 2) shape.push_back(m);
    const Tensor rows = a.view({r, k});
    return (b.dim() == 2 ? mm(rows, b) : mv(rows, b)).view(shape);
  }
  const IntArrayRef abatch = a3.sizes().slice(0, a3.dim() - 2),
                    bbatch = b3.sizes().slice(0, b3.dim() - 2);
  const DimVector batch = broadcast_shapes("matmul", abatch, bbatch);
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  DimVector ae(batch), be(batch);
  ae.push_back(n);
  ae.push_back(k);
  be.push_back(k);
  be.push_back(m);
  Tensor out = bmm(a3.expand(ae).reshape({count, n, k}), b3.expand(be).reshape({count, k, m}));
  DimVector shape(batch);
  if (a.dim() > 1) shape.push_back(n);
  if (b.dim() > 1) shape.push_back(m);
  return out.view(shape);
}

// beta * input + alpha * product; beta = 0 ignores input entirely (NaN in it does not show).
Tensor scaled_sum(const Tensor& input, const Tensor& product, const Scalar& beta,
                  const Scalar& alpha) {
  const Tensor p = alpha.to_double() == 1.0 ? product : product * alpha;
  if (beta.to_double() == 0.0) return p + zeros_like(input);  // still broadcasts against input
  return beta.to_double() == 1.0 ? input + p : input * beta + p;
}

Tensor addmm_kernel(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta,
                    const Scalar& alpha) {
  return scaled_sum(input, mm(m1, m2), beta, alpha);
}

Tensor baddbmm_kernel(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta,
                      const Scalar& alpha) {
  return scaled_sum(input, bmm(b1, b2), beta, alpha);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("mm", mm_kernel);
  m.impl("dot", dot_kernel);
  m.impl("mv", mv_kernel);
  m.impl("outer", outer_kernel);
  m.impl("matmul", matmul_kernel);
  m.impl("addmm", addmm_kernel);
  m.impl("baddbmm", baddbmm_kernel);
}

}  // namespace xten
