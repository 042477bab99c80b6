// Tensor methods and operators (declared in core/tensor.h): each forwards to the free
// function of dispatch/ops.h.
#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>

namespace xten {

Scalar Tensor::item() const {
  check_item("item");
  const Tensor host = is_cpu() ? *this : to(Device(kCPU));  // a device copy synchronizes
  const void* p = host.data_ptr();
  switch (dtype()) {
    case kBool:
      return Scalar(*static_cast<const bool*>(p));
    case kByte:
      return Scalar(*static_cast<const uint8_t*>(p));
    case kChar:
      return Scalar(*static_cast<const int8_t*>(p));
    case kShort:
      return Scalar(*static_cast<const int16_t*>(p));
    case kInt:
      return Scalar(*static_cast<const int32_t*>(p));
    case kLong:
      return Scalar(*static_cast<const int64_t*>(p));
    case kHalf:
      return Scalar(*static_cast<const Half*>(p));
    case kBFloat16:
      return Scalar(*static_cast<const BFloat16*>(p));
    case kFloat:
      return Scalar(*static_cast<const float*>(p));
    case kDouble:
      return Scalar(*static_cast<const double*>(p));
    default:
      break;
  }
  XTEN_FAIL(TypeError, "item", "dtype {} has no scalar value", to_string(dtype()));
}

// views
Tensor Tensor::view(IntArrayRef size) const {
  return xten::view(*this, size);
}
Tensor Tensor::reshape(IntArrayRef shape) const {
  return xten::reshape(*this, shape);
}
Tensor Tensor::flatten(int64_t s, int64_t e) const {
  return xten::flatten(*this, s, e);
}
Tensor Tensor::squeeze() const {
  return xten::squeeze(*this);
}
Tensor Tensor::squeeze(int64_t dim) const {
  return xten::squeeze(*this, dim);
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  return xten::unsqueeze(*this, dim);
}
Tensor Tensor::permute(IntArrayRef dims) const {
  return xten::permute(*this, dims);
}
Tensor Tensor::transpose(int64_t a, int64_t b) const {
  return xten::transpose(*this, a, b);
}
Tensor Tensor::t() const {
  return xten::t(*this);
}
Tensor Tensor::expand(IntArrayRef size) const {
  return xten::expand(*this, size);
}
Tensor Tensor::expand_as(const Tensor& o) const {
  return xten::expand_as(*this, o);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const {
  return xten::narrow(*this, d, s, l);
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  return xten::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return xten::select(*this, dim, index);
}
std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  return xten::unbind(*this, dim);
}
std::vector<Tensor> Tensor::split(int64_t n, int64_t dim) const {
  return xten::split(*this, n, dim);
}
std::vector<Tensor> Tensor::split(IntArrayRef sizes, int64_t dim) const {
  return xten::split_with_sizes(*this, sizes, dim);
}
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef sizes, int64_t dim) const {
  return xten::split_with_sizes(*this, sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t n, int64_t dim) const {
  return xten::chunk(*this, n, dim);
}
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> off) const {
  return xten::as_strided(*this, size, stride, off);
}
Tensor Tensor::contiguous() const {
  return xten::contiguous(*this);
}
Tensor Tensor::clone() const {
  return xten::clone(*this);
}
Tensor Tensor::detach() const {
  return xten::detach(*this);
}

// copy and cast
Tensor& Tensor::copy_(const Tensor& src) {
  return xten::copy_(*this, src);
}
Tensor Tensor::to(ScalarType dtype, bool copy) const {
  return xten::to(*this, device(), dtype, copy);
}
Tensor Tensor::to(Device device, bool copy) const {
  return xten::to(*this, device, dtype(), copy);
}
Tensor Tensor::to(Device device, ScalarType dtype, bool copy) const {
  return xten::to(*this, device, dtype, copy);
}
Tensor Tensor::to(const TensorOptions& o, bool copy) const {
  return xten::to(*this, o.has_device() ? o.device() : device(),
                  o.has_dtype() ? o.dtype() : dtype(), copy);
}
Tensor& Tensor::fill_(const Scalar& value) {
  return xten::fill_(*this, value);
}
Tensor& Tensor::zero_() {
  return xten::zero_(*this);
}

