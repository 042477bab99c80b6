#pragma once
// Gradients at the edges (docs/autograd.md, "Conventions at the edges"): PyTorch's outputs and
// input gradients at ties, zeros, bounds, NaN and infinities, duplicate indices, padding_idx and
// ignore_index, from test/data/grad_edges.json (made by scripts/gen_grad_edges.py with PyTorch),
// checked here on any device: test_autograd runs it on the CPU, test_autograd_xpu on the XPU.
// Each case's op key names a call in ops() below and the same call in the generator's OPS.
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <xten/xten.h>

namespace xten::testing::grad_edges {

using json = nlohmann::json;
using Inputs = std::vector<Tensor>;
using OpFn = std::function<Tensor(const Inputs&, const json&)>;

// A number of the file: JSON has no NaN or infinities, so they are the strings "nan", "inf",
// "-inf".
inline double decode(const json& v) {
  if (v.is_string()) {
    const std::string s = v;
    return s == "nan" ? NAN : s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

inline Scalar num(const json& p, const char* key) {
  return Scalar(decode(p.at(key)));
}

inline const std::map<std::string, OpFn>& ops() {
  static const std::map<std::string, OpFn> m = {
      {"max", [](const Inputs& x, const json&) { return max(x[0]); }},
      {"min", [](const Inputs& x, const json&) { return min(x[0]); }},
      {"max_dim", [](const Inputs& x, const json& p) { return std::get<0>(max(x[0], p["dim"])); }},
      {"min_dim", [](const Inputs& x, const json& p) { return std::get<0>(min(x[0], p["dim"])); }},
      {"amax", [](const Inputs& x, const json& p) { return amax(x[0], {p["dim"].get<int64_t>()}); }},
      {"amin", [](const Inputs& x, const json& p) { return amin(x[0], {p["dim"].get<int64_t>()}); }},
      {"maximum", [](const Inputs& x, const json&) { return maximum(x[0], x[1]); }},
      {"minimum", [](const Inputs& x, const json&) { return minimum(x[0], x[1]); }},
      {"max_pool2d",
       [](const Inputs& x, const json& p) {
         const int64_t k = p["kernel"], s = p["stride"];
         return max_pool2d(x[0], {k, k}, {s, s});
       }},
      {"adaptive_max_pool2d",
       [](const Inputs& x, const json& p) {
         const int64_t o = p["out"];
         return std::get<0>(adaptive_max_pool2d(x[0], {o, o}));
       }},
      {"sort", [](const Inputs& x, const json&) { return std::get<0>(sort(x[0], -1)); }},
      {"topk", [](const Inputs& x, const json& p) { return std::get<0>(topk(x[0], p["k"])); }},
      {"prod", [](const Inputs& x, const json&) { return prod(x[0]); }},
      {"prod_dim", [](const Inputs& x, const json& p) { return prod(x[0], p["dim"].get<int64_t>()); }},
      {"cumprod", [](const Inputs& x, const json& p) { return cumprod(x[0], p["dim"]); }},
      {"norm", [](const Inputs& x, const json& p) { return norm(x[0], num(p, "p")); }},
      {"norm_dim",
       [](const Inputs& x, const json& p) {
         return norm(x[0], num(p, "p"), {p["dim"].get<int64_t>()});
       }},
      {"pow_scalar", [](const Inputs& x, const json& p) { return pow(x[0], num(p, "exponent")); }},
      {"pow_tensor", [](const Inputs& x, const json&) { return pow(x[0], x[1]); }},
      {"sqrt", [](const Inputs& x, const json&) { return sqrt(x[0]); }},
      {"rsqrt", [](const Inputs& x, const json&) { return rsqrt(x[0]); }},
      {"abs", [](const Inputs& x, const json&) { return abs(x[0]); }},
      {"relu", [](const Inputs& x, const json&) { return relu(x[0]); }},
      {"log", [](const Inputs& x, const json&) { return log(x[0]); }},
      {"exp", [](const Inputs& x, const json&) { return exp(x[0]); }},
      {"tanh", [](const Inputs& x, const json&) { return tanh(x[0]); }},
      {"sigmoid", [](const Inputs& x, const json&) { return sigmoid(x[0]); }},
      {"silu", [](const Inputs& x, const json&) { return silu(x[0]); }},
      {"reciprocal", [](const Inputs& x, const json&) { return reciprocal(x[0]); }},
      {"clamp",
       [](const Inputs& x, const json& p) { return clamp(x[0], num(p, "min"), num(p, "max")); }},
      {"hardtanh",
       [](const Inputs& x, const json& p) { return hardtanh(x[0], num(p, "min"), num(p, "max")); }},
      {"relu6", [](const Inputs& x, const json&) { return hardtanh(x[0], 0, 6); }},
      {"leaky_relu", [](const Inputs& x, const json& p) { return leaky_relu(x[0], num(p, "slope")); }},
      {"elu", [](const Inputs& x, const json& p) { return elu(x[0], num(p, "alpha")); }},
      {"softplus",
       [](const Inputs& x, const json& p) {
         return softplus(x[0], num(p, "beta"), num(p, "threshold"));
       }},
      {"hardswish", [](const Inputs& x, const json&) { return hardswish(x[0]); }},
      {"gelu",
       [](const Inputs& x, const json& p) {
         return gelu(x[0], p["approximate"].get<std::string>());
       }},
      {"atan2", [](const Inputs& x, const json&) { return atan2(x[0], x[1]); }},
      {"hypot", [](const Inputs& x, const json&) { return hypot(x[0], x[1]); }},
      {"lerp_scalar", [](const Inputs& x, const json& p) { return lerp(x[0], x[1], num(p, "weight")); }},
      {"logsumexp",
       [](const Inputs& x, const json& p) { return logsumexp(x[0], {p["dim"].get<int64_t>()}); }},
      {"softmax", [](const Inputs& x, const json& p) { return softmax(x[0], p["dim"]); }},
      {"log_softmax", [](const Inputs& x, const json& p) { return log_softmax(x[0], p["dim"]); }},
      {"std", [](const Inputs& x, const json&) { return std(x[0]); }},
      {"var", [](const Inputs& x, const json&) { return var(x[0]); }},
      {"mse_loss", [](const Inputs& x, const json&) { return mse_loss(x[0], x[1], "sum"); }},
      {"l1_loss", [](const Inputs& x, const json&) { return l1_loss(x[0], x[1], "sum"); }},
      {"smooth_l1_loss",
       [](const Inputs& x, const json& p) {
         return smooth_l1_loss(x[0], x[1], "sum", p["beta"].get<double>());
       }},
      {"huber_loss",
       [](const Inputs& x, const json& p) {
         return huber_loss(x[0], x[1], "sum", p["delta"].get<double>());
       }},
      {"gather", [](const Inputs& x, const json& p) { return gather(x[0], p["dim"], x[1]); }},
      {"index_select",
       [](const Inputs& x, const json& p) { return index_select(x[0], p["dim"], x[1]); }},
      {"embedding",
       [](const Inputs& x, const json& p) { return embedding(x[0], x[1], p["padding_idx"]); }},
      {"index_put",
       [](const Inputs& x, const json& p) {
         Tensor out = x[0].clone();
         out.index_put_({x[2]}, x[1], p["accumulate"].get<int>() != 0);
         return out;
       }},
      {"nll_loss",
       [](const Inputs& x, const json& p) {
         return nll_loss(x[0], x[1], std::nullopt, p["reduction"].get<std::string>(),
                         p["ignore_index"].get<int64_t>());
       }},
      {"cross_entropy",
       [](const Inputs& x, const json& p) {
         return cross_entropy(x[0], x[1], std::nullopt, p["reduction"].get<std::string>(),
                              p["ignore_index"].get<int64_t>(), p.value("label_smoothing", 0.0));
       }},
      {"binary_cross_entropy",
       [](const Inputs& x, const json&) {
         return binary_cross_entropy(x[0], x[1], std::nullopt, "sum");
       }},
      {"binary_cross_entropy_with_logits",
       [](const Inputs& x, const json&) {
         return binary_cross_entropy_with_logits(x[0], x[1], std::nullopt, std::nullopt, "sum");
       }},
      {"kl_div", [](const Inputs& x, const json&) { return kl_div(x[0], x[1], "sum"); }},
      {"layer_norm",
       [](const Inputs& x, const json&) {
         return layer_norm(x[0], {x[0].size(-1)}, std::nullopt, std::nullopt, 1e-5);
       }},
      {"prelu", [](const Inputs& x, const json&) { return prelu(x[0], x[1]); }},
      {"scatter_add",
       [](const Inputs& x, const json& p) { return scatter_add(x[0], p["dim"], x[2], x[1]); }},
      {"div", [](const Inputs& x, const json&) { return x[0] / x[1]; }},
      {"log1p", [](const Inputs& x, const json&) { return log1p(x[0]); }},
      {"where", [](const Inputs& x, const json&) { return where(x[2] > 0, x[0], x[1]); }},
      {"masked_fill",
       [](const Inputs& x, const json& p) { return masked_fill(x[0], x[1] > 0, num(p, "value")); }},
  };
  return m;
}

// A tensor of the file on `device` (float32 or int64).
inline Tensor tensor_of(const json& t, Device device) {
  std::vector<int64_t> shape = t["shape"];
  if (t["dtype"] == "int64") {
    std::vector<int64_t> v = t["values"];
    return tensor(v).reshape(shape).to(device);
  }
  std::vector<float> v;
  for (const json& e : t["values"]) v.push_back(static_cast<float>(decode(e)));
  return tensor(v).reshape(shape).to(device);
}

// Where `got` and the reference differ beyond float32 rounding (NaN must meet NaN, an infinity
// the same infinity); empty if nowhere. An undefined gradient counts as zeros, on both sides.
inline std::string mismatch(const Tensor& got, const json& want,
                            const std::vector<int64_t>& shape) {
  const Tensor g = got.defined() ? got.detach().to("cpu").to(kDouble).contiguous()
                                 : zeros(shape, TensorOptions().dtype(kDouble));
  if (g.sizes() != IntArrayRef(shape))
    return fmt::format("shape {} instead of {}", g.sizes(), IntArrayRef(shape));
  const double* p = static_cast<const double*>(g.data_ptr());
  std::string out;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double w = want.is_null() ? 0.0 : decode(want["values"][static_cast<size_t>(i)]);
    const double v = p[i];
    const bool ok = std::isnan(w)   ? std::isnan(v)
                    : std::isinf(w) ? v == w
                                    : std::abs(v - w) <= 1e-5 + 1e-4 * std::abs(w);
    if (!ok) out += fmt::format(" [{}] {} (PyTorch {})", i, v, w);
  }
  return out;
}

// Runs every case of the file on `device`; each mismatch is one failure naming the case.
inline void check_all(Device device) {
  std::ifstream in(XTEN_GRAD_EDGES);
  ASSERT_TRUE(in) << "cannot read " << XTEN_GRAD_EDGES;
  const json doc = json::parse(in);
  ASSERT_GE(doc["cases"].size(), 50u);
  for (const json& c : doc["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(fmt::format("{} on {} (op '{}')", name, device.str(), c["op"].get<std::string>()));
    const auto op = ops().find(c["op"]);
    ASSERT_NE(op, ops().end()) << "no call for op key " << c["op"];
    Inputs x;
    std::vector<Tensor> want;
    for (const json& spec : c["inputs"]) {
      x.push_back(tensor_of(spec, device));
      if (spec["grad"].get<bool>()) want.push_back(x.back().requires_grad_());
    }
    Tensor y;
    try {
      y = op->second(x, c["params"]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "forward threw: " << e.what();
      continue;
    }
    const std::string out_diff = mismatch(y, c["output"], c["output"]["shape"]);
    EXPECT_TRUE(out_diff.empty()) << "output:" << out_diff;
    std::vector<Tensor> grads;
    try {
      grads = autograd::grad({(y * tensor_of(c["grad_output"], device)).sum()}, want, {},
                             std::nullopt, false, /*allow_unused=*/true);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "backward threw: " << e.what();
      continue;
    }
    size_t k = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const json& spec = c["inputs"][i];
      if (!spec["grad"].get<bool>()) continue;
      const std::string d = mismatch(grads[k++], c["grads"][i], spec["shape"]);
      EXPECT_TRUE(d.empty()) << "gradient of input " << i << ":" << d;
    }
  }
}

}  // namespace xten::testing::grad_edges
