// Note [Capture]
// C++ has no bytecode to trace, so a program is captured by running it: the Capture key is added
// to the thread's included set, and its fallback, which sits right above the backends, sees every
// op call that reaches them. A call whose backend would run a CompositeImplicit kernel runs that
// kernel with Capture still on, so the primitives it decomposes into are recorded instead (so
// does a call of the few ops with a fused backend kernel whose primitives the passes fuse
// further, `recorded_as_composite`); any
// other call is recorded (arguments as values or constants, results as new values) and then run
// below with Capture off, so a kernel's own inner calls are part of its node. Everything above
// the backends has already happened when a call arrives: autograd recorded its node, autocast
// inserted its casts (recorded as the ops they are). Tensors the program did not make and was not
// given (a module's parameters) become captured values, kept by reference. What the program
// reads back to the host (item()) and ops whose result's shape depends on values (nonzero,
// masked_select) are graph breaks: the capture notes where it was and which node values the
// program still holds (they are the values the graph must hand back there), records a
// data-dependent op as a node of its own, and goes on; with fullgraph a break is an error.
// segments.cpp splits the graph at the breaks and replays the program on later calls.
#include <xten/compile/capture.h>

#include <algorithm>
#include <unordered_map>

#include <xten/autocast/autocast.h>
#include <xten/autograd/autograd.h>
#include <xten/autograd/autograd_meta.h>
#include <xten/autograd/engine.h>
#include <xten/compile/host_guard.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten::compiler {
namespace {

struct Tracer {
  Graph graph;
  std::unordered_map<const TensorImpl*, int> value_of;
  // Every traced tensor, once (so that no traced TensorImpl's address is reused, and so that a
  // use count above one means the program holds it).
  std::unordered_map<const TensorImpl*, Tensor> keep_alive;
  bool fullgraph = false;
  std::vector<GraphBreak> breaks;
  std::vector<std::function<bool()>> host_guards;
  struct PendingBinding {
    std::string op, arg;
    std::function<double()> value;
  };
  std::vector<PendingBinding> pending;
  std::vector<CaptureResult::Binding> bindings;
  // Input and node values by the memory they live in (Note [Tensors made without an op]).
  std::unordered_map<const void*, std::vector<int>> by_memory;
};
thread_local Tracer* t_tracer = nullptr;
thread_local ReplayHandler* t_replay = nullptr;

void graph_break(Tracer& t, const char* what, bool is_node) {
  XTEN_CHECK(!t.fullgraph, ValueError, "compile",
             "graph break at '{}' with fullgraph=true: its result depends on tensor values the "
             "graph cannot know (docs/compile.md, \"Graph breaks\")",
             what);
  GraphBreak b;
  b.what = what;
  b.node = static_cast<int>(t.graph.nodes.size());
  b.is_node = is_node;
  for (const auto& [impl, tensor] : t.keep_alive) {
    auto it = t.value_of.find(impl);
    if (it == t.value_of.end() || tensor.use_count() <= 1) continue;
    if (t.graph.values[static_cast<size_t>(it->second)].kind == ValueKind::Node)
      b.alive.push_back(it->second);
  }
  std::sort(b.alive.begin(), b.alive.end());
  t.breaks.push_back(std::move(b));
}

void host_effect(const char* what) {
  if (t_replay) return t_replay->on_host_read(what);
  if (t_tracer) graph_break(*t_tracer, what, false);
}

void note_memory(Tracer& t, const Tensor& x, int id) {
  if (x.storage().defined() && x.storage().data() != nullptr)
    t.by_memory[x.storage().data()].push_back(id);
}

int define(Tracer& t, const Tensor& x, int node);

// Note [Tensors made without an op]
// Some tensors are made from another one's memory without an op call: autograd saves an op's
// result for its backward as a new tensor object over the result's storage (Note [Saved
// tensors]), so the backward reads a tensor the capture never saw made. Taken for a captured
// tensor, it would be read by reference on every later run: the capture's values, not the run's.
// So an unknown tensor over the memory of an input or node value is that value (same geometry)
// or an as_strided view of it (another geometry).
int value_over_known_memory(Tracer& t, const Tensor& x) {
  if (!x.storage().defined() || x.storage().data() == nullptr) return -1;
  auto it = t.by_memory.find(x.storage().data());
  if (it == t.by_memory.end()) return -1;
  const TensorMeta meta = TensorMeta::of(x);
  for (auto v = it->second.rbegin(); v != it->second.rend(); ++v)
    if (t.graph.values[static_cast<size_t>(*v)].meta == meta) {
      t.value_of[x.impl()] = *v;
      t.keep_alive.emplace(x.impl(), x);
      return *v;
    }
  static const OperatorHandle as_strided = Dispatcher::singleton().find("xten::as_strided");
  const int base = it->second.back();
  if (!(t.graph.values[static_cast<size_t>(base)].meta.dtype == meta.dtype)) return -1;
  Node node;
  node.op = as_strided;
  node.args.push_back(Arg::of_value(base));
  node.args.push_back(Arg::of_constant(IValue(x.sizes().vec())));
  node.args.push_back(Arg::of_constant(IValue(x.strides().vec())));
  node.args.push_back(Arg::of_constant(IValue(x.storage_offset())));
  const int id = static_cast<int>(t.graph.nodes.size());
  Result res;
  res.kind = Result::Kind::Value;
  res.value = define(t, x, id);
  node.results.push_back(std::move(res));
  t.graph.nodes.push_back(std::move(node));
  return res.value;
}

int value_for(Tracer& t, const Tensor& x) {
  if (!x.defined()) return -1;
  auto it = t.value_of.find(x.impl());
  if (it != t.value_of.end()) return it->second;
  if (!x.impl()->is_wrapped_number()) {
    const int known = value_over_known_memory(t, x);
    if (known >= 0) return known;
  }
  Value v;
  v.meta = TensorMeta::of(x);
  v.tensor = x;
  if (x.impl()->is_wrapped_number()) {
    v.kind = ValueKind::Constant;  // a Scalar argument, as the front end wrapped it
  } else {
    v.kind = ValueKind::Captured;
    v.index = static_cast<int>(t.graph.captured.size());
  }
  const int id = t.graph.add_value(std::move(v));
  if (t.graph.values[id].kind == ValueKind::Captured) t.graph.captured.push_back(id);
  t.value_of[x.impl()] = id;
  t.keep_alive.emplace(x.impl(), x);
  return id;
}

Arg arg_for(Tracer& t, const IValue& v) {
  if (v.is_tensor()) return Arg::of_value(value_for(t, v.get<Tensor>()));
  if (v.is_tensor_list()) {
    Arg a;
    a.kind = Arg::Kind::ValueList;
    for (const Tensor& x : v.get<std::vector<Tensor>>()) a.values.push_back(value_for(t, x));
    return a;
  }
  return Arg::of_constant(v);
}

int define(Tracer& t, const Tensor& x, int node) {
  if (!x.defined()) return -1;
  Value v;
  v.kind = ValueKind::Node;
  v.meta = TensorMeta::of(x);
  v.node = node;
  const int id = t.graph.add_value(std::move(v));
  t.value_of[x.impl()] = id;  // an in-place op's result is the new value of its tensor
  t.keep_alive.emplace(x.impl(), x);
  note_memory(t, x, id);
  return id;
}

bool is_view(const OperatorHandle& op) {
  if (op.entry().written_args() != 0) return false;
  for (const SchemaArgument& r : op.entry().function_schema().returns())
    if (r.alias) return true;
  return false;
}

// Composites the passes know as a whole (a fused group can end in layer_norm's row epilogue).
bool kept_whole(const OperatorHandle& op) {
  return op.name() == "xten::layer_norm";
}

// The opposite: ops with a fused backend kernel that are recorded as their composite's
// primitives, which the passes fuse further. batch_norm (the CPU has a kernel of one pass) is
// its statistics and an addcmul; addcmul is its per-channel scale and shift: as a mul and an
// add, the fold into a preceding convolution and the pointwise groups (the ReLU after it) see
// them.
bool recorded_as_composite(const OperatorHandle& op) {
  return op.name() == "xten::addcmul" || op.name() == "xten::batch_norm";
}

void capture_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  if (t_replay) return t_replay->on_call(op, ks, stack);
  const DispatchKeySet below = ks.remove(DispatchKey::Capture);
  Tracer* t = t_tracer;
  if (t && records_decomposed(op, below)) return op.redispatch_boxed(below, stack);
  if (t && recorded_as_composite(op))
    return op.entry().composite_kernel()->call_boxed(op, below, stack);
  if (!t) {
    const ExcludeDispatchKeyGuard off(DispatchKey::Capture);
    return op.redispatch_boxed(below, stack);
  }
  if (is_data_dependent(op)) graph_break(*t, op.entry().error_name(), true);
  const size_t n = static_cast<size_t>(op.entry().num_arguments());
  const size_t base = stack->size() - n;
  Node node;
  node.op = op;
  for (size_t i = 0; i < n; ++i) node.args.push_back(arg_for(*t, (*stack)[base + i]));
  {
    const ExcludeDispatchKeyGuard off(DispatchKey::Capture);
    op.redispatch_boxed(below, stack);
  }
  const int id = static_cast<int>(t->graph.nodes.size());
  for (auto p = t->pending.begin(); p != t->pending.end();) {
    if (p->op != op.name()) {
      ++p;
      continue;
    }
    const auto& schema = op.entry().function_schema().arguments();
    int arg = -1;
    for (size_t i = 0; i < schema.size(); ++i)
      if (schema[i].name == p->arg) arg = static_cast<int>(i);
    XTEN_CHECK(arg >= 0 && node.args[static_cast<size_t>(arg)].kind == Arg::Kind::Constant &&
                   node.args[static_cast<size_t>(arg)].constant.is<double>(),
               ValueError, "compile", "'{}' has no float argument '{}' to bind", p->op, p->arg);
    t->bindings.push_back({id, arg, std::move(p->value)});
    p = t->pending.erase(p);
  }
  for (size_t i = base; i < stack->size(); ++i) {
    const IValue& r = (*stack)[i];
    Result res;
    if (r.is_tensor()) {
      res.kind = Result::Kind::Value;
      res.value = define(*t, r.get<Tensor>(), id);
    } else if (r.is_tensor_list()) {
      res.kind = Result::Kind::ValueList;
      for (const Tensor& x : r.get<std::vector<Tensor>>()) res.values.push_back(define(*t, x, id));
    } else {
      res.kind = Result::Kind::Other;
    }
    node.results.push_back(std::move(res));
  }
  t->graph.nodes.push_back(std::move(node));
}

