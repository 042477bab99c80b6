#pragma once
// Programs with graph breaks (docs/compile.md, "Graph breaks"; Note [Replay] in segments.cpp).
// The captured graph is cut at each break into segments, each optimized and run like a graph
// without breaks. A later call runs the user's program again with the Capture key on: its op
// calls are matched against the recorded nodes and answered with placeholder tensors (nothing
// is computed), and at each break the segment so far runs compiled and the placeholders the
// program holds take its results; the break itself (item(), nonzero) then runs on real data.
// A call that leaves the recorded path (another op, another constant: an `if` on an item()
// value that went the other way) finishes eagerly from there, with the right results.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <xten/compile/capture.h>
#include <xten/compile/runtime.h>

namespace xten::compiler {

// The graph of nodes [begin, end) of `c`, values renumbered: what it reads from outside becomes
// its inputs, whose values in `c` are appended to `inputs` (captured tensors and constants stay
// what they are); `outputs` (values of `c`) are its results.
std::shared_ptr<Graph> subgraph(const Graph& c, int begin, int end, const std::vector<int>& outputs,
                                std::vector<int>* inputs);

struct Segment {
  int begin = 0, end = 0;          // the captured graph's nodes [begin, end)
  std::vector<int> inputs;         // captured-graph values the segment reads from outside
  std::vector<int> outputs;        // captured-graph values it hands on (or the program holds)
  std::shared_ptr<Graph> graph;    // the segment's own graph (values renumbered), optimized
  std::unique_ptr<Executor> exec;  // null for a segment without nodes
};

class SegmentedProgram {
 public:
  // `optimize` runs the passes over one segment's graph.
  SegmentedProgram(Graph captured, std::vector<GraphBreak> breaks,
                   const std::function<void(Graph&)>& optimize, bool keep_buffers);
  // One call: runs `program` replayed against the segments. `left_path` gets why the call left
  // the recorded path (and finished eagerly), or stays empty.
  std::vector<Tensor> run(const Program& program, const std::vector<Tensor>& inputs,
                          std::string* left_path) const;

  const Graph& captured() const { return captured_; }
  const std::vector<GraphBreak>& breaks() const { return breaks_; }
  const std::vector<Segment>& segments() const { return segments_; }
  // Every segment's graph, each under a header naming the break that ends it.
  std::string to_string() const;

 private:
  friend class Replay;
  Graph captured_;
  std::vector<GraphBreak> breaks_;
  std::vector<Segment> segments_;  // breaks_.size() + 1
};

}  // namespace xten::compiler
