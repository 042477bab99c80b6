#include <xten/core/tensor.h>

#include <algorithm>
#include <ostream>

#include <xten/core/meta.h>

namespace xten {

int64_t Tensor::size(int64_t d) const {
  XTEN_CHECK(dim() > 0, IndexError, "size", "a zero-dim tensor has no dimension {}", d);
  return sizes()[static_cast<size_t>(wrap_dim("size", d, dim()))];
}

int64_t Tensor::stride(int64_t d) const {
  XTEN_CHECK(dim() > 0, IndexError, "stride", "a zero-dim tensor has no dimension {}", d);
  return strides()[static_cast<size_t>(wrap_dim("stride", d, dim()))];
}

bool Tensor::is_contiguous(MemoryFormat format) const {
  switch (format) {
    case MemoryFormat::Contiguous:
      return is_contiguous();
    case MemoryFormat::ChannelsLast:
      return impl_->is_channels_last_contiguous();
    case MemoryFormat::Preserve:
      break;
  }
  XTEN_FAIL(ValueError, "is_contiguous",
            "preserve_format is not a layout a tensor can be contiguous in; ask about "
            "contiguous_format or channels_last");
}

namespace {
// Whether the dims of size > 1, taken innermost first in `order`, step without overlap: each
// stride at least the extent of the dim inside it (a dense layout or a slice of one).
bool strides_ordered(const Tensor& t, std::initializer_list<int64_t> inner_first) {
  int64_t extent = 1;
  for (int64_t d : inner_first) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) < extent) return false;
    extent = t.stride(d) * t.size(d);
  }
  return true;
}
}  // namespace

namespace {
const Quantizer& quantizer_of(const Tensor& t, const char* op, bool per_channel) {
  XTEN_CHECK(t.is_quantized(), TypeError, op, "expects a quantized tensor, got dtype {}",
             dtype_name(t.dtype()));
  const Quantizer& q = *t.impl()->quantizer();
  XTEN_CHECK(q.per_channel() == per_channel, TypeError, op,
             "expects a {} quantized tensor, got quantization_scheme={}",
             per_channel ? "per-channel" : "per-tensor", to_string(q.scheme));
  return q;
}
}  // namespace

QScheme Tensor::qscheme() const {
  XTEN_CHECK(is_quantized(), TypeError, "qscheme", "expects a quantized tensor, got dtype {}",
             dtype_name(dtype()));
  return impl_->quantizer()->scheme;
}
double Tensor::q_scale() const {
  return quantizer_of(*this, "q_scale", false).scale;
}
int64_t Tensor::q_zero_point() const {
  return quantizer_of(*this, "q_zero_point", false).zero_point;
}
int64_t Tensor::q_per_channel_axis() const {
  return quantizer_of(*this, "q_per_channel_axis", true).axis;
}
Tensor Tensor::q_per_channel_scales() const {
  const Quantizer& q = quantizer_of(*this, "q_per_channel_scales", true);
  const int64_t n = static_cast<int64_t>(q.scales.size());
  Tensor t = empty_tensor({n}, kDouble, Device(kCPU));
  std::copy(q.scales.begin(), q.scales.end(), t.data_ptr<double>());
  return t;
}
Tensor Tensor::q_per_channel_zero_points() const {
  const Quantizer& q = quantizer_of(*this, "q_per_channel_zero_points", true);
  const int64_t n = static_cast<int64_t>(q.zero_points.size());
  Tensor t = empty_tensor({n}, kLong, Device(kCPU));
  std::copy(q.zero_points.begin(), q.zero_points.end(), t.data_ptr<int64_t>());
  return t;
}

MemoryFormat Tensor::suggest_memory_format() const {
  if (dim() != 4 || numel() == 0 || is_contiguous()) return MemoryFormat::Contiguous;
  if (impl_->is_channels_last_contiguous()) return MemoryFormat::ChannelsLast;
  return strides_ordered(*this, {1, 3, 2, 0}) && !strides_ordered(*this, {3, 2, 1, 0})
             ? MemoryFormat::ChannelsLast
             : MemoryFormat::Contiguous;
}

void Tensor::check_item(const char* op) const {
  XTEN_CHECK(defined(), ValueError, op, "the tensor is undefined");
  XTEN_CHECK(numel() == 1, ValueError, op,
             "a tensor with {} elements (shape {}) cannot be converted to a Scalar", numel(),
             sizes());
}

std::string to_string(IntArrayRef a) {
  std::string s = "(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + ")";
}
std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  return os << to_string(a);
}

std::string Scalar::to_string() const {
  switch (tag_) {
    case Tag::Bool:
      return v_.i ? "True" : "False";
    case Tag::Int:
      return std::to_string(v_.i);
    case Tag::Double:
      return fmt::format("{}", v_.d);
  }
  return "?";
}
void Tensor::set_data(const Tensor& new_data) const {
  XTEN_CHECK(defined() && new_data.defined(), ValueError, "set_data",
             "both tensors must be defined");
  impl_->set_data(*new_data.impl());
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  return os << s.to_string();
}

}  // namespace xten
