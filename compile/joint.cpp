// Note [Forward and backward graphs]
// The joint capture (Note [Joint capture] in capture.cpp) recorded the forward, then the backward
// formulas of its results. The graph is cut where the backward starts:
//   - the backward graph is nodes forward_nodes.. with the gradients as outputs; what it reads
//     from before the cut becomes its inputs: the incoming gradients, program inputs, and forward
//     values, which are the only ones saved (a forward value the backward does not read is freed
//     by the forward's executor after its last use, as always);
//   - the forward graph is nodes ..forward_nodes with the program's results and the saved values
//     as outputs. Nodes before the cut that only the backward needs (a relu mask made from the
//     output) stay in the forward and are saved; the dead-code pass drops what neither needs.
// Both graphs go through the same passes as any other. A call runs the forward graph and makes
// one autograd node, CompiledFunctionBackward (PyTorch's name), holding the saved values; its
// next edges are the gradient edges of the inputs and captured tensors that require grad (a
// parameter's AccumulateGrad, a non-leaf input's grad_fn), so the engine carries on from there as
// from any node: hooks, accumulation, DDP's reducer. What eager autograd checks is checked too:
// a saved value, input or captured tensor changed in place since the forward raises, and a
// second backward without retain_graph raises. The node cannot build a graph of its own
// (create_graph): NotImplementedError, and such a program is compiled as a training step instead.
#include <xten/compile/joint.h>

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include <xten/autograd/autograd_meta.h>
#include <xten/autograd/grad_mode.h>
#include <xten/compile/passes.h>
#include <xten/compile/segments.h>
#include <xten/dispatch/ops.h>

namespace xten::compiler {

class CompiledFunctionBackward final : public autograd::Node {
 public:
  CompiledFunctionBackward(std::shared_ptr<const JointProgram> program, std::vector<Tensor> saved,
                           const std::vector<Tensor>& inputs)
      : program_(std::move(program)), saved_(std::move(saved)) {
    const JointProgram& p = *program_;
    for (const JointProgram::Source& s : p.backward_inputs_)
      if (s.kind == JointProgram::Source::Kind::Input)
        inputs_.emplace_back(s.index, inputs[static_cast<size_t>(s.index)]);
    for (const Tensor& t : saved_) versions_.push_back(t.impl()->version());
    for (const auto& [i, t] : inputs_) versions_.push_back(t.impl()->version());
    for (const Tensor& t : p.backward_captured_) versions_.push_back(t.impl()->version());
    set_num_inputs(static_cast<uint32_t>(p.joint_.differentiable.size()));
    for (int i : p.joint_.wrt_inputs)
      next_edges_.push_back(autograd::gradient_edge(inputs[static_cast<size_t>(i)]));
    for (const Tensor& t : p.wrt_captured_)
      next_edges_.push_back(t.requires_grad() ? autograd::gradient_edge(t) : autograd::Edge{});
  }

  std::string name() const override { return "CompiledFunctionBackward"; }

  void release_saved() override {
    saved_.clear();
    inputs_.clear();
    released_ = true;
  }

  autograd::variable_list apply(autograd::variable_list&& grads) override {
    const JointProgram& p = *program_;
    XTEN_CHECK(!released_, ValueError, "backward",
               "Trying to backward through the graph of a compiled forward a second time (its "
               "saved values were freed after the first backward): pass retain_graph=true to the "
               "first");
    XTEN_CHECK(!GradMode::is_enabled(), NotImplementedError, "backward",
               "a compiled forward's backward cannot build a graph (create_graph=true, double "
               "backward); run the program eagerly or compile the whole step that calls backward "
               "(docs/compile.md, \"Training steps\")");
    size_t k = 0;
    auto unchanged = [&](const Tensor& t, const char* what) {
      XTEN_CHECK(t.impl()->version() == versions_[k], ValueError, "backward",
                 "one of the variables needed for gradient computation has been modified by an "
                 "inplace operation: {} {} of the compiled forward is at version {}; expected "
                 "version {} instead",
                 what, TensorMeta::of(t).to_string(), t.impl()->version(), versions_[k]);
      ++k;
    };
    for (const Tensor& t : saved_) unchanged(t, "a saved value");
    for (const auto& [i, t] : inputs_) unchanged(t, "an input");
    for (const Tensor& t : p.backward_captured_) unchanged(t, "a parameter or buffer");

    std::vector<Tensor> in;
    in.reserve(p.backward_inputs_.size());
    size_t next_input = 0;
    for (const JointProgram::Source& s : p.backward_inputs_) {
      switch (s.kind) {
        case JointProgram::Source::Kind::Saved:
          in.push_back(saved_[static_cast<size_t>(s.index)]);
          break;
        case JointProgram::Source::Kind::Input:
          in.push_back(inputs_[next_input++].second);
          break;
        case JointProgram::Source::Kind::Grad:
          in.push_back(gradient_as_captured(grads, static_cast<size_t>(s.index)));
          break;
      }
    }
    std::vector<Tensor> out = program_->backward_exec_->run(in);
    out.resize(next_edges_.size());
    return out;
  }

