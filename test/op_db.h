#pragma once
// The op database: for every differentiable op, sample inputs and a function of them, shared by
// the CPU gradient checks (test_autograd.cpp: float64 gradcheck on contiguous, non-contiguous
// and broadcast inputs) and the XPU gradient parity (test_autograd_xpu.cpp: float32, XPU against
// CPU). Non-differentiable arguments (indices, masks, targets) are made inside the function on
// the inputs' device, so one entry runs on every device.
#include <functional>
#include <string>
#include <vector>

#include <xten/xten.h>

namespace xten::testing {

// How sample values are drawn (away from the points where an op is not differentiable).
enum class Domain { Any, Positive, Unit, NonZero };

struct OpInfo {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;  // one per differentiable input
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  Domain domain = Domain::NonZero;
  bool second_order = true;  // gradgradcheck too
};

inline void PrintTo(const OpInfo& op, std::ostream* os) {
  *os << op.name;
}

inline Tensor idx(std::vector<int64_t> v, const Tensor& like, std::vector<int64_t> shape = {}) {
  Tensor t = tensor(v, TensorOptions(kLong));
  if (!shape.empty()) t = t.reshape(shape);
  return t.to(like.device());
}
inline Tensor mask_like(const Tensor& like, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (i * 7 + 3) % 3 != 0;
  return idx(v, like, shape).to(kBool);
}

// Sample values: deterministic for a seed, in the op's domain.
inline Tensor sample(std::vector<int64_t> shape, Domain d, ScalarType dtype, uint64_t seed) {
  manual_seed(seed);
  Tensor u = rand(shape, TensorOptions(kDouble));
  Tensor t;
  switch (d) {
    case Domain::Any:
      t = u * 4 - 2;
      break;
    case Domain::Positive:
      t = u * 1.5 + 0.5;
      break;
    case Domain::Unit:
      t = u * 0.8 + 0.1;
      break;
    case Domain::NonZero:  // |x| in [0.2, 2]
      t = where(u < 0.5, u * -3.6 - 0.2, (u - 0.5) * 3.6 + 0.2);
      break;
  }
  return t.to(dtype);
}

inline Tensor sum_all(const std::vector<Tensor>& ts) {
  Tensor s;
  double w = 1;
  for (const Tensor& t : ts) {
    Tensor part = t.sum() * w;
    s = s.defined() ? s + part : part;
    w += 0.5;
  }
  return s;
}

inline const std::vector<OpInfo>& op_db() {
  using V = std::vector<Tensor>;
  static const std::vector<OpInfo> db = {
      // binary and ternary
      {"add", {{3, 4}, {3, 4}}, [](const V& x) { return add(x[0], x[1], 2.5); }},
      {"add_broadcast", {{3, 4}, {4}}, [](const V& x) { return x[0] + x[1]; }},
      {"sub", {{3, 4}, {1, 4}}, [](const V& x) { return sub(x[0], x[1], 0.5); }},
      {"mul", {{3, 4}, {3, 1}}, [](const V& x) { return x[0] * x[1]; }},
      {"mul_scalar", {{3, 4}}, [](const V& x) { return x[0] * 3.0; }},
      {"div", {{3, 4}, {3, 4}}, [](const V& x) { return x[0] / x[1]; }},
      {"div_floor",
       {{3, 4}, {3, 4}},
       [](const V& x) { return div(x[0], x[1], std::string("floor")); },
       Domain::NonZero,
       false},
      {"remainder", {{3, 4}, {3, 4}}, [](const V& x) { return remainder(x[0], x[1] * 3); }},
      {"fmod", {{3, 4}, {3, 4}}, [](const V& x) { return fmod(x[0], x[1] * 3); }},
      {"pow", {{3, 4}, {3, 4}}, [](const V& x) { return pow(x[0], x[1]); }, Domain::Positive},
      {"pow_scalar", {{3, 4}}, [](const V& x) { return pow(x[0], 3); }},
      {"maximum", {{3, 4}, {3, 4}}, [](const V& x) { return maximum(x[0], x[1]); }},
      {"minimum", {{3, 4}, {4}}, [](const V& x) { return minimum(x[0], x[1]); }},
      {"atan2", {{3, 4}, {3, 4}}, [](const V& x) { return atan2(x[0], x[1]); }},
      {"hypot", {{3, 4}, {3, 4}}, [](const V& x) { return hypot(x[0], x[1]); }},
      {"where",
       {{3, 4}, {3, 4}},
       [](const V& x) {
         return where(mask_like(x[0], {3, 4}), x[0], x[1]);
       }},
      {"clamp", {{3, 4}}, [](const V& x) { return clamp(x[0], -1.0, 1.0); }},
      {"lerp", {{3, 4}, {3, 4}, {3, 4}}, [](const V& x) { return lerp(x[0], x[1], x[2]); }},
      {"addcmul", {{3, 4}, {4}, {3, 1}}, [](const V& x) { return addcmul(x[0], x[1], x[2], 0.5); }},
      // in place, on a non-leaf
      {"add_", {{3, 4}, {4}}, [](const V& x) { return (x[0] * 1).add_(x[1], 2); }},
      {"mul_", {{3, 4}, {3, 4}}, [](const V& x) { return (x[0] * 1).mul_(x[1]); }},
      {"div_", {{3, 4}, {3, 4}}, [](const V& x) { return (x[0] * 1).div_(x[1]); }},
      {"pow_", {{3, 4}}, [](const V& x) { return (x[0] * 1).pow_(2.0); }},
      {"exp_", {{3, 4}}, [](const V& x) { return (x[0] * 1).exp_(); }},
      {"clamp_", {{3, 4}}, [](const V& x) { return (x[0] * 1).clamp_(-1.0, 1.0); }},
      {"copy_", {{3, 4}, {4}}, [](const V& x) { return (x[0] * 1).copy_(x[1]) * x[0]; }},
      {"inplace_on_view",
       {{3, 4}},
       [](const V& x) {
         Tensor t = x[0] * 1;
         t.select(0, 1).mul_(2);
         t.narrow(1, 1, 2).add_(1);
         return t;
       }},
      // unary
      {"neg", {{3, 4}}, [](const V& x) { return -x[0]; }},
      {"abs", {{3, 4}}, [](const V& x) { return abs(x[0]); }},
      {"sign", {{3, 4}}, [](const V& x) { return sign(x[0]) * x[0]; }},
      {"exp", {{3, 4}}, [](const V& x) { return exp(x[0]); }},
      {"exp2", {{3, 4}}, [](const V& x) { return exp2(x[0]); }},
      {"expm1", {{3, 4}}, [](const V& x) { return expm1(x[0]); }},
      {"log", {{3, 4}}, [](const V& x) { return log(x[0]); }, Domain::Positive},
      {"log2", {{3, 4}}, [](const V& x) { return log2(x[0]); }, Domain::Positive},
      {"log10", {{3, 4}}, [](const V& x) { return log10(x[0]); }, Domain::Positive},
      {"log1p", {{3, 4}}, [](const V& x) { return log1p(x[0]); }, Domain::Positive},
      {"sqrt", {{3, 4}}, [](const V& x) { return sqrt(x[0]); }, Domain::Positive},
      {"rsqrt", {{3, 4}}, [](const V& x) { return rsqrt(x[0]); }, Domain::Positive},
      {"reciprocal", {{3, 4}}, [](const V& x) { return reciprocal(x[0]); }},
      {"sin", {{3, 4}}, [](const V& x) { return sin(x[0]); }},
      {"cos", {{3, 4}}, [](const V& x) { return cos(x[0]); }},
      {"tan", {{3, 4}}, [](const V& x) { return tan(x[0] * 0.5); }},
      {"tanh", {{3, 4}}, [](const V& x) { return tanh(x[0]); }},
      {"sigmoid", {{3, 4}}, [](const V& x) { return sigmoid(x[0]); }},
      {"relu", {{3, 4}}, [](const V& x) { return relu(x[0]); }},
      {"threshold_backward",
       {{3, 4}, {3, 4}},
       [](const V& x) { return threshold_backward(x[0], x[1], 0.1); }},
      {"silu", {{3, 4}}, [](const V& x) { return silu(x[0]); }},
      {"erf", {{3, 4}}, [](const V& x) { return erf(x[0]); }},
      {"floor", {{3, 4}}, [](const V& x) { return floor(x[0] * 3) * x[0]; }},
      {"round", {{3, 4}}, [](const V& x) { return round(x[0] * 3) + x[0]; }},
      {"gelu", {{3, 4}}, [](const V& x) { return gelu(x[0]); }},
      {"gelu_tanh", {{3, 4}}, [](const V& x) { return gelu(x[0], "tanh"); }},
      {"gelu_backward", {{3, 4}, {3, 4}}, [](const V& x) { return gelu_backward(x[0], x[1]); }},
      {"sigmoid_backward", {{3, 4}, {3, 4}},
       [](const V& x) { return sigmoid_backward(x[0], x[1]); }},
      {"tanh_backward", {{3, 4}, {3, 4}}, [](const V& x) { return tanh_backward(x[0], x[1]); }},
      {"silu_backward", {{3, 4}, {3, 4}}, [](const V& x) { return silu_backward(x[0], x[1]); }},
      {"gelu_backward_tanh",
       {{3, 4}, {3, 4}},
       [](const V& x) { return gelu_backward(x[0], x[1], "tanh"); }},
      {"nan_to_num", {{3, 4}}, [](const V& x) { return nan_to_num(x[0]); }},
      // activations
      {"softmax", {{3, 5}}, [](const V& x) { return softmax(x[0], 1) * x[0]; }},
      {"log_softmax", {{3, 5}}, [](const V& x) { return log_softmax(x[0], 0) * x[0]; }},
      {"leaky_relu", {{3, 4}}, [](const V& x) { return leaky_relu(x[0], 0.1); }},
      {"elu", {{3, 4}}, [](const V& x) { return elu(x[0], 1.5, 1.2, 0.8); }},
      {"softplus", {{3, 4}}, [](const V& x) { return softplus(x[0], 2.0, 3.0); }},
      {"hardswish", {{3, 4}}, [](const V& x) { return hardswish(x[0] * 2); }},
      {"leaky_relu_backward",
       {{3, 4}, {3, 4}},
       [](const V& x) { return leaky_relu_backward(x[0], x[1], 0.1, false); }},
      {"elu_backward",
       {{3, 4}, {3, 4}},
       [](const V& x) { return elu_backward(x[0], 1.5, 1.2, 0.8, false, x[1]); }},
      {"elu_backward_of_result",
       {{3, 4}, {3, 4}},
       [](const V& x) { return elu_backward(x[0], 1.5, 1.2, 0.8, true, x[1]); }},
      {"softplus_backward",
       {{3, 4}, {3, 4}},
       [](const V& x) { return softplus_backward(x[0], x[1], 2.0, 3.0); }},
      {"hardswish_backward",
       {{3, 4}, {3, 4}},
       [](const V& x) { return hardswish_backward(x[0], x[1] * 2); }},
      {"hardtanh", {{3, 4}}, [](const V& x) { return hardtanh(x[0]); }},
      {"prelu", {{2, 3, 4}, {3}}, [](const V& x) { return prelu(x[0], x[1]); }},
      {"dropout",
       {{3, 4}},
       [](const V& x) {
         manual_seed(7);
         return dropout(x[0], 0.4, true);
       }},
      // reductions and scans
      {"sum", {{3, 4}}, [](const V& x) { return x[0].sum(); }},
      {"sum_dim",
       {{2, 3, 4}},
       [](const V& x) {
         return x[0].sum({0, 2});
       }},
      {"sum_keepdim", {{2, 3, 4}}, [](const V& x) { return x[0].sum({1}, true); }},
      {"mean", {{3, 4}}, [](const V& x) { return x[0].mean(); }},
      {"mean_dim", {{2, 3, 4}}, [](const V& x) { return x[0].mean({-1}); }},
      {"prod", {{3, 4}}, [](const V& x) { return x[0].prod(); }},
      {"prod_dim", {{3, 4}}, [](const V& x) { return x[0].prod(1, true); }},
      {"prod_zeros",
       {{2, 4}},
       [](const V& x) {
         Tensor z = (x[0] * 1).index_put_({idx({0, 1, 1}, x[0]), idx({1, 0, 2}, x[0])},
                                          zeros({}, x[0].dtype(), x[0].device()));
         return z.prod(1);
       }},
      {"amax", {{3, 4}}, [](const V& x) { return x[0].amax({1}); }},
      {"amin", {{3, 4}}, [](const V& x) { return x[0].amin({0}, true); }},
      {"max", {{3, 4}}, [](const V& x) { return x[0].max(); }},
      {"min", {{3, 4}}, [](const V& x) { return x[0].min(); }},
      {"max_dim", {{3, 4}}, [](const V& x) { return std::get<0>(x[0].max(1)); }},
      {"min_dim", {{3, 4}}, [](const V& x) { return std::get<0>(x[0].min(0, true)); }},
      {"var", {{3, 4}}, [](const V& x) { return x[0].var({1}); }},
      {"std", {{3, 4}}, [](const V& x) { return x[0].std({0}, 0.0, true); }},
      {"norm2", {{3, 4}}, [](const V& x) { return x[0].norm(2, {1}); }},
      {"norm1", {{3, 4}}, [](const V& x) { return x[0].norm(1); }},
      {"norm3", {{3, 4}}, [](const V& x) { return x[0].norm(3, {0}); }},
      {"norm_inf", {{3, 4}}, [](const V& x) { return x[0].norm(INFINITY, {1}); }},
      {"logsumexp", {{3, 4}}, [](const V& x) { return x[0].logsumexp({1}); }},
      {"cumsum", {{3, 4}}, [](const V& x) { return x[0].cumsum(1); }},
      {"cumprod", {{3, 4}}, [](const V& x) { return x[0].cumprod(1); }},
      {"cumprod_zeros",
       {{2, 5}},
       [](const V& x) {
         Tensor z = (x[0] * 1).index_put_({idx({0, 1, 1}, x[0]), idx({2, 1, 3}, x[0])},
                                          zeros({}, x[0].dtype(), x[0].device()));
         return z.cumprod(1);
       }},
      // views
      {"view",
       {{3, 4}},
       [](const V& x) {
         return x[0].view({2, 6}) * 2;
       }},
      {"reshape", {{3, 4}}, [](const V& x) { return x[0].t().reshape({12}); }},
      {"flatten", {{2, 3, 4}}, [](const V& x) { return x[0].flatten(1); }},
      {"squeeze_unsqueeze",
       {{3, 1, 4}},
       [](const V& x) { return x[0].squeeze(1).unsqueeze(0).squeeze(); }},
      {"permute", {{2, 3, 4}}, [](const V& x) { return x[0].permute({2, 0, 1}) * 2; }},
      {"transpose", {{2, 3, 4}}, [](const V& x) { return x[0].transpose(0, 2) * 2; }},
      {"expand", {{3, 1}}, [](const V& x) { return x[0].expand({2, 3, 4}) * 2; }},
      {"narrow", {{3, 4}}, [](const V& x) { return x[0].narrow(1, 1, 2) * 2; }},
      {"slice_step", {{5, 4}}, [](const V& x) { return x[0].slice(0, 1, 5, 2) * 2; }},
      {"select", {{3, 4}}, [](const V& x) { return x[0].select(1, -1) * 2; }},
      {"unbind", {{3, 4}}, [](const V& x) { return sum_all(x[0].unbind(1)); }},
      {"split", {{5, 4}}, [](const V& x) { return sum_all(x[0].split(2)); }},
      {"chunk", {{3, 6}}, [](const V& x) { return sum_all(x[0].chunk(3, 1)); }},
      {"as_strided",
       {{3, 4}},
       [](const V& x) { return (x[0] * 1).as_strided({3, 3}, {1, 2}, 1) * 2; }},
      {"clone_contiguous", {{3, 4}}, [](const V& x) { return x[0].t().contiguous().clone(); }},
      // linear algebra
      {"mm", {{3, 4}, {4, 2}}, [](const V& x) { return x[0].mm(x[1]); }},
      {"bmm", {{2, 3, 4}, {2, 4, 2}}, [](const V& x) { return x[0].bmm(x[1]); }},
      {"matmul", {{2, 3, 4}, {4, 2}}, [](const V& x) { return x[0].matmul(x[1]); }},
      {"addmm",
       {{3, 2}, {3, 4}, {4, 2}},
       [](const V& x) { return addmm(x[0], x[1], x[2], 0.5, 2.0); }},
      {"baddbmm",
       {{2, 3, 2}, {2, 3, 4}, {2, 4, 2}},
       [](const V& x) { return baddbmm(x[0], x[1], x[2]); }},
      {"linear", {{3, 4}, {2, 4}, {2}}, [](const V& x) { return linear(x[0], x[1], x[2]); }},
      {"linear_3d_input",
       {{2, 3, 4}, {2, 4}, {2}},
       [](const V& x) { return linear(x[0], x[1], x[2]); }},
      {"linear_1d_input_no_bias", {{4}, {2, 4}}, [](const V& x) { return linear(x[0], x[1]); }},
      {"_linear_relu",
       {{3, 4}, {5, 4}, {5}},
       [](const V& x) { return _linear_relu(x[0], x[1], x[2]); }},
      {"_linear_relu_3d_no_bias",
       {{2, 3, 4}, {5, 4}},
       [](const V& x) { return _linear_relu(x[0], x[1]); }},
      {"dot_mv_outer",
       {{4}, {3, 4}},
       [](const V& x) { return outer(x[1].mv(x[0]), x[0]) * x[0].dot(x[0]); }},
      // joining and reordering
      {"cat", {{2, 3}, {4, 3}}, [](const V& x) { return cat({x[0], x[1]}, 0) * 2; }},
      {"stack", {{2, 3}, {2, 3}}, [](const V& x) { return stack({x[0], x[1]}, 1) * 2; }},
      {"pad", {{2, 3, 4}}, [](const V& x) { return pad(x[0], {1, 2, 0, 1}, "constant", 0.5); }},
      {"pad_reflect", {{1, 3, 4}}, [](const V& x) { return pad(x[0], {2, 1}, "reflect"); }},
      {"repeat", {{2, 3}}, [](const V& x) { return x[0].repeat({2, 1, 2}); }},
      {"flip_roll", {{3, 4}}, [](const V& x) { return x[0].flip({0}).roll({1}, {1}) * 2; }},
      {"tril_triu", {{4, 4}}, [](const V& x) { return x[0].tril(-1) + x[0].triu(1) * 2; }},
      // indexing and sorting
      {"index_select",
       {{4, 3}},
       [](const V& x) { return x[0].index_select(0, idx({3, 0, 3}, x[0])); }},
      {"gather",
       {{3, 4}},
       [](const V& x) { return x[0].gather(1, idx({0, 3, 3, 1, 2, 2}, x[0], {3, 2})); }},
      {"scatter",
       {{3, 4}, {3, 2}},
       [](const V& x) { return x[0].scatter(1, idx({0, 3, 1, 2, 2, 0}, x[0], {3, 2}), x[1]); }},
      {"scatter_add",
       {{3, 4}, {3, 2}},
       [](const V& x) { return x[0].scatter_add(1, idx({0, 3, 1, 1, 2, 2}, x[0], {3, 2}), x[1]); }},
      {"masked_fill",
       {{3, 4}},
       [](const V& x) { return x[0].masked_fill(mask_like(x[0], {3, 4}), 2.0); }},
      {"masked_select",
       {{3, 4}},
       [](const V& x) { return x[0].masked_select(mask_like(x[0], {3, 4})); }},
      {"index", {{4, 3}}, [](const V& x) { return x[0].index({idx({1, 3, 1}, x[0])}); }},
      {"index_put_",
       {{4, 3}, {2, 3}},
       [](const V& x) { return (x[0] * 1).index_put_({idx({2, 0}, x[0])}, x[1]); }},
      {"index_put_accumulate",
       {{4, 3}, {3, 3}},
       [](const V& x) { return (x[0] * 1).index_put_({idx({2, 0, 2}, x[0])}, x[1], true); }},
      {"embedding",
       {{5, 3}},
       [](const V& x) { return embedding(x[0], idx({4, 1, 4, 0}, x[0], {2, 2})); }},
      {"sort", {{3, 5}}, [](const V& x) { return std::get<0>(x[0].sort(1, true)); }},
      {"topk", {{3, 5}}, [](const V& x) { return std::get<0>(x[0].topk(2, 1)); }},
      // convolution and pooling
      {"conv2d",
       {{2, 4, 7, 6}, {6, 2, 3, 3}, {6}},
       [](const V& x) { return conv2d(x[0], x[1], x[2], {2, 1}, {1, 2}, {1, 2}, 2); }},
      {"conv2d_unbatched",
       {{2, 5, 5}, {3, 2, 2, 2}},
       [](const V& x) { return conv2d(x[0], x[1]); }},
      {"conv1d",
       {{2, 3, 8}, {4, 3, 3}, {4}},
       [](const V& x) { return conv1d(x[0], x[1], x[2], {2}, ConvPadding{1}); }},
      {"conv_transpose2d",
       {{2, 4, 4, 3}, {4, 3, 3, 2}, {6}},
       [](const V& x) { return conv_transpose2d(x[0], x[1], x[2], {2, 2}, {1, 0}, {1, 0}, 2); }},
      {"max_pool2d",
       {{2, 2, 6, 7}},
       [](const V& x) { return max_pool2d(x[0], {3, 2}, {2, 2}, {1, 1}, {1, 1}, true); }},
      {"avg_pool2d",
       {{2, 2, 6, 7}},
       [](const V& x) { return avg_pool2d(x[0], {3, 2}, {2, 2}, {1, 1}, true, false); }},
      {"avg_pool2d_include_pad",
       {{2, 5, 6}},
       [](const V& x) { return avg_pool2d(x[0], {2, 3}, {1, 2}, {1, 1}); }},
      // the pooling backwards: the gradient is the differentiable input; self (only its shape
      // is read) and the indices (from a forward on distinct values) are made here
      {"max_pool2d_with_indices_backward",
       {{2, 2, 3, 4}},
       [](const V& x) {
         const Tensor self =
             sin(arange(192, TensorOptions(x[0].dtype())) * 1.7).reshape({2, 2, 6, 8});
         const Tensor indices =
             std::get<1>(max_pool2d_with_indices(self, {3, 3}, {2, 2}, {1, 1})).to(x[0].device());
         return max_pool2d_with_indices_backward(x[0], self.to(x[0].device()), {3, 3}, {2, 2},
                                                 {1, 1}, {1, 1}, false, indices);
       }},
      {"avg_pool2d_backward",
       {{2, 2, 3, 4}},
       [](const V& x) {
         const Tensor self = zeros({2, 2, 6, 8}, x[0].dtype(), x[0].device());
         return avg_pool2d_backward(x[0], self, {3, 3}, {2, 2}, {1, 1}, false, false,
                                    std::nullopt);
       }},
      {"adaptive_avg_pool2d",
       {{2, 2, 5, 7}},
       [](const V& x) { return adaptive_avg_pool2d(x[0], {3, 2}); }},
      {"adaptive_avg_pool2d_tiling",  // windows that tile the input: avg_pool2d's backward
       {{2, 3, 6, 4}},
       [](const V& x) { return adaptive_avg_pool2d(x[0], {3, 1}); }},
      {"adaptive_avg_pool2d_global",  // one window over each plane: the backward's fill
       {{2, 3, 5, 7}},
       [](const V& x) { return adaptive_avg_pool2d(x[0], {1, 1}); }},
      {"upsample_bilinear2d",
       {{2, 2, 3, 4}},
       [](const V& x) { return upsample_bilinear2d(x[0], {5, 7}); }},
      {"upsample_bilinear2d_align_corners_down",
       {{1, 2, 5, 6}},
       [](const V& x) { return upsample_bilinear2d(x[0], {3, 4}, true); }},
      {"adaptive_max_pool2d",
       {{2, 2, 5, 7}},
       [](const V& x) { return std::get<0>(adaptive_max_pool2d(x[0], {3, 2})); }},
      // normalization
      {"batch_norm",
       {{4, 3, 2, 2}, {3}, {3}},
       [](const V& x) { return batch_norm(x[0], x[1], x[2], std::nullopt, std::nullopt, true); }},
      {"batch_norm_eval",
       {{4, 3, 2, 2}, {3}, {3}},
       [](const V& x) {
         const Tensor rm = idx({1, -2, 3}, x[0]).to(x[0].dtype()) * 0.1;
         const Tensor rv = idx({1, 2, 3}, x[0]).to(x[0].dtype()) * 0.5;
         return batch_norm(x[0], x[1], x[2], rm, rv, false);
       }},
      {"batch_norm_1d",
       {{5, 3}},
       [](const V& x) {
         return batch_norm(x[0], std::nullopt, std::nullopt, std::nullopt, std::nullopt, true) *
                x[0];
       }},
      {"layer_norm",
       {{3, 2, 4}, {2, 4}, {2, 4}},
       [](const V& x) { return layer_norm(x[0], {2, 4}, x[1], x[2]); }},
      {"layer_norm_no_affine", {{4, 6}}, [](const V& x) { return layer_norm(x[0], {6}) * x[0]; }},
      // attention: the flash kernel (the default path) with masks, causal, grouped-query heads and
      // a row that attends nothing; the math path where the mask is differentiable or asked for
      {"sdpa",
       {{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 6, 3}},
       [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2]); }},
      {"sdpa_causal",
       {{1, 2, 6, 4}, {1, 2, 4, 4}, {1, 2, 4, 5}},
       [](const V& x) {
         return scaled_dot_product_attention(x[0], x[1], x[2], std::nullopt, 0.0, true, 0.7);
       }},
      {"sdpa_bool_mask",
       {{2, 5, 4}, {2, 6, 4}, {2, 6, 4}},
       [](const V& x) {
         Tensor m = mask_like(x[0], {5, 6});
         m.index_put_({idx({2}, x[0])}, zeros({6}, kBool, x[0].device()));  // row 2 attends nothing
         return scaled_dot_product_attention(x[0], x[1], x[2], m);
       }},
      {"sdpa_gqa",
       {{1, 4, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}},
       [](const V& x) {
         return scaled_dot_product_attention(x[0], x[1], x[2], std::nullopt, 0.0, false,
                                             std::nullopt, true);
       }},
      {"sdpa_additive_mask",
       {{2, 3, 4}, {2, 5, 4}, {2, 5, 4}, {3, 5}},
       [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], x[3]); }},
      {"sdpa_math",
       {{2, 3, 4}, {2, 5, 4}, {2, 5, 2}},
       [](const V& x) {
         return std::get<0>(_scaled_dot_product_attention_math(
             x[0], x[1], x[2], std::nullopt, 0.0, true));
       }},
      {"group_norm",
       {{2, 4, 3}, {4}, {4}},
       [](const V& x) { return group_norm(x[0], 2, x[1], x[2]); }},
      {"group_norm_4d",
       {{2, 4, 3, 2}, {4}, {4}},
       [](const V& x) { return group_norm(x[0], 2, x[1], x[2]); }},
      // losses
      {"mse_loss", {{3, 4}, {3, 4}}, [](const V& x) { return mse_loss(x[0], x[1]); }},
      {"mse_loss_broadcast_sum",
       {{3, 4}, {4}},
       [](const V& x) { return mse_loss(x[0], x[1], "sum"); }},
      {"mse_loss_backward",  // the reduced loss's gradient (0-d) last
       {{3, 4}, {3, 4}, {}},
       [](const V& x) { return mse_loss_backward(x[2], x[0], x[1], "mean"); }},
      {"mse_loss_backward_none",
       {{3, 4}, {3, 4}, {3, 4}},
       [](const V& x) { return mse_loss_backward(x[0], x[1], x[2], "none"); }},
      {"l1_loss", {{3, 4}, {3, 4}}, [](const V& x) { return l1_loss(x[0], x[1], "sum"); }},
      {"smooth_l1_loss",
       {{3, 4}, {3, 4}},
       [](const V& x) { return smooth_l1_loss(x[0], x[1], "mean", 0.5); }},
      {"huber_loss",
       {{3, 4}, {3, 4}},
       [](const V& x) { return huber_loss(x[0], x[1], "none", 0.7); }},
      {"binary_cross_entropy",
       {{3, 4}, {3, 4}},
       [](const V& x) { return binary_cross_entropy(x[0], x[1]); },
       Domain::Unit},
      {"bce_with_logits",
       {{3, 4}, {3, 4}},
       [](const V& x) { return binary_cross_entropy_with_logits(x[0], sigmoid(x[1])); }},
      {"kl_div",
       {{3, 4}, {3, 4}},
       [](const V& x) { return kl_div(log_softmax(x[0], 1), softmax(x[1], 1), "batchmean"); }},
      {"nll_loss",
       {{4, 5}},
       [](const V& x) { return nll_loss(log_softmax(x[0], 1), idx({1, 4, 0, 4}, x[0])); }},
      // The weight's gradient too, an ignored target, each reduction, and spatial and 1-D inputs.
      {"nll_loss_weight_mean",
       {{4, 5}, {5}},
       [](const V& x) {
         return nll_loss(log_softmax(x[0], 1), idx({1, 4, -100, 4}, x[0]), exp(x[1]));
       }},
      {"nll_loss_weight_sum",
       {{4, 5}, {5}},
       [](const V& x) {
         return nll_loss(log_softmax(x[0], 1), idx({1, 4, 2, 0}, x[0]), exp(x[1]), "sum", 2);
       }},
      {"nll_loss_weight_none_spatial",
       {{2, 3, 2}, {3}},
       [](const V& x) {
         return nll_loss(x[0], idx({0, 2, 1, 1}, x[0], {2, 2}), exp(x[1]), "none");
       }},
      {"nll_loss_1d", {{5}}, [](const V& x) { return nll_loss(x[0], idx({3}, x[0]).reshape({})); }},
      {"cross_entropy",
       {{4, 5}, {5}},
       [](const V&
              x) { return cross_entropy(x[0], idx({1, 4, 0, 4}, x[0]), x[1].abs(), "mean", 0, 0.1); }},
  };
  return db;
}

}  // namespace xten::testing
