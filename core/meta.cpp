#include <xten/core/meta.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <xten/core/dtype_dispatch.h>

namespace xten {

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  XTEN_CHECK(dim >= -n && dim < n, IndexError, op,
             "dim {} is out of range for a tensor of {} dims (expected in [{}, {}])", dim, ndim, -n,
             n - 1);
  return dim < 0 ? dim + n : dim;
}

int64_t check_sizes(const char* op, IntArrayRef sizes) {
  int64_t numel = 1;
  for (int64_t s : sizes) {
    XTEN_CHECK(s >= 0, ValueError, op, "sizes must be non-negative, but got {}", sizes);
    XTEN_CHECK(!__builtin_mul_overflow(numel, s, &numel), ValueError, op,
               "sizes {} overflow the element count", sizes);
  }
  return numel;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

DimVector broadcast_shapes(const char* op, IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    XTEN_CHECK(da == db || da == 1 || db == 1, ValueError, op,
               "shapes {} and {} are not broadcastable (dim {}: {} vs {})", a, b, i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void ResultType::update(ScalarType& slot, ScalarType t) {
  slot = slot == ScalarType::Undefined ? t : promote_types(slot, t);
}

ResultType& ResultType::add(const Tensor& t) {
  if (is_wrapped_number(t)) {
    // A wrapped float takes the default float dtype (float32), an int int64, a bool bool.
    update(wrapped_, is_floating_type(t.dtype()) ? kFloat : t.dtype());
  } else {
    update(t.dim() == 0 ? zero_dim_ : dim_, t.dtype());
  }
  return *this;
}

ResultType& ResultType::add(const Scalar& s) {
  update(wrapped_, s.is_floating_point() ? kFloat : s.type());
  return *this;
}

namespace {
int category(ScalarType t) {
  return t == ScalarType::Undefined ? -1 : t == kBool ? 0 : is_integral_type(t, false) ? 1 : 2;
}
// `higher` comes from the higher-ranked operands. The lower rank only matters when it is of a
// higher category; then it joins by promotion (bool or int tensor + float scalar -> float).
ScalarType combine(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (category(lower) > category(higher)) {
    // An integral tensor meeting a floating value of lower rank takes the lower rank's dtype
    // (PyTorch: int tensor + float scalar -> default float; + 0-dim double tensor -> double).
    return promote_types(higher, lower);
  }
  return higher;
}
}  // namespace

ScalarType ResultType::get() const {
  return combine(dim_, combine(zero_dim_, wrapped_));
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  return ResultType().add(a).add(b).get();
}
ScalarType result_type(const Tensor& a, const Scalar& b) {
  return ResultType().add(a).add(b).get();
}

Tensor scalar_to_tensor(const Scalar& s, Device device) {
  XTEN_ASSERT(device.is_cpu(), "wrapped numbers live on the cpu");
  const ScalarType t = s.type();
  Tensor out = empty_tensor({}, t, device);
  out.impl()->set_wrapped_number(true);
  if (t == kBool)
    *static_cast<bool*>(out.data_ptr()) = s.to<bool>();
  else if (t == kLong)
    *static_cast<int64_t*>(out.data_ptr()) = s.to<int64_t>();
  else
    *static_cast<double*>(out.data_ptr()) = s.to<double>();
  return out;
}

bool is_wrapped_number(const Tensor& t) {
  return t.impl()->is_wrapped_number();
}

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t || !t->defined() || (t->is_cpu() && t->dim() == 0)) continue;
    if (!first) {
      first = t;
      continue;
    }
    XTEN_CHECK(first->device() == t->device(), DeviceError, op,
               "expected all tensors on the same device, but found {} and {}",
               first->device().str(), t->device().str());
  }
}

void check_no_internal_overlap(const char* op, const Tensor& t) {
  // Stride-0 dims of size > 1 write one location several times; otherwise sort dims by
  // stride and require each stride to step past the extent of the smaller ones.
  DimVector order;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 1) continue;
    XTEN_CHECK(t.stride(d) != 0, ValueError, op,
               "the written-to tensor (sizes {}, strides {}) has several elements at one memory "
               "location (e.g. it was expanded); clone() it first",
               t.sizes(), t.strides());
    order.push_back(d);
  }
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return std::abs(t.stride(x)) < std::abs(t.stride(y)); });
  int64_t extent = 1;
  for (int64_t d : order) {
    XTEN_CHECK(t.numel() == 0 || std::abs(t.stride(d)) >= extent, ValueError, op,
               "the written-to tensor (sizes {}, strides {}) overlaps itself; clone() it first",
               t.sizes(), t.strides());
    extent = std::abs(t.stride(d)) * t.size(d);
  }
}

