// XPU bmm (linalg.cl: row strips on vector accumulators where B's and out's rows are contiguous,
// else 64x64 output tiles staged in local memory), with
// the checks shared with the CPU (kernels/common/op_checks.h). mm, matmul, addmm, ... are
// composites over it (mm is a batch of one); linear and _linear_relu run the product, the bias
// and the relu as three launches (kernels/common/linear.h: no fused XPU kernel yet).
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/linear.h>
#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

constexpr int64_t kTile = 64;                       // output tile per work-group (linalg.cl)
constexpr int64_t kStripRows = 8, kStripCols = 32;  // a work-item's block (Note [Row strips])
constexpr int64_t kStripRowsForACopy = 32;  // fewer rows of A: the tiled kernel reads B as it lies

}  // namespace

void bmm_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t batch = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
  if (out.numel() == 0) return;
  const ScalarType t = a.dtype();
  auto rows = [](const Tensor& x) { return x.size(2) == 1 || x.stride(2) == 1; };
  if ((t == kFloat || t == kBFloat16 || t == kHalf) && rows(out) &&
      (rows(b) || n >= kStripRowsForACopy)) {
    // Note [Row strips] (linalg.cl): 8 x 32 blocks on float16 accumulators. A B with other
    // strides (linear's weight^T) is copied to rows first: a copy of k x m elements against a
    // product of n x k x m (mm [512, 1024] @ w^T [1024, 1024] on the VM: 119 ms tiled, 9-17 ms
    // copy + 28 ms strips).
    if (!rows(b)) {
      bmm_into(op, out, a, b.contiguous());
      return;
    }
    const int64_t blocks_n = (n + kStripRows - 1) / kStripRows;
    const int64_t blocks_m = (m + kStripCols - 1) / kStripCols;
    const int64_t total = batch * blocks_n * blocks_m;
    Kernel& kern = get_kernel(device_of(a), op, family_for("linalg", {t}),
                              std::string("bmm_strip_") + dtype_tag(t));
    launch(stream_of(a), kern, total, out.data_ptr(), a.data_ptr(), b.data_ptr(), n, k, m, blocks_n,
           blocks_m, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1), out.stride(0),
           out.stride(1), total);
    return;
  }
  const int64_t tiles_n = (n + kTile - 1) / kTile, tiles_m = (m + kTile - 1) / kTile;
  Kernel& kern = get_kernel(device_of(a), op, family_for("linalg", {a.dtype()}),
                            std::string("bmm_") + dtype_tag(a.dtype()));
  launch_groups(stream_of(a), kern, static_cast<uint64_t>(batch * tiles_n * tiles_m),
                out.data_ptr(), a.data_ptr(), b.data_ptr(), n, k, m, tiles_n, tiles_m, a.stride(0),
                a.stride(1), a.stride(2), b.stride(0), b.stride(1), b.stride(2), out.stride(0),
                out.stride(1), out.stride(2));
}

namespace {

// a: [B, n, k], b: [B, k, m] -> [B, n, m]
Tensor batched(const char* op, const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, a.dtype(), a.device());
  bmm_into(op, out, a, b);
  return out;
}

Tensor bmm_kernel(const Tensor& a, const Tensor& b) {
  check_bmm(a, b);
  return batched("bmm", a, b);
}

Tensor linear_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_linear("linear", input, weight, bias);
  return linear_unfused(input, weight, bias, false);
}

Tensor linear_relu_kernel(const Tensor& input, const Tensor& weight,
                          const std::optional<Tensor>& bias) {
  check_linear("_linear_relu", input, weight, bias);
  return linear_unfused(input, weight, bias, true);
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("bmm", bmm_kernel);
  m.impl("linear", linear_kernel);
  m.impl("_linear_relu", linear_relu_kernel);
}

}  // namespace xten::xpu
