// Matrix products on CPU: bmm runs oneDNN's matmul (kernels/cpu/onednn.cpp) or, where oneDNN
// does not take the case or Eigen is chosen (core/cpu_backend.h), Eigen's GEMM (multi-threaded
// through OpenMP); the rest of the family (mm, matmul, addmm, baddbmm, linear, dot, mv, outer) is
// written with it in kernels/composite/linalg.cpp. Half and BFloat16 multiply in float: inputs are
// widened, the product accumulates in float, and the result is rounded once.
#include <Eigen/Core>

#include <xten/kernels/cpu/capability.h>
#include <xten/core/cpu_backend.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/onednn.h>

namespace xten::cpu {
namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// out[n, m] = a[n, k] @ b[k, m], for 2-D tensors whose rows or columns are contiguous; `out`
// is a contiguous row-major buffer. Eigen picks the kernel for each operand's layout.
template <class T>
void gemm(const Tensor& a, const Tensor& b, T* out) {
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  Eigen::Map<RowMat<T>> c(out, n, m);
  if (k == 0) {
    c.setZero();
    return;
  }
  auto run = [&](const auto& A) {
    if (b.stride(1) == 1 && (b.stride(0) == m || m == 1))
      c.noalias() = A * Eigen::Map<const RowMat<T>>(static_cast<const T*>(b.data_ptr()), k, m);
    else
      c.noalias() = A * Eigen::Map<const ColMat<T>>(static_cast<const T*>(b.data_ptr()), k, m);
  };
  if (a.stride(1) == 1 && (a.stride(0) == k || n == 1))
    run(Eigen::Map<const RowMat<T>>(static_cast<const T*>(a.data_ptr()), n, k));
  else
    run(Eigen::Map<const ColMat<T>>(static_cast<const T*>(a.data_ptr()), n, k));
}

// A 2-D operand in a layout gemm() maps directly: row-major or column-major and dense.
Tensor gemm_ready(const Tensor& t, ScalarType compute) {
  Tensor x = t.to(compute);
  const bool row_major = x.stride(1) == 1 && (x.stride(0) == x.size(1) || x.size(0) == 1);
  const bool col_major = x.stride(0) == 1 && (x.stride(1) == x.size(0) || x.size(1) == 1);
  return row_major || col_major ? x : x.contiguous();
}

// A 3-D operand oneDNN reads as it is: each matrix row- or column-major and dense, the
// matrices apart (no broadcast batch); otherwise a contiguous copy.
Tensor matmul_ready(const Tensor& t) {
  const int64_t r = t.size(1), c = t.size(2);
  const bool row_major = t.stride(2) == 1 && (t.stride(1) == c || r == 1);
  const bool col_major = t.stride(1) == 1 && (t.stride(2) == r || c == 1);
  const bool apart = t.size(0) == 1 || t.stride(0) >= r * c;
  return (row_major || col_major) && apart ? t : t.contiguous();
}

// Computes a batch of products (a: [B, n, k], b: [B, k, m]) into out [B, n, m]: oneDNN where
// it takes the case (core/cpu_backend.h), else Eigen.
Tensor batched(const char* op, const Tensor& a, const Tensor& b) {
  const ScalarType dtype = a.dtype();
  if (cpu_gemm() == CpuGemm::OneDnn) {
    Tensor out = empty_tensor({a.size(0), a.size(1), b.size(2)}, dtype, a.device());
    if (onednn::matmul(matmul_ready(a), matmul_ready(b), out)) {
      count_cpu_gemm(CpuGemm::OneDnn);
      return out;
    }
  }
  count_cpu_gemm(CpuGemm::Eigen);
  const ScalarType compute = dtype == kHalf || dtype == kBFloat16 ? kFloat : dtype;
  const int64_t batch = a.size(0), n = a.size(1), m = b.size(2);
  Tensor out = empty_tensor({batch, n, m}, compute, a.device());
  Eigen::setNbThreads(get_num_threads());
  visit_dtype<dtypes::kAllButBool & ~dtype_bit(kHalf) & ~dtype_bit(kBFloat16)>(
      op, compute, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* dst = static_cast<T*>(out.data_ptr());
        auto one = [&](int64_t i) {
          gemm<T>(gemm_ready(a.select(0, i), compute), gemm_ready(b.select(0, i), compute),
                  dst + i * n * m);
        };
        // Many small products: one per thread (Eigen runs single-threaded inside a parallel
        // region); few large ones: one at a time, each threaded by Eigen.
        if (batch > 1 && n * m * a.size(2) < (int64_t{1} << 18))
          parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) one(i);
          });
        else
          for (int64_t i = 0; i < batch; ++i) one(i);
      });
  return compute == dtype ? out : out.to(dtype);
}

Tensor bmm_kernel(const Tensor& a, const Tensor& b) {
  check_bmm(a, b);
  return batched("bmm", a, b);
}

}  // namespace

XTEN_CPU_KERNELS(linalg, m) {
  m.impl("bmm", bmm_kernel);
}

}  // namespace xten::cpu
