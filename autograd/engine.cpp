// The engine: runs a graph backwards from its roots (Note [The autograd graph], autograd/node.h).
//
// Note [Engine]
// One backward call is one graph task on the calling thread: a walk from the roots counts, for
// every node, the edges that reach it; a node runs once all of them have delivered (its
// gradients summed first), ready nodes in reverse creation order. Each call owns its buffers,
// so independent backward calls on several threads do not share state (a leaf's accumulation is
// locked). Formulas run with autocast off, and with grad mode on only for create_graph. XPU
// work is queued on the stream as usual: nothing here synchronizes.
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <xten/autograd/autograd.h>
#include <xten/autograd/autograd_meta.h>
#include <xten/autograd/engine.h>
#include <xten/dispatch/ops.h>
#include <xten/profiler/record.h>

namespace xten::autograd {

namespace {

// The root of a backward: passes the given gradients to the outputs' edges.
class GraphRoot final : public Node {
 public:
  GraphRoot(std::vector<Edge> edges, variable_list grads) : grads_(std::move(grads)) {
    next_edges_ = std::move(edges);
    set_num_inputs(0);
  }
  std::string name() const override { return "GraphRoot"; }
  variable_list apply(variable_list&&) override { return grads_; }

 private:
  variable_list grads_;
};

// The callbacks queued during the backward pass running on this thread (null outside one).
thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;
thread_local uint64_t t_passes = 0;

struct Capture {
  Node* fn;
  uint32_t input_nr;
  size_t index;  // into the result
};

variable_list run(const std::vector<Edge>& roots, variable_list root_grads, bool keep_graph,
                  bool create_graph, const std::vector<Edge>& captures) {
  ++t_passes;
  auto root = std::make_shared<GraphRoot>(roots, std::move(root_grads));
  // Dependencies: how many edges reach each node.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> order;  // every node reached, found before its inputs
  {
    std::unordered_set<Node*> seen{root.get()};
    std::vector<Node*> stack{root.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      order.push_back(n);
      for (const Edge& e : n->next_edges()) {
        if (!e.valid()) continue;
        ++deps[e.fn.get()];
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }
  // With captures (autograd::grad), run only the nodes from which a captured edge is reached,
  // and never accumulate into leaves.
  std::unordered_set<Node*> needed;
  const bool capturing = !captures.empty();
  if (capturing) {
    std::unordered_map<Node*, std::vector<Node*>> parents;
    for (Node* n : order)
      for (const Edge& e : n->next_edges())
        if (e.valid()) parents[e.fn.get()].push_back(n);
    // A captured edge's own node runs only where it leads to another captured edge: grad() with
    // respect to a non-leaf stops at it, as in PyTorch (its history is not differentiated).
    std::vector<Node*> stack;
    for (const Edge& c : captures) stack.push_back(c.fn.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (Node* p : parents[n])
        if (needed.insert(p).second) stack.push_back(p);
    }
  }

  variable_list captured(captures.size());
  std::unordered_map<Node*, variable_list> buffers;
  auto cmp = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
    return a->sequence_nr() < b->sequence_nr();
  };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(cmp)>
      ready(cmp);
  ready.push(root);

  AutoGradMode grad_mode(create_graph);
  ExcludeDispatchKeyGuard no_autocast(
      DispatchKeySet(DispatchKey::AutocastCPU).add(DispatchKey::AutocastXPU));

  std::vector<std::function<void()>> callbacks;
  struct CallbackScope {
    std::vector<std::function<void()>>* saved;
    explicit CallbackScope(std::vector<std::function<void()>>* mine) : saved(t_callbacks) {
      t_callbacks = mine;
    }
    ~CallbackScope() { t_callbacks = saved; }
  } callback_scope(&callbacks);

  bool first = true;
  while (!ready.empty()) {
    std::shared_ptr<Node> fn = ready.top();
    ready.pop();
    variable_list inputs;
    if (auto it = buffers.find(fn.get()); it != buffers.end()) {
      inputs = std::move(it->second);
      buffers.erase(it);
    }
    inputs.resize(fn->num_inputs());
    if (fn->has_pre_hooks()) fn->run_pre_hooks(inputs);
    if (capturing) {
      for (size_t c = 0; c < captures.size(); ++c)
        if (captures[c].fn.get() == fn.get() && captures[c].input_nr < inputs.size())
          captured[c] = inputs[captures[c].input_nr];
    }
    const bool skip =
        !first && capturing && (dynamic_cast<AccumulateGrad*>(fn.get()) || !needed.count(fn.get()));
    first = false;
    variable_list outputs;
    if (!skip) {
      // While a profiler records, the node's evaluation is a range named after it, around the
      // ops its formula calls (docs/profiler.md).
      std::optional<profiler::detail::Range> range;
      if (profiler::detail::recording()) range.emplace(fn->name(), "backward");
      outputs = fn->apply(std::move(inputs));
      if (!keep_graph) fn->release_saved();
    }
    const auto& edges = fn->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) {
        variable_list& buf = buffers[e.fn.get()];
        if (buf.size() <= e.input_nr) buf.resize(e.input_nr + 1);
        Tensor& slot = buf[e.input_nr];
        slot = slot.defined() ? slot + outputs[i] : std::move(outputs[i]);
      }
      if (--deps[e.fn.get()] == 0) ready.push(e.fn);
    }
  }
  for (size_t i = 0; i < callbacks.size(); ++i) {
    auto cb = std::move(callbacks[i]);  // a callback may queue more (and grow the list)
    cb();
  }
  return captured;
}

// The gradients of the roots: given, or ones for one-element outputs.
variable_list root_grads(const std::vector<Tensor>& outputs, const std::vector<Tensor>& given,
                         const char* op) {
  XTEN_CHECK(given.empty() || given.size() == outputs.size(), ValueError, op,
             "got {} gradients for {} outputs", given.size(), outputs.size());
  variable_list g;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    XTEN_CHECK(out.defined(), ValueError, op, "output {} is undefined", i);
    XTEN_CHECK(out.requires_grad(), ValueError, op,
               "element {} of tensors does not require grad and does not have a grad_fn", i);
    if (!given.empty() && given[i].defined()) {
      XTEN_CHECK(given[i].sizes() == out.sizes(), ValueError, op,
                 "Mismatch in shape: grad_output[{}] has a shape of {} and output[{}] has a "
                 "shape of {}",
                 i, given[i].sizes(), i, out.sizes());
      g.push_back(given[i]);
    } else {
      XTEN_CHECK(out.numel() == 1, ValueError, op,
                 "grad can be implicitly created only for scalar outputs (output {} has shape {})",
                 i, out.sizes());
      g.push_back(ones_like(out));
    }
  }
  return g;
}