 private:
  // The gradient of result j laid out as the capture's stand-in was (contiguous, the result's
  // dtype): zeros where none flowed.
  Tensor gradient_as_captured(const autograd::variable_list& grads, size_t j) const {
    const TensorMeta& m = program_->output_meta_[j];
    const Tensor& g = j < grads.size() ? grads[j] : Tensor();
    if (!g.defined()) return zeros(m.sizes, TensorOptions(m.dtype).device(m.device));
    if (TensorMeta::of(g) == m) return g;
    Tensor c = empty(m.sizes, TensorOptions(m.dtype).device(m.device));
    c.copy_(g);
    return c;
  }

  std::shared_ptr<const JointProgram> program_;
  std::vector<Tensor> saved_;
  std::vector<std::pair<int, Tensor>> inputs_;  // the program inputs the backward reads
  std::vector<uint32_t> versions_;              // saved, inputs, captured: at the forward
  bool released_ = false;
};

namespace {

// Note [Recomputed pointwise values]
// A forward value the backward reads is saved: it lives from the forward to the backward. When
// it is made by a cheap pointwise op (is_fusable_pointwise: a GELU of a linear's result, a mask
// multiplied in) from values that are at hand in the backward anyway (saved already, program
// inputs, parameters, or recomputed themselves), the op is done again at the start of the
// backward instead, and the backward reads that: one value fewer saved, for the price of one
// pass that the backward's fused groups usually absorb (it fuses with its readers there). A chain
// of such ops (up to eight) is recomputed whole when it starts from values at hand. The
// forward's own copy is then freed after its last forward use (or not made, if nothing else
// reads it). Values the program returns are held by the caller anyway and stay saved; values
// that some node writes in place are never read again.
Graph recompute_pointwise(const Graph& c, CaptureResult::Joint& j, int* count) {
  const int k = j.forward_nodes, n = static_cast<int>(c.nodes.size());
  const std::vector<char> written = written_values(c);
  std::vector<char> returned(c.values.size(), 0), read_after(c.values.size(), 0);
  for (int v : c.outputs)
    if (v >= 0) returned[static_cast<size_t>(v)] = 1;
  for (int i = k; i < n; ++i)
    for (int v : c.nodes[static_cast<size_t>(i)].used_values())
      read_after[static_cast<size_t>(v)] = 1;
  for (int v : j.grads)
    if (v >= 0) read_after[static_cast<size_t>(v)] = 1;
  Graph g;
  g.values = c.values;
  g.inputs = c.inputs;
  g.captured = c.captured;
  g.outputs = c.outputs;
  g.nodes.assign(c.nodes.begin(), c.nodes.begin() + k);
  std::vector<int> again(c.values.size(), -1);  // a forward value -> its recomputed value
  auto rename = [&](Node& node) {
    auto to = [&](int& v) {
      if (v >= 0 && static_cast<size_t>(v) < again.size() && again[static_cast<size_t>(v)] >= 0)
        v = again[static_cast<size_t>(v)];
    };
    for (Arg& a : node.args) {
      if (a.kind == Arg::Kind::Value) to(a.value);
      for (int& v : a.values) to(v);
    }
  };
  auto at_hand = [&](int u) {
    const size_t x = static_cast<size_t>(u);
    if (written[x]) return false;
    if (again[x] >= 0 || c.values[x].kind != ValueKind::Node) return true;
    return c.values[x].node < k && (read_after[x] || returned[x]);
  };
  // Whether `u` can be had in the backward: at hand, or recomputed there from values that are
  // (a chain of at most kDepth pointwise ops); then `emit` appends the copies of those ops.
  constexpr int kDepth = 8;
  std::function<bool(int, int)> obtainable = [&](int u, int depth) -> bool {
    const size_t x = static_cast<size_t>(u);
    if (at_hand(u)) return true;
    if (depth == kDepth || written[x] || returned[x] || c.values[x].kind != ValueKind::Node ||
        c.values[x].node >= k)
      return false;
    const Node& p = c.nodes[static_cast<size_t>(c.values[x].node)];
    if (!is_fusable_pointwise(c, p)) return false;
    for (int w : p.used_values())
      if (!obtainable(w, depth + 1)) return false;
    return true;
  };
  std::function<void(int)> emit = [&](int u) {
    const size_t x = static_cast<size_t>(u);
    if (at_hand(u)) return;
    const Node& p = c.nodes[static_cast<size_t>(c.values[x].node)];
    for (int w : p.used_values()) emit(w);
    Node copy = p;
    rename(copy);
    Value val = c.values[x];
    val.node = static_cast<int>(g.nodes.size());
    copy.results[0].value = g.add_value(std::move(val));
    again[x] = copy.results[0].value;
    g.nodes.push_back(std::move(copy));
    ++*count;
  };
  *count = 0;
  std::vector<int> candidates;  // forward values the backward reads, made by pointwise ops
  for (int i = 0; i < k; ++i) {
    const Node& p = c.nodes[static_cast<size_t>(i)];
    const std::vector<int> defs = p.defined_values();
    if (defs.size() != 1) continue;
    const size_t v = static_cast<size_t>(defs[0]);
    if (read_after[v] && !returned[v] && !written[v] && is_fusable_pointwise(c, p))
      candidates.push_back(defs[0]);
  }
  for (int v : candidates) {
    // Unless it is at hand through another value's recomputation, it is saved: its arguments
    // must be obtainable without it.
    read_after[static_cast<size_t>(v)] = 0;
    if (obtainable(v, 0))
      emit(v);
    else
      read_after[static_cast<size_t>(v)] = 1;
  }
  for (int i = k; i < n; ++i) {
    Node node = c.nodes[static_cast<size_t>(i)];
    rename(node);
    for (int v : node.defined_values()) g.values[static_cast<size_t>(v)].node += *count;
    g.nodes.push_back(std::move(node));
  }
  for (int& v : j.grads)
    if (v >= 0 && again[static_cast<size_t>(v)] >= 0) v = again[static_cast<size_t>(v)];
  return g;
}

}  // namespace

JointProgram::JointProgram(const Graph& joint_graph, CaptureResult::Joint joint,
                           const std::function<void(Graph&)>& optimize, bool keep_buffers)
    : joint_(std::move(joint)), num_outputs_(joint_graph.outputs.size()) {
  const Graph c = recompute_pointwise(joint_graph, joint_, &recomputed_);
  c.verify();
  const int nodes = static_cast<int>(c.nodes.size());
  for (int v : joint_.grad_inputs) output_meta_.push_back(c.values[static_cast<size_t>(v)].meta);
  for (int i : joint_.wrt_captured)
    wrt_captured_.push_back(
        c.values[static_cast<size_t>(c.captured[static_cast<size_t>(i)])].tensor);

  std::vector<int> read;  // captured-graph values the backward reads from before the cut
  backward_ = subgraph(c, joint_.forward_nodes, nodes, joint_.grads, &read);
  const size_t user_inputs = c.inputs.size() - joint_.grad_inputs.size();
  for (int v : read) {
    const Value& val = c.values[static_cast<size_t>(v)];
    Source s;
    if (val.kind == ValueKind::Input && static_cast<size_t>(val.index) >= user_inputs) {
      s.kind = Source::Kind::Grad;
      s.index = val.index - static_cast<int>(user_inputs);
    } else if (val.kind == ValueKind::Input) {
      s.kind = Source::Kind::Input;
      s.index = val.index;
    } else {
      s.kind = Source::Kind::Saved;
      s.index = static_cast<int>(saved_.size());
      saved_.push_back(v);
    }
    backward_inputs_.push_back(s);
  }
  for (int v : backward_->captured)
    backward_captured_.push_back(backward_->values[static_cast<size_t>(v)].tensor);

  std::vector<int> outputs = c.outputs;
  outputs.insert(outputs.end(), saved_.begin(), saved_.end());
  std::vector<int> fin;
  forward_ = subgraph(c, 0, joint_.forward_nodes, outputs, &fin);
  for (int v : fin) {
    const Value& val = c.values[static_cast<size_t>(v)];
    XTEN_CHECK(val.kind == ValueKind::Input && static_cast<size_t>(val.index) < user_inputs,
               InternalError, "compile", "the forward graph reads %{}, which is not an input", v);
    forward_inputs_.push_back(val.index);
  }
  forward_->verify();
  backward_->verify();
  optimize(*forward_);
  optimize(*backward_);
  forward_exec_ = std::make_unique<Executor>(forward_, keep_buffers);
  backward_exec_ = std::make_unique<Executor>(backward_, keep_buffers);
}

std::vector<Tensor> JointProgram::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> in;
  in.reserve(forward_inputs_.size());
  for (int i : forward_inputs_) in.push_back(inputs[static_cast<size_t>(i)]);
  std::vector<Tensor> out = forward_exec_->run(in);
  std::vector<Tensor> saved(out.begin() + static_cast<std::ptrdiff_t>(num_outputs_), out.end());
  out.resize(num_outputs_);
  if (!GradMode::is_enabled()) return out;
  auto node =
      std::make_shared<CompiledFunctionBackward>(shared_from_this(), std::move(saved), inputs);
  for (size_t j = 0; j < joint_.differentiable.size(); ++j) {
    Tensor& r = out[static_cast<size_t>(joint_.differentiable[j])];
    r = r.detach();  // a tensor of its own (a result may be an input, or returned twice)
    r.detach_();
    autograd::set_history(r, node, static_cast<uint32_t>(j));
  }
  return out;
}

std::string JointProgram::to_string() const {
  return fmt::format(
      "# forward ({} values saved for the backward, {} recomputed in it)\n{}# backward\n{}",
      saved_.size(), recomputed_, forward_->to_string(), backward_->to_string());
}

}  // namespace xten::compiler