// Note [Joint capture]
// compile(module) inside an eager training loop returns results that require grad, and the loop
// calls backward() on them later, outside the compiled call. So the capture records that backward
// too, right after the forward (AOTAutograd's joint graph): it runs autograd::grad of the
// differentiable results, with respect to the inputs and captured tensors that require grad,
// with gradients of ones that are new graph inputs (made with the Capture key off, so not
// recorded). Nodes from forward_nodes on are then the backward formulas the engine ran, and
// compile/joint.cpp cuts the graph there. The eager autograd graph of the forward is retained,
// so the capture call's own results keep their history; the leaves' hooks do not run on these
// stand-in gradients (a DDP reducer would reduce them).
void capture_joint(Tracer& t, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                   CaptureResult::Joint& j) {
  std::vector<Tensor> results, wrt;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined() && outputs[i].requires_grad()) {
      j.differentiable.push_back(static_cast<int>(i));
      results.push_back(outputs[i]);
    }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      j.wrt_inputs.push_back(static_cast<int>(i));
      wrt.push_back(inputs[i]);
    }
  for (size_t i = 0; i < t.graph.captured.size(); ++i) {
    const Tensor& x = t.graph.values[static_cast<size_t>(t.graph.captured[i])].tensor;
    if (x.requires_grad()) {
      j.wrt_captured.push_back(static_cast<int>(i));
      wrt.push_back(x);
    }
  }
  if (results.empty() || wrt.empty()) return;
  j.forward_nodes = static_cast<int>(t.graph.nodes.size());
  std::vector<Tensor> seeds;
  for (const Tensor& r : results) {
    Tensor g;
    {
      const ExcludeDispatchKeyGuard off(DispatchKey::Capture);
      const NoGradGuard no_grad;
      g = ones(r.sizes(), TensorOptions(r.dtype()).device(r.device()));
    }
    Value v;
    v.kind = ValueKind::Input;
    v.index = static_cast<int>(t.graph.inputs.size());
    v.meta = TensorMeta::of(g);
    const int id = t.graph.add_value(std::move(v));
    t.graph.inputs.push_back(id);
    t.value_of[g.impl()] = id;
    t.keep_alive.emplace(g.impl(), g);
    note_memory(t, g, id);
    j.grad_inputs.push_back(id);
    seeds.push_back(std::move(g));
  }
  // The leaves' hooks run on what grad() returns: set aside while it runs.
  std::vector<std::pair<autograd::AutogradMeta*, decltype(autograd::AutogradMeta::leaf_hooks)>>
      hooks;
  for (const Tensor& x : wrt)
    if (autograd::AutogradMeta* m = autograd::meta_of(x); m && !m->leaf_hooks.empty()) {
      hooks.emplace_back(m, std::move(m->leaf_hooks));
      m->leaf_hooks.clear();
    }
  struct Restore {
    decltype(hooks)& h;
    ~Restore() {
      for (auto& [m, kept] : h) m->leaf_hooks = std::move(kept);
    }
  } restore{hooks};
  const std::vector<Tensor> grads = autograd::grad(results, wrt, seeds, /*retain_graph=*/true,
                                                   /*create_graph=*/false, /*allow_unused=*/true);
  for (const Tensor& g : grads) j.grads.push_back(value_for(t, g));
  j.made = true;
}

}  // namespace

