// Tensor's autograd methods (declared in core/tensor.h).
#include <xten/autograd/autograd.h>
#include <xten/autograd/autograd_meta.h>

namespace xten {

using autograd::AutogradMeta;
using autograd::ensure_meta;
using autograd::meta_of;

Tensor& Tensor::requires_grad_(bool requires_grad) {
  impl_->set_requires_grad(requires_grad);
  return *this;
}

Tensor& Tensor::grad() const {
  return ensure_meta(*this)->grad;
}

bool Tensor::is_leaf() const {
  AutogradMeta* m = meta_of(*this);
  return !m || !m->grad_fn;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  AutogradMeta* m = meta_of(*this);
  if (!m || !m->grad_fn) return nullptr;
  return autograd::gradient_edge(*this).fn;  // a view's history may need regenerating
}

int64_t Tensor::output_nr() const {
  AutogradMeta* m = meta_of(*this);
  return m ? m->output_nr : 0;
}

void Tensor::retain_grad() const {
  XTEN_CHECK(requires_grad(), ValueError, "retain_grad",
             "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta* m = ensure_meta(*this);
  if (!m->grad_fn || m->retains_grad) return;  // a leaf keeps its grad anyway
  std::weak_ptr<TensorImpl> weak = impl_;
  m->retain_grad_hook = m->grad_fn->add_pre_hook(m->output_nr, [weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      auto* meta = static_cast<AutogradMeta*>(impl->autograd_meta());
      std::lock_guard<std::mutex> lock(meta->mutex);
      meta->grad = meta->grad.defined() ? meta->grad + g : g.detach().clone();
    }
    return Tensor();
  });
  m->retains_grad = true;
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = meta_of(*this);
  return m && m->retains_grad;
}

Tensor& Tensor::detach_() {
  if (AutogradMeta* m = meta_of(*this)) {
    m->grad_fn.reset();
    m->requires_grad_flag = false;
    m->output_nr = 0;
  }
  impl_->set_view_base(nullptr);
  impl_->set_autograd_key(false);
  return *this;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this},
                     gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph);
}

namespace {
std::atomic<int64_t> g_next_leaf_hook{-2};  // leaf hooks: negative handles
}

int64_t Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  XTEN_CHECK(requires_grad(), ValueError, "register_hook",
             "cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta* m = ensure_meta(*this);
  if (m->grad_fn) return m->grad_fn->add_pre_hook(m->output_nr, std::move(hook));
  const int64_t h = g_next_leaf_hook.fetch_sub(1);
  m->leaf_hooks.emplace_back(h, std::move(hook));
  return h;
}

int64_t Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  XTEN_CHECK(requires_grad() && !autograd::meta_of(*this)->grad_fn, ValueError,
             "register_post_accumulate_grad_hook",
             "post accumulate grad hooks cannot be registered on non-leaf tensors (or tensors "
             "that do not require grad)");
  AutogradMeta* m = ensure_meta(*this);
  const int64_t h = g_next_leaf_hook.fetch_sub(1);
  m->post_accumulate_hooks.emplace_back(h, std::move(hook));
  return h;
}

void Tensor::remove_hook(int64_t handle) const {
  AutogradMeta* m = meta_of(*this);
  if (!m) return;
  if (m->grad_fn) m->grad_fn->remove_pre_hook(handle);
  for (auto it = m->post_accumulate_hooks.begin(); it != m->post_accumulate_hooks.end(); ++it)
    if (it->first == handle) {
      m->post_accumulate_hooks.erase(it);
      return;
    }
  for (auto it = m->leaf_hooks.begin(); it != m->leaf_hooks.end(); ++it)
    if (it->first == handle) {
      m->leaf_hooks.erase(it);
      return;
    }
}

}  // namespace xten
