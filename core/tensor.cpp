#include <xten/core/tensor.h>

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
