// The multi-tensor ops of the optimizers and GradScaler on the CPU (docs/optim.md, "One
// kernel for many tensors"): the tensors of a call are cut into chunks of kChunk elements, and
// one parallel loop runs over all the chunks of all the tensors, so a model's hundred small
// gradients make one loop of balanced work rather than a hundred small ones.
#include <atomic>
#include <cmath>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>

namespace xten::cpu {
namespace {

constexpr int64_t kChunk = 1 << 16;

struct Chunk {
  size_t tensor;
  int64_t begin, end;
};

std::vector<Chunk> chunks_of(const std::vector<Tensor>& list) {
  std::vector<Chunk> out;
  for (size_t i = 0; i < list.size(); ++i)
    for (int64_t b = 0; b < list[i].numel(); b += kChunk)
      out.push_back({i, b, std::min(list[i].numel(), b + kChunk)});
  return out;
}

void amp_unscale_kernel(const std::vector<Tensor>& self, const Tensor& found_inf,
                        const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_amp_unscale(self, found_inf, inv_scale);
  const float inv = *static_cast<const float*>(inv_scale.data_ptr());
  const std::vector<Chunk> chunks = chunks_of(self);
  std::atomic<bool> bad{false};
  parallel_for(static_cast<int64_t>(chunks.size()), 1, [&](int64_t cb, int64_t ce) {
    bool here = false;
    for (int64_t c = cb; c < ce; ++c) {
      const Chunk& ch = chunks[static_cast<size_t>(c)];
      const Tensor& t = self[ch.tensor];
      visit_dtype<dtypes::kFloating>(op, t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using M = opmath_t<T>;
        T* p = static_cast<T*>(t.data_ptr());
        for (int64_t i = ch.begin; i < ch.end; ++i) {
          const M v = static_cast<M>(p[i]);
          here |= !std::isfinite(v);  // the value as it came, as PyTorch checks it
          p[i] = static_cast<T>(v * static_cast<M>(inv));
        }
      });
    }
    if (here) bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) *static_cast<float*>(found_inf.data_ptr()) = 1.0f;
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", amp_unscale_kernel);
}

}  // namespace xten::cpu
