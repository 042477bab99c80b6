#pragma once
// AutogradMeta: autograd's state of one tensor (Note [Autograd meta], docs/autograd.md), and the
// helpers the layer uses to read and write it.
#include <mutex>

#include <xten/autograd/node.h>

namespace xten::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  Tensor grad;                           // accumulated gradient (leaves, retain_grad)
  std::shared_ptr<Node> grad_fn;         // the node that made it (null for leaves)
  std::weak_ptr<Node> grad_accumulator;  // a leaf's AccumulateGrad, while the graph holds it
  uint32_t output_nr = 0;                // which output of grad_fn's op it is
  bool requires_grad_flag = false;       // a leaf that asked for a gradient
  bool retains_grad = false;
  int64_t retain_grad_hook = -1;
  std::vector<std::pair<int64_t, Hook>> leaf_hooks;  // a leaf's hooks, run before accumulation
  // A leaf's hooks run after accumulation (register_post_accumulate_grad_hook).
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> post_accumulate_hooks;
  // Note [Views and in-place]: a tensor whose history an in-place op replaced counts up
  // `history_gen`; a view made when its base's count was `base_gen` regenerates its own history
  // from the base's when the counts differ.
  uint32_t history_gen = 0;
  uint32_t base_gen = 0;
  std::mutex mutex;  // guards grad against backward calls on several threads

  bool requires_grad() const override { return requires_grad_flag || grad_fn != nullptr; }
  void set_requires_grad(bool requires_grad, TensorImpl* self) override;
};

// The meta of `t`, or null.
inline AutogradMeta* meta_of(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}
// The meta of `t`, made if absent.
AutogradMeta* ensure_meta(const Tensor& t);

// Where the gradient of `t` goes: (grad_fn, output_nr), or a leaf's AccumulateGrad (made once
// and shared while alive). Invalid for a tensor that does not require grad. Regenerates a view's
// history when its base's changed (Note [Views and in-place]).
Edge gradient_edge(const Tensor& t);
// Makes `t` an output of `fn` (output `nr`), with the Autograd key so later ops record.
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t nr);
// After an in-place op recorded as `fn` wrote `t`: `t` (and, if `t` is a view, its base) take
// the new history.
void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn);

}  // namespace xten::autograd
