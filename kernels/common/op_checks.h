#pragma once
// Argument checks that every backend's kernel of an op makes, with one message each, so that
// the same bad input gives the same error on every device (test/test_xpu_parity.cpp checks).
#include <optional>

#include <xten/core/tensor.h>

namespace xten {

// mm: 2-D operands whose inner sizes agree, one dtype, one device, not bool.
void check_mm(const Tensor& a, const Tensor& b);
// bmm: the same for 3-D operands with equal batch sizes.
void check_bmm(const Tensor& a, const Tensor& b);

// add/sub in compute dtype t: no bool subtraction; alpha integral for integral t, a bool (or
// 1) for bool t.
void check_add_sub(const char* name, ScalarType t, const Scalar& alpha, bool negate);
// neg: no bool.
void check_neg(const char* name, ScalarType t);

// The output dtype of mean: the given one or the input's; it must be floating.
ScalarType mean_dtype(const Tensor& self, std::optional<ScalarType> dtype);
// The output dtype of softmax/log_softmax: the given one or the input's; it must be floating.
ScalarType softmax_dtype(const char* op, const Tensor& self, std::optional<ScalarType> dtype);
void check_softplus_beta(const Scalar& beta);

// A pointwise op's given output: it has the broadcast shape, the result dtype casts to its
// dtype, and no two of its elements share memory.
void check_elementwise_out(const char* op, const Tensor& out, IntArrayRef shape, ScalarType result);

}  // namespace xten
