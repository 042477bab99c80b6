// XPU mm and bmm (linalg.cl: 16x16 tiles in local memory), with the CPU kernels' checks
// (kernels/cpu/linalg.cpp). matmul, addmm, linear, ... are composites over these.
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include "xpu_ops.h"

namespace xten::xpu {
namespace {

constexpr int64_t kTile = 16;

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b, const char* an,
                      const char* bn) {
  XTEN_CHECK(a.dtype() == b.dtype(), TypeError, op,
             "expected {} and {} to have the same dtype, but got {} and {}", an, bn,
             to_string(a.dtype()), to_string(b.dtype()));
}

// a: [B, n, k], b: [B, k, m] -> [B, n, m]
Tensor batched(const char* op, const Tensor& a, const Tensor& b) {
  const int64_t batch = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
  Tensor out = empty({batch, n, m}, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  const int64_t tiles_n = (n + kTile - 1) / kTile, tiles_m = (m + kTile - 1) / kTile;
  Kernel& kern = get_kernel(device_of(a), op, family_for("linalg", {a.dtype()}),
                            std::string("bmm_") + dtype_tag(a.dtype()));
  launch_groups(stream_of(a), kern, static_cast<uint64_t>(batch * tiles_n * tiles_m),
                out.data_ptr(), a.data_ptr(), b.data_ptr(), n, k, m, tiles_n, tiles_m, a.stride(0),
                a.stride(1), a.stride(2), b.stride(0), b.stride(1), b.stride(2));
  return out;
}

Tensor mm_kernel(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() == 2 && b.dim() == 2, ValueError, "mm",
             "expected 2-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  XTEN_CHECK(a.size(1) == b.size(0), ValueError, "mm",
             "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", a.size(0), a.size(1),
             b.size(0), b.size(1));
  check_same_dtype("mm", a, b, "mat1", "mat2");
  check_same_device("mm", {&a, &b});
  XTEN_CHECK(a.dtype() != kBool, NotImplementedError, "mm", "not implemented for dtype Bool");
  return batched("mm", a.unsqueeze(0), b.unsqueeze(0)).squeeze(0);
}

Tensor bmm_kernel(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() == 3 && b.dim() == 3, ValueError, "bmm",
             "expected 3-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  XTEN_CHECK(a.size(0) == b.size(0), ValueError, "bmm", "batch sizes differ: {} and {}", a.size(0),
             b.size(0));
  XTEN_CHECK(a.size(2) == b.size(1), ValueError, "bmm",
             "batch1 and batch2 shapes cannot be multiplied ({}x{}x{} and {}x{}x{})", a.size(0),
             a.size(1), a.size(2), b.size(0), b.size(1), b.size(2));
  check_same_dtype("bmm", a, b, "batch1", "batch2");
  check_same_device("bmm", {&a, &b});
  XTEN_CHECK(a.dtype() != kBool, NotImplementedError, "bmm", "not implemented for dtype Bool");
  return batched("bmm", a, b);
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("mm", mm_kernel);
  m.impl("bmm", bmm_kernel);
}

}  // namespace xten::xpu
