#pragma once
// Fused pointwise programs on CPU: the loop that xten::compile's fused groups run (docs/compile.md,
// "CPU code"). A program is a list of register instructions over float32; the runner walks the
// group's iteration space in blocks, loads each input's block (in place where contiguous,
// gathered where broadcast or strided), runs the instructions over the block with the same
// functors as the eager kernels (so a fused exp is the exp kernel's value, bit for bit), and
// stores the outputs. No intermediate is written to memory. The runner is compiled once per CPU
// capability level (fused.cpp, in CMakeLists.txt's XTEN_CPU_DISPATCHED).
#include <cstdint>
#include <string>
#include <vector>

#include <xten/core/tensor.h>

namespace xten::cpu {

// Each opcode is the eager op of the same name, computed in float32.
enum class FusedOpcode : uint8_t {
  // binary: dst = a op b
  Add,
  Sub,
  Mul,
  Div,
  AddAlpha,  // a + s0 * b (add.Tensor with alpha != 1; sub's alpha is negated)
  Maximum,
  Minimum,
  // unary: dst = op(a)
  Neg,
  Abs,
  Exp,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Silu,
  Relu,
  Erf,
  GeluErf,
  GeluTanh,
  Clamp,  // clamp(a, s0, s1); a NaN bound is absent
};
const char* to_string(FusedOpcode op);
bool is_binary(FusedOpcode op);

struct FusedInstr {
  FusedOpcode op;
  int dst = 0, a = 0, b = 0;  // registers
  float s0 = 0, s1 = 0;       // AddAlpha's alpha, Clamp's bounds
};

// Registers 0 .. num_inputs-1 hold the inputs; instructions write the others; `outputs` names
// the registers stored to the outputs.
struct FusedProgram {
  int num_inputs = 0;
  int num_registers = 0;
  std::vector<FusedInstr> code;
  std::vector<int> outputs;
};

// A program that ends in an op over the last dim: register `input_register` goes row by row
// into `out` (contiguous float32 of the program's shape) through layer_norm (weight and bias, if
// defined, contiguous float32 [D]), softmax or log_softmax, or into one value per row (`out`:
// contiguous float32 of one element per row) through sum or mean. softmax, log_softmax, sum and
// mean compute as the eager kernels do, bit for bit (kernels/cpu/activation.cpp and reduce.cpp,
// Note [Row buffers] in fused.cpp; a single row the eager sum cuts over threads aside).
enum class RowOp : uint8_t { LayerNorm, Softmax, LogSoftmax, Sum, Mean };
const char* to_string(RowOp op);
struct RowNorm {
  RowOp op = RowOp::LayerNorm;
  int input_register = -1;
  double eps = 1e-5;
  Tensor weight, bias, out;
};

// Runs `p` over `shape`: inputs are float32 tensors broadcastable to it (any strides), outputs
// contiguous float32 tensors of that shape; with `norm`, the row epilogue too.
void run_fused(const FusedProgram& p, IntArrayRef shape, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs, const RowNorm* norm = nullptr);

namespace detail {
using FusedRunner = void (*)(const FusedProgram&, IntArrayRef, const std::vector<Tensor>&,
                             const std::vector<Tensor>&, const RowNorm*);
// Set by the chosen capability level's copy of fused.cpp when it registers.
void set_fused_runner(FusedRunner r);
}  // namespace detail

}  // namespace xten::cpu
