// Note [Replay]
// A program with graph breaks cannot be skipped on later calls the way a graph without breaks is
// (its host code between the breaks must run: it reads item() values, decides, prints), and C++
// has no bytecode to resume in the middle. So a later call runs the program again with the
// Capture key on and this file's handler in place of the capture (capture.h, ReplayHandler):
//   - every op call is matched against the next recorded node: the same op, the same tensor
//     values (by identity: inputs, tensors handed out earlier in this call, the captured
//     tensors; a wrapped number by value) and the same constants, bit for bit. A match pushes
//     placeholders with the recorded sizes, strides and dtype (storage allocated, not
//     computed), or the written tensor itself for an in-place op; nothing runs.
//   - at a recorded break (item(), manual_seed(), or a data-dependent op) the segment so far runs
//     compiled, and each placeholder the program still holds takes its value
//     (TensorImpl::set_data: the program's own tensor object gets the result's storage); then
//     the break runs on real data.
//   - anything else (another op, another constant such as an item() value used as a Scalar,
//     fewer or more ops, a break elsewhere) leaves the recorded path: the nodes matched so far
//     run eagerly one by one (they were only recorded), placeholders are filled from them, and
//     the rest of the call runs eagerly. The result is always the eager program's.
// A placeholder the program holds at a break must be an output of that segment; the capture
// noted which values were held at each break (GraphBreak::alive), and if a replay holds one
// that is not an output, that segment runs eagerly node by node instead (it never computes
// twice: placeholders hold no values until their segment runs).
#include <xten/compile/segments.h>

#include <climits>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include <xten/autocast/autocast.h>
#include <xten/dispatch/ops.h>

namespace xten::compiler {
namespace {

bool same_constant(const IValue& a, const IValue& b) {
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.is<Scalar>()) {
    if (!b.is<Scalar>()) return false;
    const Scalar &x = a.get<Scalar>(), &y = b.get<Scalar>();
    if (x.type() != y.type()) return false;
    if (!x.is_floating_point()) return x.to_long() == y.to_long();
    const double dx = x.to_double(), dy = y.to_double();
    return std::memcmp(&dx, &dy, sizeof dx) == 0;
  }
  if (a.is<double>()) {
    if (!b.is<double>()) return false;
    return std::memcmp(&a.get<double>(), &b.get<double>(), sizeof(double)) == 0;
  }
  if (a.is<int64_t>()) return b.is<int64_t>() && a.get<int64_t>() == b.get<int64_t>();
  if (a.is<bool>()) return b.is<bool>() && a.get<bool>() == b.get<bool>();
  if (a.is<std::vector<int64_t>>())
    return b.is<std::vector<int64_t>>() &&
           a.get<std::vector<int64_t>>() == b.get<std::vector<int64_t>>();
  if (a.is<std::string>())
    return b.is<std::string>() && a.get<std::string>() == b.get<std::string>();
  if (a.is<ScalarType>()) return b.is<ScalarType>() && a.get<ScalarType>() == b.get<ScalarType>();
  if (a.is<Device>()) return b.is<Device>() && a.get<Device>() == b.get<Device>();
  return false;  // tensors are never constants of a node
}

// A tensor with the metadata `m` whose values come later.
Tensor placeholder(const TensorMeta& m) {
  int64_t extent = 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) extent = 0;
    if (extent) extent += (m.sizes[d] - 1) * m.strides[d];
  }
  Tensor t = empty({m.storage_offset + extent}, TensorOptions(m.dtype).device(m.device));
  t.impl()->set_geometry(m.sizes, m.strides, m.storage_offset);
  return t;
}

}  // namespace

