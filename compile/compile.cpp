// The compiled-program cache: guards, capture on a miss, the passes, the executor
// (docs/compile.md, "Guards and recompiles").
#include <xten/compile/compile.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <xten/autocast/autocast.h>
#include <xten/autograd/grad_mode.h>
#include <xten/compile/capture.h>
#include <xten/compile/joint.h>
#include <xten/compile/passes.h>
#include <xten/compile/runtime.h>
#include <xten/compile/segments.h>
#include <xten/core/parallel.h>

namespace xten::compile_detail {
namespace {

using compiler::Graph;
using compiler::TensorMeta;

// Everything about a call that changes what its trace would be.
struct Signature {
  struct Input {
    bool defined = false;
    TensorMeta meta;
    bool requires_grad = false;
    bool operator==(const Input& o) const {
      return defined == o.defined && requires_grad == o.requires_grad &&
             (!defined || meta == o.meta);
    }
  };
  std::vector<Input> inputs;
  bool grad_enabled = false;
  bool autocast[2] = {false, false};
  ScalarType autocast_dtype[2] = {ScalarType::Undefined, ScalarType::Undefined};
  int training = -1;  // compile(module): the module's flag
  // The thread count: convolution steps' primitives are built for it (Note [oneDNN threads]).
  int threads = 1;

  bool operator==(const Signature& o) const {
    return inputs == o.inputs && grad_enabled == o.grad_enabled && threads == o.threads &&
           autocast[0] == o.autocast[0] && autocast[1] == o.autocast[1] &&
           autocast_dtype[0] == o.autocast_dtype[0] && autocast_dtype[1] == o.autocast_dtype[1] &&
           training == o.training;
  }
  std::string describe() const {
    std::string s;
    for (const Input& i : inputs)
      s += (s.empty() ? "" : ", ") + (i.defined ? i.meta.to_string() : "None");
    return "(" + s + ")";
  }
};

Signature signature_of(const std::vector<Tensor>& inputs, const nn::Module* module) {
  Signature s;
  for (const Tensor& t : inputs) {
    Signature::Input in;
    in.defined = t.defined();
    if (t.defined()) {
      in.meta = TensorMeta::of(t);
      in.requires_grad = t.requires_grad();
    }
    s.inputs.push_back(std::move(in));
  }
  s.grad_enabled = GradMode::is_enabled();
  s.threads = get_num_threads();
  const DeviceType types[2] = {kCPU, kXPU};
  for (int d = 0; d < 2; ++d) {
    s.autocast[d] = autocast::is_autocast_enabled(types[d]);
    if (s.autocast[d]) s.autocast_dtype[d] = autocast::get_autocast_dtype(types[d]);
  }
  if (module) s.training = module->is_training();
  return s;
}

struct Entry {
  Signature sig;
  // A graph without breaks and its executor, or the segments of one with breaks.
  std::shared_ptr<Graph> graph;
  std::unique_ptr<compiler::Executor> executor;
  std::unique_ptr<compiler::SegmentedProgram> segmented;
  // Or a forward with a generated backward (compile/joint.h).
  std::shared_ptr<compiler::JointProgram> joint;
  // With a joint program: which captured tensors required grad (a change recompiles).
  std::vector<char> captured_requires_grad;
  std::string eager_reason;  // non-empty: this signature runs eagerly
  // Guards on the captured tensors: their metadata, and with freeze their versions.
  std::vector<TensorMeta> captured_meta;
  std::vector<uint32_t> captured_version;
  // Host guards (compile/host_guard.h): all must hold for the graph to run.
  std::vector<std::function<bool()>> host_guards;
  // Float arguments bound to host values: set in the graph before each run.
  std::vector<compiler::CaptureResult::Binding> bindings;
  // A training step's first capture: the program made state then (an optimizer's buffers) that
  // later calls only update, so the next call captures again (docs/compile.md, "Training steps").
  bool warmup = false;
  // The graph's outputs past the program's own: escaped values (CaptureResult::escaped), written
  // into these tensor objects after each run.
  size_t num_outputs = 0;
  std::vector<Tensor> escaped;

