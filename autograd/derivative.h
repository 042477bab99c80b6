#pragma once
// Derivative formulas and how they are registered (docs/autograd.md, "Adding a derivative").
//
//   LIBRARY_IMPL(xten, Autograd, m) {
//     Derivatives d(m);
//     d.def("mul.Tensor", [](const GradContext& c) -> variable_list {
//       return {c.grad() * c.input(1), c.grad() * c.input(0)};
//     }).inplace("mul_.Tensor");
//     d.nondifferentiable("eq.Tensor");
//   }
//
// A formula gets the gradients of the op's outputs and returns one gradient per tensor input
// slot (Note [Input slots]), written with xten ops so that a backward with create_graph=true is
// itself recorded (higher-order gradients). The engine sums a returned gradient over broadcast
// dims and casts it to its input's dtype and device, so formulas need not.
#include <xten/autograd/node.h>
#include <xten/dispatch/ivalue.h>
#include <xten/dispatch/library.h>

namespace xten::autograd {

class FormulaNode;

// Note [Input slots]
// A formula's inputs are numbered by slot: each Tensor or Tensor? argument is one slot (an absent
// optional too), each element of a Tensor[] argument one slot, other arguments none. For most ops
// the slots are the tensor arguments in schema order.
class GradContext {
 public:
  GradContext(const FormulaNode& node, const variable_list& grads, uint64_t flowed = ~uint64_t{0})
      : node_(node), grads_(grads), flowed_(flowed) {}
  // The gradient of output i (zeros of its shape where none flowed).
  const Tensor& grad(size_t i = 0) const { return grads_[i]; }
  // Whether a gradient flowed into output i (else grad(i) is zeros made for the formula): lets
  // a formula skip the terms of outputs that nothing differentiated read.
  bool grad_flowed(size_t i) const { return i >= 64 || ((flowed_ >> i) & 1); }
  // The saved tensor argument at schema position `arg` (its version checked).
  Tensor input(size_t arg) const;
  // The shape, dtype, device and layout the tensor argument at `arg` had: for formulas that need
  // no values (views, reductions), so they neither check nor keep the values.
  const TensorMeta& input_meta(size_t arg) const;
  IntArrayRef input_sizes(size_t arg) const { return input_meta(arg).sizes; }
  // The saved tensors of a Tensor[] argument.
  std::vector<Tensor> input_list(size_t arg) const;
  // Whether the Tensor? argument at `arg` was given.
  bool has_input(size_t arg) const;
  // Any other argument, as its C++ type (int64_t, double, bool, Scalar, IntArrayRef,
  // std::optional<...>, std::string, ScalarType, Device).
  template <class T>
  T arg(size_t i) const {
    return ivalue_traits<T>::from(raw_arg(i));
  }
  // The op's output i, saved (only for derivatives registered with saves_result()).
  Tensor result(size_t i = 0) const;
  // Whether the input in `slot` needs a gradient (a formula may skip the others).
  bool needs_grad(size_t slot) const;
  size_t num_slots() const;

 private:
  const IValue& raw_arg(size_t i) const;
  const FormulaNode& node_;
  const variable_list& grads_;
  uint64_t flowed_;
};

using Formula = variable_list (*)(const GradContext&);

struct Derivative {
  std::string op;             // "mul.Tensor"
  std::string node_name;      // "MulBackward"
  Formula formula = nullptr;  // null: not differentiable (outputs never require grad)
  bool saves_result = false;  // the formula reads result()
  bool needs_self = true;     // in-place variants: keep a copy of self's value before the write
  uint64_t saved_args = ~uint64_t{0};  // bit i: the formula reads argument i's values
};

// Registers derivatives on the Autograd key of a LIBRARY_IMPL(xten, Autograd, m) block.
class Derivatives {
 public:
  explicit Derivatives(Library& m) : m_(m) {}
  class Entry {
   public:
    // The formula reads the op's outputs.
    Entry& saves_result();
    // The in-place variant `op` (for example "mul_.Tensor") uses the same formula.
    Entry& inplace(const char* op, const char* file = __builtin_FILE(),
                   int line = __builtin_LINE());
    // The formula never reads self's value, so an in-place variant need not copy it.
    Entry& self_not_needed();
    // The formula reads the values of these tensor arguments only (by schema position); the
    // others are not kept (their shapes are, through input_meta). Views and reductions keep
    // nothing: a node that kept its input could form a cycle with the input's history.
    Entry& saves_only(std::initializer_list<size_t> args);

   private:
    friend class Derivatives;
    Entry(Derivatives& d, Derivative* dv) : d_(d), dv_(dv) {}
    Derivatives& d_;
    Derivative* dv_;
  };
  Entry def(const char* op, Formula formula, const char* file = __builtin_FILE(),
            int line = __builtin_LINE());
  // Ops whose outputs never require grad (comparisons, indices, integer results, factories).
  void nondifferentiable(std::initializer_list<const char*> ops,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE());

 private:
  void register_op(const char* op, Derivative* dv, const char* file, int line);
  Library& m_;
};

// "mul.Tensor" -> "MulBackward", "max_pool2d_with_indices" -> "MaxPool2DWithIndicesBackward".
std::string node_name_for(const std::string& op);

// Sums `grad` down to `sizes` over the dims it was broadcast along.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);

}  // namespace xten::autograd