// binary
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  return xten::add(*this, o, alpha);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return xten::add(*this, o, alpha);
}
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  return xten::add_(*this, o, alpha);
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  return xten::add_(*this, scalar_to_tensor(o), alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const {
  return xten::sub(*this, o, alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return xten::sub(*this, o, alpha);
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  return xten::sub_(*this, o, alpha);
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) {
  return xten::sub_(*this, scalar_to_tensor(o), alpha);
}
Tensor Tensor::mul(const Tensor& o) const {
  return xten::mul(*this, o);
}
Tensor Tensor::mul(const Scalar& o) const {
  return xten::mul(*this, o);
}
Tensor& Tensor::mul_(const Tensor& o) {
  return xten::mul_(*this, o);
}
Tensor& Tensor::mul_(const Scalar& o) {
  return xten::mul_(*this, scalar_to_tensor(o));
}
Tensor Tensor::div(const Tensor& o) const {
  return xten::div(*this, o);
}
Tensor Tensor::div(const Scalar& o) const {
  return xten::div(*this, o);
}
Tensor Tensor::div(const Tensor& o, std::optional<std::string> mode) const {
  return xten::div(*this, o, std::move(mode));
}
Tensor& Tensor::div_(const Tensor& o) {
  return xten::div_(*this, o);
}
Tensor& Tensor::div_(const Scalar& o) {
  return xten::div_(*this, scalar_to_tensor(o));
}
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string> mode) {
  return xten::div_(*this, o, std::move(mode));
}
Tensor Tensor::remainder(const Tensor& o) const {
  return xten::remainder(*this, o);
}
Tensor Tensor::remainder(const Scalar& o) const {
  return xten::remainder(*this, o);
}
Tensor Tensor::fmod(const Tensor& o) const {
  return xten::fmod(*this, o);
}
Tensor Tensor::fmod(const Scalar& o) const {
  return xten::fmod(*this, o);
}
Tensor Tensor::pow(const Tensor& e) const {
  return xten::pow(*this, e);
}
Tensor Tensor::pow(const Scalar& e) const {
  return xten::pow(*this, e);
}
Tensor& Tensor::pow_(const Tensor& e) {
  return xten::pow_(*this, e);
}
Tensor& Tensor::pow_(const Scalar& e) {
  return xten::pow_(*this, scalar_to_tensor(e));
}
Tensor Tensor::maximum(const Tensor& o) const {
  return xten::maximum(*this, o);
}
Tensor Tensor::minimum(const Tensor& o) const {
  return xten::minimum(*this, o);
}
Tensor Tensor::atan2(const Tensor& o) const {
  return xten::atan2(*this, o);
}
Tensor Tensor::eq(const Tensor& o) const {
  return xten::eq(*this, o);
}
Tensor Tensor::eq(const Scalar& o) const {
  return xten::eq(*this, o);
}
Tensor Tensor::ne(const Tensor& o) const {
  return xten::ne(*this, o);
}
Tensor Tensor::ne(const Scalar& o) const {
  return xten::ne(*this, o);
}
Tensor Tensor::lt(const Tensor& o) const {
  return xten::lt(*this, o);
}
Tensor Tensor::lt(const Scalar& o) const {
  return xten::lt(*this, o);
}
Tensor Tensor::le(const Tensor& o) const {
  return xten::le(*this, o);
}
Tensor Tensor::le(const Scalar& o) const {
  return xten::le(*this, o);
}
Tensor Tensor::gt(const Tensor& o) const {
  return xten::gt(*this, o);
}
Tensor Tensor::gt(const Scalar& o) const {
  return xten::gt(*this, o);
}
Tensor Tensor::ge(const Tensor& o) const {
  return xten::ge(*this, o);
}
Tensor Tensor::ge(const Scalar& o) const {
  return xten::ge(*this, o);
}
Tensor Tensor::logical_and(const Tensor& o) const {
  return xten::logical_and(*this, o);
}
Tensor Tensor::logical_or(const Tensor& o) const {
  return xten::logical_or(*this, o);
}
Tensor Tensor::logical_xor(const Tensor& o) const {
  return xten::logical_xor(*this, o);
}
Tensor Tensor::bitwise_and(const Tensor& o) const {
  return xten::bitwise_and(*this, o);
}
Tensor Tensor::bitwise_or(const Tensor& o) const {
  return xten::bitwise_or(*this, o);
}
Tensor Tensor::bitwise_xor(const Tensor& o) const {
  return xten::bitwise_xor(*this, o);
}
Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return xten::clamp(*this, min, max);
}
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return xten::clamp_(*this, min, max);
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& w) const {
  return xten::lerp(*this, end, w);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& w) const {
  return xten::lerp(*this, end, w);
}