Tensor empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device) {
  const int64_t numel = check_sizes("empty", sizes);
  Storage storage(static_cast<size_t>(numel) * element_size(dtype), allocator_for(device.type()),
                  device);
  return Tensor(
      std::make_shared<TensorImpl>(std::move(storage), dtype, sizes, contiguous_strides(sizes), 0));
}

Tensor empty_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  return restride_fresh(empty_tensor(sizes, dtype, device), strides);
}

Tensor restride_fresh(const Tensor& t, IntArrayRef strides) {
  XTEN_ASSERT(t.is_contiguous() && t.storage_offset() == 0 && strides.size() == t.sizes().size(),
              "sizes {} strides {}", t.sizes(), strides);
  Tensor r(std::make_shared<TensorImpl>(t.storage(), t.dtype(), t.sizes(), strides, 0));
  share_quantizer(t, r);
  return r;
}

void share_quantizer(const Tensor& from, const Tensor& view) {
  const auto& q = from.impl()->quantizer();
  if (!q) return;
  // A per-channel quantizer names a dim; a view that moves or resizes dims would break it.
  XTEN_CHECK(
      !q->per_channel() || (view.sizes() == from.sizes() && view.strides() == from.strides()),
      NotImplementedError, "view",
      "views of per-channel quantized tensors are not supported (sizes {} -> {}); "
      "dequantize() first",
      from.sizes(), view.sizes());
  view.impl()->set_quantizer(q);
}

bool all_contiguous(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (t && t->defined() && !t->is_contiguous() && t->numel() != 1) return false;
  return true;
}

DimVector pointwise_dim_order(IntArrayRef shape, std::initializer_list<const Tensor*> operands) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  // stride(o, d): operand o's stride along dim d of `shape`, 0 where it orders nothing.
  auto stride = [&](const Tensor& t, int64_t d) -> int64_t {
    const int64_t td = d - (nd - t.dim());
    if (td < 0 || shape[d] == 1 || t.size(td) == 1) return 0;
    return t.stride(td);
  };
  // +1: dim `outer` belongs inside dim `inner` (they are out of order); -1: in order; 0: no
  // operand tells.
  auto misordered = [&](int64_t inner, int64_t outer) {
    for (const Tensor* t : operands) {
      if (!t || !t->defined()) continue;
      const int64_t si = stride(*t, inner), so = stride(*t, outer);
      if (si == 0 || so == 0 || si == so) continue;
      return si > so ? 1 : -1;
    }
    return 0;
  };
  // Innermost first; an insertion sort that moves each dim inward past the dims it belongs
  // inside, looking past the ones no operand orders against it.
  DimVector inner_first(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) inner_first[i] = nd - 1 - i;
  for (int64_t i = 1; i < nd; ++i) {
    int64_t at = i;
    for (int64_t j = i - 1; j >= 0; --j) {
      const int c = misordered(inner_first[j], inner_first[at]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(inner_first[j], inner_first[at]);
        at = j;
      }
    }
  }
  DimVector order(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) order[i] = inner_first[nd - 1 - i];
  return order;
}

ArangeSpec arange_spec(const Scalar& start, const Scalar& end, const Scalar& step) {
  const double s = start.to<double>(), e = end.to<double>(), st = step.to<double>();
  XTEN_CHECK(std::isfinite(s) && std::isfinite(e), ValueError, "arange",
             "start ({}) and end ({}) must be finite", s, e);
  XTEN_CHECK(st != 0, ValueError, "arange", "step must be nonzero");
  XTEN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError, "arange",
             "the bounds [{}, {}) are inconsistent with the step sign ({})", s, e, st);
  const bool integral = start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
  const int64_t n =
      integral
          ? (end.to_long() - start.to_long() + step.to_long() - (st > 0 ? 1 : -1)) / step.to_long()
          : static_cast<int64_t>(std::ceil((e - s) / st));
  return {n, integral};
}

void check_randint_bounds(int64_t low, int64_t high, ScalarType dtype) {
  XTEN_CHECK(low < high, ValueError, "randint", "expects low < high, but got low={}, high={}", low,
             high);
  visit_dtype<dtypes::kAllButBool>("randint", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      XTEN_CHECK(low >= static_cast<int64_t>(std::numeric_limits<T>::lowest()) &&
                     high - 1 <= static_cast<int64_t>(std::numeric_limits<T>::max()),
                 ValueError, "randint", "[{}, {}) does not fit dtype {}", low, high,
                 to_string(dtype));
    }
  });
}

}  // namespace xten
