#pragma once
// The graph IR of xten::compile (docs/compile.md, "The graph"). A graph is what one run of the
// user's program did, in order: each node is one call of an op that reached the backends, its
// arguments either values (tensors the graph defines or takes) or constants (ints, scalars,
// dtypes, as they were passed). Values are in SSA form: an in-place op defines a new value for
// the tensor it writes. A value knows the metadata the capture saw (sizes, strides, dtype,
// device), which passes and code generation read.
#include <optional>
#include <string>
#include <vector>

#include <xten/dispatch/dispatcher.h>
#include <xten/kernels/cpu/fused.h>
#include <xten/kernels/cpu/onednn.h>

namespace xten::compiler {

struct TensorMeta {
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  ScalarType dtype = ScalarType::Undefined;
  Device device{kCPU};
  static TensorMeta of(const Tensor& t);
  bool operator==(const TensorMeta& o) const;
  bool is_contiguous() const;     // row-major strides (size-1 dims aside)
  std::string to_string() const;  // "f32[8, 3, 32, 32]" (+ strides when not contiguous)
};

enum class ValueKind : uint8_t {
  Input,     // argument i of the compiled program
  Captured,  // a tensor the program read but did not make: a module's parameter, a buffer
  Constant,  // a tensor the compiler computed (constant folding) or owns (a folded weight)
  Node,      // an output of a node
};

struct Value {
  ValueKind kind = ValueKind::Node;
  TensorMeta meta;
  int index = -1;  // Input: argument number; Captured: index into Graph::captured
  int node = -1;   // Node: the producing node
  Tensor tensor;   // Captured and Constant: the tensor itself
};

// One argument of a node as it sat on the op's stack.
struct Arg {
  enum class Kind : uint8_t { Value, ValueList, Constant } kind = Kind::Constant;
  int value = -1;           // Value; -1: an undefined tensor
  std::vector<int> values;  // ValueList (-1: an undefined element)
  IValue constant;          // Constant
  static Arg of_value(int v);
  static Arg of_constant(IValue c);
};

// One result of a node: a tensor value, a list of them, or something that is not a tensor.
struct Result {
  enum class Kind : uint8_t { Value, ValueList, Other } kind = Kind::Value;
  int value = -1;
  std::vector<int> values;
};

struct Node {
  OperatorHandle op;
  std::vector<Arg> args;
  std::vector<Result> results;
  // Set by fusion: the fused group this node belongs to (-1: none); by plan_convolutions: the
  // convolution step (-1: none).
  int group = -1;
  int conv_step = -1;
  bool dead = false;  // removed by a pass (kept so that value numbers stay stable)
  std::string name() const { return op.entry().display_name(); }
  // Whether the op writes one of its arguments (`Tensor(a!)`).
  bool writes() const { return op.entry().written_args() != 0; }
  // Every value this node reads / defines.
  std::vector<int> used_values() const;
  std::vector<int> defined_values() const;
};

// A group of pointwise nodes run as one fused loop (passes.h, fuse_pointwise): on CPU by the
// block interpreter (kernels/cpu/fused.h), on XPU as a generated kernel (xpu_codegen.h).
struct FusedGroup {
  Device device{kCPU};       // where every tensor of the group lives (0-d numbers aside)
  std::vector<int> nodes;    // in program order
  std::vector<int> inputs;   // values read from outside the group
  std::vector<int> outputs;  // values used after the group (other nodes, graph outputs)
  std::vector<int64_t> shape;
  std::string name;  // "fused_mul_sigmoid_add": what the profiler shows
  cpu::FusedProgram program;
  // A group may end in layer_norm over the last dim, or (CPU) softmax or log_softmax over it (its
  // last node): its result is written by the row epilogue, not by the program (cpu::RowNorm).
  cpu::RowOp norm_op = cpu::RowOp::LayerNorm;
  int norm_node = -1;
  int norm_output = -1;
  int norm_register = -1;
  int norm_weight = -1, norm_bias = -1;  // values, or -1
  double norm_eps = 1e-5;
};

// A oneDNN inference step (passes.h, plan_convolutions), on CPU: a convolution run as one
// primitive (conv2d with constant weight and bias, then optionally an add of a residual and a
// relu), or a max pooling whose indices nothing reads.
struct ConvStep {
  int conv = -1, add = -1, relu = -1;  // nodes (the last one's result is the step's)
  int src = -1, other = -1, out = -1;  // values: the convolution's input, the residual, the result
  int src_step = -1, other_step = -1;  // the step that made src / other blocked, or -1 (plain)
  bool blocked_out = false;            // only steps read `out`: it stays in oneDNN's layout
  std::optional<ConvGeometry> pool;    // a max pooling step (`conv` is the pooling node)
  std::shared_ptr<const cpu::onednn::InferenceStep> impl;
  std::string name;                // "fused_conv2d_add_relu": what the profiler shows
  std::vector<int> nodes() const;  // conv, add, relu that are set, in order
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;    // value per program argument
  std::vector<int> captured;  // value per captured tensor
  std::vector<int> outputs;   // value per program result (-1: an undefined tensor)
  std::vector<FusedGroup> groups;
  std::vector<ConvStep> convs;

  int add_value(Value v);
  int live_nodes() const;
  // The readable dump: one line per node, `%5 = mul(%3, %4) : f32[4096, 1024]`, inputs and
  // captured tensors first, groups marked.
  std::string to_string() const;
  // Checks the invariants passes rely on (every used value is defined before its use, results
  // and producers agree, outputs exist); InternalError naming the node otherwise.
  void verify() const;
};

}  // namespace xten::compiler