std::shared_ptr<Graph> subgraph(const Graph& c, int begin, int end, const std::vector<int>& outputs,
                                std::vector<int>* inputs) {
  auto g = std::make_shared<Graph>();
  std::vector<int> id(c.values.size(), -1);
  auto import = [&](int v) {
    if (v < 0 || id[static_cast<size_t>(v)] >= 0) return;
    Value val = c.values[static_cast<size_t>(v)];
    if (val.kind == ValueKind::Captured) {
      val.index = static_cast<int>(g->captured.size());
      id[static_cast<size_t>(v)] = g->add_value(std::move(val));
      g->captured.push_back(id[static_cast<size_t>(v)]);
    } else if (val.kind == ValueKind::Constant) {
      id[static_cast<size_t>(v)] = g->add_value(std::move(val));
    } else {  // a program input or a value made before the segment
      val.kind = ValueKind::Input;
      val.index = static_cast<int>(g->inputs.size());
      val.node = -1;
      val.tensor = Tensor();
      id[static_cast<size_t>(v)] = g->add_value(std::move(val));
      g->inputs.push_back(id[static_cast<size_t>(v)]);
      inputs->push_back(v);
    }
  };
  auto renumber = [&](int v) { return v < 0 ? -1 : id[static_cast<size_t>(v)]; };
  for (int i = begin; i < end; ++i) {
    Node n = c.nodes[static_cast<size_t>(i)];
    for (int v : n.used_values()) import(v);
    for (Arg& a : n.args) {
      if (a.kind == Arg::Kind::Value) a.value = renumber(a.value);
      for (int& v : a.values) v = renumber(v);
    }
    const int here = static_cast<int>(g->nodes.size());
    auto define = [&](int& v) {
      if (v < 0) return;
      Value val = c.values[static_cast<size_t>(v)];
      val.node = here;
      id[static_cast<size_t>(v)] = g->add_value(std::move(val));
      v = id[static_cast<size_t>(v)];
    };
    for (Result& r : n.results) {
      if (r.kind == Result::Kind::Value) define(r.value);
      for (int& v : r.values) define(v);
    }
    g->nodes.push_back(std::move(n));
  }
  for (int v : outputs) {
    import(v);  // an output the nodes do not make: an input, a captured tensor
    g->outputs.push_back(renumber(v));
  }
  return g;
}

SegmentedProgram::SegmentedProgram(Graph captured, std::vector<GraphBreak> breaks,
                                   const std::function<void(Graph&)>& optimize, bool keep_buffers)
    : captured_(std::move(captured)), breaks_(std::move(breaks)) {
  const Graph& c = captured_;
  const int nodes = static_cast<int>(c.nodes.size());
  // Where each value is last read: by a node, or (INT_MAX) by the program's return.
  std::vector<int> last_use(c.values.size(), -1);
  for (int i = 0; i < nodes; ++i)
    for (int v : c.nodes[static_cast<size_t>(i)].used_values())
      last_use[static_cast<size_t>(v)] = std::max(last_use[static_cast<size_t>(v)], i);
  for (int v : c.outputs)
    if (v >= 0) last_use[static_cast<size_t>(v)] = INT_MAX;
  int begin = 0;
  for (size_t k = 0; k <= breaks_.size(); ++k) {
    Segment s;
    s.begin = begin;
    s.end = k < breaks_.size() ? breaks_[k].node : nodes;
    const std::vector<int> none;
    const std::vector<int>& alive = k < breaks_.size() ? breaks_[k].alive : none;
    const std::unordered_set<int> held(alive.begin(), alive.end());
    for (int i = s.begin; i < s.end; ++i)
      for (int v : c.nodes[static_cast<size_t>(i)].defined_values())
        if (last_use[static_cast<size_t>(v)] >= s.end || held.count(v)) s.outputs.push_back(v);
    if (s.end > s.begin) {
      s.graph = subgraph(c, s.begin, s.end, s.outputs, &s.inputs);
      s.graph->verify();
      optimize(*s.graph);
      s.exec = std::make_unique<Executor>(s.graph, keep_buffers);
    }
    begin = s.end + (k < breaks_.size() && breaks_[k].is_node ? 1 : 0);
    segments_.push_back(std::move(s));
  }
}

