#pragma once
// Capture: runs a program once with the Capture dispatch key on and records what reached the
// backends into a Graph (Note [Capture] in capture.cpp; docs/compile.md, "Capture").
#include <functional>
#include <string>
#include <vector>

#include <xten/compile/graph.h>

namespace xten::compiler {

using Program = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// A graph break (Note [Capture]): where the program read a value back to the host or made a
// tensor whose shape depends on values. The graph is split there (segments.h).
struct GraphBreak {
  std::string what;        // "item", "manual_seed", "nonzero"
  int node = 0;            // the nodes before it: 0 .. node-1
  bool is_node = false;    // the break is node `node` itself (nonzero, masked_select), run eagerly
  std::vector<int> alive;  // node values the program still held at the break
};

struct CaptureResult {
  Graph graph;
  std::vector<Tensor> outputs;  // what the program returned (it ran eagerly while captured)
  std::vector<GraphBreak> breaks;
  std::string break_op;  // the first break's op, or empty
  // The program ran a backward pass: a training step (docs/compile.md, "Training steps").
  bool backward_ran = false;
  // Node values the program stored where it outlives the call without returning them (a
  // gradient in a parameter's grad(), state kept by an object): each run writes their new values
  // into these tensor objects (TensorImpl::set_data), as the program would have.
  std::vector<int> escaped;
  std::vector<Tensor> escaped_tensors;
  // The host guards registered during the capture (compile/host_guard.h).
  std::vector<std::function<bool()>> host_guards;
  // Float arguments bound to host values (compile/host_guard.h): node, argument, value.
  struct Binding {
    int node = 0;
    int arg = 0;
    std::function<double()> value;
  };
  std::vector<Binding> bindings;
  // A forward whose results need gradients, captured with its backward (Note [Joint capture] in
  // capture.cpp): made is false when the program was not one.
  struct Joint {
    bool made = false;
    int forward_nodes = 0;            // nodes 0 .. forward_nodes-1 are the forward
    std::vector<int> differentiable;  // the results that require grad (indices into outputs)
    std::vector<int> grad_inputs;     // graph input per differentiable result: its gradient
    std::vector<int> wrt_inputs;      // program inputs that require grad (argument numbers)
    std::vector<int> wrt_captured;    // captured tensors that require grad (indices)
    std::vector<int> grads;           // per wrt_inputs, then wrt_captured: the gradient's value
  };
  Joint joint;
};

// Runs `program(inputs)` eagerly, recording its graph. With `fullgraph`, a graph break raises
// (ValueError naming the op) instead of being recorded in breaks. With `joint`, a program that
// runs no backward pass but returns results that require grad is captured with the backward of
// those results (CaptureResult::joint).
CaptureResult capture(const Program& program, const std::vector<Tensor>& inputs, bool fullgraph,
                      bool joint = false);

// Whether the Capture key's fallback records `op` as the primitives its composite kernel calls
// (with `below`, the keys under Capture) rather than as one node.
bool records_decomposed(const OperatorHandle& op, DispatchKeySet below);
// Whether `op` is a graph break by itself (its result's shape depends on values).
bool is_data_dependent(const OperatorHandle& op);

// A replay of a captured program (segments.cpp) receives, while installed on this thread, every
// op call the Capture key sees and every host read, in place of the capture.
class ReplayHandler {
 public:
  virtual ~ReplayHandler() = default;
  virtual void on_call(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) = 0;
  virtual void on_host_read(const char* what) = 0;
};
// Installs `h` for the current thread (nullptr: none); the Capture key must be included too.
void set_replay_handler(ReplayHandler* h);

}  // namespace xten::compiler
