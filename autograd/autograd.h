#pragma once
// The autograd API (PyTorch's meaning; docs/autograd.md). Tensor's own methods (backward,
// grad, requires_grad_, ...) are declared in core/tensor.h.
#include <functional>
#include <optional>
#include <vector>

#include <xten/autograd/grad_mode.h>
#include <xten/autograd/node.h>

namespace xten::autograd {

// Accumulates into the leaves' grad() the gradient of `outputs` (weighted by `grad_outputs`,
// which may be empty for one-element outputs). retain_graph defaults to create_graph.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// The gradients of `outputs` with respect to `inputs`, returned instead of accumulated. An input
// the outputs do not depend on raises unless allow_unused (then its gradient is undefined).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

// Runs `callback` on this thread when the backward pass in progress on it has run every node
// (PyTorch's Engine.queue_callback; DDP waits for its reductions so). ValueError outside a
// backward pass. Callbacks queued by a callback run too, in order.
void queue_callback(std::function<void()> callback);

}  // namespace xten::autograd
