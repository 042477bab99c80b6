// Derivatives of the view ops (kernels/composite/view.cpp) and of copy_/fill_
// (kernels/cpu/copy.cpp). A view's output is recorded as a view of its base, so that an in-place
// op on it updates the base's history (Note [Views and in-place], autograd/autograd_meta.cpp).
// reshape, flatten, narrow, chunk (through split), contiguous, clone and to are composites of
// these and need no formula of their own; split, split_with_sizes and unbind have one.
#include <xten/autograd/derivatives/common.h>
#include <xten/core/meta.h>

namespace xten::autograd {
namespace {

// The gradients of a split's outputs, in order.
std::vector<Tensor> output_grads(const GradContext& c, int64_t outputs) {
  std::vector<Tensor> grads;
  grads.reserve(static_cast<size_t>(outputs));
  for (int64_t i = 0; i < outputs; ++i) grads.push_back(c.grad(static_cast<size_t>(i)));
  return grads;
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  for (const char* op : {"view", "squeeze", "squeeze.dim", "unsqueeze"})
    d.def(op, [](const GradContext& c) -> variable_list {
       return {c.grad().reshape(c.input_sizes(0))};
     }).saves_only({});
  d.def("permute", [](const GradContext& c) -> variable_list {
     const IntArrayRef dims = c.arg<IntArrayRef>(1);
     const int64_t n = static_cast<int64_t>(dims.size());
     std::vector<int64_t> inverse(dims.size());
     for (int64_t i = 0; i < n; ++i) inverse[wrap_dim("permute", dims[i], n)] = i;
     return {c.grad().permute(inverse)};
   }).saves_only({});
  d.def("transpose", [](const GradContext& c) -> variable_list {
     return {c.grad().transpose(c.arg<int64_t>(1), c.arg<int64_t>(2))};
   }).saves_only({});
  d.def("t", [](const GradContext& c) -> variable_list { return {c.grad().t()}; }).saves_only({});
  d.def("expand", [](const GradContext& c) -> variable_list {
     return {sum_to(c.grad(), c.input_sizes(0))};
   }).saves_only({});
  d.def("slice", [](const GradContext& c) -> variable_list {
     const int64_t dim = c.arg<int64_t>(1), step = c.arg<int64_t>(4);
     const auto start = c.arg<std::optional<int64_t>>(2), end = c.arg<std::optional<int64_t>>(3);
     return {embed_grad(c.grad(), c.input_sizes(0),
                        [&](const Tensor& r) { return r.slice(dim, start, end, step); })};
   }).saves_only({});
  d.def("select", [](const GradContext& c) -> variable_list {
     const int64_t dim = c.arg<int64_t>(1), index = c.arg<int64_t>(2);
     return {embed_grad(c.grad(), c.input_sizes(0),
                        [&](const Tensor& r) { return r.select(dim, index); })};
   }).saves_only({});
  // split, split_with_sizes and unbind: the outputs' gradients side by side again, one cat (a
  // stack for unbind); an output that nothing differentiated gives zeros. Through slice's
  // derivative every output made a zero tensor of the input's size and the engine added them:
  // for the GPT's query/key/value split three fills, three copies and two adds of [B, T, 3C],
  // about 9% of its training step at one thread (bench/README.md, "bench_gpt").
  d.def("split", [](const GradContext& c) -> variable_list {
     const IntArrayRef sizes = c.input_sizes(0);
     const int64_t dim = wrap_dim("split", c.arg<int64_t>(2), static_cast<int64_t>(sizes.size()));
     const int64_t n = sizes[dim], size = c.arg<int64_t>(1);
     const int64_t outputs = n == 0 ? 1 : (n + size - 1) / size;
     return {cat(output_grads(c, outputs), dim)};
   }).saves_only({});
  d.def("split_with_sizes", [](const GradContext& c) -> variable_list {
     const IntArrayRef sizes = c.input_sizes(0);
     const int64_t dim =
         wrap_dim("split_with_sizes", c.arg<int64_t>(2), static_cast<int64_t>(sizes.size()));
     const auto outputs = static_cast<int64_t>(c.arg<IntArrayRef>(1).size());
     return {cat(output_grads(c, outputs), dim)};
   }).saves_only({});
  d.def("unbind", [](const GradContext& c) -> variable_list {
     const IntArrayRef sizes = c.input_sizes(0);
     const int64_t dim = wrap_dim("unbind", c.arg<int64_t>(1), static_cast<int64_t>(sizes.size()));
     return {stack(output_grads(c, sizes[dim]), dim)};
   }).saves_only({});
  // as_strided: positions relative to the input's first element; overlapping outputs add up.
  d.def("as_strided", [](const GradContext& c) -> variable_list {
     const TensorMeta& x = c.input_meta(0);
     XTEN_CHECK(x.contiguous, NotImplementedError, "as_strided",
                "the derivative of as_strided of a non-contiguous tensor (sizes {}) is not "
                "implemented",
                IntArrayRef(x.sizes));
     const auto offset = c.arg<std::optional<int64_t>>(3);
     const int64_t rel = offset ? *offset - x.storage_offset : 0;
     int64_t numel = 1;
     for (int64_t s : x.sizes) numel *= s;
     const IntArrayRef size = c.arg<IntArrayRef>(1), stride = c.arg<IntArrayRef>(2);
     const Tensor pos =
         as_strided(arange(numel, TensorOptions(kLong).device(x.device)), size, stride, rel)
             .reshape({-1});
     return {zeros({numel}, c.grad().dtype(), c.grad().device())
                 .scatter_add(0, pos, c.grad().reshape({-1}))
                 .view(x.sizes)};
   }).saves_only({});
  // copy_: self's old values are overwritten (no gradient); src gets the gradient back in its
  // own dtype and on its own device (the engine casts it).
  d.def("copy_", [](const GradContext& c) -> variable_list {
     return {Tensor(), c.grad()};
   }).saves_only({});
  d.def("fill_", [](const GradContext&) -> variable_list { return {Tensor()}; }).saves_only({});
  d.nondifferentiable({"empty", "arange", "linspace", "rand", "randn", "randint"});
}

}  // namespace xten::autograd
