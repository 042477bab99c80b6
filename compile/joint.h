#pragma once
// A compiled forward with a generated backward (docs/compile.md, "A compiled forward in an eager
// training loop"; Note [Joint capture] in capture.cpp, Note [Forward and backward graphs] in
// joint.cpp): the joint graph cut into a forward graph, which also returns what the backward
// reads, and a backward graph that an autograd node runs when the loop calls backward().
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <xten/compile/capture.h>
#include <xten/compile/runtime.h>

namespace xten::compiler {

class JointProgram : public std::enable_shared_from_this<JointProgram> {
 public:
  // `optimize` runs the passes over each of the two graphs.
  JointProgram(const Graph& captured, CaptureResult::Joint joint,
               const std::function<void(Graph&)>& optimize, bool keep_buffers);
  // One call: runs the forward graph; the differentiable results come back with a node of the
  // generated backward as their grad_fn.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  const Graph& forward() const { return *forward_; }
  const Graph& backward() const { return *backward_; }
  const Executor& forward_executor() const { return *forward_exec_; }
  const Executor& backward_executor() const { return *backward_exec_; }
  // The values the forward hands to the backward (saved), by number.
  size_t saved_count() const { return saved_.size(); }
  // Both graphs, each under a header.
  std::string to_string() const;

 private:
  friend class CompiledFunctionBackward;
  // Where one input of the backward graph comes from.
  struct Source {
    enum class Kind : uint8_t { Saved, Input, Grad } kind = Kind::Saved;
    int index = 0;  // into the saved values, the program's inputs, or the gradients
  };
  CaptureResult::Joint joint_;
  size_t num_outputs_ = 0;
  std::vector<TensorMeta> output_meta_;    // per differentiable result: its gradient's layout
  std::vector<Tensor> wrt_captured_;       // captured tensors that get a gradient
  std::vector<int> forward_inputs_;        // program argument per forward-graph input
  std::vector<Source> backward_inputs_;    // per backward-graph input
  std::vector<int> saved_;                 // captured-graph values the backward reads
  int recomputed_ = 0;                     // Note [Recomputed pointwise values] (joint.cpp)
  std::vector<Tensor> backward_captured_;  // captured tensors the backward reads (versions)
  std::shared_ptr<Graph> forward_, backward_;
  std::unique_ptr<Executor> forward_exec_, backward_exec_;
};

}  // namespace xten::compiler