std::vector<Edge> root_edges(const std::vector<Tensor>& outputs) {
  std::vector<Edge> edges;
  for (const Tensor& t : outputs) edges.push_back(gradient_edge(t));
  return edges;
}

}  // namespace

uint64_t backward_passes_on_this_thread() {
  return t_passes;
}

void queue_callback(std::function<void()> callback) {
  XTEN_CHECK(t_callbacks != nullptr, ValueError, "queue_callback",
             "no backward pass is running on this thread");
  t_callbacks->push_back(std::move(callback));
}

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  variable_list g = root_grads(outputs, grad_outputs, "backward");
  run(root_edges(outputs), std::move(g), retain_graph.value_or(create_graph), create_graph, {});
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  variable_list g = root_grads(outputs, grad_outputs, "grad");
  std::vector<Edge> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    XTEN_CHECK(inputs[i].defined() && inputs[i].requires_grad(), ValueError, "grad",
               "One of the differentiated Tensors (input {}) does not require grad", i);
    captures.push_back(gradient_edge(inputs[i]));
  }
  variable_list r = run(root_edges(outputs), std::move(g), retain_graph.value_or(create_graph),
                        create_graph, captures);
  for (size_t i = 0; i < r.size(); ++i) {
    XTEN_CHECK(r[i].defined() || allow_unused, ValueError, "grad",
               "One of the differentiated Tensors (input {}) appears to not have been used in the "
               "graph. Set allow_unused=true if this is the desired behavior.",
               i);
    // A leaf's hooks run on what grad() returns, as they would before accumulation.
    if (r[i].defined())
      if (AutogradMeta* m = meta_of(inputs[i]); m && !m->grad_fn)
        for (const auto& [h, hook] : m->leaf_hooks) {
          Tensor t = hook(r[i]);
          if (t.defined()) r[i] = t;
        }
  }
  return r;
}

}  // namespace xten::autograd
