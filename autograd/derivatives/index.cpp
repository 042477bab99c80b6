// Derivatives of the indexing and sorting primitives (kernels/cpu/index.cpp). index, index_put_,
// embedding, masked_fill, cat, stack, pad, repeat, flip, roll, tril and triu are composites
// over these.
#include <xten/autograd/derivatives/common.h>
#include <xten/core/meta.h>

namespace xten::autograd {
namespace {

// The gradient of values picked along `dim` by `indices` (of the values' shape): summed back
// into zeros of the input's shape.
Tensor scatter_back(const Tensor& g, int64_t dim, const Tensor& indices, IntArrayRef sizes) {
  return zeros(sizes, g.dtype(), g.device()).scatter_add(dim, indices, g);
}

// The gradient of the values output of sort/topk (dim is argument `dim_arg`).
variable_list to_sorted_indices(const GradContext& c, size_t dim_arg) {
  const IntArrayRef sizes = c.input_sizes(0);
  if (sizes.empty()) return {c.grad(0)};
  const int64_t dim =
      wrap_dim("backward", c.arg<int64_t>(dim_arg), static_cast<int64_t>(sizes.size()));
  return {scatter_back(c.grad(0), dim, c.result(1), sizes)};
}

// The gradient of scatter's src: the output gradient at the positions each src element was
// written to. An index smaller than src leaves src's other elements unused: zero gradient
// (found by the op fuzzer, seed 2343618; PyTorch raises there).
Tensor scattered_src_grad(const Tensor& g, int64_t dim, const Tensor& index, IntArrayRef src) {
  const Tensor picked = g.gather(dim, index);
  if (picked.sizes() == src || src.empty()) return picked.reshape(src);
  DimVector pads;  // pad() lists the last dim first
  for (size_t i = src.size(); i-- > 0;) {
    pads.push_back(0);
    pads.push_back(src[i] - picked.size(static_cast<int64_t>(i)));
  }
  return pad(picked, pads);
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("index_select", [](const GradContext& c) -> variable_list {
     const IntArrayRef sizes = c.input_sizes(0);
     const Tensor index = c.input(2), &g = c.grad();
     if (sizes.empty()) return {g.reshape({})};
     const int64_t dim =
         wrap_dim("index_select", c.arg<int64_t>(1), static_cast<int64_t>(sizes.size()));
     // Along dim 0 (embedding's rows), rows added into zeros by index_put_; scatter_add would
     // clone the zeros first (a third more memory traffic: 1.35x the time on one thread).
     if (dim == 0)
       return {zeros(sizes, g.dtype(), g.device()).index_put_({index.reshape({-1})}, g, true)};
     DimVector shape(g.dim(), 1);
     shape[dim] = index.numel();
     return {scatter_back(g, dim, index.reshape(shape).expand(g.sizes()), sizes)};
   }).saves_only({2});
  d.def("gather", [](const GradContext& c) -> variable_list {
     return {scatter_back(c.grad(), c.arg<int64_t>(1), c.input(2), c.input_sizes(0))};
   }).saves_only({2});
  d.def("scatter.src", [](const GradContext& c) -> variable_list {
     const int64_t dim = c.arg<int64_t>(1);
     const Tensor index = c.input(2);
     return {
         c.needs_grad(0) ? scatter(c.grad(), dim, index, Scalar(0)) : Tensor(), Tensor(),
         c.needs_grad(2) ? scattered_src_grad(c.grad(), dim, index, c.input_sizes(3)) : Tensor()};
   }).saves_only({2});
  d.def("scatter.value", [](const GradContext& c) -> variable_list {
     return {scatter(c.grad(), c.arg<int64_t>(1), c.input(2), Scalar(0)), Tensor()};
   }).saves_only({2});
  d.def("scatter_add", [](const GradContext& c) -> variable_list {
     return {c.grad(), Tensor(),
             c.needs_grad(2)
                 ? scattered_src_grad(c.grad(), c.arg<int64_t>(1), c.input(2), c.input_sizes(3))
                 : Tensor()};
   }).saves_only({2});
  // The selected positions of the broadcast (self, mask) get the gradient back in order.
  d.def("masked_select", [](const GradContext& c) -> variable_list {
     const Tensor mask = c.input(1);
     const DimVector shape = broadcast_shapes("masked_select", c.input_sizes(0), mask.sizes());
     const Tensor pos = nonzero(mask.expand(shape).reshape({-1})).reshape({-1});
     int64_t numel = 1;
     for (int64_t s : shape) numel *= s;
     return {
         zeros({numel}, c.grad().dtype(), c.grad().device()).scatter(0, pos, c.grad()).view(shape),
         Tensor()};
   }).saves_only({1});
  // _index_put_rows_(self (rows, k), index (n), values (n, k), accumulate): index_put_'s
  // primitive (kernels/composite/index.cpp).
  d.def("_index_put_rows_", [](const GradContext& c) -> variable_list {
     const Tensor index = c.input(1), &g = c.grad();
     const Tensor rows = index.reshape({-1, 1}).expand({index.numel(), g.size(1)});
     return {c.arg<bool>(3) ? g : scatter(g, 0, rows, Scalar(0)), Tensor(),
             c.needs_grad(2) ? g.index_select(0, index) : Tensor()};
   }).saves_only({1});
  // sort(self, dim, descending) and topk(self, k, dim, ...): values go back to their indices.
  d.def("sort", [](const GradContext& c) { return to_sorted_indices(c, 1); })
      .saves_result()
      .saves_only({});
  d.def("topk", [](const GradContext& c) { return to_sorted_indices(c, 2); })
      .saves_result()
      .saves_only({});
  d.nondifferentiable({"nonzero"});
}

}  // namespace xten::autograd
