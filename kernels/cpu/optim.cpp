// The multi-tensor ops of the optimizers and GradScaler on the CPU (docs/optim.md, "One
// kernel for many tensors"): the tensors of a call are cut into chunks of equal size, and one
// parallel loop runs over all the chunks of all the tensors, so a model's hundred small
// gradients make one loop of balanced work rather than a hundred small ones.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>

namespace xten::cpu {
namespace {

// Elements per block of the fused steps' inner loops (a few KiB of opmath on the stack).
constexpr int64_t kBlock = 512;
// Chunk sizes: between these, a multiple of kBlock.
constexpr int64_t kMinChunk = 8 * kBlock, kMaxChunk = 1 << 16;
// Elements a thread must get before a loop takes another one: these loops touch three to five
// arrays per element, so a quarter of the elementwise grain.
constexpr int64_t kElementsPerThread = kParallelGrain / 4;

struct Chunk {
  size_t tensor;
  int64_t begin, end;
};

// The chunk size for a call of `total` elements on `threads` threads: about four chunks per
// thread, so that a call whose elements sit in a few large tensors (an MLP's 784 x 256 weight
// holds 98% of them) still spreads over every thread. With a fixed 65,536 the MLP step's
// 203k parameters made 4 large chunks: 4 of 16 threads did the work (116 us; 39-55 us now).
int64_t chunk_size(int64_t total, int threads) {
  const int64_t per = (total + 4 * threads - 1) / (4 * threads);
  const int64_t rounded = (per + kBlock - 1) / kBlock * kBlock;
  return std::clamp(rounded, kMinChunk, kMaxChunk);
}

std::vector<Chunk> chunks_of(const std::vector<Tensor>& list, int64_t chunk) {
  std::vector<Chunk> out;
  for (size_t i = 0; i < list.size(); ++i)
    for (int64_t b = 0; b < list[i].numel(); b += chunk)
      out.push_back({i, b, std::min(list[i].numel(), b + chunk)});
  return out;
}

// Runs f(chunk, T*) for every chunk of `self` in one parallel region, T the chunk's tensor's
// C++ type. On a team, a tensor of two or more dims with a row and kMinChunk elements for every
// thread is cut at the team's owned_rows, and thread t updates its rows: the rows its product
// kernels read and write (Note [Rows to threads], core/parallel.cpp). The other tensors are cut
// into chunks that go to the threads with the least work so far.
template <class F>
void for_each_chunk(const char* op, const std::vector<Tensor>& self, F&& f) {
  auto run = [&](const Chunk& ch) {
    visit_dtype<dtypes::kFloating>(op, self[ch.tensor].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      f(ch, static_cast<T*>(nullptr));
    });
  };
  int64_t total = 0;
  for (const Tensor& t : self) total += t.numel();
  const int team = get_num_threads();
  const int64_t chunk = chunk_size(total, team);
  if (team == 1 || total <= 2 * kElementsPerThread) {
    for (const Chunk& ch : chunks_of(self, chunk)) run(ch);
    return;
  }
  if (!owned_rows_enabled()) {  // one loop over all the chunks
    const std::vector<Chunk> chunks = chunks_of(self, chunk);
    const int64_t grain = std::max<int64_t>(1, kElementsPerThread / chunk);
    parallel_for(static_cast<int64_t>(chunks.size()), grain, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) run(chunks[static_cast<size_t>(c)]);
    });
    return;
  }
  std::vector<std::vector<Chunk>> work(static_cast<size_t>(team));
  std::vector<int64_t> load(static_cast<size_t>(team), 0);
  for (size_t i = 0; i < self.size(); ++i) {
    const Tensor& t = self[i];
    if (t.dim() >= 2 && t.size(0) >= team && t.numel() >= team * kMinChunk) {
      const int64_t row = t.numel() / t.size(0);
      for (int th = 0; th < team; ++th) {
        const RowRange r = owned_rows(t.size(0), th, team);
        work[static_cast<size_t>(th)].push_back({i, r.begin * row, r.end * row});
        load[static_cast<size_t>(th)] += (r.end - r.begin) * row;
      }
    } else {
      for (int64_t b = 0; b < t.numel(); b += chunk) {
        const int64_t e = std::min(t.numel(), b + chunk);
        const size_t th =
            static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        work[th].push_back({i, b, e});
        load[th] += e - b;
      }
    }
  }
  parallel_on_team([&](int t, int threads) {
    for (int l = t; l < team; l += threads)
      for (const Chunk& ch : work[static_cast<size_t>(l)]) run(ch);
  });
}