// unary
#define XTEN_UNARY_METHOD(name) \
  Tensor Tensor::name() const { \
    return xten::name(*this);   \
  }
#define XTEN_UNARY_INPLACE_METHOD(name) \
  Tensor& Tensor::name##_() {           \
    return xten::name##_(*this);        \
  }
XTEN_UNARY_METHOD(neg)
XTEN_UNARY_INPLACE_METHOD(neg)
XTEN_UNARY_METHOD(abs)
XTEN_UNARY_INPLACE_METHOD(abs)
XTEN_UNARY_METHOD(sign)
XTEN_UNARY_METHOD(exp)
XTEN_UNARY_INPLACE_METHOD(exp)
XTEN_UNARY_METHOD(exp2)
XTEN_UNARY_METHOD(log)
XTEN_UNARY_INPLACE_METHOD(log)
XTEN_UNARY_METHOD(log2)
XTEN_UNARY_METHOD(log10)
XTEN_UNARY_METHOD(log1p)
XTEN_UNARY_METHOD(expm1)
XTEN_UNARY_METHOD(sqrt)
XTEN_UNARY_INPLACE_METHOD(sqrt)
XTEN_UNARY_METHOD(rsqrt)
XTEN_UNARY_METHOD(reciprocal)
XTEN_UNARY_METHOD(sin)
XTEN_UNARY_METHOD(cos)
XTEN_UNARY_METHOD(tan)
XTEN_UNARY_METHOD(tanh)
XTEN_UNARY_INPLACE_METHOD(tanh)
XTEN_UNARY_METHOD(sigmoid)
XTEN_UNARY_INPLACE_METHOD(sigmoid)
XTEN_UNARY_METHOD(relu)
XTEN_UNARY_INPLACE_METHOD(relu)
XTEN_UNARY_METHOD(silu)
XTEN_UNARY_METHOD(erf)
XTEN_UNARY_METHOD(floor)
XTEN_UNARY_METHOD(ceil)
XTEN_UNARY_METHOD(round)
XTEN_UNARY_METHOD(trunc)
XTEN_UNARY_METHOD(isnan)
XTEN_UNARY_METHOD(isinf)
XTEN_UNARY_METHOD(isfinite)
XTEN_UNARY_METHOD(logical_not)
XTEN_UNARY_METHOD(bitwise_not)
#undef XTEN_UNARY_METHOD
#undef XTEN_UNARY_INPLACE_METHOD
Tensor Tensor::gelu(const std::string& approximate) const {
  return xten::gelu(*this, approximate);
}
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return xten::nan_to_num(*this, nan, posinf, neginf);
}

// reductions
Tensor Tensor::sum(std::optional<ScalarType> dtype) const {
  return xten::sum(*this, dtype);
}
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return xten::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const {
  return xten::mean(*this, dtype);
}
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return xten::mean(*this, dim, keepdim, dtype);
}

