#pragma once
// Channels-last checks shared by the CPU test (test_memory_format.cpp) and the XPU one
// (test_memory_format_xpu.cpp): every op of the op database with a 4-d input, run with its 4-d
// inputs channels-last, gives the contiguous run's values and gradients, the layout PyTorch
// gives for the image ops, and gradients laid out as their leaves (docs/memory_format.md).
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "op_db.h"
#include "test_util.h"

namespace xten::testing {

// The op database's entries whose result PyTorch lays out channels-last for a channels-last
// input (the others with 4-d inputs are checked for values only: attention's [B, H, L, E] is
// not an image, and the pooling backwards' layout follows `self`, made contiguous inside).
inline const std::set<std::string>& channels_last_result_ops() {
  static const std::set<std::string> names = {"conv2d",
                                              "conv_transpose2d",
                                              "max_pool2d",
                                              "avg_pool2d",
                                              "adaptive_avg_pool2d",
                                              "adaptive_avg_pool2d_tiling",
                                              "adaptive_max_pool2d",
                                              "upsample_bilinear2d",
                                              "upsample_bilinear2d_align_corners_down",
                                              "batch_norm",
                                              "batch_norm_eval",
                                              "group_norm_4d"};
  return names;
}

struct LayoutRun {
  Tensor out;
  std::vector<Tensor> inputs;  // the leaves, with their gradients
};

// op.fn on the op's samples on `device`, 4-d inputs channels-last if `channels_last`; the
// gradients of sum(out * v) accumulated into the leaves by backward().
inline LayoutRun run_in_layout(const OpInfo& op, Device device, bool channels_last) {
  LayoutRun r;
  for (size_t i = 0; i < op.shapes.size(); ++i) {
    Tensor t = sample(op.shapes[i], op.domain, kFloat, 1 + i).to(device);
    if (channels_last && t.dim() == 4) t = t.contiguous(MemoryFormat::ChannelsLast);
    r.inputs.push_back(t.requires_grad_());
  }
  r.out = op.fn(r.inputs);
  manual_seed(99);
  const Tensor v = randn(r.out.sizes()).to(device);
  (r.out * v).sum().backward();
  return r;
}

inline bool has_4d_input(const OpInfo& op) {
  for (const auto& s : op.shapes)
    if (s.size() == 4) return true;
  return false;
}

// Runs every op database entry with a 4-d input both ways on `device`; returns the names run.
inline std::set<std::string> check_op_db_channels_last(Device device) {
  std::set<std::string> ran;
  for (const OpInfo& op : op_db()) {
    if (!has_4d_input(op)) continue;
    ran.insert(op.name);
    const LayoutRun plain = run_in_layout(op, device, false);
    const LayoutRun cl = run_in_layout(op, device, true);
    for (size_t i = 0; i < op.shapes.size(); ++i) {
      if (op.shapes[i].size() != 4) continue;
      EXPECT_TRUE(cl.inputs[i].is_contiguous(MemoryFormat::ChannelsLast) &&
                  !cl.inputs[i].is_contiguous())
          << op.name << ": the sample was not made channels-last";
    }
    EXPECT_TRUE(allclose(cl.out, plain.out, 1e-4, 1e-5)) << op.name;
    if (channels_last_result_ops().count(op.name) != 0) {
      EXPECT_EQ(cl.out.suggest_memory_format(), MemoryFormat::ChannelsLast)
          << op.name << ": result strides " << to_string(cl.out.strides());
      EXPECT_EQ(plain.out.suggest_memory_format(), MemoryFormat::Contiguous) << op.name;
      // The formula's own result, before a leaf's accumulation lays it out (a gradient that
      // comes back NCHW makes every pointwise op of the backward after it walk two layouts).
      std::vector<Tensor> leaves;
      for (const Tensor& t : cl.inputs) leaves.push_back(t.detach().requires_grad_());
      const Tensor out = op.fn(leaves);
      const std::vector<Tensor> g =
          autograd::grad({out}, leaves, {ones_like(out)}, std::nullopt, false, true);
      for (size_t i = 0; i < g.size(); ++i) {
        if (op.shapes[i].size() != 4 || !g[i].defined()) continue;
        EXPECT_EQ(g[i].suggest_memory_format(), MemoryFormat::ChannelsLast)
            << op.name << " input " << i << ": the formula's gradient has strides "
            << to_string(g[i].strides());
      }
    }
    for (size_t i = 0; i < op.shapes.size(); ++i) {
      const Tensor& g = cl.inputs[i].grad();
      EXPECT_EQ(g.defined(), plain.inputs[i].grad().defined()) << op.name << " input " << i;
      if (!g.defined() || !plain.inputs[i].grad().defined()) continue;
      EXPECT_TRUE(allclose(g, plain.inputs[i].grad(), 1e-4, 1e-5)) << op.name << " input " << i;
      if (op.shapes[i].size() == 4) {  // Note [Gradient layout]
        EXPECT_TRUE(g.is_contiguous(MemoryFormat::ChannelsLast))
            << op.name << " input " << i << ": gradient strides " << to_string(g.strides());
      }
    }
  }
  return ran;
}

// Pointwise results take their operands' layout (Note [Pointwise layout]) on `device`.
inline void check_pointwise_layouts(Device device) {
  const Tensor a = sample({2, 3, 4, 5}, Domain::Any, kFloat, 1).to(device);
  const Tensor b = sample({2, 3, 4, 5}, Domain::Any, kFloat, 2).to(device);
  const Tensor a_cl = a.contiguous(MemoryFormat::ChannelsLast);
  const Tensor b_cl = b.contiguous(MemoryFormat::ChannelsLast);
  const Tensor per_channel = sample({3, 1, 1}, Domain::Any, kFloat, 3).to(device);
  struct Case {
    const char* what;
    Tensor got, want;
    MemoryFormat layout;
  };
  const std::vector<Case> cases = {
      {"nhwc + nhwc", a_cl + b_cl, a + b, MemoryFormat::ChannelsLast},
      {"nhwc + nchw (the first decides)", a_cl + b, a + b, MemoryFormat::ChannelsLast},
      {"nchw + nhwc (the first decides)", a + b_cl, a + b, MemoryFormat::Contiguous},
      {"nhwc * [C, 1, 1]", a_cl * per_channel, a * per_channel, MemoryFormat::ChannelsLast},
      {"[C, 1, 1] * nhwc", per_channel * a_cl, a * per_channel, MemoryFormat::ChannelsLast},
      {"nhwc * scalar", a_cl * 3.5, a * 3.5, MemoryFormat::ChannelsLast},
      {"exp(nhwc)", exp(a_cl), exp(a), MemoryFormat::ChannelsLast},
      {"relu(nhwc)", relu(a_cl), relu(a), MemoryFormat::ChannelsLast},
      {"nhwc to float64", a_cl.to(kDouble), a.to(kDouble), MemoryFormat::ChannelsLast},
      {"where(mask, nhwc, nhwc)", where(a_cl > 0, a_cl, b_cl), where(a > 0, a, b),
       MemoryFormat::ChannelsLast},
      {"addcmul(nhwc, ...)", addcmul(a_cl, b_cl, per_channel, 0.5), addcmul(a, b, per_channel, 0.5),
       MemoryFormat::ChannelsLast},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(allclose(c.got, c.want)) << c.what;
    EXPECT_EQ(c.got.suggest_memory_format(), c.layout)
        << c.what << ": strides " << to_string(c.got.strides());
    EXPECT_TRUE(c.got.is_contiguous(c.layout)) << c.what << ": not dense";
  }
  // Any dense order is kept, not only NHWC: a transposed matrix's exp is transposed.
  const Tensor m = sample({5, 7}, Domain::Any, kFloat, 4).to(device).t();
  const Tensor e = exp(m);
  EXPECT_EQ(e.strides(), m.strides());
  EXPECT_TRUE(allclose(e, exp(m.contiguous())));
  // In place into a channels-last tensor from a contiguous one.
  Tensor dst = a_cl.clone();
  dst.add_(b);
  EXPECT_TRUE(dst.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(allclose(dst, a + b));
}

// Reductions' results follow their input's layout (Note [Reduction layout]) on `device`: each
// reduction of a channels-last batch equals the contiguous batch's, with keepdim laid out
// channels-last and without it in the order the input's strides give.
inline void check_reduction_layouts(Device device) {
  const Tensor a = sample({2, 3, 4, 5}, Domain::Any, kFloat, 1).to(device);
  const Tensor a_cl = a.contiguous(MemoryFormat::ChannelsLast);
  using Fn = std::function<Tensor(const Tensor&, bool)>;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"sum", [](const Tensor& x, bool k) { return x.sum({2}, k); }},
      {"sum(0)", [](const Tensor& x, bool k) { return x.sum({0}, k); }},
      {"mean", [](const Tensor& x, bool k) { return x.mean({3}, k); }},
      {"prod", [](const Tensor& x, bool k) { return x.prod(2, k); }},
      {"amax", [](const Tensor& x, bool k) { return x.amax({2}, k); }},
      {"max.dim values", [](const Tensor& x, bool k) { return std::get<0>(x.max(2, k)); }},
      {"argmin", [](const Tensor& x, bool k) { return x.argmin(2, k); }},
      {"logsumexp", [](const Tensor& x, bool k) { return logsumexp(x, {2}, k); }},
      {"var", [](const Tensor& x, bool k) { return x.var({2}, 1, k); }},
      {"any", [](const Tensor& x, bool k) { return (x > 0).any(2, k); }},
  };
  for (const auto& [name, fn] : ops) {
    const Tensor want = fn(a, true), got = fn(a_cl, true);
    EXPECT_TRUE(allclose(got.to(kDouble), want.to(kDouble), 1e-5, 1e-6)) << name;
    EXPECT_TRUE(got.is_contiguous(MemoryFormat::ChannelsLast) && !got.is_contiguous())
        << name << ": keepdim result strides " << to_string(got.strides());
    const Tensor flat = fn(a_cl, false);
    EXPECT_TRUE(allclose(flat.to(kDouble), fn(a, false).to(kDouble), 1e-5, 1e-6)) << name;
    // [N, C, W] (or [C, H, W] for the sum over N) with C innermost, as the input has it.
    EXPECT_EQ(flat.stride(name == "sum(0)" ? 0 : 1), 1)
        << name << ": result strides " << to_string(flat.strides());
  }
  // Any dense order: a transposed batch's reduction keeps the order of what is left.
  const Tensor t = sample({4, 3, 2}, Domain::Any, kFloat, 2).to(device).transpose(0, 2);
  const Tensor s = t.sum({1});
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(allclose(s, t.contiguous().sum({1})));
  // Contiguous inputs, and reductions to one value, are unchanged.
  EXPECT_TRUE(a.sum({2}, true).is_contiguous());
  EXPECT_EQ(a_cl.sum().dim(), 0);
}

}  // namespace xten::testing