  bool host_guards_hold() const {
    for (const auto& holds : host_guards)
      if (!holds()) return false;
    return true;
  }
  void apply_bindings() const {
    for (const auto& b : bindings)
      graph->nodes[static_cast<size_t>(b.node)].args[static_cast<size_t>(b.arg)].constant =
          IValue(b.value());
  }
  // The program's results of a run, after the escaped values went to their tensors.
  std::vector<Tensor> finish(std::vector<Tensor> out) const {
    for (size_t i = 0; i < escaped.size(); ++i)
      escaped[i].impl()->set_data(*out.at(num_outputs + i).impl());
    out.resize(num_outputs);
    return out;
  }

  const Graph* captured_graph() const { return segmented ? &segmented->captured() : graph.get(); }
  bool captured_hold(bool freeze) const {
    const Graph* graph = captured_graph();
    if (!graph) return true;
    for (size_t i = 0; i < graph->captured.size(); ++i) {
      const Tensor& t = graph->values[static_cast<size_t>(graph->captured[i])].tensor;
      if (!(TensorMeta::of(t) == captured_meta[i])) return false;
      if (freeze && t.impl()->version() != captured_version[i]) return false;
      if (joint && t.requires_grad() != static_cast<bool>(captured_requires_grad[i])) return false;
    }
    return true;
  }
};

bool any_requires_grad(const Graph& g, const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  for (int v : g.captured)
    if (g.values[static_cast<size_t>(v)].tensor.requires_grad()) return true;
  return false;
}

std::string debug_dir(const CompileOptions& o) {
  if (!o.debug_dir_.empty()) return o.debug_dir_;
  const char* env = std::getenv("XTEN_COMPILE_DEBUG");
  return env ? env : "";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "xten: compile: cannot write the debug file %s\n", path.c_str());
    return;
  }
  f << text;
}

std::string programs_text(const Graph& g) {
  std::string s;
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const compiler::FusedGroup& grp = g.groups[gi];
    s += fmt::format("group {} {}: shape [{}], inputs", gi, grp.name, fmt::join(grp.shape, ", "));
    for (size_t k = 0; k < grp.inputs.size(); ++k) s += fmt::format(" r{}=%{}", k, grp.inputs[k]);
    s += "\n";
    for (const cpu::FusedInstr& in : grp.program.code) {
      if (cpu::is_binary(in.op))
        s += fmt::format("  r{} = {}(r{}, r{}", in.dst, cpu::to_string(in.op), in.a, in.b);
      else
        s += fmt::format("  r{} = {}(r{}", in.dst, cpu::to_string(in.op), in.a);
      if (in.op == cpu::FusedOpcode::AddAlpha) s += fmt::format(", alpha={}", in.s0);
      if (in.op == cpu::FusedOpcode::Clamp) s += fmt::format(", {}, {}", in.s0, in.s1);
      s += ")\n";
    }
    size_t k = 0;
    for (int v : grp.outputs)
      if (v != grp.norm_output)
        s += fmt::format("  store r{} -> %{}\n", grp.program.outputs[k++], v);
    if (grp.norm_node >= 0 && grp.norm_op != cpu::RowOp::LayerNorm)
      s += fmt::format("  rows: {}(r{}) -> %{}\n", cpu::to_string(grp.norm_op), grp.norm_register,
                       grp.norm_output);
    else if (grp.norm_node >= 0)
      s += fmt::format(
          "  rows: layer_norm(r{}, eps={}, weight {}, bias {}) -> %{}\n", grp.norm_register,
          grp.norm_eps, grp.norm_weight >= 0 ? fmt::format("%{}", grp.norm_weight) : "None",
          grp.norm_bias >= 0 ? fmt::format("%{}", grp.norm_bias) : "None", grp.norm_output);
  }
  return s;
}

}  // namespace

