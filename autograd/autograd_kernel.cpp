// The autograd layer's kernels: one boxed kernel records every differentiable op (its formula
// in the node), one runs non-differentiable ops below autograd, and the fallback of the autograd
// keys records a node that raises for an op nobody gave a derivative (docs/autograd.md).
#include <cctype>
#include <deque>

#include <xten/autograd/autograd_meta.h>
#include <xten/autograd/derivative.h>
#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>

namespace xten::autograd {

// A recorded op: its formula, what the formula may read, and one next edge per input slot.
class FormulaNode final : public Node {
 public:
  FormulaNode(const Derivative* d) : d_(d) {}
  std::string name() const override { return d_->node_name; }
  variable_list apply(variable_list&& grads) override;
  // As in PyTorch, only a node that saved tensors refuses a second backward once they are
  // freed: one that saved none (a cast, an add) runs again, so a graph that reaches it twice (an
  // autocast cast reused by two iterations, docs/autocast.md) works.
  void release_saved() override {
    for (auto* list : {&saved_, &results_})
      for (auto& s : *list)
        if (s.defined()) {
          s.reset();
          released_ = true;
        }
  }

  const Derivative* d_;
  Stack args_;  // non-tensor arguments (tensor positions hold None)
  // (one vector per kind of record, each allocated once: a recorded tiny op is mostly
  // allocations, docs/autograd.md)
  struct ArgSlots {
    uint32_t first = 0;  // the argument's first slot
    uint32_t count = 0;  // its slots (a Tensor[]'s length; unused for one tensor)
  };
  struct Slot {
    TensorMeta meta;
    bool present = false;  // a tensor was given
  };
  struct Output {
    TensorMeta meta;
    bool differentiable = false;
  };
  std::vector<ArgSlots> arg_slots_;  // per argument
  std::vector<SavedTensor> saved_;   // per slot
  std::vector<Slot> slots_;          // per slot
  std::vector<Output> outputs_;
  std::vector<SavedTensor> results_;
  bool released_ = false;
};

namespace {

bool is_differentiable_dtype(ScalarType t) {
  return is_floating_type(t);
}

// Runs the op below autograd: its kernels' inner ops are not recorded.
void call_below(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  ExcludeDispatchKeyGuard guard(kAutogradKeys);
  op.redispatch_boxed(ks - kAutogradKeys, stack);
}

// The tensors of the op's arguments, one per slot (Note [Input slots]).
template <class F>
void for_each_slot(const Stack& stack, size_t base, size_t n, F&& f) {
  for (size_t a = 0; a < n; ++a) {
    const IValue& v = stack[base + a];
    if (v.is_tensor())
      f(a, &v.get<Tensor>());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.get<std::vector<Tensor>>()) f(a, &t);
    else if (v.is_none())
      f(a, nullptr);
  }
}

// The tensors an op returned, in order (a Tensor[] result counts each element).
std::vector<Tensor*> output_tensors(Stack& stack, size_t base) {
  std::vector<Tensor*> out;
  for (size_t i = base; i < stack.size(); ++i) {
    if (stack[i].is_tensor())
      out.push_back(&stack[i].get<Tensor>());
    else if (stack[i].is_tensor_list())
      for (Tensor& t : stack[i].get<std::vector<Tensor>>()) out.push_back(&t);
  }
  return out;
}

bool any_requires_grad(const Stack& stack, size_t base, size_t n) {
  bool any = false;
  for_each_slot(stack, base, n, [&](size_t, const Tensor* t) {
    any = any || (t && t->defined() && t->requires_grad());
  });
  return any;
}

void check_inplace_allowed(const Tensor& self, const std::string& op) {
  AutogradMeta* m = meta_of(self);
  XTEN_CHECK(!(m && m->requires_grad_flag && !m->grad_fn), ValueError, op.c_str(),
             "a leaf Variable that requires grad is being used in an in-place operation.");
  if (const auto& base = self.impl()->view_base()) {
    auto* bm = static_cast<AutogradMeta*>(base->autograd_meta());
    XTEN_CHECK(!(bm && bm->requires_grad_flag && !bm->grad_fn), ValueError, op.c_str(),
               "a view of a leaf Variable that requires grad is being used in an in-place "
               "operation.");
  }
}

void autograd_kernel(const Derivative& d, const OperatorHandle& op, DispatchKeySet ks,
                     Stack* stack) {
  const FunctionSchema& schema = op.entry().function_schema();
  const size_t n = schema.arguments().size();
  const size_t base = stack->size() - n;
  const bool in_place = schema.writes_argument(0) && (*stack)[base].is_tensor();
  if (in_place) {
    const Tensor& self = (*stack)[base].get<Tensor>();
    if (self.requires_grad() || any_requires_grad(*stack, base, n))
      check_inplace_allowed(self, op.entry().display_name());
  } else if (schema.writes_argument(0) && (*stack)[base].is_tensor_list()) {
    // A list written in place (the optimizers' and GradScaler's multi-tensor ops): each tensor
    // as if written alone.
    for (const Tensor& t : (*stack)[base].get<std::vector<Tensor>>())
      if (t.defined() && t.requires_grad()) check_inplace_allowed(t, op.entry().display_name());
  }
  if (!d.formula || !any_requires_grad(*stack, base, n)) return call_below(op, ks, stack);

  auto node = std::make_shared<FormulaNode>(&d);
  const Storage self_storage = in_place ? (*stack)[base].get<Tensor>().storage() : Storage();
  // (one slot per argument unless a list has several: the vectors grow at most then; each
  // allocation saved is ~2% of a recorded tiny op)
  // saved_ holds one entry per slot, or none when the formula reads no argument's values.
  const bool saves = (n < 64 ? d.saved_args & ((uint64_t{1} << n) - 1) : d.saved_args) != 0;
  node->args_.reserve(n);
  node->arg_slots_.resize(n);
  if (saves) node->saved_.reserve(n);
  node->slots_.reserve(n);
  node->mutable_next_edges().reserve(n);
  for (size_t a = 0; a < n; ++a) {
    const IValue& v = (*stack)[base + a];
    node->arg_slots_[a].first = static_cast<uint32_t>(node->slots_.size());
    node->args_.push_back(v.is_tensor() || v.is_tensor_list() ? IValue() : v);
    if (v.is_tensor_list())
      node->arg_slots_[a].count = static_cast<uint32_t>(v.get<std::vector<Tensor>>().size());
    for_each_slot(*stack, base + a, 1, [&](size_t, const Tensor* t) {
      const bool given = t && t->defined();
      node->slots_.push_back({given ? TensorMeta::of(*t) : TensorMeta{}, given});
      Edge e = given ? gradient_edge(*t) : Edge{};
      node->mutable_next_edges().push_back(std::move(e));
      const bool saved = (d.saved_args >> a) & 1;
      if (!saves) {
        // nothing kept
      } else if (!given || !saved) {
        node->saved_.emplace_back();
      } else if (in_place && a == 0) {
        // self is about to be overwritten: keep its value if the formula reads it (a recorded
        // clone, so a backward with create_graph differentiates through it).
        if (d.needs_self) {
          node->saved_.emplace_back(t->clone(), false);
        } else {
          node->saved_.emplace_back();
        }
      } else if (in_place && t->storage().is_alias_of(self_storage)) {
        // Another input that self's write changes (x.mul_(x)): keep its value, and no
        // reference to self, which will point at this node.
        node->saved_.emplace_back(t->clone(), false);
      } else {
        node->saved_.emplace_back(*t, false);
      }
    });
  }

  call_below(op, ks, stack);

  std::vector<Tensor*> outs = output_tensors(*stack, base);
  node->set_num_inputs(static_cast<uint32_t>(outs.size()));
  node->outputs_.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor& out = *outs[i];
    const bool diff = out.defined() && is_differentiable_dtype(out.dtype());
    node->outputs_.push_back({out.defined() ? TensorMeta::of(out) : TensorMeta{}, diff});
    if (!diff) continue;
    if (in_place && i == 0)
      rebase_history(out, node);
    else
      set_history(out, node, static_cast<uint32_t>(i));
  }
  if (d.saves_result)
    for (Tensor* out : outs) node->results_.emplace_back(*out, true);
}

