#include <xten/autograd/node.h>

#include <atomic>

#include <xten/autograd/autograd_meta.h>
#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>

namespace xten::autograd {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
std::atomic<int64_t> g_next_hook_handle{1};

// A contiguous gradient that nothing else can see, as a tensor of its own: the gradient itself,
// or, where it is a view whose base nothing else holds (a transposed weight's gradient is the
// transpose of a product computed in the weight's layout, docs/autograd.md), a new tensor over
// the same memory without the view link. Undefined where someone else may see the memory: then
// the caller copies. (The copy it saves was 800 KB a step for the MLP's first weight, and at 16
// threads a third of the step.)
Tensor steal_gradient(const Tensor& g) {
  if (g.use_count() != 1 || !(g.is_contiguous() || g.is_contiguous(MemoryFormat::ChannelsLast)))
    return Tensor();
  const std::shared_ptr<TensorImpl>& base = g.impl()->view_base();
  if (!base) return g;
  // (a gradient with a history, under create_graph, keeps it: the caller's clone records it)
  if (g.requires_grad() || base.use_count() != 1 || base->view_base() ||
      g.storage().use_count() != 2)
    return Tensor();
  return Tensor(std::make_shared<TensorImpl>(g.storage(), g.dtype(), g.sizes(), g.strides(),
                                             g.storage_offset()));
}
}  // namespace

Tensor TensorMeta::zeros() const {
  return xten::zeros(sizes, dtype, device);
}

Node::Node() : sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

int64_t Node::add_pre_hook(uint32_t input_nr, Hook hook) {
  const int64_t h = g_next_hook_handle.fetch_add(1);
  pre_hooks_.push_back({h, input_nr, std::move(hook)});
  return h;
}

void Node::remove_pre_hook(int64_t handle) {
  for (auto it = pre_hooks_.begin(); it != pre_hooks_.end(); ++it)
    if (it->handle == handle) {
      pre_hooks_.erase(it);
      return;
    }
}

void Node::run_pre_hooks(variable_list& grads) const {
  for (const PreHook& h : pre_hooks_) {
    if (h.input_nr >= grads.size() || !grads[h.input_nr].defined()) continue;
    Tensor r = h.fn(grads[h.input_nr]);
    if (r.defined()) grads[h.input_nr] = std::move(r);
  }
}

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  next_edges_.clear();
}

namespace {
// Note [Gradient layout]: a leaf's first gradient is kept in the leaf's layout where the two
// differ between NCHW and NHWC (PyTorch's layout contract, docs/memory_format.md): a
// channels-last parameter gets a channels-last gradient, so the optimizer's update and DDP's
// buckets walk both in one order. Other strides (a transposed product's gradient) are kept as
// they come: a copy per step for them costs more than it gains here.
Tensor in_leaf_layout(const Tensor& g, const Tensor& leaf) {
  if (g.dim() != 4 || leaf.dim() != 4) return g;
  const MemoryFormat want = leaf.suggest_memory_format();
  if (want == g.suggest_memory_format() || g.is_contiguous(want)) return g;
  return g.contiguous(want);
}
}  // namespace

variable_list AccumulateGrad::apply(variable_list&& grads) {
  if (grads.empty() || !grads[0].defined()) return {};
  Tensor g = std::move(grads[0]);
  AutogradMeta* m = ensure_meta(variable_);
  std::unique_lock<std::mutex> lock(m->mutex);
  for (const auto& [handle, hook] : m->leaf_hooks) {
    Tensor r = hook(g);
    if (r.defined()) g = std::move(r);
  }
  if (!m->grad.defined()) {
    g = in_leaf_layout(g, variable_);
    // Keep the gradient itself when nothing else can see it; otherwise a copy, so that a later
    // accumulation never writes a tensor the caller holds.
    Tensor own = steal_gradient(g);
    if (!own.defined()) own = g.clone();
    m->grad = GradMode::is_enabled() ? own : own.detach();
  } else if (GradMode::is_enabled()) {
    m->grad = m->grad + g;  // create_graph: the sum is part of the new graph
  } else {
    m->grad.add_(g);
  }
  if (!m->post_accumulate_hooks.empty()) {
    auto hooks = m->post_accumulate_hooks;  // a hook may read grad(): run them unlocked
    lock.unlock();
    for (const auto& [handle, hook] : hooks) hook(variable_);
  }
  return {};
}

variable_list ErrorNode::apply(variable_list&&) {
  XTEN_FAIL(NotImplementedError, "autograd", "{}", message_);
}

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t._version();
  if (is_output) {
    // Kept without its history: the history is the node that saves it (Note [Saved tensors]).
    data_ = Tensor(std::make_shared<TensorImpl>(t.storage(), t.dtype(), t.sizes(), t.strides(),
                                                t.storage_offset()));
    requires_grad_ = t.requires_grad();
    if (AutogradMeta* m = meta_of(t)) output_nr_ = m->output_nr;
  } else {
    data_ = t;
  }
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const char* op) const {
  XTEN_CHECK(data_.defined(), ValueError, op,
             "Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the graph "
             "are freed when you call backward() or autograd::grad(). Specify retain_graph=true "
             "if you need to backward through the graph a second time");
  XTEN_CHECK(data_._version() == version_, ValueError, op,
             "one of the variables needed for gradient computation has been modified by an "
             "inplace operation: [{} {}], which {} of {}, is at version {}; expected version {} "
             "instead",
             to_string(data_.dtype()), data_.sizes(), is_output_ ? "is the output" : "is an input",
             owner ? owner->name() : std::string(op), data_._version(), version_);
  if (!is_output_ || !requires_grad_ || !GradMode::is_enabled() || !owner) return data_;
  Tensor t(std::make_shared<TensorImpl>(data_.storage(), data_.dtype(), data_.sizes(),
                                        data_.strides(), data_.storage_offset()));
  set_history(t, owner, output_nr_);
  return t;
}

}  // namespace xten::autograd