namespace {

// A bound argument is set on its node before each run; a node the passes removed or merged
// into a fused group or a convolution step no longer reads it there, so its binding becomes a
// guard on the value it had (a change recompiles rather than being missed).
void keep_bindings_that_hold(const Graph& g, Entry& e) {
  std::vector<char> absorbed(g.nodes.size(), 0);
  for (const compiler::FusedGroup& grp : g.groups)
    for (int n : grp.nodes) absorbed[static_cast<size_t>(n)] = 1;
  for (const compiler::ConvStep& c : g.convs)
    for (int n : c.nodes()) absorbed[static_cast<size_t>(n)] = 1;
  std::vector<compiler::CaptureResult::Binding> kept;
  for (auto& b : e.bindings) {
    const size_t n = static_cast<size_t>(b.node);
    if (!g.nodes[n].dead && !absorbed[n]) {
      kept.push_back(std::move(b));
      continue;
    }
    e.host_guards.push_back([value = b.value, was = b.value()] { return value() == was; });
  }
  e.bindings = std::move(kept);
}

}  // namespace

struct CompiledProgram::Impl {
  CompileOptions options;
  std::shared_ptr<nn::Module> module;
  std::vector<std::unique_ptr<Entry>> entries;
  CompileStats stats;
  bool warned_limit = false, warned_break = false;
  std::string last_graph;
  int compiles = 0;

  std::vector<Tensor> eager(const std::vector<Tensor>& inputs, const Program& program,
                            const std::string& reason) {
    ++stats.eager_calls;
    stats.last_eager_reason = reason;
    return program(inputs);
  }