// For an op with no derivative and no decomposition: its outputs get a node that raises, so a
// missing formula is an error at backward, never a wrong or missing gradient.
void missing_derivative_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const size_t n = op.entry().function_schema().arguments().size();
  const size_t base = stack->size() - n;
  const bool record = any_requires_grad(*stack, base, n);
  std::vector<Edge> edges;
  if (record)
    for_each_slot(*stack, base, n, [&](size_t, const Tensor* t) {
      edges.push_back(t && t->defined() ? gradient_edge(*t) : Edge{});
    });
  call_below(op, ks, stack);
  if (!record) return;
  const std::string name = op.entry().display_name();
  auto node = std::make_shared<ErrorNode>(
      node_name_for(name),
      fmt::format("the derivative of '{}' is not implemented (docs/autograd.md)", name));
  node->mutable_next_edges() = std::move(edges);
  std::vector<Tensor*> outs = output_tensors(*stack, base);
  node->set_num_inputs(static_cast<uint32_t>(outs.size()));
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]->defined() && is_differentiable_dtype(outs[i]->dtype()))
      set_history(*outs[i], node, static_cast<uint32_t>(i));
}

}  // namespace

variable_list FormulaNode::apply(variable_list&& grads) {
  XTEN_CHECK(!released_, ValueError, d_->op.c_str(),
             "Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the graph "
             "are freed when you call backward() or autograd::grad(). Specify retain_graph=true "
             "if you need to backward through the graph a second time");
  grads.resize(num_inputs());
  uint64_t flowed = ~uint64_t{0};
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) continue;
    if (i < 64) flowed &= ~(uint64_t{1} << i);
    if (outputs_[i].differentiable) grads[i] = outputs_[i].meta.zeros();
  }
  variable_list out = d_->formula(GradContext(*this, grads, flowed));
  out.resize(next_edges_.size());
  for (size_t s = 0; s < out.size(); ++s) {
    Tensor& g = out[s];
    if (!g.defined()) continue;
    if (!next_edges_[s].valid()) {
      g = Tensor();
      continue;
    }
    const TensorMeta& m = slots_[s].meta;
    if (g.sizes() != IntArrayRef(m.sizes)) g = sum_to(g, m.sizes);
    if (g.dtype() != m.dtype || g.device() != m.device) g = g.to(m.device, m.dtype);
  }
  return out;
}