void amp_unscale_kernel(const std::vector<Tensor>& self, const Tensor& found_inf,
                        const Tensor& inv_scale) {
  check_amp_unscale(self, found_inf, inv_scale);
  const float inv = *static_cast<const float*>(inv_scale.data_ptr());
  std::atomic<bool> bad{false};
  for_each_chunk("_amp_foreach_non_finite_check_and_unscale_", self,
                 [&](const Chunk& ch, auto* tag) {
                   using T = std::remove_pointer_t<decltype(tag)>;
                   using M = opmath_t<T>;
                   T* p = static_cast<T*>(self[ch.tensor].data_ptr());
                   bool here = false;
                   for (int64_t i = ch.begin; i < ch.end; ++i) {
                     const M v = static_cast<M>(p[i]);
                     here |= !std::isfinite(v);  // the value as it came, as PyTorch checks it
                     p[i] = static_cast<T>(v * static_cast<M>(inv));
                   }
                   if (here) bad.store(true, std::memory_order_relaxed);
                 });
  if (bad.load()) *static_cast<float*>(found_inf.data_ptr()) = 1.0f;
}

// GradScaler's scale update (_amp_update_scale_, PyTorch's rule): one element each.
void amp_update_scale_kernel(const Tensor& self, const Tensor& growth_tracker,
                             const Tensor& found_inf, double growth_factor, double backoff_factor,
                             int64_t growth_interval) {
  check_amp_update_scale(self, growth_tracker, found_inf, growth_factor, backoff_factor,
                         growth_interval);
  float& scale = *static_cast<float*>(self.data_ptr());
  int32_t& tracker = *static_cast<int32_t*>(growth_tracker.data_ptr());
  if (*static_cast<const float*>(found_inf.data_ptr()) != 0) {
    scale = static_cast<float>(scale * backoff_factor);
    tracker = 0;
  } else if (tracker + 1 >= growth_interval) {
    const float grown = static_cast<float>(scale * growth_factor);
    if (std::isfinite(grown)) scale = grown;
    tracker = 0;
  } else {
    ++tracker;
  }
}

// Whether a fused step is skipped: found_inf (checked) given and not 0.
bool flag_set(const std::optional<Tensor>& found_inf) {
  return found_inf && *static_cast<const float*>(found_inf->data_ptr()) != 0;
}

template <class T>
T* data(const std::vector<Tensor>& list, size_t i) {
  return static_cast<T*>(list[i].data_ptr());
}

// d = sign * g, plus wd * p (rounded to T, as the per-tensor loop's update_grad stores it)
// when wd is not 0: the gradient that SGD, Adam and RMSprop update with.
template <class T, class M>
void decayed_grad(M* d, const T* g, const T* p, int64_t n, M sign, M wd) {
  if (wd != 0) {
    for (int64_t i = 0; i < n; ++i)
      d[i] =
          static_cast<M>(static_cast<T>(sign * static_cast<M>(g[i]) + static_cast<M>(p[i]) * wd));
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = sign * static_cast<M>(g[i]);
  }
}

