#pragma once
// ops::<id>: the handle of every op in the op table (dispatch/op_table.h), for code that calls
// an op through the dispatcher without a front end (front ends, autograd's formulas, tests):
//
//   ops::add_Tensor::handle().call(self, other, alpha)
//
// `Sig` is the op's C++ signature; handle() finds the op once (a function-local static).
#include <tuple>

#include <xten/dispatch/dispatcher.h>
#include <xten/dispatch/op_table.h>

namespace xten {

// Return types with commas, named for the table: two tensors (values and indices), three
// (the gradients of a normalization's input, weight and bias).
using TensorPair = std::tuple<Tensor, Tensor>;
using TensorTriple = std::tuple<Tensor, Tensor, Tensor>;

namespace ops {
#define XTEN_DECLARE_OP_HANDLE(kind, name, id, schema, Ret, params, args) \
  struct id {                                                             \
    using Sig = Ret params;                                               \
    static const TypedOperatorHandle<Sig>& handle();                      \
  };
XTEN_FORALL_OPS(XTEN_DECLARE_OP_HANDLE)
#undef XTEN_DECLARE_OP_HANDLE
}  // namespace ops

}  // namespace xten
