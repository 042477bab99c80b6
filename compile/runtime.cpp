#include <xten/compile/runtime.h>

#include <cstdio>

#include <xten/dispatch/ops.h>
#include <xten/profiler/profiler.h>

namespace xten::compiler {
namespace {

IValue arg_value(const Arg& a, const std::vector<Tensor>& env) {
  switch (a.kind) {
    case Arg::Kind::Value:
      return a.value < 0 ? IValue(Tensor()) : IValue(env[static_cast<size_t>(a.value)]);
    case Arg::Kind::ValueList: {
      std::vector<Tensor> ts;
      ts.reserve(a.values.size());
      for (int v : a.values) ts.push_back(v < 0 ? Tensor() : env[static_cast<size_t>(v)]);
      return IValue(std::move(ts));
    }
    case Arg::Kind::Constant:
      return a.constant;
  }
  return IValue();
}

int64_t bytes_of(const TensorMeta& m) {
  int64_t n = 1;
  for (int64_t s : m.sizes) n *= s;
  return n * static_cast<int64_t>(element_size(m.dtype));
}

constexpr DispatchKeySet kBackendKeys = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::XPU);
constexpr DispatchKeySet kAboveBackends = DispatchKeySet(DispatchKey::Capture)
                                              .add(DispatchKey::AutogradCPU)
                                              .add(DispatchKey::AutogradXPU)
                                              .add(DispatchKey::AutocastCPU)
                                              .add(DispatchKey::AutocastXPU);

}  // namespace

void run_node(const Node& n, std::vector<Tensor>& env) {
  Stack stack;
  stack.reserve(n.args.size());
  for (const Arg& a : n.args) stack.push_back(arg_value(a, env));
  const uint64_t written = n.op.entry().written_args();
  for (size_t i = 0; i < stack.size(); ++i)
    if ((written >> i) & 1) detail::bump_version(stack[i]);  // Note [Version counter]
  const DispatchKeySet ks = detail::stack_keys(stack, stack.size()) & kBackendKeys;
  {
    const ExcludeDispatchKeyGuard below(kAboveBackends);
    if (ks.empty())
      n.op.call_boxed(&stack);
    else
      n.op.redispatch_boxed(ks, &stack);
  }
  XTEN_ASSERT(stack.size() == n.results.size(), "compile: {} left {} results, the graph has {}",
              n.name(), stack.size(), n.results.size());
  for (size_t i = 0; i < n.results.size(); ++i) {
    const Result& r = n.results[i];
    if (r.kind == Result::Kind::Value && r.value >= 0) {
      env[static_cast<size_t>(r.value)] = std::move(stack[i].get<Tensor>());
    } else if (r.kind == Result::Kind::ValueList) {
      auto& ts = stack[i].get<std::vector<Tensor>>();
      for (size_t j = 0; j < r.values.size(); ++j)
        if (r.values[j] >= 0) env[static_cast<size_t>(r.values[j])] = std::move(ts[j]);
    }
  }
}

Executor::Executor(std::shared_ptr<const Graph> g, bool keep_buffers)
    : graph_(std::move(g)), keep_buffers_(keep_buffers) {
  const Graph& graph = *graph_;
  const size_t nv = graph.values.size();
  is_output_.assign(nv, 0);
  for (int v : graph.outputs)
    if (v >= 0) is_output_[static_cast<size_t>(v)] = 1;
  buffers_.resize(nv);
  // The steps: live nodes in order; a group runs where its last node was.
  std::vector<int> last_of_group(graph.groups.size(), -1);
  for (size_t gi = 0; gi < graph.groups.size(); ++gi)
    last_of_group[gi] = graph.groups[gi].nodes.back();
  std::vector<int> last_use(nv, -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.dead) continue;
    if (n.conv_step >= 0) {
      const ConvStep& c = graph.convs[static_cast<size_t>(n.conv_step)];
      if (c.nodes().back() != static_cast<int>(i)) continue;
      Step s;
      s.conv = n.conv_step;
      steps_.push_back(s);
      for (int v : {c.src, c.other})
        if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int>(steps_.size()) - 1;
      continue;
    }
    if (n.group >= 0) {
      if (last_of_group[static_cast<size_t>(n.group)] != static_cast<int>(i)) continue;
      Step s;
      s.group = n.group;
      steps_.push_back(s);
      const FusedGroup& grp = graph.groups[static_cast<size_t>(n.group)];
      for (int v : grp.inputs)
        last_use[static_cast<size_t>(v)] = static_cast<int>(steps_.size()) - 1;
      for (int v : {grp.norm_weight, grp.norm_bias})
        if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int>(steps_.size()) - 1;
      continue;
    }
    Step s;
    s.node = static_cast<int>(i);
    steps_.push_back(s);
    for (int v : n.used_values())
      last_use[static_cast<size_t>(v)] = static_cast<int>(steps_.size()) - 1;
  }
  // Release node-made values after their last use (or right after they are made, if unused).
  std::vector<int> made_at(nv, -1);
  for (size_t si = 0; si < steps_.size(); ++si) {
    const Step& s = steps_[si];
    std::vector<int> defs = s.node >= 0 ? graph.nodes[static_cast<size_t>(s.node)].defined_values()
                            : s.conv >= 0
                                ? std::vector<int>{graph.convs[static_cast<size_t>(s.conv)].out}
                                : graph.groups[static_cast<size_t>(s.group)].outputs;
    for (int v : defs) made_at[static_cast<size_t>(v)] = static_cast<int>(si);
  }
  int64_t live = 0;
  std::vector<int64_t> delta(steps_.size() + 1, 0);
  for (size_t v = 0; v < nv; ++v) {
    if (graph.values[v].kind != ValueKind::Node || made_at[v] < 0 || is_output_[v]) continue;
    const int end = std::max(last_use[v], made_at[v]);
    steps_[static_cast<size_t>(end)].release.push_back(static_cast<int>(v));
    delta[static_cast<size_t>(made_at[v])] += bytes_of(graph.values[v].meta);
    delta[static_cast<size_t>(end) + 1] -= bytes_of(graph.values[v].meta);
  }
  for (int64_t d : delta) {
    live += d;
    peak_bytes_ = std::max(peak_bytes_, live);
  }
  xpu_ = build_xpu_kernels(graph);
  if (!xpu_.error.empty())
    std::fprintf(stderr,
                 "xten: compile: the generated XPU kernels could not be built (%s); their groups "
                 "run op by op through the eager kernels (docs/compile.md, \"XPU code\")\n",
                 xpu_.error.c_str());
}

