#pragma once
// The graph: nodes, the edges between them, and the saved tensors they hold.
//
// Note [The autograd graph]
// A recorded op makes one Node; its next edges point at the nodes that made the op's
// differentiable tensor inputs (or at a leaf's AccumulateGrad), one edge per input slot, and the
// op's outputs point back at it (AutogradMeta::grad_fn, output_nr). The engine
// (autograd/engine.cpp) runs the nodes from a root in dependency order: a node's apply() takes
// the gradients of its op's outputs and returns those of its inputs, one per next edge.
// Ownership runs from outputs to inputs only (tensor -> node -> saved inputs and next nodes), so
// the graph frees itself when the last output dies; a node saves its own op's outputs without
// their history (SavedTensor) to keep it that way.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <xten/core/tensor.h>

namespace xten::autograd {

class Node;
using variable_list = std::vector<Tensor>;
using Hook = std::function<Tensor(const Tensor&)>;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// What a gradient flowing into a slot must look like: the forward tensor's shape, dtype, device.
struct TensorMeta {
  DimVector sizes;
  ScalarType dtype = ScalarType::Float;
  Device device = Device("cpu");
  bool contiguous = true;
  int64_t storage_offset = 0;
  // ChannelsLast for a channels-last input: formulas that rebuild a gradient from the shape
  // alone (pooling's) lay it out so (docs/memory_format.md).
  MemoryFormat memory_format = MemoryFormat::Contiguous;
  static TensorMeta of(const Tensor& t) {
    return {DimVector(t.sizes()), t.dtype(),          t.device(),
            t.is_contiguous(),    t.storage_offset(), t.suggest_memory_format()};
  }
  Tensor zeros() const;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward", "AccumulateGrad": what grad_fn()->name() shows.
  virtual std::string name() const = 0;
  // grads[i]: the gradient of the op's output i (undefined where none flowed); returns one
  // gradient per next edge (undefined where there is none).
  virtual variable_list apply(variable_list&& grads) = 0;
  // Frees what the node saved (after a backward without retain_graph).
  virtual void release_saved() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  // The number of gradients apply() takes: the op's outputs.
  uint32_t num_inputs() const { return num_inputs_; }
  void set_num_inputs(uint32_t n) { num_inputs_ = n; }
  // Creation order: the engine runs later nodes first among those ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  // Hooks on the gradient of output `input_nr` (tensor hooks of non-leaf tensors, retain_grad).
  int64_t add_pre_hook(uint32_t input_nr, Hook hook);
  void remove_pre_hook(int64_t handle);
  bool has_pre_hooks() const { return !pre_hooks_.empty(); }
  void run_pre_hooks(variable_list& grads) const;

 protected:
  std::vector<Edge> next_edges_;
  uint32_t num_inputs_ = 1;

 private:
  uint64_t sequence_nr_;
  struct PreHook {
    int64_t handle;
    uint32_t input_nr;
    Hook fn;
  };
  std::vector<PreHook> pre_hooks_;
};

// The gradient sink of a leaf that requires grad: adds what reaches it to the leaf's grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override;
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

// A node that raises when run: for a graph that cannot be differentiated past it.
class ErrorNode final : public Node {
 public:
  ErrorNode(std::string name, std::string message)
      : name_(std::move(name)), message_(std::move(message)) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override;

 private:
  std::string name_, message_;
};

// Note [Saved tensors]
// A node keeps the tensors its formula needs with the version they had when saved; reading one
// whose version has moved on (an in-place op wrote it since) raises PyTorch's error. An output
// of the node's own op is kept without its history (which is the node itself) and gets it back
// when read during a backward that builds a graph.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  bool defined() const { return data_.defined(); }
  // `owner`: the node reading it, for the messages and to give a saved output its history back.
  Tensor unpack(const std::shared_ptr<Node>& owner, const char* op) const;
  void reset() { data_ = Tensor(); }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
};

}  // namespace xten::autograd
