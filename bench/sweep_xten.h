#pragma once
// xten's adapter for sweep_cases.h (bench_sweep, reference/interleaved_sweep.cpp): the factories,
// dtypes, autograd and the ops whose calls are not spelled as libtorch spells them.
#include <tuple>
#include <vector>

#include <xten/xten.h>

#include "sweep_cases.h"

// The device the factories make their tensors on (bench_sweep's XPU half sets it to xpu:0).
inline xten::Device& sweep_device() {
  static xten::Device d(xten::kCPU);
  return d;
}

struct XtenSweepApi {
  using Tensor = xten::Tensor;
  using Dtype = xten::ScalarType;
  static Dtype f32() { return xten::kFloat; }
  static Dtype bf16() { return xten::kBFloat16; }
  static Dtype f16() { return xten::kHalf; }
  static void seed(uint64_t s) { xten::manual_seed(s); }
  static Tensor randn(xten::IntArrayRef size, Dtype d) {
    return xten::randn(size).to(d).to(sweep_device());
  }
  static Tensor randn_like(const Tensor& t) { return xten::randn_like(t); }
  // The random factories as timed cases: drawn in the dtype on the device.
  static Tensor draw_rand(xten::IntArrayRef size, Dtype d) {
    return xten::rand(size, xten::TensorOptions(d, sweep_device()));
  }
  static Tensor draw_randn(xten::IntArrayRef size, Dtype d) {
    return xten::randn(size, xten::TensorOptions(d, sweep_device()));
  }
  static Tensor draw_randint(int64_t high, xten::IntArrayRef size) {
    return xten::randint(high, size, xten::TensorOptions(xten::kLong, sweep_device()));
  }
  static Tensor randint(int64_t high, xten::IntArrayRef size) {
    return xten::randint(high, size).to(sweep_device());
  }
  static Tensor zeros_like(const Tensor& t) { return xten::zeros_like(t); }
  static Tensor leaf(const Tensor& t) { return t.detach().requires_grad_(); }
  static void grad(const Tensor& y, const std::vector<Tensor>& xs, const Tensor& g) {
    (void)xten::autograd::grad({y}, xs, {g}, /*retain_graph=*/true);
  }
  static void add_(Tensor& z, const Tensor& y) { xten::add_(z, y); }
  static Tensor clamp(const Tensor& x, double lo, double hi) { return xten::clamp(x, lo, hi); }
  static Tensor masked_fill(const Tensor& x, const Tensor& m, double v) {
    return xten::masked_fill(x, m, v);
  }
  static Tensor sum(const Tensor& x, int64_t d) { return xten::sum(x, {d}); }
  static Tensor mean(const Tensor& x, int64_t d) { return xten::mean(x, {d}); }
  static Tensor amax(const Tensor& x, int64_t d) { return xten::amax(x, {d}); }
  static std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t d) { return xten::max(x, d); }
  static Tensor argmax(const Tensor& x, int64_t d) { return xten::argmax(x, d); }
  static Tensor amin(const Tensor& x, int64_t d) { return xten::amin(x, {d}); }
  static Tensor argmin(const Tensor& x, int64_t d) { return xten::argmin(x, d); }
  static Tensor upsample_bilinear(const Tensor& x, int64_t size) {
    return xten::upsample_bilinear2d(x, {size, size});
  }
  static Tensor conv_transpose2d_s2(const Tensor& x, const Tensor& w) {
    return xten::conv_transpose2d(x, w, std::nullopt, {2, 2});
  }
  static Tensor var(const Tensor& x, int64_t d) { return xten::var(x, {d}); }
  static Tensor logsumexp(const Tensor& x, int64_t d) { return xten::logsumexp(x, {d}); }
  static Tensor batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                           const Tensor& rv, bool training) {
    return xten::batch_norm(x, w, b, rm, rv, training);
  }
  static Tensor sdpa_causal(const Tensor& q, const Tensor& k, const Tensor& v) {
    return xten::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
  }
  static Tensor cross_entropy(const Tensor& x, const Tensor& t) {
    return xten::cross_entropy(x, t);
  }
  static Tensor nll_loss(const Tensor& x, const Tensor& t) { return xten::nll_loss(x, t); }
  static std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k) { return xten::topk(x, k); }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t d) { return xten::cat(ts, d); }
  static Tensor stack(const std::vector<Tensor>& ts, int64_t d) { return xten::stack(ts, d); }
  static std::tuple<Tensor, Tensor> sort(const Tensor& x) { return xten::sort(x); }
};

inline std::vector<SweepCase> xten_sweep_cases(xten::Device device = xten::Device(xten::kCPU)) {
  sweep_device() = device;
  return sweep_cases<XtenSweepApi>();
}