  std::vector<Tensor> compile_and_run(const std::vector<Tensor>& inputs, const Program& program,
                                      Signature sig, bool after_warmup) {
    if (stats.captures > 0 && !after_warmup) ++stats.recompiles;
    ++stats.captures;
    compiler::CaptureResult cap =
        compiler::capture(program, inputs, options.fullgraph_, /*joint=*/true);
    auto e = std::make_unique<Entry>();
    e->sig = std::move(sig);
    e->host_guards = std::move(cap.host_guards);
    e->bindings = std::move(cap.bindings);
    const std::string dir = debug_dir(options);
    const int n = compiles++;
    if (!dir.empty())
      write_file(fmt::format("{}/graph_{}_captured.txt", dir, n), cap.graph.to_string());
    if (!cap.breaks.empty()) {
      ++stats.graph_breaks;
      stats.last_break = cap.break_op;
      if (!warned_break) {
        warned_break = true;
        std::fprintf(stderr,
                     "xten: compile: graph break at '%s' (a value read back to the host or a "
                     "shape that depends on values): the graph is split there, and later calls "
                     "replay the program (docs/compile.md, \"Graph breaks\")\n",
                     cap.break_op.c_str());
      }
    }
    if (cap.backward_ran && !after_warmup) {
      e->warmup = true;  // captured again on the next call
    } else if (cap.backward_ran && !cap.breaks.empty()) {
      e->eager_reason = fmt::format(
          "a training step with a graph break (at '{}') runs eagerly (docs/compile.md, "
          "\"Training steps\")",
          cap.break_op);
    } else if (cap.joint.made && !cap.breaks.empty()) {
      e->eager_reason = fmt::format(
          "a program whose results require grad, with a graph break (at '{}'), runs eagerly "
          "(docs/compile.md, \"A compiled forward in an eager training loop\")",
          cap.break_op);
    } else if (!cap.joint.made && !cap.backward_ran && GradMode::is_enabled() &&
               any_requires_grad(cap.graph, inputs)) {
      e->eager_reason =
          "a tensor requires grad and grad mode is on, but no result of the program requires "
          "grad (an in-place write to one, or a result that does not depend on it): nothing to "
          "differentiate in a graph (docs/compile.md, \"A compiled forward in an eager training "
          "loop\")";
    } else {
      const bool inductor = options.backend_ == "inductor", freeze = options.freeze_;
      auto optimize = [inductor, freeze](Graph& g) {
        if (!inductor) return;
        compiler::fold_constants(g, freeze);
        compiler::eliminate_identity_casts(g);
        compiler::eliminate_redundant_clones(g);
        compiler::fold_batch_norm_into_conv(g, freeze);
        compiler::eliminate_common_subexpressions(g);
        compiler::eliminate_dead_code(g);
        compiler::fuse_linear_relu(g);
        compiler::plan_convolutions(g, freeze);
        compiler::fuse_pointwise(g);
        g.verify();
      };
      const bool keep_buffers = options.mode_ == "reduce-overhead";
      stats.nodes_captured = cap.graph.live_nodes();
      std::vector<std::pair<const Graph*, const compiler::Executor*>> parts;
      if (cap.joint.made) {
        // Escaped values are not looked for: the forward's autograd graph, retained for this
        // call's results, holds what it saved (Note [Joint capture]).
        e->joint = std::make_shared<compiler::JointProgram>(cap.graph, std::move(cap.joint),
                                                            optimize, keep_buffers);
        parts.emplace_back(&e->joint->forward(), &e->joint->forward_executor());
        parts.emplace_back(&e->joint->backward(), &e->joint->backward_executor());
        last_graph = e->joint->to_string();
        for (int v : cap.graph.captured)
          e->captured_requires_grad.push_back(
              cap.graph.values[static_cast<size_t>(v)].tensor.requires_grad());
        e->graph = std::make_shared<Graph>(std::move(cap.graph));  // for the guards
        for (auto& b : e->bindings)  // nothing sets bound arguments in the two graphs
          e->host_guards.push_back([value = b.value, was = b.value()] { return value() == was; });
        e->bindings.clear();
      } else if (cap.breaks.empty()) {
        e->num_outputs = cap.graph.outputs.size();
        for (int v : cap.escaped) cap.graph.outputs.push_back(v);
        e->escaped = std::move(cap.escaped_tensors);
        auto g = std::make_shared<Graph>(std::move(cap.graph));
        g->verify();
        optimize(*g);
        keep_bindings_that_hold(*g, *e);
        e->graph = g;
        e->executor = std::make_unique<compiler::Executor>(g, keep_buffers);
        parts.emplace_back(g.get(), e->executor.get());
        last_graph = g->to_string();
      } else {
        e->segmented = std::make_unique<compiler::SegmentedProgram>(
            std::move(cap.graph), std::move(cap.breaks), optimize, keep_buffers);
        for (const compiler::Segment& seg : e->segmented->segments())
          if (seg.exec) parts.emplace_back(seg.graph.get(), seg.exec.get());
        last_graph = e->segmented->to_string();
      }
      const Graph& captured = *e->captured_graph();
      for (int v : captured.captured) {
        const Tensor& t = captured.values[static_cast<size_t>(v)].tensor;
        e->captured_meta.push_back(TensorMeta::of(t));
        e->captured_version.push_back(t.impl()->version());
      }
      stats.nodes_after = stats.fused_groups = stats.peak_bytes = 0;
      std::string programs, kernels;
      for (const auto& [g, exec] : parts) {
        int64_t after = g->live_nodes();
        for (const compiler::FusedGroup& grp : g->groups)
          after -= static_cast<int64_t>(grp.nodes.size()) - 1;
        for (const compiler::ConvStep& c : g->convs)
          after -= static_cast<int64_t>(c.nodes().size()) - 1;
        stats.nodes_after += after;
        stats.fused_groups += static_cast<int64_t>(g->groups.size());
        stats.peak_bytes = std::max(stats.peak_bytes, exec->peak_bytes());
        programs += programs_text(*g);
        kernels += exec->xpu_kernels().source;
      }
      if (!dir.empty()) {
        write_file(fmt::format("{}/graph_{}_optimized.txt", dir, n), last_graph);
        write_file(fmt::format("{}/graph_{}_fused.txt", dir, n), programs);
        if (!kernels.empty()) write_file(fmt::format("{}/graph_{}_kernels.cl", dir, n), kernels);
      }
    }
    // This call is counted as a capture (it ran the program while capturing), not also as an
    // eager call: captures + compiled_calls + eager_calls = calls.
    if (!e->eager_reason.empty()) stats.last_eager_reason = e->eager_reason;
    entries.push_back(std::move(e));
    // The capture ran the program: its results are this call's (with their eager history).
    return cap.outputs;
  }
};

