// AutogradMeta, gradient edges, and the history of views written in place.
#include <xten/autograd/autograd_meta.h>

#include <algorithm>

#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>

namespace xten::autograd {

namespace {

std::unique_ptr<AutogradMetaInterface> make_meta() {
  return std::make_unique<AutogradMeta>();
}
// Installed when libxten loads: from then on TensorImpl::ensure_autograd_meta() makes ours.
const bool g_factory_installed = (set_autograd_meta_factory(&make_meta), true);

// Where a view sits in its base's memory: the base is contiguous, so a position in the base is
// offset + sum(index * stride) from the base's first element.
struct ViewGeometry {
  DimVector sizes, strides;
  int64_t offset = 0;
  static ViewGeometry of(const Tensor& view, const TensorImpl& base) {
    return {DimVector(view.sizes()), DimVector(view.strides()),
            view.storage_offset() - base.storage_offset()};
  }
};

// Whether two elements of the geometry share a memory location.
bool overlaps(const ViewGeometry& g) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t i = 0; i < g.sizes.size(); ++i) {
    if (g.sizes[i] == 0) return false;
    if (g.sizes[i] > 1) dims.emplace_back(g.strides[i], g.sizes[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t extent = 0;  // the largest offset the dims so far reach
  for (auto [stride, size] : dims) {
    if (stride <= extent) return true;
    extent += stride * (size - 1);
  }
  return false;
}

// The gradient of a base from the gradient of a view at `g`: zero elsewhere, summed where view
// elements share a location.
Tensor view_to_base_grad(const Tensor& grad, IntArrayRef base_sizes, const ViewGeometry& g) {
  if (!overlaps(g)) {
    Tensor result = zeros(base_sizes, grad.dtype(), grad.device());
    as_strided(result, g.sizes, g.strides, g.offset).copy_(grad);
    return result;
  }
  int64_t numel = 1;
  for (int64_t s : base_sizes) numel *= s;
  Tensor pos = as_strided(arange(numel, TensorOptions(kLong).device(grad.device())), g.sizes,
                          g.strides, g.offset)
                   .reshape({-1});
  return zeros({numel}, grad.dtype(), grad.device())
      .scatter_add(0, pos, grad.reshape({-1}))
      .view(base_sizes);
}

void check_contiguous_base(const TensorImpl& base, const char* what) {
  XTEN_CHECK(base.is_contiguous(), NotImplementedError, "autograd",
             "{} of a view whose base is not contiguous (base sizes {}, strides {}) is not "
             "supported",
             what, base.sizes(), base.strides());
}

// The history a view gets from its base's: the base's gradient restricted to the view.
class ViewOfBase final : public Node {
 public:
  ViewOfBase(const TensorImpl& base, ViewGeometry g, Edge base_edge)
      : base_sizes_(base.sizes()), geometry_(std::move(g)) {
    next_edges_.push_back(std::move(base_edge));
  }
  std::string name() const override { return "AsStridedBackward"; }
  variable_list apply(variable_list&& grads) override {
    return {view_to_base_grad(grads[0], base_sizes_, geometry_)};
  }

 private:
  DimVector base_sizes_;
  ViewGeometry geometry_;
};

// Note [Views and in-place]
// When an in-place op (recorded as `fn`) writes a view, the base's values change in the view's
// region: the base's new history is CopySlices, which sends the base's gradient outside the
// region to the base's old history and, inside it, through `fn` (whose first input is the view's
// old value, i.e. the base's old values there). fn's other inputs keep their edges. Every view of
// the base then regenerates its history from the base's (gradient_edge). PyTorch does the same.
class CopySlices final : public Node {
 public:
  CopySlices(const TensorImpl& base, ViewGeometry g, Edge base_edge, std::shared_ptr<Node> fn)
      : base_({DimVector(base.sizes()), base.dtype(), base.device()}),
        geometry_(std::move(g)),
        fn_(std::move(fn)) {
    next_edges_.push_back(std::move(base_edge));
    const auto& fe = fn_->next_edges();
    for (size_t i = 1; i < fe.size(); ++i) next_edges_.push_back(fe[i]);
  }
  std::string name() const override { return "CopySlices"; }
  variable_list apply(variable_list&& grads) override {
    Tensor result = grads[0].defined() ? grads[0].clone() : base_.zeros();
    Tensor region = as_strided(result, geometry_.sizes, geometry_.strides, geometry_.offset);
    variable_list fn_grads = fn_->apply({region.clone()});
    if (!fn_grads.empty() && fn_grads[0].defined())
      region.copy_(fn_grads[0]);
    else
      region.zero_();
    variable_list out{result};
    for (size_t i = 1; i < fn_grads.size(); ++i) out.push_back(fn_grads[i]);
    out.resize(next_edges_.size());
    return out;
  }
  void release_saved() override { fn_->release_saved(); }

 private:
  TensorMeta base_;
  ViewGeometry geometry_;
  std::shared_ptr<Node> fn_;
};

}  // namespace

void AutogradMeta::set_requires_grad(bool requires_grad, TensorImpl* self) {
  XTEN_CHECK(grad_fn == nullptr || requires_grad, ValueError, "requires_grad_",
             "you can only change requires_grad flags of leaf variables. If you want to use a "
             "computed variable in a subgraph that doesn't require differentiation use "
             "var_no_grad = var.detach()");
  XTEN_CHECK(!requires_grad || is_floating_type(self->dtype()), TypeError, "requires_grad_",
             "only Tensors of floating point dtype can require gradients, but got {}",
             to_string(self->dtype()));
  requires_grad_flag = requires_grad;
  self->set_autograd_key(this->requires_grad());
}

AutogradMeta* ensure_meta(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.impl()->ensure_autograd_meta());
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (!m || !m->requires_grad()) return {};
  if (const auto& base = t.impl()->view_base()) {
    auto* bm = static_cast<AutogradMeta*>(base->autograd_meta());
    if (bm && bm->history_gen != m->base_gen && m->grad_fn) {
      Tensor b(base);
      check_contiguous_base(*base, "using the history");
      m->grad_fn =
          std::make_shared<ViewOfBase>(*base, ViewGeometry::of(t, *base), gradient_edge(b));
      m->output_nr = 0;
      m->base_gen = bm->history_gen;
    }
  }
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  // A leaf's accumulator is shared by every graph that uses it, on any thread.
  std::lock_guard<std::mutex> lock(m->mutex);
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t nr) {
  AutogradMeta* m = ensure_meta(t);
  m->grad_fn = fn;
  m->output_nr = nr;
  if (const auto& base = t.impl()->view_base())
    if (auto* bm = static_cast<AutogradMeta*>(base->autograd_meta())) m->base_gen = bm->history_gen;
  t.impl()->set_autograd_key(true);
}

void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn) {
  const auto& base_impl = t.impl()->view_base();
  if (!base_impl) {
    set_history(t, fn, 0);
    ++ensure_meta(t)->history_gen;
    return;
  }
  check_contiguous_base(*base_impl, "an in-place op on a view");
  Tensor base(base_impl);
  ViewGeometry g = ViewGeometry::of(t, *base_impl);
  auto copy_slices = std::make_shared<CopySlices>(*base_impl, g, gradient_edge(base), fn);
  set_history(base, copy_slices, 0);
  AutogradMeta* bm = ensure_meta(base);
  ++bm->history_gen;
  // The view's own history now starts at its base's.
  set_history(t, std::make_shared<ViewOfBase>(*base_impl, std::move(g), Edge{copy_slices, 0}), 0);
}

}  // namespace xten::autograd
