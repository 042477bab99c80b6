// libtorch's adapter for ../sweep_cases.h (the op sweep, interleaved_sweep.cpp), in a translation
// unit of its own: the factories, dtypes, autograd and the ops whose calls are spelled apart.
#include <torch/torch.h>

#include "../sweep_cases.h"

namespace {
struct TorchSweepApi {
  using Tensor = torch::Tensor;
  using Dtype = c10::ScalarType;
  static Dtype f32() { return torch::kFloat; }
  static Dtype bf16() { return torch::kBFloat16; }
  static Dtype f16() { return torch::kHalf; }
  static void seed(uint64_t s) { torch::manual_seed(s); }
  static Tensor randn(at::IntArrayRef size, Dtype d) { return torch::randn(size).to(d); }
  static Tensor randn_like(const Tensor& t) { return torch::randn_like(t); }
  static Tensor draw_rand(at::IntArrayRef size, Dtype d) {
    return torch::rand(size, torch::TensorOptions().dtype(d));
  }
  static Tensor draw_randn(at::IntArrayRef size, Dtype d) {
    return torch::randn(size, torch::TensorOptions().dtype(d));
  }
  static Tensor draw_randint(int64_t high, at::IntArrayRef size) {
    return torch::randint(high, size, torch::TensorOptions().dtype(torch::kLong));
  }
  static Tensor randint(int64_t high, at::IntArrayRef size) {
    return torch::randint(high, size, torch::TensorOptions().dtype(torch::kLong));
  }
  static Tensor zeros_like(const Tensor& t) { return torch::zeros_like(t); }
  static Tensor leaf(const Tensor& t) { return t.detach().requires_grad_(); }
  static void grad(const Tensor& y, const std::vector<Tensor>& xs, const Tensor& g) {
    (void)torch::autograd::grad({y}, xs, {g}, /*retain_graph=*/true);
  }
  static void add_(Tensor& z, const Tensor& y) { z.add_(y); }
  static Tensor clamp(const Tensor& x, double lo, double hi) { return torch::clamp(x, lo, hi); }
  static Tensor masked_fill(const Tensor& x, const Tensor& m, double v) {
    return x.masked_fill(m, v);
  }
  static Tensor sum(const Tensor& x, int64_t d) { return x.sum(at::IntArrayRef{d}); }
  static Tensor mean(const Tensor& x, int64_t d) { return x.mean(at::IntArrayRef{d}); }
  static Tensor amax(const Tensor& x, int64_t d) { return torch::amax(x, at::IntArrayRef{d}); }
  static std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t d) { return torch::max(x, d); }
  static Tensor argmax(const Tensor& x, int64_t d) { return torch::argmax(x, d); }
  static Tensor amin(const Tensor& x, int64_t d) { return torch::amin(x, at::IntArrayRef{d}); }
  static Tensor argmin(const Tensor& x, int64_t d) { return torch::argmin(x, d); }
  static Tensor upsample_bilinear(const Tensor& x, int64_t size) {
    const std::vector<int64_t> out{size, size};
    return at::upsample_bilinear2d(x, at::IntArrayRef(out), /*align_corners=*/false);
  }
  static Tensor conv_transpose2d_s2(const Tensor& x, const Tensor& w) {
    const std::vector<int64_t> stride{2, 2};
    return torch::conv_transpose2d(x, w, {}, at::IntArrayRef(stride));
  }
  static Tensor var(const Tensor& x, int64_t d) {
    return torch::var(x, at::IntArrayRef{d}, /*unbiased=*/true, /*keepdim=*/false);
  }
  static Tensor logsumexp(const Tensor& x, int64_t d) {
    return torch::logsumexp(x, at::IntArrayRef{d});
  }
  static Tensor batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                           const Tensor& rv, bool training) {
    return torch::batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5, false);
  }
  static Tensor sdpa_causal(const Tensor& q, const Tensor& k, const Tensor& v) {
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  }
  static Tensor cross_entropy(const Tensor& x, const Tensor& t) {
    return torch::cross_entropy_loss(x, t);
  }
  static Tensor nll_loss(const Tensor& x, const Tensor& t) { return torch::nll_loss(x, t); }
  static std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k) { return torch::topk(x, k); }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t d) { return torch::cat(ts, d); }
  static Tensor stack(const std::vector<Tensor>& ts, int64_t d) { return torch::stack(ts, d); }
  static std::tuple<Tensor, Tensor> sort(const Tensor& x) { return torch::sort(x, -1); }
};
}  // namespace

extern "C" void set_libtorch_threads(int threads) {
  at::set_num_threads(threads);
}

extern "C" std::vector<SweepCase> libtorch_sweep_cases() {
  return sweep_cases<TorchSweepApi>();
}