// The update of optim::SGD's per-tensor loop (optim/optimizer.cpp), element by element in
// opmath, with the loop's roundings where it stores (buffer, parameter).
void fused_sgd_kernel(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                      const std::vector<Tensor>& bufs, double weight_decay, double momentum,
                      double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
                      const std::optional<Tensor>& found_inf) {
  check_found_inf("_fused_sgd_", found_inf, check_fused_sgd(self, grads, bufs, momentum));
  if (flag_set(found_inf)) return;
  for_each_chunk("_fused_sgd_", self, [&](const Chunk& ch, auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    using M = opmath_t<T>;
    T* p = data<T>(self, ch.tensor);
    const T* g = data<T>(grads, ch.tensor);
    T* buf = momentum != 0 ? data<T>(bufs, ch.tensor) : nullptr;
    const M wd = static_cast<M>(weight_decay), mom = static_cast<M>(momentum),
            damp = static_cast<M>(1 - dampening), rate = static_cast<M>(lr),
            sign = maximize ? M(-1) : M(1);
    // Blocks of kBlock elements, each step a loop without branches that the compiler
    // vectorizes (one loop with the options tested per element ran at ~1 ns per element).
    M d[kBlock];
    for (int64_t b0 = ch.begin; b0 < ch.end; b0 += kBlock) {
      const int64_t n = std::min<int64_t>(kBlock, ch.end - b0);
      T* pp = p + b0;
      const T* gg = g + b0;
      decayed_grad(d, gg, pp, n, sign, wd);
      if (buf) {
        T* bb = buf + b0;
        if (is_first_step) {
          for (int64_t i = 0; i < n; ++i) bb[i] = static_cast<T>(d[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            bb[i] = static_cast<T>(static_cast<M>(static_cast<T>(static_cast<M>(bb[i]) * mom)) +
                                   damp * d[i]);
        }
        if (nesterov) {
          for (int64_t i = 0; i < n; ++i)
            d[i] = d[i] + static_cast<M>(static_cast<T>(static_cast<M>(bb[i]) * mom));
        } else {
          for (int64_t i = 0; i < n; ++i) d[i] = static_cast<M>(bb[i]);
        }
      }
      for (int64_t i = 0; i < n; ++i) pp[i] = static_cast<T>(static_cast<M>(pp[i]) - rate * d[i]);
    }
  });
}

// The update of optim::Adam's per-tensor loop (AdamW with decoupled), element by element in
// opmath; the bias corrections per tensor from its step count.
void fused_adam_kernel(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                       const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                       const std::vector<Tensor>& max_exp_avg_sqs, const Tensor& state_steps,
                       double lr, double beta1, double beta2, double weight_decay, double eps,
                       bool amsgrad, bool maximize, bool decoupled,
                       const std::optional<Tensor>& found_inf) {
  check_fused_adam(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
                   found_inf);  // found_inf's checks among them
  if (flag_set(found_inf)) return;
  const Tensor steps = state_steps.contiguous();
  const double* step = static_cast<const double*>(steps.data_ptr());
  for (size_t k = 0; k < self.size(); ++k)
    XTEN_CHECK(step[k] >= 1, ValueError, "_fused_adam_",
               "state_steps[{}] is {} and the step is not skipped (found_inf is 0): steps count "
               "from 1",
               k, step[k]);
  for_each_chunk("_fused_adam_", self, [&](const Chunk& ch, auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    using M = opmath_t<T>;
    const size_t k = ch.tensor;
    T* p = data<T>(self, k);
    const T* g = data<T>(grads, k);
    T* m = data<T>(exp_avgs, k);
    T* v = data<T>(exp_avg_sqs, k);
    T* vmax = amsgrad ? data<T>(max_exp_avg_sqs, k) : nullptr;
    const double bias1 = 1 - std::pow(beta1, step[k]), bias2 = 1 - std::pow(beta2, step[k]);
    const M b1 = static_cast<M>(beta1), b2 = static_cast<M>(beta2), c1 = static_cast<M>(1 - beta1),
            c2 = static_cast<M>(1 - beta2), wd = static_cast<M>(weight_decay),
            decay = static_cast<M>(1 - lr * weight_decay), e = static_cast<M>(eps),
            bias2_sqrt = static_cast<M>(std::sqrt(bias2)), step_size = static_cast<M>(lr / bias1);
    const M sign = maximize ? M(-1) : M(1);
    // In blocks of branch-free loops, as the SGD step (vectorized).
    M d[kBlock], vs[kBlock];
    for (int64_t b0 = ch.begin; b0 < ch.end; b0 += kBlock) {
      const int64_t n = std::min<int64_t>(kBlock, ch.end - b0);
      T* pp = p + b0;
      T* mm = m + b0;
      T* vv = v + b0;
      const T* gg = g + b0;
      decayed_grad(d, gg, pp, n, sign, decoupled ? M(0) : wd);
      if (weight_decay != 0 && decoupled)
        for (int64_t i = 0; i < n; ++i) pp[i] = static_cast<T>(static_cast<M>(pp[i]) * decay);
      for (int64_t i = 0; i < n; ++i)
        mm[i] =
            static_cast<T>(static_cast<M>(static_cast<T>(static_cast<M>(mm[i]) * b1)) + c1 * d[i]);
      for (int64_t i = 0; i < n; ++i) {
        const M sq = static_cast<M>(static_cast<T>(d[i] * d[i]));
        vv[i] =
            static_cast<T>(static_cast<M>(static_cast<T>(static_cast<M>(vv[i]) * b2)) + c2 * sq);
        vs[i] = static_cast<M>(vv[i]);
      }
      if (vmax) {
        T* vm = vmax + b0;
        for (int64_t i = 0; i < n; ++i) {
          vs[i] = std::max(static_cast<M>(vm[i]), vs[i]);
          vm[i] = static_cast<T>(vs[i]);
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        const M denom = static_cast<M>(
            static_cast<T>(static_cast<M>(static_cast<T>(std::sqrt(vs[i]))) / bias2_sqrt) + e);
        const M upd = static_cast<M>(
            static_cast<T>(static_cast<M>(mm[i]) / static_cast<M>(static_cast<T>(denom))));
        pp[i] = static_cast<T>(static_cast<M>(pp[i]) - step_size * upd);
      }
    }
  });
}

// The update of optim::RMSprop's per-tensor loop, element by element in opmath.
void fused_rmsprop_kernel(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                          const std::vector<Tensor>& square_avgs,
                          const std::vector<Tensor>& grad_avgs, const std::vector<Tensor>& bufs,
                          double lr, double alpha, double eps, double weight_decay, double momentum,
                          bool centered, bool maximize, const std::optional<Tensor>& found_inf) {
  check_found_inf(
      "_fused_rmsprop_", found_inf,
      check_fused_rmsprop(self, grads, square_avgs, grad_avgs, bufs, centered, momentum));
  if (flag_set(found_inf)) return;
  for_each_chunk("_fused_rmsprop_", self, [&](const Chunk& ch, auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    using M = opmath_t<T>;
    const size_t k = ch.tensor;
    T* p = data<T>(self, k);
    const T* g = data<T>(grads, k);
    T* sq = data<T>(square_avgs, k);
    T* ga = centered ? data<T>(grad_avgs, k) : nullptr;
    T* buf = momentum > 0 ? data<T>(bufs, k) : nullptr;
    const M a = static_cast<M>(alpha), c = static_cast<M>(1 - alpha), e = static_cast<M>(eps),
            wd = static_cast<M>(weight_decay), mom = static_cast<M>(momentum),
            rate = static_cast<M>(lr);
    const M sign = maximize ? M(-1) : M(1);
    // In blocks of branch-free loops, as the SGD step (vectorized).
    M d[kBlock], avg[kBlock];
    for (int64_t b0 = ch.begin; b0 < ch.end; b0 += kBlock) {
      const int64_t n = std::min<int64_t>(kBlock, ch.end - b0);
      T* pp = p + b0;
      T* ss = sq + b0;
      const T* gg = g + b0;
      decayed_grad(d, gg, pp, n, sign, wd);
      for (int64_t i = 0; i < n; ++i)
        ss[i] = static_cast<T>(static_cast<M>(ss[i]) * a + c * (d[i] * d[i]));
      if (ga) {
        T* aa = ga + b0;
        for (int64_t i = 0; i < n; ++i) {
          aa[i] = static_cast<T>(static_cast<M>(aa[i]) * a + c * d[i]);
          const M mean = static_cast<M>(aa[i]);
          avg[i] = std::sqrt(static_cast<M>(ss[i]) - mean * mean) + e;
        }
      } else {
        for (int64_t i = 0; i < n; ++i) avg[i] = std::sqrt(static_cast<M>(ss[i])) + e;
      }
      if (buf) {
        T* bb = buf + b0;
        for (int64_t i = 0; i < n; ++i) {
          bb[i] = static_cast<T>(static_cast<M>(bb[i]) * mom + d[i] / avg[i]);
          pp[i] = static_cast<T>(static_cast<M>(pp[i]) - rate * static_cast<M>(bb[i]));
        }
      } else {
        for (int64_t i = 0; i < n; ++i)
          pp[i] = static_cast<T>(static_cast<M>(pp[i]) - rate * (d[i] / avg[i]));
      }
    }
  });
}

}  // namespace

XTEN_CPU_KERNELS(optim, m) {
  m.impl("_fused_rmsprop_", fused_rmsprop_kernel);
  m.impl("_amp_foreach_non_finite_check_and_unscale_", amp_unscale_kernel);
  m.impl("_fused_sgd_", fused_sgd_kernel);
  m.impl("_fused_adam_", fused_adam_kernel);
  m.impl("_amp_update_scale_", amp_update_scale_kernel);
}

}  // namespace xten::cpu
