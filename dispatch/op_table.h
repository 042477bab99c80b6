#pragma once
// The op table: every op xten declares, once. Note [The op table]
//
// One row per op, X(kind, name, id, schema, Ret, params, args):
//   kind    how the front end is made (below)
//   name    the C++ free function (and Tensor method) that calls it: `add`
//   id      its handle, `ops::<id>` (dispatch/op_handles.h): the schema's name and overload
//           joined by '_', an in-place op's trailing '_' moved to the end: `add_Tensor_`
//   schema  its declaration (docs/architecture.md, "Registration")
//   Ret, params  the C++ signature of its kernels, parameters named as in the schema
//   args    those names, to forward them
// kinds:
//   FN      the front end `Ret name params` is generated: it calls the op
//   FN_M    and the Tensor method `Ret Tensor::name(params but self) const`
//   IN      in-place: `Tensor& name(Tensor& self, ...)` calls the op and returns self
//   IN_M    and the method `Tensor& Tensor::name(...)`
//   FLOAT2, FLOAT2_M  as FN, FN_M, for a pointwise function of two tensors computed in floating
//           point (integers promote to float32): its kernels are generated too, on every
//           backend, from FloatBinaryFn<ops::id> (the CPU functor, kernels/cpu/binary.cpp) and
//           the kernel `name` of the XPU's FLOAT_BINARY_FUNCTIONS (kernels/xpu/spirv/binary.cl),
//           and its declaration in dispatch/ops.h (Note [Float binary functions])
//   CUSTOM  the front end computes the arguments (options, pairs, checks) and is written by
//           hand in dispatch/ops.cpp, calling ops::<id>
// From the table, dispatch/ops.cpp declares every op with its C++ signature (checked against
// the schema at load, and every kernel against both at registration) and defines the handles
// and the generated front ends; dispatch/tensor_methods.cpp defines the generated methods.
// The front ends and methods are defined with qualified names (`auto xten::add(...) -> ...`),
// so a row that disagrees with its declaration in dispatch/ops.h or core/tensor.h does not
// compile. A new op is one row here plus its kernels (docs/adding_an_op.md).