void Executor::run_conv(int conv, std::vector<Tensor>& env) {
  const Graph& g = *graph_;
  const ConvStep& c = g.convs[static_cast<size_t>(conv)];
  std::optional<profiler::RecordFunction> range;
  if (profiler::detail::recording()) range.emplace(c.name);
  auto from = [&](int step) {
    return step >= 0 ? g.convs[static_cast<size_t>(step)].impl.get() : nullptr;
  };
  const Tensor other = c.other >= 0 ? env[static_cast<size_t>(c.other)] : Tensor();
  env[static_cast<size_t>(c.out)] = c.impl->run(env[static_cast<size_t>(c.src)], from(c.src_step),
                                                other, from(c.other_step), c.blocked_out);
}

void Executor::run_members(int group, std::vector<Tensor>& env) {
  for (int i : graph_->groups[static_cast<size_t>(group)].nodes)
    run_node(graph_->nodes[static_cast<size_t>(i)], env);
}

void Executor::run_group(int group, std::vector<Tensor>& env) {
  const FusedGroup& g = graph_->groups[static_cast<size_t>(group)];
  const bool on_xpu = g.device.type() == kXPU;
  if (on_xpu && !xpu_.built()) return run_members(group, env);
  const TensorOptions opts = TensorOptions(kFloat).device(g.device);
  std::optional<profiler::RecordFunction> range;
  if (profiler::detail::recording()) range.emplace(g.name);
  std::vector<Tensor> ins;
  ins.reserve(g.inputs.size());
  for (int v : g.inputs) {
    const Tensor& t = env[static_cast<size_t>(v)];
    ins.push_back(t.dtype() == kFloat ? t : t.to(kFloat));  // a Scalar argument (0-d)
  }
  std::vector<Tensor> outs;
  outs.reserve(g.outputs.size());
  cpu::RowNorm norm;
  if (g.norm_node >= 0) {
    norm.op = g.norm_op;
    norm.input_register = g.norm_register;
    norm.eps = g.norm_eps;
    if (g.norm_weight >= 0) norm.weight = env[static_cast<size_t>(g.norm_weight)];
    if (g.norm_bias >= 0) norm.bias = env[static_cast<size_t>(g.norm_bias)];
    norm.out = empty(graph_->values[static_cast<size_t>(g.norm_output)].meta.sizes, opts);
  }
  for (int v : g.outputs) {
    if (v == g.norm_output) continue;
    Tensor& buf = buffers_[static_cast<size_t>(v)];
    if (keep_buffers_ && !is_output_[static_cast<size_t>(v)]) {
      if (!buf.defined()) buf = empty(g.shape, opts);
      outs.push_back(buf);
    } else {
      outs.push_back(empty(g.shape, opts));
    }
  }
  if (!on_xpu)
    cpu::run_fused(g.program, g.shape, ins, outs, g.norm_node >= 0 ? &norm : nullptr);
  else if (!run_xpu_group(xpu_, *graph_, group, ins, outs, norm.out, norm.weight, norm.bias))
    return run_members(group, env);  // an input laid out unlike the capture's (not expected)
  if (g.norm_node >= 0) env[static_cast<size_t>(g.norm_output)] = norm.out;
  size_t o = 0;
  for (int v : g.outputs)
    if (v != g.norm_output) env[static_cast<size_t>(v)] = outs[o++];
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  const Graph& g = *graph_;
  std::vector<Tensor> env(g.values.size());
  XTEN_CHECK(inputs.size() == g.inputs.size(), ValueError, "compile",
             "the compiled program takes {} tensors, but got {}", g.inputs.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(g.inputs[i])] = inputs[i];
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ValueKind::Captured || g.values[v].kind == ValueKind::Constant)
      env[v] = g.values[v].tensor;
  for (const Step& s : steps_) {
    if (s.node >= 0)
      run_node(g.nodes[static_cast<size_t>(s.node)], env);
    else if (s.conv >= 0)
      run_conv(s.conv, env);
    else
      run_group(s.group, env);
    for (int v : s.release) env[static_cast<size_t>(v)] = Tensor();
  }
  std::vector<Tensor> outs;
  outs.reserve(g.outputs.size());
  for (int v : g.outputs) outs.push_back(v < 0 ? Tensor() : env[static_cast<size_t>(v)]);
  return outs;
}

}  // namespace xten::compiler