Tensor Tensor::prod(std::optional<ScalarType> dtype) const {
  return xten::prod(*this, dtype);
}
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return xten::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const {
  return xten::amax(*this, dim, keepdim);
}
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const {
  return xten::amin(*this, dim, keepdim);
}
Tensor Tensor::max() const {
  return xten::max(*this);
}
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return xten::max(*this, dim, keepdim);
}
Tensor Tensor::min() const {
  return xten::min(*this);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return xten::min(*this, dim, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return xten::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return xten::argmin(*this, dim, keepdim);
}
Tensor Tensor::all(IntArrayRef dim, bool keepdim) const {
  return xten::all(*this, dim, keepdim);
}
Tensor Tensor::any(IntArrayRef dim, bool keepdim) const {
  return xten::any(*this, dim, keepdim);
}
Tensor Tensor::var(IntArrayRef dim, double correction, bool keepdim) const {
  return xten::var(*this, dim, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dim, double correction, bool keepdim) const {
  return xten::std(*this, dim, correction, keepdim);
}
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const {
  return xten::norm(*this, p, dim, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const {
  return xten::logsumexp(*this, dim, keepdim);
}
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const {
  return xten::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const {
  return xten::cumprod(*this, dim, dtype);
}

// linear algebra, activations, indexing
Tensor Tensor::matmul(const Tensor& o) const {
  return xten::matmul(*this, o);
}
Tensor Tensor::mm(const Tensor& o) const {
  return xten::mm(*this, o);
}
Tensor Tensor::bmm(const Tensor& o) const {
  return xten::bmm(*this, o);
}
Tensor Tensor::dot(const Tensor& o) const {
  return xten::dot(*this, o);
}
Tensor Tensor::mv(const Tensor& v) const {
  return xten::mv(*this, v);
}
Tensor Tensor::outer(const Tensor& v) const {
  return xten::outer(*this, v);
}
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return xten::softmax(*this, dim, dtype);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return xten::log_softmax(*this, dim, dtype);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return xten::index_select(*this, dim, index);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return xten::gather(*this, dim, index);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return xten::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return xten::scatter_add(*this, dim, index, src);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return xten::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return copy_(xten::masked_fill(*this, mask, value));
}
Tensor Tensor::masked_select(const Tensor& mask) const {
  return xten::masked_select(*this, mask);
}
Tensor Tensor::index(const std::vector<Tensor>& indices) const {
  return xten::index(*this, indices);
}
Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                           bool accumulate) {
  return xten::index_put_(*this, indices, values, accumulate);
}
Tensor Tensor::nonzero() const {
  return xten::nonzero(*this);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return xten::sort(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const {
  return xten::argsort(*this, dim, descending);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return xten::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::repeat(IntArrayRef repeats) const {
  return xten::repeat(*this, repeats);
}
Tensor Tensor::flip(IntArrayRef dims) const {
  return xten::flip(*this, dims);
}
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  return xten::roll(*this, shifts, dims);
}
Tensor Tensor::tril(int64_t diagonal) const {
  return xten::tril(*this, diagonal);
}
Tensor Tensor::triu(int64_t diagonal) const {
  return xten::triu(*this, diagonal);
}

// operators
Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator+(const Tensor& a, const Scalar& b) {
  return add(a, b);
}
Tensor operator+(const Scalar& a, const Tensor& b) {
  return add(b, a);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator-(const Tensor& a, const Scalar& b) {
  return sub(a, b);
}
Tensor operator-(const Scalar& a, const Tensor& b) {
  return sub(scalar_to_tensor(a), b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator*(const Tensor& a, const Scalar& b) {
  return mul(a, b);
}
Tensor operator*(const Scalar& a, const Tensor& b) {
  return mul(b, a);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator/(const Tensor& a, const Scalar& b) {
  return div(a, b);
}
Tensor operator/(const Scalar& a, const Tensor& b) {
  return div(scalar_to_tensor(a), b);
}
Tensor operator==(const Tensor& a, const Tensor& b) {
  return eq(a, b);
}
Tensor operator==(const Tensor& a, const Scalar& b) {
  return eq(a, b);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
  return ne(a, b);
}
Tensor operator!=(const Tensor& a, const Scalar& b) {
  return ne(a, b);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
  return lt(a, b);
}
Tensor operator<(const Tensor& a, const Scalar& b) {
  return lt(a, b);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
  return le(a, b);
}
Tensor operator<=(const Tensor& a, const Scalar& b) {
  return le(a, b);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
  return gt(a, b);
}
Tensor operator>(const Tensor& a, const Scalar& b) {
  return gt(a, b);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
  return ge(a, b);
}
Tensor operator>=(const Tensor& a, const Scalar& b) {
  return ge(a, b);
}
Tensor operator&(const Tensor& a, const Tensor& b) {
  return bitwise_and(a, b);
}
Tensor operator|(const Tensor& a, const Tensor& b) {
  return bitwise_or(a, b);
}
Tensor operator^(const Tensor& a, const Tensor& b) {
  return bitwise_xor(a, b);
}

}  // namespace xten