// clang-format off
#define XTEN_FORALL_OPS(X)                                                                         \
  /* factories (kernels/cpu/factory.cpp; composites in kernels/composite/factory.cpp) */           \
  X(FN, empty, empty, "empty(int[] size, ScalarType dtype, Device device) -> Tensor",              \
    Tensor, (IntArrayRef size, ScalarType dtype, Device device), (size, dtype, device))            \
  X(CUSTOM, full, full, "full(int[] size, Scalar fill_value, ScalarType dtype, Device device) -> " \
    "Tensor",                                                                                      \
    Tensor,                                                                                        \
    (IntArrayRef size, const Scalar& fill_value, ScalarType dtype, Device device),                 \
    (size, fill_value, dtype, device))                                                             \
  X(CUSTOM, arange, arange, "arange(Scalar start, Scalar end, Scalar step, ScalarType dtype, "     \
    "Device device) -> Tensor",                                                                    \
    Tensor,                                                                                        \
    (const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype, Device device), \
    (start, end, step, dtype, device))                                                             \
  X(CUSTOM, linspace, linspace, "linspace(Scalar start, Scalar end, int steps, ScalarType dtype, " \
    "Device device) -> Tensor",                                                                    \
    Tensor,                                                                                        \
    (const Scalar& start, const Scalar& end, int64_t steps, ScalarType dtype, Device device),      \
    (start, end, steps, dtype, device))                                                            \
  X(CUSTOM, eye, eye, "eye(int n, int m, ScalarType dtype, Device device) -> Tensor",              \
    Tensor, (int64_t n, int64_t m, ScalarType dtype, Device device), (n, m, dtype, device))        \
  X(CUSTOM, rand, rand, "rand(int[] size, ScalarType dtype, Device device) -> Tensor",             \
    Tensor, (IntArrayRef size, ScalarType dtype, Device device), (size, dtype, device))            \
  X(CUSTOM, randn, randn, "randn(int[] size, ScalarType dtype, Device device) -> Tensor",          \
    Tensor, (IntArrayRef size, ScalarType dtype, Device device), (size, dtype, device))            \
  X(CUSTOM, randint, randint, "randint(int low, int high, int[] size, ScalarType dtype, Device "   \
    "device) -> Tensor",                                                                           \
    Tensor,                                                                                        \
    (int64_t low, int64_t high, IntArrayRef size, ScalarType dtype, Device device),                \
    (low, high, size, dtype, device))                                                              \
  /* sampling from categorical distributions (kernels/composite/sampling.cpp) */                   \
  X(FN_M, multinomial, multinomial, "multinomial(Tensor self, int num_samples, bool "              \
    "replacement=False) -> Tensor",                                                                \
    Tensor, (const Tensor& self, int64_t num_samples, bool replacement),                           \
    (self, num_samples, replacement))                                                              \
  /* views (kernels/composite/view.cpp) */                                                         \
  X(FN_M, view, view, "view(Tensor(a) self, int[] size) -> Tensor(a)",                             \
    Tensor, (const Tensor& self, IntArrayRef size), (self, size))                                  \
  X(FN_M, reshape, reshape, "reshape(Tensor(a) self, int[] shape) -> Tensor(a)",                   \
    Tensor, (const Tensor& self, IntArrayRef shape), (self, shape))                                \
  X(FN_M, flatten, flatten, "flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> "         \
    "Tensor(a)",                                                                                   \
    Tensor, (const Tensor& self, int64_t start_dim, int64_t end_dim), (self, start_dim, end_dim))  \
  X(FN_M, squeeze, squeeze, "squeeze(Tensor(a) self) -> Tensor(a)",                                \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, squeeze, squeeze_dim, "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",               \
    Tensor, (const Tensor& self, int64_t dim), (self, dim))                                        \
  X(FN_M, unsqueeze, unsqueeze, "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",                 \
    Tensor, (const Tensor& self, int64_t dim), (self, dim))                                        \
  X(FN_M, permute, permute, "permute(Tensor(a) self, int[] dims) -> Tensor(a)",                    \
    Tensor, (const Tensor& self, IntArrayRef dims), (self, dims))                                  \
  X(FN_M, transpose, transpose, "transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",      \
    Tensor, (const Tensor& self, int64_t dim0, int64_t dim1), (self, dim0, dim1))                  \
  X(FN_M, t, t, "t(Tensor(a) self) -> Tensor(a)",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, expand, expand, "expand(Tensor(a) self, int[] size) -> Tensor(a)",                       \
    Tensor, (const Tensor& self, IntArrayRef size), (self, size))                                  \
  X(FN_M, narrow, narrow, "narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)",   \
    Tensor,                                                                                        \
    (const Tensor& self, int64_t dim, int64_t start, int64_t length),                              \
    (self, dim, start, length))                                                                    \
  X(FN_M, slice, slice, "slice(Tensor(a) self, int dim=0, int? start=None, int? end=None, int "    \
    "step=1) -> Tensor(a)",                                                                        \
    Tensor,                                                                                        \
    (const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,    \
     int64_t step),                                                                                \
    (self, dim, start, end, step))                                                                 \
  X(FN_M, select, select, "select(Tensor(a) self, int dim, int index) -> Tensor(a)",               \
    Tensor, (const Tensor& self, int64_t dim, int64_t index), (self, dim, index))                  \
  X(FN_M, unbind, unbind, "unbind(Tensor(a) self, int dim=0) -> Tensor(a)[]",                      \
    std::vector<Tensor>, (const Tensor& self, int64_t dim), (self, dim))                           \
  X(FN_M, split, split, "split(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]",         \
    std::vector<Tensor>,                                                                           \
    (const Tensor& self, int64_t split_size, int64_t dim),                                         \
    (self, split_size, dim))                                                                       \
  X(FN_M, split_with_sizes, split_with_sizes, "split_with_sizes(Tensor(a) self, int[] "            \
    "split_sizes, int dim=0) -> Tensor(a)[]",                                                      \
    std::vector<Tensor>,                                                                           \
    (const Tensor& self, IntArrayRef split_sizes, int64_t dim),                                    \
    (self, split_sizes, dim))                                                                      \
  X(FN_M, chunk, chunk, "chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]",             \
    std::vector<Tensor>, (const Tensor& self, int64_t chunks, int64_t dim), (self, chunks, dim))   \
  X(FN_M, as_strided, as_strided, "as_strided(Tensor(a) self, int[] size, int[] stride, int? "     \
    "storage_offset=None) -> Tensor(a)",                                                           \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef size, IntArrayRef stride,                                     \
     std::optional<int64_t> storage_offset),                                                       \
    (self, size, stride, storage_offset))                                                          \
  X(FN_M, contiguous, contiguous, "contiguous(Tensor(a) self) -> Tensor(a)",                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, clone, clone, "clone(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, detach, detach, "detach(Tensor(a) self) -> Tensor(a)",                                   \
    Tensor, (const Tensor& self), (self))                                                          \
  /* copy and cast (kernels/cpu/copy.cpp) */                                                       \
  X(IN_M, copy_, copy_, "copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)",                        \
    Tensor, (const Tensor& self, const Tensor& src), (self, src))                                  \
  X(FN_M, to, to, "to(Tensor(a) self, Device device, ScalarType dtype, bool copy=False) -> "       \
    "Tensor(a)",                                                                                   \
    Tensor,                                                                                        \
    (const Tensor& self, Device device, ScalarType dtype, bool copy),                              \
    (self, device, dtype, copy))                                                                   \
  X(IN_M, fill_, fill_, "fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)",                      \
    Tensor, (const Tensor& self, const Scalar& value), (self, value))                              \
  /* binary (kernels/cpu/binary.cpp) */                                                            \
  X(FN_M, add, add_Tensor, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",   \
    Tensor, (const Tensor& self, const Tensor& other, const Scalar& alpha), (self, other, alpha))  \
  X(IN_M, add_, add_Tensor_, "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "   \
    "Tensor(a!)",                                                                                  \
    Tensor, (const Tensor& self, const Tensor& other, const Scalar& alpha), (self, other, alpha))  \
  X(FN_M, sub, sub_Tensor, "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",   \
    Tensor, (const Tensor& self, const Tensor& other, const Scalar& alpha), (self, other, alpha))  \
  X(IN_M, sub_, sub_Tensor_, "sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "   \
    "Tensor(a!)",                                                                                  \
    Tensor, (const Tensor& self, const Tensor& other, const Scalar& alpha), (self, other, alpha))  \
  X(FN_M, mul, mul_Tensor, "mul.Tensor(Tensor self, Tensor other) -> Tensor",                      \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(IN_M, mul_, mul_Tensor_, "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",           \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, div, div_Tensor, "div.Tensor(Tensor self, Tensor other) -> Tensor",                      \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, div, div_Tensor_mode, "div.Tensor_mode(Tensor self, Tensor other, *, str? "              \
    "rounding_mode) -> Tensor",                                                                    \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode),           \
    (self, other, rounding_mode))                                                                  \
  X(IN_M, div_, div_Tensor_, "div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",           \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(IN_M, div_, div_Tensor_mode_, "div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? "       \
    "rounding_mode) -> Tensor(a!)",                                                                \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode),           \
    (self, other, rounding_mode))                                                                  \
  X(FN_M, remainder, remainder_Tensor, "remainder.Tensor(Tensor self, Tensor other) -> Tensor",    \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, fmod, fmod_Tensor, "fmod.Tensor(Tensor self, Tensor other) -> Tensor",                   \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, pow, pow_Tensor_Tensor, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",     \
    Tensor, (const Tensor& self, const Tensor& exponent), (self, exponent))                        \
  X(IN_M, pow_, pow_Tensor_, "pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)",        \
    Tensor, (const Tensor& self, const Tensor& exponent), (self, exponent))                        \
  X(FN_M, maximum, maximum, "maximum(Tensor self, Tensor other) -> Tensor",                        \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, minimum, minimum, "minimum(Tensor self, Tensor other) -> Tensor",                        \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FLOAT2_M, atan2, atan2, "atan2(Tensor self, Tensor other) -> Tensor",                          \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  /* sqrt(self^2 + other^2) without overflow or underflow in between */                            \
  X(FLOAT2, hypot, hypot, "hypot(Tensor self, Tensor other) -> Tensor",                            \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, eq, eq_Tensor, "eq.Tensor(Tensor self, Tensor other) -> Tensor",                         \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, ne, ne_Tensor, "ne.Tensor(Tensor self, Tensor other) -> Tensor",                         \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, lt, lt_Tensor, "lt.Tensor(Tensor self, Tensor other) -> Tensor",                         \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, le, le_Tensor, "le.Tensor(Tensor self, Tensor other) -> Tensor",                         \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, gt, gt_Tensor, "gt.Tensor(Tensor self, Tensor other) -> Tensor",                         \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, ge, ge_Tensor, "ge.Tensor(Tensor self, Tensor other) -> Tensor",                         \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, logical_and, logical_and, "logical_and(Tensor self, Tensor other) -> Tensor",            \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, logical_or, logical_or, "logical_or(Tensor self, Tensor other) -> Tensor",               \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, logical_xor, logical_xor, "logical_xor(Tensor self, Tensor other) -> Tensor",            \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, bitwise_and, bitwise_and_Tensor, "bitwise_and.Tensor(Tensor self, Tensor other) -> "     \
    "Tensor",                                                                                      \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, bitwise_or, bitwise_or_Tensor, "bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor", \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN_M, bitwise_xor, bitwise_xor_Tensor, "bitwise_xor.Tensor(Tensor self, Tensor other) -> "     \
    "Tensor",                                                                                      \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN, where, where_self, "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",    \
    Tensor,                                                                                        \
    (const Tensor& condition, const Tensor& self, const Tensor& other),                            \
    (condition, self, other))                                                                      \
  X(FN_M, clamp, clamp, "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",        \
    Tensor,                                                                                        \
    (const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max),      \
    (self, min, max))                                                                              \
  X(IN_M, clamp_, clamp_, "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> "        \
    "Tensor(a!)",                                                                                  \
    Tensor,                                                                                        \
    (const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max),      \
    (self, min, max))                                                                              \
  X(FN_M, lerp, lerp_Tensor, "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor",      \
    Tensor, (const Tensor& self, const Tensor& end, const Tensor& weight), (self, end, weight))    \
  /* self + value * tensor1 * tensor2 in one pass (batch_norm's per-channel scale and shift; a */ \
  /* composite for the XPU and autograd, kernels/composite/pointwise.cpp) */                       \
  X(FN_M, addcmul, addcmul, "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar "      \
    "value=1) -> Tensor",                                                                          \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value),       \
    (self, tensor1, tensor2, value))                                                               \
  /* unary (kernels/cpu/unary.cpp) */                                                              \
  X(FN_M, neg, neg, "neg(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, neg_, neg_, "neg_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, abs, abs, "abs(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, abs_, abs_, "abs_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, sign, sign, "sign(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, sign_, sign_, "sign_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, exp, exp, "exp(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, exp_, exp_, "exp_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, exp2, exp2, "exp2(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, exp2_, exp2_, "exp2_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, log, log, "log(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, log_, log_, "log_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, log2, log2, "log2(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, log2_, log2_, "log2_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, log10, log10, "log10(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, log10_, log10_, "log10_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, log1p, log1p, "log1p(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, log1p_, log1p_, "log1p_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, expm1, expm1, "expm1(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, expm1_, expm1_, "expm1_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, sqrt, sqrt, "sqrt(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, sqrt_, sqrt_, "sqrt_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, rsqrt, rsqrt, "rsqrt(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, rsqrt_, rsqrt_, "rsqrt_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, reciprocal, reciprocal, "reciprocal(Tensor self) -> Tensor",                             \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, reciprocal_, reciprocal_, "reciprocal_(Tensor(a!) self) -> Tensor(a!)",                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, sin, sin, "sin(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, sin_, sin_, "sin_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, cos, cos, "cos(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, cos_, cos_, "cos_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, tan, tan, "tan(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, tan_, tan_, "tan_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, tanh, tanh, "tanh(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, tanh_, tanh_, "tanh_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, sigmoid, sigmoid, "sigmoid(Tensor self) -> Tensor",                                      \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, sigmoid_, sigmoid_, "sigmoid_(Tensor(a!) self) -> Tensor(a!)",                           \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, relu, relu, "relu(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, relu_, relu_, "relu_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, silu, silu, "silu(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, silu_, silu_, "silu_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, erf, erf, "erf(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, erf_, erf_, "erf_(Tensor(a!) self) -> Tensor(a!)",                                       \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, floor, floor, "floor(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, floor_, floor_, "floor_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, ceil, ceil, "ceil(Tensor self) -> Tensor",                                               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, ceil_, ceil_, "ceil_(Tensor(a!) self) -> Tensor(a!)",                                    \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, round, round, "round(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, round_, round_, "round_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, trunc, trunc, "trunc(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, trunc_, trunc_, "trunc_(Tensor(a!) self) -> Tensor(a!)",                                 \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, logical_not, logical_not, "logical_not(Tensor self) -> Tensor",                          \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, logical_not_, logical_not_, "logical_not_(Tensor(a!) self) -> Tensor(a!)",               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, bitwise_not, bitwise_not, "bitwise_not(Tensor self) -> Tensor",                          \
    Tensor, (const Tensor& self), (self))                                                          \
  X(IN_M, bitwise_not_, bitwise_not_, "bitwise_not_(Tensor(a!) self) -> Tensor(a!)",               \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, isnan, isnan, "isnan(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, isinf, isinf, "isinf(Tensor self) -> Tensor",                                            \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, isfinite, isfinite, "isfinite(Tensor self) -> Tensor",                                   \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, gelu, gelu, "gelu(Tensor self, *, str approximate='none') -> Tensor",                    \
    Tensor, (const Tensor& self, const std::string& approximate), (self, approximate))             \
  X(FN_M, nan_to_num, nan_to_num, "nan_to_num(Tensor self, float? nan=None, float? posinf=None, "  \
    "float? neginf=None) -> Tensor",                                                               \
    Tensor,                                                                                        \
    (const Tensor& self, std::optional<double> nan, std::optional<double> posinf,                  \
     std::optional<double> neginf),                                                                \
    (self, nan, posinf, neginf))                                                                   \
  /* reductions (kernels/cpu/reduce.cpp) */                                                        \
  X(FN_M, sum, sum_dim_IntList, "sum.dim_IntList(Tensor self, int[] dim, bool keepdim=False, *, "  \
    "ScalarType? dtype=None) -> Tensor",                                                           \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype),          \
    (self, dim, keepdim, dtype))                                                                   \
  X(FN_M, mean, mean_dim, "mean.dim(Tensor self, int[] dim, bool keepdim=False, *, ScalarType? "   \
    "dtype=None) -> Tensor",                                                                       \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype),          \
    (self, dim, keepdim, dtype))                                                                   \
  X(CUSTOM, prod, prod_dim_IntList, "prod.dim_IntList(Tensor self, int[] dim, bool "               \
    "keepdim=False, *, ScalarType? dtype=None) -> Tensor",                                         \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype),          \
    (self, dim, keepdim, dtype))                                                                   \
  X(FN_M, amax, amax, "amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",             \
    Tensor, (const Tensor& self, IntArrayRef dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, amin, amin, "amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",             \
    Tensor, (const Tensor& self, IntArrayRef dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, max, max, "max(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, min, min, "min(Tensor self) -> Tensor",                                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, max, max_dim, "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "    \
    "Tensor indices)",                                                                             \
    TensorPair, (const Tensor& self, int64_t dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, min, min_dim, "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "    \
    "Tensor indices)",                                                                             \
    TensorPair, (const Tensor& self, int64_t dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, argmax, argmax, "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",      \
    Tensor, (const Tensor& self, std::optional<int64_t> dim, bool keepdim), (self, dim, keepdim))  \
  X(FN_M, argmin, argmin, "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",      \
    Tensor, (const Tensor& self, std::optional<int64_t> dim, bool keepdim), (self, dim, keepdim))  \
  X(FN_M, all, all_dims, "all.dims(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",      \
    Tensor, (const Tensor& self, IntArrayRef dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, any, any_dims, "any.dims(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",      \
    Tensor, (const Tensor& self, IntArrayRef dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, var, var_correction, "var.correction(Tensor self, int[] dim=[], float correction=1, "    \
    "bool keepdim=False) -> Tensor",                                                               \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef dim, double correction, bool keepdim),                        \
    (self, dim, correction, keepdim))                                                              \
  X(FN_M, std, std_correction, "std.correction(Tensor self, int[] dim=[], float correction=1, "    \
    "bool keepdim=False) -> Tensor",                                                               \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef dim, double correction, bool keepdim),                        \
    (self, dim, correction, keepdim))                                                              \
  X(FN_M, norm, norm_ScalarOpt_dim, "norm.ScalarOpt_dim(Tensor self, Scalar p, int[] dim=[], "     \
    "bool keepdim=False) -> Tensor",                                                               \
    Tensor,                                                                                        \
    (const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim),                          \
    (self, p, dim, keepdim))                                                                       \
  X(FN_M, logsumexp, logsumexp, "logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor", \
    Tensor, (const Tensor& self, IntArrayRef dim, bool keepdim), (self, dim, keepdim))             \
  X(FN_M, cumsum, cumsum, "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",     \
    Tensor, (const Tensor& self, int64_t dim, std::optional<ScalarType> dtype), (self, dim, dtype))\
  X(FN_M, cumprod, cumprod, "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",  \
    Tensor, (const Tensor& self, int64_t dim, std::optional<ScalarType> dtype), (self, dim, dtype))\
  /* linear algebra (kernels/cpu/linalg.cpp; composites in kernels/composite/linalg.cpp) */        \
  X(FN_M, mm, mm, "mm(Tensor self, Tensor mat2) -> Tensor",                                        \
    Tensor, (const Tensor& self, const Tensor& mat2), (self, mat2))                                \
  X(FN_M, bmm, bmm, "bmm(Tensor self, Tensor mat2) -> Tensor",                                     \
    Tensor, (const Tensor& self, const Tensor& mat2), (self, mat2))                                \
  X(FN_M, matmul, matmul, "matmul(Tensor self, Tensor other) -> Tensor",                           \
    Tensor, (const Tensor& self, const Tensor& other), (self, other))                              \
  X(FN, addmm, addmm, "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar "     \
    "alpha=1) -> Tensor",                                                                          \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,               \
     const Scalar& alpha),                                                                         \
    (self, mat1, mat2, beta, alpha))                                                               \
  X(FN, baddbmm, baddbmm, "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "  \
    "Scalar alpha=1) -> Tensor",                                                                   \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,           \
     const Scalar& alpha),                                                                         \
    (self, batch1, batch2, beta, alpha))                                                           \
  X(FN, linear, linear, "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",        \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias),                \
    (input, weight, bias))                                                                         \
  /* relu(linear(...)) in one op: the CPU kernel applies bias and relu inside oneDNN's product */ \
  X(FN, _linear_relu, _linear_relu, "_linear_relu(Tensor input, Tensor weight, Tensor? bias=None) "\
    "-> Tensor",                                                                                   \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias),                \
    (input, weight, bias))                                                                         \
  X(FN_M, dot, dot, "dot(Tensor self, Tensor tensor) -> Tensor",                                   \
    Tensor, (const Tensor& self, const Tensor& tensor), (self, tensor))                            \
  X(FN_M, mv, mv, "mv(Tensor self, Tensor vec) -> Tensor",                                         \
    Tensor, (const Tensor& self, const Tensor& vec), (self, vec))                                  \
  X(FN_M, outer, outer, "outer(Tensor self, Tensor vec2) -> Tensor",                               \
    Tensor, (const Tensor& self, const Tensor& vec2), (self, vec2))                                \
  /* activations (kernels/cpu/activation.cpp; composites in kernels/composite/activation.cpp) */   \
  X(FN_M, softmax, softmax, "softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",     \
    Tensor, (const Tensor& self, int64_t dim, std::optional<ScalarType> dtype), (self, dim, dtype))\
  X(FN_M, log_softmax, log_softmax, "log_softmax(Tensor self, int dim, ScalarType? dtype=None) "   \
    "-> Tensor",                                                                                   \
    Tensor, (const Tensor& self, int64_t dim, std::optional<ScalarType> dtype), (self, dim, dtype))\
  /* relu's backward: grad where self > threshold, else 0 (kernels/cpu/binary.cpp; composite in */\
  /* kernels/composite/activation.cpp, which the XPU and a backward with create_graph run) */     \
  X(FN, threshold_backward, threshold_backward, "threshold_backward(Tensor grad_output, Tensor "   \
    "self, Scalar threshold) -> Tensor",                                                           \
    Tensor, (const Tensor& grad_output, const Tensor& self, const Scalar& threshold),              \
    (grad_output, self, threshold))                                                                \
  /* gelu's backward: grad_output * gelu'(self) (kernels/cpu/unary.cpp; composite in */           \
  /* kernels/composite/activation.cpp, which the XPU and a backward with create_graph run) */     \
  X(FN, gelu_backward, gelu_backward, "gelu_backward(Tensor grad_output, Tensor self, *, str "     \
    "approximate='none') -> Tensor",                                                               \
    Tensor, (const Tensor& grad_output, const Tensor& self, const std::string& approximate),       \
    (grad_output, self, approximate))                                                              \
  /* the backward of sigmoid and tanh from their output y: grad_output * y (1 - y) and */         \
  /* grad_output * (1 - y^2); silu's from its input: grad_output * s (1 + x (1 - s)), */          \
  /* s = sigmoid(x) (kernels/cpu/unary.cpp; composites in kernels/composite/activation.cpp, */   \
  /* which the XPU and a backward with create_graph run) */                                        \
  X(FN, sigmoid_backward, sigmoid_backward, "sigmoid_backward(Tensor grad_output, Tensor output) " \
    "-> Tensor", Tensor, (const Tensor& grad_output, const Tensor& output), (grad_output, output))  \
  X(FN, tanh_backward, tanh_backward, "tanh_backward(Tensor grad_output, Tensor output) -> "        \
    "Tensor", Tensor, (const Tensor& grad_output, const Tensor& output), (grad_output, output))     \
  X(FN, silu_backward, silu_backward, "silu_backward(Tensor grad_output, Tensor self) -> Tensor",   \
    Tensor, (const Tensor& grad_output, const Tensor& self), (grad_output, self))                  \
  /* the backward of leaky_relu, elu, softplus and hardswish, PyTorch's schemas (CPU: */          \
  /* kernels/cpu/activation_pointwise.cpp; composites in kernels/composite/activation.cpp, */     \
  /* which the XPU and a backward with create_graph run) */                                        \
  X(FN, leaky_relu_backward, leaky_relu_backward, "leaky_relu_backward(Tensor grad_output, "       \
    "Tensor self, Scalar negative_slope, bool self_is_result) -> Tensor",                          \
    Tensor, (const Tensor& grad_output, const Tensor& self, const Scalar& negative_slope,          \
             bool self_is_result), (grad_output, self, negative_slope, self_is_result))           \
  X(FN, elu_backward, elu_backward, "elu_backward(Tensor grad_output, Scalar alpha, Scalar "       \
    "scale, Scalar input_scale, bool is_result, Tensor self_or_result) -> Tensor",                 \
    Tensor, (const Tensor& grad_output, const Scalar& alpha, const Scalar& scale,                  \
             const Scalar& input_scale, bool is_result, const Tensor& self_or_result),            \
    (grad_output, alpha, scale, input_scale, is_result, self_or_result))                          \
  X(FN, softplus_backward, softplus_backward, "softplus_backward(Tensor grad_output, Tensor "      \
    "self, Scalar beta, Scalar threshold) -> Tensor",                                               \
    Tensor, (const Tensor& grad_output, const Tensor& self, const Scalar& beta,                    \
             const Scalar& threshold), (grad_output, self, beta, threshold))                        \
  X(FN, hardswish_backward, hardswish_backward, "hardswish_backward(Tensor grad_output, Tensor "   \
    "self) -> Tensor", Tensor, (const Tensor& grad_output, const Tensor& self),                    \
    (grad_output, self))                                                                            \
  /* the backward of softmax and log_softmax (kernels/cpu/activation.cpp; composites in */        \
  /* kernels/composite/activation.cpp, which a backward with create_graph records) */              \
  X(FN, _softmax_backward_data, _softmax_backward_data, "_softmax_backward_data(Tensor "            \
    "grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",                      \
    Tensor, (const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype),\
    (grad_output, output, dim, input_dtype))                                                       \
  X(FN, _log_softmax_backward_data, _log_softmax_backward_data, "_log_softmax_backward_data("      \
    "Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",               \
    Tensor, (const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype),\
    (grad_output, output, dim, input_dtype))                                                       \
  /* attention: the public op chooses a path (Note [Attention paths], kernels/composite/ */        \
  /* attention.cpp); the flash kernels are kernels/cpu/attention.cpp and spirv/attention.cl; */    \
  /* the backward has a closed-form composite too, which a backward with create_graph records */   \
  X(FN, scaled_dot_product_attention, scaled_dot_product_attention,                                \
    "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "\
    "float dropout_p=0.0, bool is_causal=False, float? scale=None, bool enable_gqa=False) -> "     \
    "Tensor",                                                                                      \
    Tensor,                                                                                        \
    (const Tensor& query, const Tensor& key, const Tensor& value,                                  \
     const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,                     \
     std::optional<double> scale, bool enable_gqa),                                                \
    (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa))                       \
  X(FN, _scaled_dot_product_attention_math, _scaled_dot_product_attention_math,                    \
    "_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? "          \
    "attn_mask=None, float dropout_p=0.0, bool is_causal=False, float? scale=None, bool "          \
    "enable_gqa=False) -> (Tensor, Tensor)",                                                       \
    TensorPair,                                                                                    \
    (const Tensor& query, const Tensor& key, const Tensor& value,                                  \
     const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,                     \
     std::optional<double> scale, bool enable_gqa),                                                \
    (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa))                       \
  X(FN, _scaled_dot_product_flash_attention, _scaled_dot_product_flash_attention,                  \
    "_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, Tensor? "         \
    "attn_mask, bool is_causal, float scale) -> (Tensor output, Tensor logsumexp)",                \
    TensorPair,                                                                                    \
    (const Tensor& query, const Tensor& key, const Tensor& value,                                  \
     const std::optional<Tensor>& attn_mask, bool is_causal, double scale),                        \
    (query, key, value, attn_mask, is_causal, scale))                                              \
  X(FN, _scaled_dot_product_flash_attention_backward,                                              \
    _scaled_dot_product_flash_attention_backward,                                                  \
    "_scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, "     \
    "Tensor value, Tensor out, Tensor logsumexp, Tensor? attn_mask, bool is_causal, float scale) " \
    "-> (Tensor, Tensor, Tensor)",                                                                 \
    TensorTriple,                                                                                  \
    (const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,          \
     const Tensor& out, const Tensor& logsumexp, const std::optional<Tensor>& attn_mask,           \
     bool is_causal, double scale),                                                                \
    (grad_out, query, key, value, out, logsumexp, attn_mask, is_causal, scale))                    \
  X(FN, dropout, dropout, "dropout(Tensor input, float p, bool train) -> Tensor",                  \
    Tensor, (const Tensor& input, double p, bool train), (input, p, train))                        \
  X(FN, hardtanh, hardtanh, "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",\
    Tensor,                                                                                        \
    (const Tensor& self, const Scalar& min_val, const Scalar& max_val),                            \
    (self, min_val, max_val))                                                                      \
  X(FN, leaky_relu, leaky_relu, "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",   \
    Tensor, (const Tensor& self, const Scalar& negative_slope), (self, negative_slope))            \
  X(FN, elu, elu, "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> "     \
    "Tensor",                                                                                      \
    Tensor,                                                                                        \
    (const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale),     \
    (self, alpha, scale, input_scale))                                                             \
  X(FN, softplus, softplus, "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", \
    Tensor,                                                                                        \
    (const Tensor& self, const Scalar& beta, const Scalar& threshold),                             \
    (self, beta, threshold))                                                                       \
  X(FN, hardswish, hardswish, "hardswish(Tensor self) -> Tensor",                                  \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN, prelu, prelu, "prelu(Tensor self, Tensor weight) -> Tensor",                               \
    Tensor, (const Tensor& self, const Tensor& weight), (self, weight))                            \
  /* convolution and pooling (kernels/cpu/conv.cpp, pool.cpp; composites in composite/conv.cpp) */ \
  X(CUSTOM, conv2d, conv2d, "conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, "    \
    "int[2] padding, int[2] dilation, int groups) -> Tensor",                                      \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,                 \
     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups),               \
    (input, weight, bias, stride, padding, dilation, groups))                                      \
  X(CUSTOM, conv2d, conv2d_padding, "conv2d.padding(Tensor input, Tensor weight, Tensor? bias, "   \
    "int[2] stride, str padding, int[2] dilation, int groups) -> Tensor",                          \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,                 \
     IntArrayRef stride, const std::string& padding, IntArrayRef dilation, int64_t groups),        \
    (input, weight, bias, stride, padding, dilation, groups))                                      \
  X(FN, conv2d_backward_weight, conv2d_backward_weight, "conv2d_backward_weight(Tensor "         \
    "grad_output, Tensor input, int[] weight_size, int[2] stride, int[2] padding, int[2] "         \
    "dilation, int groups, bool transposed=False) -> Tensor",                                      \
    Tensor,                                                                                        \
    (const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size, IntArrayRef stride,  \
     IntArrayRef padding, IntArrayRef dilation, int64_t groups, bool transposed),                  \
    (grad_output, input, weight_size, stride, padding, dilation, groups, transposed))              \
  X(CUSTOM, conv1d, conv1d, "conv1d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, "    \
    "int[1] padding, int[1] dilation, int groups) -> Tensor",                                      \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,                 \
     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups),               \
    (input, weight, bias, stride, padding, dilation, groups))                                      \
  X(CUSTOM, conv1d, conv1d_padding, "conv1d.padding(Tensor input, Tensor weight, Tensor? bias, "   \
    "int[1] stride, str padding, int[1] dilation, int groups) -> Tensor",                          \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,                 \
     IntArrayRef stride, const std::string& padding, IntArrayRef dilation, int64_t groups),        \
    (input, weight, bias, stride, padding, dilation, groups))                                      \
  X(CUSTOM, conv_transpose2d, conv_transpose2d, "conv_transpose2d(Tensor input, Tensor weight, "   \
    "Tensor? bias, int[2] stride, int[2] padding, int[2] output_padding, int groups, int[2] "      \
    "dilation) -> Tensor",                                                                         \
    Tensor,                                                                                        \
    (const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,                 \
     IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,          \
     IntArrayRef dilation),                                                                        \
    (input, weight, bias, stride, padding, output_padding, groups, dilation))                      \
  X(FN, max_pool2d, max_pool2d, "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride, "      \
    "int[2] padding, int[2] dilation, bool ceil_mode) -> Tensor",                                  \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,         \
     IntArrayRef dilation, bool ceil_mode),                                                        \
    (self, kernel_size, stride, padding, dilation, ceil_mode))                                     \
  X(FN, max_pool2d_with_indices, max_pool2d_with_indices, "max_pool2d_with_indices(Tensor self, "  \
    "int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode) -> "      \
    "(Tensor, Tensor)",                                                                            \
    TensorPair,                                                                                    \
    (const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,         \
     IntArrayRef dilation, bool ceil_mode),                                                        \
    (self, kernel_size, stride, padding, dilation, ceil_mode))                                     \
  /* the backward of max_pool2d_with_indices and avg_pool2d: only self's sizes, dtype and */       \
  /* device are read (kernels/cpu/pool.cpp; composites in kernels/composite/pool.cpp) */           \
  X(FN, max_pool2d_with_indices_backward, max_pool2d_with_indices_backward,                        \
    "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "       \
    "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",   \
    Tensor,                                                                                        \
    (const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,   \
     IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const Tensor& indices),            \
    (grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices))               \
  X(FN, avg_pool2d_backward, avg_pool2d_backward, "avg_pool2d_backward(Tensor grad_output, "       \
    "Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, "             \
    "bool count_include_pad, int? divisor_override) -> Tensor",                                    \
    Tensor,                                                                                        \
    (const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,   \
     IntArrayRef padding, bool ceil_mode, bool count_include_pad,                                  \
     std::optional<int64_t> divisor_override),                                                     \
    (grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,                \
     divisor_override))                                                                            \
  X(FN, avg_pool2d, avg_pool2d, "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride, "      \
    "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",    \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,         \
     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override),             \
    (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))          \
  X(CUSTOM, adaptive_avg_pool2d, adaptive_avg_pool2d, "adaptive_avg_pool2d(Tensor self, int[2] "   \
    "output_size) -> Tensor",                                                                      \
    Tensor, (const Tensor& self, IntArrayRef output_size), (self, output_size))                    \
  X(CUSTOM, adaptive_max_pool2d, adaptive_max_pool2d, "adaptive_max_pool2d(Tensor self, int[2] "   \
    "output_size) -> (Tensor, Tensor)",                                                            \
    TensorPair, (const Tensor& self, IntArrayRef output_size), (self, output_size))                \
  X(FN, upsample_bilinear2d, upsample_bilinear2d, "upsample_bilinear2d(Tensor self, int[2] "      \
    "output_size, bool align_corners) -> Tensor",                                                  \
    Tensor, (const Tensor& self, IntArrayRef output_size, bool align_corners),                     \
    (self, output_size, align_corners))                                                            \
  X(FN, pad, pad, "pad(Tensor self, int[] pad, str mode='constant', float? value=None) -> Tensor", \
    Tensor,                                                                                        \
    (const Tensor& self, IntArrayRef pad, const std::string& mode, std::optional<double> value),   \
    (self, pad, mode, value))                                                                      \
  /* joining and indexing (kernels/cpu/index.cpp; composites in kernels/composite/index.cpp) */    \
  X(CUSTOM, cat, cat, "cat(Tensor[] tensors, int dim=0) -> Tensor",                                \
    Tensor, (const std::vector<Tensor>& tensors, int64_t dim), (tensors, dim))                     \
  X(CUSTOM, stack, stack, "stack(Tensor[] tensors, int dim=0) -> Tensor",                          \
    Tensor, (const std::vector<Tensor>& tensors, int64_t dim), (tensors, dim))                     \
  X(FN_M, index_select, index_select, "index_select(Tensor self, int dim, Tensor index) -> Tensor",\
    Tensor, (const Tensor& self, int64_t dim, const Tensor& index), (self, dim, index))            \
  X(FN_M, gather, gather, "gather(Tensor self, int dim, Tensor index) -> Tensor",                  \
    Tensor, (const Tensor& self, int64_t dim, const Tensor& index), (self, dim, index))            \
  X(FN_M, scatter, scatter_src, "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> "  \
    "Tensor",                                                                                      \
    Tensor,                                                                                        \
    (const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src),                     \
    (self, dim, index, src))                                                                       \
  X(FN, scatter, scatter_value, "scatter.value(Tensor self, int dim, Tensor index, Scalar value) " \
    "-> Tensor",                                                                                   \
    Tensor,                                                                                        \
    (const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value),                   \
    (self, dim, index, value))                                                                     \
  X(FN_M, scatter_add, scatter_add, "scatter_add(Tensor self, int dim, Tensor index, Tensor src) " \
    "-> Tensor",                                                                                   \
    Tensor,                                                                                        \
    (const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src),                     \
    (self, dim, index, src))                                                                       \
  X(FN_M, masked_fill, masked_fill, "masked_fill(Tensor self, Tensor mask, Scalar value) -> "      \
    "Tensor",                                                                                      \
    Tensor, (const Tensor& self, const Tensor& mask, const Scalar& value), (self, mask, value))    \
  X(FN_M, masked_select, masked_select, "masked_select(Tensor self, Tensor mask) -> Tensor",       \
    Tensor, (const Tensor& self, const Tensor& mask), (self, mask))                                \
  X(FN_M, index, index_Tensor, "index.Tensor(Tensor self, Tensor[] indices) -> Tensor",            \
    Tensor, (const Tensor& self, const std::vector<Tensor>& indices), (self, indices))             \
  X(IN_M, index_put_, index_put_, "index_put_(Tensor(a!) self, Tensor[] indices, Tensor values, "  \
    "bool accumulate=False) -> Tensor(a!)",                                                        \
    Tensor,                                                                                        \
    (const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,                 \
     bool accumulate),                                                                             \
    (self, indices, values, accumulate))                                                           \
  X(CUSTOM, _index_put_rows_, _index_put_rows_, "_index_put_rows_(Tensor(a!) self, Tensor index, " \
    "Tensor values, bool accumulate) -> Tensor(a!)",                                               \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& index, const Tensor& values, bool accumulate),              \
    (self, index, values, accumulate))                                                             \
  X(FN_M, nonzero, nonzero, "nonzero(Tensor self) -> Tensor",                                      \
    Tensor, (const Tensor& self), (self))                                                          \
  X(FN_M, sort, sort, "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, "   \
    "Tensor indices)",                                                                             \
    TensorPair, (const Tensor& self, int64_t dim, bool descending), (self, dim, descending))       \
  X(FN_M, argsort, argsort, "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",   \
    Tensor, (const Tensor& self, int64_t dim, bool descending), (self, dim, descending))           \
  X(FN_M, topk, topk, "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) " \
    "-> (Tensor values, Tensor indices)",                                                          \
    TensorPair,                                                                                    \
    (const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted),                       \
    (self, k, dim, largest, sorted))                                                               \
  X(FN, embedding, embedding, "embedding(Tensor weight, Tensor indices, int padding_idx=-1) -> "   \
    "Tensor",                                                                                      \
    Tensor,                                                                                        \
    (const Tensor& weight, const Tensor& indices, int64_t padding_idx),                            \
    (weight, indices, padding_idx))                                                                \
  X(FN, one_hot, one_hot, "one_hot(Tensor self, int num_classes=-1) -> Tensor",                    \
    Tensor, (const Tensor& self, int64_t num_classes), (self, num_classes))                        \
  X(FN_M, repeat, repeat, "repeat(Tensor self, int[] repeats) -> Tensor",                          \
    Tensor, (const Tensor& self, IntArrayRef repeats), (self, repeats))                            \
  X(FN_M, flip, flip, "flip(Tensor self, int[] dims) -> Tensor",                                   \
    Tensor, (const Tensor& self, IntArrayRef dims), (self, dims))                                  \
  X(FN_M, roll, roll, "roll(Tensor self, int[] shifts, int[] dims=[]) -> Tensor",                  \
    Tensor, (const Tensor& self, IntArrayRef shifts, IntArrayRef dims), (self, shifts, dims))      \
  X(FN_M, tril, tril, "tril(Tensor self, int diagonal=0) -> Tensor",                               \
    Tensor, (const Tensor& self, int64_t diagonal), (self, diagonal))                              \
  X(FN_M, triu, triu, "triu(Tensor self, int diagonal=0) -> Tensor",                               \
    Tensor, (const Tensor& self, int64_t diagonal), (self, diagonal))                              \
  /* normalization and losses (kernels/composite/norm.cpp, loss.cpp) */                            \
  X(FN, batch_norm, batch_norm, "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? "  \
    "running_mean, Tensor? running_var, bool training, float momentum, float eps) -> Tensor",      \
    Tensor,                                                                                        \
    (const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,  \
     const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,          \
     bool training, double momentum, double eps),                                                  \
    (input, weight, bias, running_mean, running_var, training, momentum, eps))                     \
  X(FN, layer_norm, layer_norm, "layer_norm(Tensor input, int[] normalized_shape, Tensor? "        \
    "weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",                                  \
    Tensor,                                                                                        \
    (const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,       \
     const std::optional<Tensor>& bias, double eps),                                               \
    (input, normalized_shape, weight, bias, eps))                                                  \
  /* their backward (kernels/cpu/norm.cpp; composites in kernels/composite/norm.cpp) */          \
  X(FN, batch_norm_backward, batch_norm_backward, "batch_norm_backward(Tensor grad_output, "       \
    "Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, bool training, "     \
    "float eps) -> (Tensor, Tensor, Tensor)",                                                      \
    TensorTriple,                                                                                  \
    (const Tensor& grad_output, const Tensor& input, const std::optional<Tensor>& weight,          \
     const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,          \
     bool training, double eps),                                                                   \
    (grad_output, input, weight, running_mean, running_var, training, eps))                        \
  X(FN, layer_norm_backward, layer_norm_backward, "layer_norm_backward(Tensor grad_output, "       \
    "Tensor input, int[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor, Tensor)",\
    TensorTriple,                                                                                  \
    (const Tensor& grad_output, const Tensor& input, IntArrayRef normalized_shape,                 \
     const std::optional<Tensor>& weight, double eps),                                             \
    (grad_output, input, normalized_shape, weight, eps))                                           \
  X(FN, group_norm, group_norm, "group_norm(Tensor input, int num_groups, Tensor? weight=None, "   \
    "Tensor? bias=None, float eps=1e-05) -> Tensor",                                               \
    Tensor,                                                                                        \
    (const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,                 \
     const std::optional<Tensor>& bias, double eps),                                               \
    (input, num_groups, weight, bias, eps))                                                        \
  X(FN, mse_loss, mse_loss, "mse_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor",\
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::string& reduction),                      \
    (self, target, reduction))                                                                     \
  /* mse_loss's input gradient, 2 (self - target) grad (over the count for 'mean'), in the */      \
  /* shape self and target broadcast to (kernels/cpu/loss.cpp; composite in */                     \
  /* kernels/composite/loss.cpp) */                                                                \
  X(FN, mse_loss_backward, mse_loss_backward, "mse_loss_backward(Tensor grad_output, Tensor "      \
    "self, Tensor target, str reduction='mean') -> Tensor",                                        \
    Tensor,                                                                                        \
    (const Tensor& grad_output, const Tensor& self, const Tensor& target,                          \
     const std::string& reduction),                                                                \
    (grad_output, self, target, reduction))                                                        \
  X(FN, l1_loss, l1_loss, "l1_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor",   \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::string& reduction),                      \
    (self, target, reduction))                                                                     \
  X(FN, smooth_l1_loss, smooth_l1_loss, "smooth_l1_loss(Tensor self, Tensor target, str "          \
    "reduction='mean', float beta=1.0) -> Tensor",                                                 \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::string& reduction, double beta),         \
    (self, target, reduction, beta))                                                               \
  X(FN, huber_loss, huber_loss, "huber_loss(Tensor self, Tensor target, str reduction='mean', "    \
    "float delta=1.0) -> Tensor",                                                                  \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::string& reduction, double delta),        \
    (self, target, reduction, delta))                                                              \
  X(FN, binary_cross_entropy, binary_cross_entropy, "binary_cross_entropy(Tensor self, Tensor "    \
    "target, Tensor? weight=None, str reduction='mean') -> Tensor",                                \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,                \
     const std::string& reduction),                                                                \
    (self, target, weight, reduction))                                                             \
  X(FN, binary_cross_entropy_with_logits, binary_cross_entropy_with_logits,                        \
    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? "   \
    "pos_weight=None, str reduction='mean') -> Tensor",                                            \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,                \
     const std::optional<Tensor>& pos_weight, const std::string& reduction),                       \
    (self, target, weight, pos_weight, reduction))                                                 \
  X(FN, kl_div, kl_div, "kl_div(Tensor self, Tensor target, str reduction='mean', *, bool "        \
    "log_target=False) -> Tensor",                                                                 \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::string& reduction, bool log_target),     \
    (self, target, reduction, log_target))                                                         \
  X(FN, nll_loss, nll_loss, "nll_loss(Tensor self, Tensor target, Tensor? weight=None, str "       \
    "reduction='mean', int ignore_index=-100) -> Tensor",                                          \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,                \
     const std::string& reduction, int64_t ignore_index),                                          \
    (self, target, weight, reduction, ignore_index))                                               \
  /* nll_loss's input gradient (kernels/cpu/loss.cpp; composite in kernels/composite/loss.cpp) */ \
  X(FN, nll_loss_backward, nll_loss_backward, "nll_loss_backward(Tensor grad_output, Tensor self, "\
    "Tensor target, Tensor? weight=None, str reduction='mean', int ignore_index=-100) -> Tensor",  \
    Tensor,                                                                                        \
    (const Tensor& grad_output, const Tensor& self, const Tensor& target,                          \
     const std::optional<Tensor>& weight, const std::string& reduction, int64_t ignore_index),     \
    (grad_output, self, target, weight, reduction, ignore_index))                                  \
  X(FN, cross_entropy, cross_entropy, "cross_entropy(Tensor self, Tensor target, Tensor? "         \
    "weight=None, str reduction='mean', int ignore_index=-100, float label_smoothing=0.0) -> "     \
    "Tensor",                                                                                      \
    Tensor,                                                                                        \
    (const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,                \
     const std::string& reduction, int64_t ignore_index, double label_smoothing),                  \
    (self, target, weight, reduction, ignore_index, label_smoothing))                             \
  /* multi-tensor ops of the optimizers and GradScaler (kernels/cpu/optim.cpp,                  */ \
  /* kernels/xpu/ops/optim.cpp): one parallel loop on the CPU, one launch per dtype on the XPU   */ \
  X(FN, _amp_foreach_non_finite_check_and_unscale_, _amp_foreach_non_finite_check_and_unscale_,    \
    "_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, "         \
    "Tensor inv_scale) -> ()",                                                                     \
    void, (const std::vector<Tensor>& self, const Tensor& found_inf, const Tensor& inv_scale),    \
    (self, found_inf, inv_scale))                                                                  \
  X(FN, _fused_sgd_, _fused_sgd_,                                                                  \
    "_fused_sgd_(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] momentum_buffer_list, *, float "  \
    "weight_decay, float momentum, float lr, float dampening, bool nesterov, bool maximize, bool " \
    "is_first_step, Tensor? found_inf=None) -> ()",                                                \
    void,                                                                                          \
    (const std::vector<Tensor>& self, const std::vector<Tensor>& grads,                            \
     const std::vector<Tensor>& momentum_buffer_list, double weight_decay, double momentum,        \
     double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,                \
     const std::optional<Tensor>& found_inf),                                                      \
    (self, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize, \
     is_first_step, found_inf))                                                                    \
  X(FN, _fused_adam_, _fused_adam_,                                                                \
    "_fused_adam_(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] "         \
    "exp_avg_sqs, Tensor(d!)[] max_exp_avg_sqs, Tensor state_steps, *, float lr, float beta1, "    \
    "float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, bool decoupled, "     \
    "Tensor? found_inf=None) -> ()",                                                               \
    void,                                                                                          \
    (const std::vector<Tensor>& self, const std::vector<Tensor>& grads,                            \
     const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,                  \
     const std::vector<Tensor>& max_exp_avg_sqs, const Tensor& state_steps, double lr,             \
     double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,     \
     bool decoupled, const std::optional<Tensor>& found_inf),                                      \
    (self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,          \
     weight_decay, eps, amsgrad, maximize, decoupled, found_inf))                                  \
  X(FN, _fused_rmsprop_, _fused_rmsprop_,                                                          \
    "_fused_rmsprop_(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] square_avgs, Tensor(c!)[] "   \
    "grad_avgs, Tensor(d!)[] momentum_buffer_list, *, float lr, float alpha, float eps, float "    \
    "weight_decay, float momentum, bool centered, bool maximize, Tensor? found_inf=None) -> ()",   \
    void,                                                                                          \
    (const std::vector<Tensor>& self, const std::vector<Tensor>& grads,                            \
     const std::vector<Tensor>& square_avgs, const std::vector<Tensor>& grad_avgs,                 \
     const std::vector<Tensor>& momentum_buffer_list, double lr, double alpha, double eps,         \
     double weight_decay, double momentum, bool centered, bool maximize,                           \
     const std::optional<Tensor>& found_inf),                                                      \
    (self, grads, square_avgs, grad_avgs, momentum_buffer_list, lr, alpha, eps, weight_decay,      \
     momentum, centered, maximize, found_inf))                                                     \
  X(FN, _amp_update_scale_, _amp_update_scale_,                                                    \
    "_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float "      \
    "scale_growth_factor, float scale_backoff_factor, int growth_interval) -> ()",                 \
    void,                                                                                          \
    (const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,                    \
     double scale_growth_factor, double scale_backoff_factor, int64_t growth_interval),            \
    (self, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor, growth_interval))
// clang-format on

// Helpers for the generated code: the parameters or arguments after the first (self).
#define XTEN_DROP_FIRST(first, ...) __VA_ARGS__
// `*this` followed by the other arguments (the comma goes when there are none).
#define XTEN_THIS_AND_REST(first, ...) *this, ##__VA_ARGS__
// An in-place front end's parameters: `Tensor& self` and the others.
#define XTEN_INPLACE_PARAMS(first, ...) Tensor &self, ##__VA_ARGS__