std::string SegmentedProgram::to_string() const {
  std::string out;
  for (size_t k = 0; k < segments_.size(); ++k) {
    const Segment& s = segments_[k];
    out += fmt::format("# segment {}: captured nodes {}..{}", k, s.begin, s.end - 1);
    if (k < breaks_.size())
      out += fmt::format(", then graph break at '{}'{}", breaks_[k].what,
                         breaks_[k].is_node ? " (run eagerly)" : "");
    out += "\n";
    if (s.graph) out += s.graph->to_string();
  }
  return out;
}

// One call's replay (Note [Replay]).
class Replay final : public ReplayHandler {
 public:
  Replay(const SegmentedProgram& p, const std::vector<Tensor>& inputs)
      : p_(p), c_(p.captured_), real_(c_.values.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int v = c_.inputs[i];
      real_[static_cast<size_t>(v)] = inputs[i];
      if (inputs[i].defined()) value_of_[inputs[i].impl()] = v;
    }
    for (size_t v = 0; v < c_.values.size(); ++v)
      if (c_.values[v].kind == ValueKind::Captured || c_.values[v].kind == ValueKind::Constant)
        real_[v] = c_.values[v].tensor;
  }

  void on_call(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override {
    const DispatchKeySet below = ks.remove(DispatchKey::Capture);
    if (left_.empty() && records_decomposed(op, below)) return op.redispatch_boxed(below, stack);
    if (left_.empty()) {
      const size_t n = static_cast<size_t>(op.entry().num_arguments());
      const size_t base = stack->size() - n;
      const std::string why = mismatch(op, *stack, base);
      if (!why.empty()) {
        leave(why);
      } else if (at_break() && p_.breaks_[seg_].is_node) {
        // A data-dependent op: the segment before it runs, then it runs on real data.
        run_segment();
        run_below(op, below, stack);
        const std::string other = bind_results(c_.nodes[static_cast<size_t>(pos_)], *stack, base);
        ++pos_;
        ++seg_;
        // The segments after it were compiled for the shapes the capture saw.
        if (!other.empty())
          left_ = fmt::format("'{}' gave {} where the capture had {}", op.entry().display_name(),
                              other, expected_shape_);
        return;
      } else {
        answer(op, stack, base);
        return;
      }
    }
    run_below(op, below, stack);
  }

  void on_host_read(const char* what) override {
    if (!left_.empty()) return;
    if (!at_break() || p_.breaks_[seg_].is_node || p_.breaks_[seg_].what != what)
      return leave(fmt::format("a host read ('{}') where the capture had {}", what, expected()));
    run_segment();
    ++seg_;
  }

  // After the program returned: the last segment runs (or what was matched, eagerly).
  void finish() {
    if (!left_.empty()) return;
    if (seg_ != p_.segments_.size() - 1 || pos_ != static_cast<int>(c_.nodes.size()))
      return leave(fmt::format("the program ended where the capture had {}", expected()));
    run_segment();
  }
  const std::string& left() const { return left_; }

 private:
  bool at_break() const { return seg_ < p_.breaks_.size() && pos_ == p_.breaks_[seg_].node; }
  std::string expected() const {
    if (at_break()) return fmt::format("graph break '{}'", p_.breaks_[seg_].what);
    if (pos_ < static_cast<int>(c_.nodes.size()))
      return fmt::format("'{}' (node {})", c_.nodes[static_cast<size_t>(pos_)].name(), pos_);
    return "the end of the program";
  }

  static void run_below(const OperatorHandle& op, DispatchKeySet below, Stack* stack) {
    const ExcludeDispatchKeyGuard off(DispatchKey::Capture);
    op.redispatch_boxed(below, stack);
  }

  // Whether tensor x is value v of the captured graph (binding a captured tensor on first sight).
  bool is_value(const Tensor& x, int v) {
    if (v < 0 || !x.defined()) return v < 0 && !x.defined();
    if (auto it = value_of_.find(x.impl()); it != value_of_.end()) return it->second == v;
    const Value& val = c_.values[static_cast<size_t>(v)];
    if (val.kind == ValueKind::Captured && val.tensor.impl() == x.impl()) {
      value_of_[x.impl()] = v;
      return true;
    }
    // A Scalar argument the front end wrapped (a new tensor each call): equal by value.
    const TensorImpl* w = val.tensor.defined() ? val.tensor.impl() : nullptr;
    return val.kind == ValueKind::Constant && w && w->is_wrapped_number() &&
           x.impl()->is_wrapped_number() && x.dtype() == w->dtype() && x.device() == w->device() &&
           x.device().type() == kCPU &&
           std::memcmp(x.impl()->data(), w->data(), element_size(x.dtype())) == 0;
  }

  // Why this call is not the next recorded node (empty if it is).
  std::string mismatch(const OperatorHandle& op, const Stack& stack, size_t base) {
    // (a break that is not a node is a host read: an op there leaves the path too)
    if (pos_ >= static_cast<int>(c_.nodes.size()) || (at_break() && !p_.breaks_[seg_].is_node) ||
        &c_.nodes[static_cast<size_t>(pos_)].op.entry() != &op.entry() ||
        c_.nodes[static_cast<size_t>(pos_)].args.size() != stack.size() - base)
      return fmt::format("'{}' where the capture had {}", op.entry().display_name(), expected());
    const Node& n = c_.nodes[static_cast<size_t>(pos_)];
    for (size_t i = 0; i < n.args.size(); ++i) {
      const Arg& a = n.args[i];
      const IValue& s = stack[base + i];
      bool same = false;
      if (a.kind == Arg::Kind::Value) {
        same = s.is_tensor() ? is_value(s.get<Tensor>(), a.value) : a.value < 0 && s.is_none();
      } else if (a.kind == Arg::Kind::ValueList) {
        same = s.is_tensor_list() && s.get<std::vector<Tensor>>().size() == a.values.size();
        for (size_t j = 0; same && j < a.values.size(); ++j)
          same = is_value(s.get<std::vector<Tensor>>()[j], a.values[j]);
      } else {
        same = same_constant(a.constant, s);
      }
      if (!same)
        return fmt::format("'{}' with another argument {} than the capture's (node {})", n.name(),
                           i, pos_);
    }
    for (const Result& r : n.results)
      if (r.kind == Result::Kind::Other)
        return fmt::format("'{}' returns a value that is not a tensor", n.name());
    return "";
  }

  // A matched node: its results are placeholders (or the tensors it writes), nothing runs.
  void answer(const OperatorHandle& op, Stack* stack, size_t base) {
    const Node& n = c_.nodes[static_cast<size_t>(pos_)];
    std::vector<Tensor> written;
    const uint64_t mask = op.entry().written_args();
    for (size_t i = 0; i < n.args.size(); ++i)
      if ((mask >> i) & 1 && (*stack)[base + i].is_tensor())
        written.push_back((*stack)[base + i].get<Tensor>());
    stack->resize(base);
    size_t w = 0;
    const ExcludeDispatchKeyGuard off(DispatchKey::Capture);
    for (const Result& r : n.results) {
      if (r.kind == Result::Kind::Value) {
        Tensor t = make(r.value, w < written.size() ? &written[w++] : nullptr);
        stack->emplace_back(std::move(t));
      } else {
        std::vector<Tensor> ts;
        for (int v : r.values) ts.push_back(make(v, nullptr));
        stack->emplace_back(std::move(ts));
      }
    }
    ++pos_;
  }
  Tensor make(int v, const Tensor* written) {
    if (v < 0) return Tensor();
    Tensor t = written ? *written : placeholder(c_.values[static_cast<size_t>(v)].meta);
    value_of_[t.impl()] = v;
    if (!written) pending_.push_back(t);
    return t;
  }

  // The results a node really computed take their values' places. Returns the first one
  // whose metadata differs from the capture's ("i64[3, 1]"), or "".
  std::string bind_results(const Node& n, const Stack& stack, size_t base) {
    std::string other;
    auto bind = [&](int v, const Tensor& t) {
      if (v < 0) return;
      real_[static_cast<size_t>(v)] = t;
      value_of_[t.impl()] = v;
      const TensorMeta m = TensorMeta::of(t), &want = c_.values[static_cast<size_t>(v)].meta;
      if (other.empty() && !(m == want)) {
        other = m.to_string();
        expected_shape_ = want.to_string();
      }
    };
    for (size_t i = 0; i < n.results.size(); ++i) {
      const Result& r = n.results[i];
      const IValue& s = stack[base + i];
      if (r.kind == Result::Kind::Value) {
        bind(r.value, s.get<Tensor>());
      } else if (r.kind == Result::Kind::ValueList) {
        const auto& ts = s.get<std::vector<Tensor>>();
        for (size_t j = 0; j < r.values.size(); ++j) bind(r.values[j], ts[j]);
      }
    }
    return other;
  }

  // Runs the current segment's nodes matched so far: compiled when all of it was matched and
  // every placeholder the program holds is among its outputs, else node by node. Then fills the
  // placeholders the program holds.
  void run_segment() {
    const Segment& s = p_.segments_[seg_];
    const ExcludeDispatchKeyGuard off(DispatchKey::Capture);
    bool compiled = s.exec && pos_ == s.end;
    if (compiled) {
      const std::unordered_set<int> outs(s.outputs.begin(), s.outputs.end());
      for (const Tensor& t : pending_)
        if (t.use_count() > 1 && !outs.count(value_of_.at(t.impl()))) compiled = false;
    }
    if (compiled) {
      std::vector<Tensor> ins;
      ins.reserve(s.inputs.size());
      for (int v : s.inputs) ins.push_back(real_[static_cast<size_t>(v)]);
      std::vector<Tensor> outs = s.exec->run(ins);
      for (size_t k = 0; k < outs.size(); ++k) real_[static_cast<size_t>(s.outputs[k])] = outs[k];
    } else {
      for (int i = s.begin; i < pos_; ++i) run_node(c_.nodes[static_cast<size_t>(i)], real_);
    }
    for (Tensor& t : pending_) {
      if (t.use_count() > 1) {
        const Tensor& r = real_[static_cast<size_t>(value_of_.at(t.impl()))];
        XTEN_ASSERT(r.defined(), "compile: replay: no value for a placeholder the program holds");
        t.impl()->set_data(*r.impl());
      }
      filled_.push_back(std::move(t));  // kept: value_of_ knows its address
    }
    pending_.clear();
  }

  void leave(const std::string& why) {
    left_ = why;
    run_segment();  // what was matched (not all of the segment: node by node)
  }

  const SegmentedProgram& p_;
  const Graph& c_;
  std::vector<Tensor> real_;  // per captured-graph value: what it is, once known
  std::unordered_map<const TensorImpl*, int> value_of_;
  std::vector<Tensor> pending_, filled_;  // placeholders handed out: this segment's, earlier
  size_t seg_ = 0;
  int pos_ = 0;       // the next recorded node
  std::string left_;  // non-empty: the call left the recorded path; the rest runs eagerly
  std::string expected_shape_;
};

std::vector<Tensor> SegmentedProgram::run(const Program& program, const std::vector<Tensor>& inputs,
                                          std::string* left_path) const {
  Replay r(*this, inputs);
  autocast::clear_cache();  // as at capture: casts are recorded ops, not cached tensors
  std::vector<Tensor> out;
  {
    set_replay_handler(&r);
    struct Reset {
      ~Reset() { set_replay_handler(nullptr); }
    } reset;
    const IncludeDispatchKeyGuard on(DispatchKey::Capture);
    out = program(inputs);
    r.finish();
  }
  *left_path = r.left();
  return out;
}

}  // namespace xten::compiler
