#pragma once
// Shape, dim and dtype rules shared by every backend ("meta" functions): a kernel asks these
// what its output looks like before it computes anything. The rules are PyTorch's; they are
// written out in docs/type_promotion.md.
#include <initializer_list>

#include <xten/core/array_ref.h>
#include <xten/core/memory_format.h>
#include <xten/core/scalar.h>
#include <xten/core/tensor.h>

namespace xten {

// `dim` in [-ndim, ndim) -> [0, ndim). A zero-dim tensor accepts -1 and 0.
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);

// Sizes must be >= 0; returns their product (checked for overflow).
int64_t check_sizes(const char* op, IntArrayRef sizes);

DimVector contiguous_strides(IntArrayRef sizes);

// NumPy broadcasting: align trailing dims; each pair must be equal or contain a 1.
DimVector broadcast_shapes(const char* op, IntArrayRef a, IntArrayRef b);

// Type promotion, PyTorch's result_type: operands are ranked dimensioned tensors > zero-dim
// tensors > Scalars ("wrapped numbers"); a lower rank can raise the category
// (bool < integral < floating) of the result but never its width within a category.
class ResultType {
 public:
  ResultType& add(const Tensor& t);
  ResultType& add(const Scalar& s);
  ScalarType get() const;

 private:
  void update(ScalarType& slot, ScalarType t);
  ScalarType dim_ = ScalarType::Undefined;
  ScalarType zero_dim_ = ScalarType::Undefined;
  ScalarType wrapped_ = ScalarType::Undefined;
};
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);

// A Scalar as a zero-dim CPU tensor marked as a wrapped number: it takes part in an op as a
// Scalar does in promotion (the "wrapped" rank above).
Tensor scalar_to_tensor(const Scalar& s, Device device = Device(kCPU));
bool is_wrapped_number(const Tensor& t);

// Every device argument must match; CPU zero-dim tensors may join any device (as in PyTorch).
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);

// Writing into `t` must not hit one memory location twice (e.g. an expanded tensor).
void check_no_internal_overlap(const char* op, const Tensor& t);

// A fresh contiguous tensor on a device (through its allocator), no dispatch involved.
Tensor empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device);
// A view of a quantized tensor shares its quantizer (per-tensor only: core/quantizer.h).
void share_quantizer(const Tensor& from, const Tensor& view);
// The same with `strides`, a dense layout of `sizes` (core/memory_format.h's dense_strides).
Tensor empty_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device);
// A tensor on fresh storage `t` (no other handle to it) seen with the dense `strides` instead:
// how a dispatched `empty` becomes channels-last. Not a view: it is the storage's only tensor.
Tensor restride_fresh(const Tensor& t, IntArrayRef strides);

// Note [Pointwise layout]
// A pointwise op's result takes its operands' layout, as in PyTorch: its dims are laid out in
// the order the operands' strides give, outermost first. Operands are read in turn (a given
// output first): the first that orders two dims (both strides non-zero and different) decides;
// broadcast dims (stride 0) and dims of size 1 order nothing; dims nobody orders keep their
// logical order. Contiguous operands give the identity, so the common case costs nothing; an
// NHWC input gives an NHWC result, across broadcasting and mixed layouts. The engines walk
// the dims in this order too, so that their inner loop runs along memory.
DimVector pointwise_dim_order(IntArrayRef shape, std::initializer_list<const Tensor*> operands);
// Whether every defined operand is contiguous or has one element (the order is then the
// identity, and nobody needs to compute it).
bool all_contiguous(std::initializer_list<const Tensor*> operands);

// arange's argument checks and length, shared by every backend. `integral`: all three are
// integers, and values are computed as start + i * step in int64 (else in double).
struct ArangeSpec {
  int64_t length;
  bool integral;
};
ArangeSpec arange_spec(const Scalar& start, const Scalar& end, const Scalar& step);

// randint's checks (low < high; [low, high) fits `dtype`), shared by every backend.
void check_randint_bounds(int64_t low, int64_t high, ScalarType dtype);

}  // namespace xten
