#pragma once
// Capture: runs a program once with the Capture dispatch key on and records what reached the
// backends into a Graph (Note [Capture] in capture.cpp; docs/compile.md, "Capture").
#include <functional>
#include <string>
#include <vector>

#include <xten/compile/graph.h>

namespace xten::compiler {

using Program = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct CaptureResult {
  Graph graph;
  std::vector<Tensor> outputs;  // what the program returned (it ran eagerly while captured)
  std::string break_op;         // non-empty: the graph broke here ("item", "nonzero")
};

// Runs `program(inputs)` eagerly, recording its graph. With `fullgraph`, a graph break raises
// (ValueError naming the op) instead of being reported in break_op.
CaptureResult capture(const Program& program, const std::vector<Tensor>& inputs, bool fullgraph);

}  // namespace xten::compiler
