#pragma once
// Running a graph (docs/compile.md, "Running a graph"): the nodes in order, each through its
// backend kernel (no autograd, no autocast, no capture: those already happened when the graph was
// captured), a fused group as one fused loop at the place of its last node, and every
// intermediate released after its last use.
#include <memory>

#include <xten/compile/graph.h>
#include <xten/compile/xpu_codegen.h>

namespace xten::compiler {

// Runs one node: reads its arguments from env, writes its results there.
void run_node(const Node& n, std::vector<Tensor>& env);

class Executor {
 public:
  // `keep_buffers` (mode "reduce-overhead"): the outputs of fused groups that the program does
  // not return are allocated once and reused by every call.
  Executor(std::shared_ptr<const Graph> g, bool keep_buffers);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The largest total size of the intermediates alive at once, in bytes (from the metadata).
  int64_t peak_bytes() const { return peak_bytes_; }
  // The generated kernels of the XPU groups (xpu_codegen.h): their source, and whether they
  // were built (if not, those groups run op by op, and error() says why).
  const XpuKernels& xpu_kernels() const { return xpu_; }

 private:
  struct Step {
    int node = -1;             // a node to run, or
    int group = -1;            // a fused group to run, or
    int conv = -1;             // a convolution step to run
    std::vector<int> release;  // values dead after this step
  };
  void run_group(int group, std::vector<Tensor>& env);
  void run_members(int group, std::vector<Tensor>& env);  // a group op by op, as captured
  void run_conv(int conv, std::vector<Tensor>& env);

  std::shared_ptr<const Graph> graph_;
  std::vector<Step> steps_;
  std::vector<char> is_output_;
  bool keep_buffers_;
  std::vector<Tensor> buffers_;  // per value, with keep_buffers
  int64_t peak_bytes_ = 0;
  XpuKernels xpu_;
};

}  // namespace xten::compiler
