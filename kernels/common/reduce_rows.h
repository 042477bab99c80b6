#pragma once
// How a reduction sees its input, shared by every backend's reduction kernels: kept dims first,
// reduced dims last, in the output dtype, made contiguous (with the backend's own copy
// kernels), so that the input is `outer` rows of `inner` elements and output element i
// reduces row i.
#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include <xten/core/tensor.h>

namespace xten {

// Normalized, sorted, distinct reduction dims; empty `dims` means all.
std::vector<int64_t> reduction_dims(const char* op, const Tensor& self, IntArrayRef dims);

struct Rows {
  Tensor in;
  int64_t outer = 1, inner = 1;
  DimVector out_shape;
  std::vector<int64_t> rdims;
};
Rows make_rows(const char* op, const Tensor& self, IntArrayRef dims, ScalarType dtype);

// `out` has the kept dims; with keepdim the reduced ones come back as size 1. The result is
// laid out as reduced_in_input_order says.
Tensor finish(const Tensor& out, const Tensor& self, const Rows& r, bool keepdim);

// The order that lists self's dims from the largest stride to the smallest, when self is not
// contiguous and that order makes it contiguous (a transposed matrix, a channels-last batch);
// nullopt otherwise.
std::optional<DimVector> memory_order(const Tensor& self);

// Note [Reduction layout]
// A reduction's result follows its input's layout, as PyTorch's do: for an input that is a
// permutation of a dense tensor (memory_order), the result (`kept`: self's dims, the reduced
// ones of size 1) is laid out in that order, so `x.sum(2, true)` of a channels-last
// [N, C, H, W] batch is channels-last, and without keepdim the reduced dims are dropped from
// that layout. Other inputs give contiguous results. `kept` is copied only when its strides
// differ.
Tensor reduced_in_input_order(const Tensor& kept, const Tensor& self,
                              const std::vector<int64_t>& rdims, bool keepdim);

// The input side of Note [Reduction layout], for the sums (both devices): a dense input that is
// not contiguous is reduced as its contiguous memory-order view with the dims renumbered
// (`reduce_keepdim(view, dims)` must keep the reduced dims), the kept values put back in self's
// dim order and laid out as self is. Reduced dims that lead in memory then take a backend's
// column path (leading_dims_reduction), trailing ones are rows already: no transposing copy of
// the whole input. nullopt where self is contiguous or not a permutation of a dense tensor.
std::optional<Tensor> reduce_in_memory_order(
    const char* op, const Tensor& self, IntArrayRef dims, bool keepdim,
    const std::function<Tensor(const Tensor&, IntArrayRef)>& reduce_keepdim);

// How many leading dims `dims` are, where they are the leading dims of a contiguous, floating
// `self` of dtype `out_dtype` with dims left to keep (a sum of columns: the rows of a
// [leading, rest] matrix added); 0 otherwise.
int64_t leading_dims_reduction(const char* op, const Tensor& self, IntArrayRef dims,
                               ScalarType out_dtype);

// ValueError for a reduction over a zero-size dim with a nonempty output.
void check_nonempty(const char* op, const Tensor& self, const Rows& r);

// The dtype sum and prod produce: the given one, int64 for integer and bool inputs, else the
// input's.
ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype);

// Sorting's meta step (sort, argsort, topk; Note [Pooling meta] in window.h says why): the
// input as contiguous rows with dim innermost, k checked, the first k values and their
// int64 indices per row allocated as `rows` x k. A backend sorts rows_in into them.
struct SortRows {
  bool zero_dim = false;  // a 0-d input: its one value, index 0 (nothing to sort)
  int64_t d = 0, n = 0, rows = 0, k = 0;
  Tensor self, rows_in, values, indices;
  // (values, indices) with dim back in its place.
  std::tuple<Tensor, Tensor> finish() const;
};
SortRows sort_rows_meta(const char* op, const Tensor& self, int64_t dim, int64_t k);

}  // namespace xten
