// The parts of fused.h that do not depend on the CPU level: opcode names, and the seam through
// which the chosen level's runner (fused.cpp) is called.
#include <xten/kernels/cpu/fused.h>

namespace xten::cpu {

const char* to_string(FusedOpcode op) {
  static const char* names[] = {
      "add",  "sub",     "mul",   "div",   "add_alpha", "maximum", "minimum",    "neg",  "abs",
      "exp",  "log",     "log1p", "expm1", "sqrt",      "rsqrt",   "reciprocal", "sin",  "cos",
      "tanh", "sigmoid", "silu",  "relu",  "erf",       "gelu",    "gelu_tanh",  "clamp"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(FusedOpcode::Clamp) + 1);
  return names[static_cast<int>(op)];
}

const char* to_string(RowOp op) {
  switch (op) {
    case RowOp::LayerNorm:
      return "layer_norm";
    case RowOp::Softmax:
      return "softmax";
    case RowOp::LogSoftmax:
      return "log_softmax";
    case RowOp::Sum:
      return "sum";
    case RowOp::Mean:
      return "mean";
  }
  return "?";
}

bool is_binary(FusedOpcode op) {
  return op <= FusedOpcode::Minimum;
}

namespace {
detail::FusedRunner g_runner = nullptr;
}

void detail::set_fused_runner(FusedRunner r) {
  g_runner = r;
}

void run_fused(const FusedProgram& p, IntArrayRef shape, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs, const RowNorm* norm) {
  XTEN_ASSERT(g_runner, "fused: no CPU level registered its runner");
  for (const Tensor& t : inputs)
    XTEN_ASSERT(t.dtype() == kFloat && t.is_cpu(), "fused: inputs are float32 CPU tensors");
  for (const Tensor& t : outputs)
    XTEN_ASSERT(t.dtype() == kFloat && t.is_cpu() && t.is_contiguous() && t.sizes() == shape,
                "fused: outputs are contiguous float32 CPU tensors of the group's shape");
  if (norm) {
    XTEN_ASSERT(
        !shape.empty() && norm->input_register >= 0 && norm->input_register < p.num_registers,
        "fused: a row norm needs a shape and a register");
    for (const Tensor* t : {&norm->weight, &norm->bias, &norm->out})
      XTEN_ASSERT(!t->defined() || (t->dtype() == kFloat && t->is_cpu() && t->is_contiguous()),
                  "fused: the row norm's tensors are contiguous float32 CPU tensors");
  }
  g_runner(p, shape, inputs, outputs, norm);
}

}  // namespace xten::cpu