bool is_data_dependent(const OperatorHandle& op) {
  const std::string& n = op.name();
  return n == "xten::nonzero" || n == "xten::masked_select";
}

bool records_decomposed(const OperatorHandle& op, DispatchKeySet below) {
  // A composite is recorded as the primitives it calls, unless it is a view (views are made from
  // metadata alone, with no op inside to record, so the view op itself is the node) or one the
  // passes know whole.
  const DispatchKeySet backends = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::XPU);
  return op.entry().runs_composite((below & backends).highest()) && !is_view(op) && !kept_whole(op);
}

void guard_host_values(std::function<bool()> holds) {
  if (t_tracer && !t_replay) t_tracer->host_guards.push_back(std::move(holds));
}

void bind_float_argument(const char* op, const char* arg, std::function<double()> value) {
  if (t_tracer && !t_replay) t_tracer->pending.push_back({op, arg, std::move(value)});
}

bool is_capturing() {
  return t_tracer != nullptr && t_replay == nullptr;
}

void set_replay_handler(ReplayHandler* h) {
  detail::g_graph_break_hook = &host_effect;
  t_replay = h;
}

CaptureResult capture(const Program& program, const std::vector<Tensor>& inputs, bool fullgraph,
                      bool joint) {
  XTEN_CHECK(t_tracer == nullptr, ValueError, "compile",
             "a compiled program was called while another one is being captured on this thread");
  Tracer t;
  t.fullgraph = fullgraph;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value v;
    v.kind = ValueKind::Input;
    v.index = static_cast<int>(i);
    if (inputs[i].defined()) v.meta = TensorMeta::of(inputs[i]);
    const int id = t.graph.add_value(std::move(v));
    t.graph.inputs.push_back(id);
    if (inputs[i].defined()) {
      t.value_of[inputs[i].impl()] = id;
      note_memory(t, inputs[i], id);
    }
  }
  // Casts the autocast cache would hand out would be captured tensors made before this run;
  // without them, the casts are recorded as the ops they are (docs/compile.md, "Autocast").
  autocast::clear_cache();
  detail::g_graph_break_hook = &host_effect;
  CaptureResult r;
  const uint64_t passes = autograd::backward_passes_on_this_thread();
  {
    t_tracer = &t;
    struct Reset {
      ~Reset() { t_tracer = nullptr; }
    } reset;
    const IncludeDispatchKeyGuard on(DispatchKey::Capture);
    r.outputs = program(inputs);
    r.backward_ran = autograd::backward_passes_on_this_thread() != passes;
    if (joint && !r.backward_ran && t.breaks.empty() && GradMode::is_enabled())
      capture_joint(t, inputs, r.outputs, r.joint);
  }
  for (const Tensor& x : r.outputs) t.graph.outputs.push_back(value_for(t, x));
  // Escaped values: node results something other than the tracer and the returned tensors still
  // holds (a use count above what those account for), by the tensor object that holds them.
  std::unordered_map<const TensorImpl*, long> accounted;  // references beside the tracer's
  for (const Tensor& x : r.outputs)
    if (x.defined()) ++accounted[x.impl()];
  // (a traced view holds its base: those references are the tracer's too)
  for (const auto& [impl, tensor] : t.keep_alive)
    if (const TensorImpl* base = impl->view_base().get()) ++accounted[base];
  std::vector<std::pair<int, Tensor>> escaped;
  for (const auto& [impl, tensor] : t.keep_alive) {
    auto it = t.value_of.find(impl);
    if (it == t.value_of.end()) continue;
    if (t.graph.values[static_cast<size_t>(it->second)].kind != ValueKind::Node) continue;
    auto known = accounted.find(impl);
    const long held = 1 + (known == accounted.end() ? 0 : known->second);
    if (tensor.use_count() <= held) continue;
    escaped.emplace_back(it->second, tensor);
  }
  std::sort(escaped.begin(), escaped.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [v, tensor] : escaped) {
    r.escaped.push_back(v);
    r.escaped_tensors.push_back(std::move(tensor));
  }
  r.host_guards = std::move(t.host_guards);
  r.bindings = std::move(t.bindings);
  if (!t.breaks.empty()) r.break_op = t.breaks.front().what;
  r.breaks = std::move(t.breaks);
  r.graph = std::move(t.graph);
  return r;
}

LIBRARY_IMPL(_, Capture, m) {
  m.fallback(BoxedKernel(&capture_fallback));
}

}  // namespace xten::compiler