Tensor GradContext::input(size_t arg) const {
  XTEN_ASSERT((node_.d_->saved_args >> arg) & 1, "{}: the formula reads input {}, not saved",
              node_.d_->op, arg);
  const size_t slot = node_.arg_slots_.at(arg).first;
  XTEN_ASSERT(node_.slots_.at(slot).present, "{}: input {} was not given", node_.d_->op, arg);
  return node_.saved_[slot].unpack(std::const_pointer_cast<Node>(node_.shared_from_this()),
                                   node_.d_->op.c_str());
}

std::vector<Tensor> GradContext::input_list(size_t arg) const {
  std::vector<Tensor> r;
  const auto [first, count] = node_.arg_slots_.at(arg);
  for (size_t j = 0; j < count; ++j)
    r.push_back(node_.saved_[first + j].unpack(nullptr, node_.d_->op.c_str()));
  return r;
}

const TensorMeta& GradContext::input_meta(size_t arg) const {
  return node_.slots_.at(node_.arg_slots_.at(arg).first).meta;
}

bool GradContext::has_input(size_t arg) const {
  return node_.slots_.at(node_.arg_slots_.at(arg).first).present;
}

Tensor GradContext::result(size_t i) const {
  XTEN_ASSERT(i < node_.results_.size(), "{}: result {} was not saved", node_.d_->op, i);
  return node_.results_[i].unpack(std::const_pointer_cast<Node>(node_.shared_from_this()),
                                  node_.d_->op.c_str());
}

bool GradContext::needs_grad(size_t slot) const {
  return slot < node_.next_edges().size() && node_.next_edges()[slot].valid();
}
size_t GradContext::num_slots() const {
  return node_.next_edges().size();
}
const IValue& GradContext::raw_arg(size_t i) const {
  return node_.args_.at(i);
}

std::string node_name_for(const std::string& op) {
  std::string s;
  bool up = true;
  for (char c : op.substr(0, op.find('.'))) {
    if (c == '_') {
      up = true;
      continue;
    }
    s += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return s + "Backward";
}

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  XTEN_ASSERT(lead >= 0, "gradient of shape {} cannot be summed to {}", grad.sizes(), sizes);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t gs = grad.size(lead + static_cast<int64_t>(i));
    XTEN_ASSERT(sizes[i] == gs || sizes[i] == 1, "gradient of shape {} cannot be summed to {}",
                grad.sizes(), sizes);
    if (sizes[i] == 1 && gs != 1) dims.push_back(lead + static_cast<int64_t>(i));
  }
  Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  return lead > 0 || r.sizes() != sizes ? r.view(sizes) : r;
}

Derivatives::Entry Derivatives::def(const char* op, Formula formula, const char* file, int line) {
  auto* dv = new Derivative{op, node_name_for(op), formula};  // lives as long as the program
  register_op(op, dv, file, line);
  return Entry(*this, dv);
}

void Derivatives::nondifferentiable(std::initializer_list<const char*> ops, const char* file,
                                    int line) {
  for (const char* op : ops) register_op(op, new Derivative{op, node_name_for(op)}, file, line);
}

void Derivatives::register_op(const char* op, Derivative* dv, const char* file, int line) {
  m_.impl(op, BoxedKernel([dv](const OperatorHandle& h, DispatchKeySet ks, Stack* s) {
            autograd_kernel(*dv, h, ks, s);
          }),
          file, line);
}

Derivatives::Entry& Derivatives::Entry::saves_result() {
  dv_->saves_result = true;
  return *this;
}
Derivatives::Entry& Derivatives::Entry::saves_only(std::initializer_list<size_t> args) {
  dv_->saved_args = 0;
  for (size_t a : args) dv_->saved_args |= uint64_t{1} << a;
  return *this;
}
Derivatives::Entry& Derivatives::Entry::self_not_needed() {
  dv_->needs_self = false;
  return *this;
}
Derivatives::Entry& Derivatives::Entry::inplace(const char* op, const char* file, int line) {
  d_.register_op(op, dv_, file, line);
  return *this;
}

LIBRARY_IMPL(_, AutogradCPU, m) {
  m.fallback(BoxedKernel(&missing_derivative_fallback));
}
LIBRARY_IMPL(_, AutogradXPU, m) {
  m.fallback(BoxedKernel(&missing_derivative_fallback));
}

}  // namespace xten::autograd