CompiledProgram::CompiledProgram(CompileOptions options, std::shared_ptr<nn::Module> module)
    : impl_(std::make_unique<Impl>()) {
  XTEN_CHECK(options.backend_ == "inductor" || options.backend_ == "eager", ValueError, "compile",
             "backend must be \"inductor\" or \"eager\", but got \"{}\"", options.backend_);
  XTEN_CHECK(options.mode_ == "default" || options.mode_ == "reduce-overhead", ValueError,
             "compile", "mode must be \"default\" or \"reduce-overhead\", but got \"{}\"",
             options.mode_);
  XTEN_CHECK(options.cache_limit_ >= 1, ValueError, "compile",
             "cache_limit must be >= 1, but got {}", options.cache_limit_);
  XTEN_CHECK(!options.dynamic_, NotImplementedError, "compile",
             "dynamic=true (one graph for many shapes) is not supported yet; with dynamic=false "
             "each input signature is compiled, up to cache_limit");
  impl_->options = std::move(options);
  impl_->module = std::move(module);
}

CompiledProgram::~CompiledProgram() = default;

std::vector<Tensor> CompiledProgram::call(const std::vector<Tensor>& inputs,
                                          const Program& program) {
  Impl& m = *impl_;
  // Called inside another compiled program while that one is captured or replayed: run the
  // function itself, so that its ops are the outer graph's (a compiled inner graph would run
  // below the Capture key, and the outer graph would read its results as fixed tensors).
  const LocalDispatchKeySet local = local_dispatch_key_set();
  if (local.included.has(DispatchKey::Capture) && !local.excluded.has(DispatchKey::Capture))
    return program(inputs);
  Signature sig = signature_of(inputs, m.module.get());
  for (auto& e : m.entries) {
    if (!(e->sig == sig)) continue;
    if (!e->captured_hold(m.options.freeze_) || !e->host_guards_hold()) continue;
    if (e->warmup) {
      m.entries.erase(std::find(m.entries.begin(), m.entries.end(), e));
      return m.compile_and_run(inputs, program, std::move(sig), true);
    }
    if (!e->eager_reason.empty()) return m.eager(inputs, program, e->eager_reason);
    ++m.stats.compiled_calls;
    if (e->joint) return e->joint->run(inputs);
    if (!e->segmented) {
      e->apply_bindings();
      return e->finish(e->executor->run(inputs));
    }
    std::string left;
    std::vector<Tensor> out = e->segmented->run(program, inputs, &left);
    if (!left.empty())
      m.stats.last_eager_reason = "the call left the captured path and finished eagerly: " + left;
    return out;
  }
  if (static_cast<int>(m.entries.size()) >= m.options.cache_limit_) {
    if (!m.warned_limit) {
      m.warned_limit = true;
      std::fprintf(stderr,
                   "xten: compile: %d graphs compiled for this program (cache_limit); the "
                   "signature %s runs eagerly, as will others not compiled yet\n",
                   m.options.cache_limit_, sig.describe().c_str());
    }
    return m.eager(inputs, program, "cache limit reached");
  }
  // A guard that missed because a captured tensor changed: that entry is stale.
  for (auto it = m.entries.begin(); it != m.entries.end();)
    it = ((*it)->sig == sig) ? m.entries.erase(it) : it + 1;
  return m.compile_and_run(inputs, program, std::move(sig), false);
}

const CompileStats& CompiledProgram::stats() const {
  return impl_->stats;
}

std::string CompiledProgram::graph_string() const {
  return impl_->last_graph;
}

}  // namespace xten::compile_detail
