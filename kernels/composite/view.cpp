// View ops: new sizes/strides/offset over the same storage. They touch no data, so one
// CompositeImplicit kernel serves every backend.
#include <algorithm>

#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

// A view shares self's storage and remembers its base (the first tensor that is not a view),
// which autograd needs when the view is written in place (docs/autograd.md, "Views"). Its
// gradient history comes from the view op's derivative (autograd/derivatives/view.cpp).
Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  Tensor v(std::make_shared<TensorImpl>(self.storage(), self.dtype(), sizes, strides, offset));
  share_quantizer(self, v);
  const auto& base = self.impl()->view_base();
  v.impl()->set_view_base(base ? base : self.impl_ptr());
  return v;
}

// Resolves one -1 in `shape` so that the product is numel.
DimVector infer_size(const char* op, IntArrayRef shape, int64_t numel) {
  DimVector out(shape);
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      XTEN_CHECK(infer < 0, ValueError, op, "only one dimension can be inferred, but shape is {}",
                 shape);
      infer = static_cast<int>(i);
    } else {
      XTEN_CHECK(out[i] >= 0, ValueError, op, "invalid shape dimension {} in {}", out[i], shape);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    XTEN_CHECK(known != 0 && numel % known == 0, ValueError, op,
               "shape {} is invalid for input of size {}", shape, numel);
    out[infer] = numel / known;
  } else {
    XTEN_CHECK(known == numel, ValueError, op, "shape {} is invalid for input of size {}", shape,
               numel);
  }
  return out;
}

// Strides that let `new_shape` view memory laid out as (old_shape, old_strides), if any:
// each run of old dims that is contiguous in memory ("chunk") must map onto a run of new dims
// with the same element count.
std::optional<DimVector> view_strides(IntArrayRef old_shape, IntArrayRef old_strides,
                                      IntArrayRef new_shape) {
  int64_t numel = 1;
  for (int64_t s : old_shape) numel *= s;
  if (numel == 0 || old_shape.empty()) return contiguous_strides(new_shape);
  DimVector strides(new_shape.size());
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base = old_strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    const bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_base;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base = old_strides[d - 1];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Tensor view_kernel(const Tensor& self, IntArrayRef size) {
  const DimVector shape = infer_size("view", size, self.numel());
  auto strides = view_strides(self.sizes(), self.strides(), shape);
  XTEN_CHECK(strides.has_value(), ValueError, "view",
             "view size {} is not compatible with the input's size {} and stride {} (a dimension "
             "spans two non-contiguous parts); use reshape(...) instead",
             shape, self.sizes(), self.strides());
  return make_view(self, shape, *strides, self.storage_offset());
}

Tensor reshape_kernel(const Tensor& self, IntArrayRef size) {
  const DimVector shape = infer_size("reshape", size, self.numel());
  // Through the view op (not make_view), so that autograd records it: reshape is differentiable
  // through this decomposition.
  if (view_strides(self.sizes(), self.strides(), shape)) return view(self, shape);
  return view(contiguous(self), shape);
}

Tensor flatten_kernel(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  const int64_t s = wrap_dim("flatten", start_dim, self.dim());
  const int64_t e = wrap_dim("flatten", end_dim, self.dim());
  XTEN_CHECK(s <= e, ValueError, "flatten", "start_dim ({}) must not come after end_dim ({})",
             start_dim, end_dim);
  DimVector shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(self.size(d));
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= self.size(d);
  shape.push_back(n);
  for (int64_t d = e + 1; d < self.dim(); ++d) shape.push_back(self.size(d));
  return reshape(self, shape);
}

Tensor squeeze_kernel(const Tensor& self) {
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.size(d) == 1) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze_dim_kernel(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim("squeeze", dim, self.dim());
  if (self.dim() == 0 || self.size(d) != 1)
    return make_view(self, self.sizes(), self.strides(), self.storage_offset());
  DimVector sizes(self.sizes()), strides(self.strides());
  sizes.erase(d);
  strides.erase(d);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor unsqueeze_kernel(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim("unsqueeze", dim, self.dim() + 1);
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t stride = d < self.dim() ? self.size(d) * self.stride(d) : 1;
  sizes.insert(d, 1);
  strides.insert(d, stride);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor permute_kernel(const Tensor& self, IntArrayRef dims) {
  XTEN_CHECK(static_cast<int64_t>(dims.size()) == self.dim(), ValueError, "permute",
             "dims {} must list each of the tensor's {} dims once", dims, self.dim());
  DimVector sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim("permute", dims[i], self.dim());
    XTEN_CHECK(!seen[d], ValueError, "permute", "dims {} repeat dim {}", dims, d);
    seen[d] = true;
    sizes[i] = self.size(d);
    strides[i] = self.stride(d);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor transpose_kernel(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t a = wrap_dim("transpose", dim0, self.dim());
  const int64_t b = wrap_dim("transpose", dim1, self.dim());
  DimVector sizes(self.sizes()), strides(self.strides());
  if (self.dim() > 0) {
    std::swap(sizes[a], sizes[b]);
    std::swap(strides[a], strides[b]);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor t_kernel(const Tensor& self) {
  XTEN_CHECK(self.dim() <= 2, ValueError, "t", "expects a tensor with <= 2 dims, but got {} dims",
             self.dim());
  return self.dim() < 2 ? make_view(self, self.sizes(), self.strides(), self.storage_offset())
                        : transpose(self, 0, 1);
}

Tensor expand_kernel(const Tensor& self, IntArrayRef size) {
  XTEN_CHECK(static_cast<int64_t>(size.size()) >= self.dim(), ValueError, "expand",
             "the number of sizes given ({}) must be at least the tensor's number of dims ({})",
             size.size(), self.dim());
  const int64_t n = static_cast<int64_t>(size.size()), lead = n - self.dim();
  DimVector sizes(n), strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t d = i - lead;
    if (d < 0) {
      XTEN_CHECK(size[i] >= 0, ValueError, "expand",
                 "size -1 is not allowed in a leading, non-existing dimension ({})", i);
      sizes[i] = size[i];
      strides[i] = 0;
      continue;
    }
    const int64_t have = self.size(d);
    const int64_t want = size[i] == -1 ? have : size[i];
    XTEN_CHECK(have == want || have == 1, ValueError, "expand",
               "the expanded size ({}) must match the existing size ({}) at non-singleton "
               "dimension {}; target sizes {}, tensor sizes {}",
               want, have, i, size, self.sizes());
    XTEN_CHECK(want >= 0, ValueError, "expand", "invalid size {} at dimension {}", want, i);
    sizes[i] = want;
    strides[i] = have == want ? self.stride(d) : 0;
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor slice_kernel(const Tensor& self, int64_t dim, std::optional<int64_t> start_opt,
                    std::optional<int64_t> end_opt, int64_t step) {
  XTEN_CHECK(self.dim() > 0, ValueError, "slice", "cannot slice a zero-dim tensor");
  const int64_t d = wrap_dim("slice", dim, self.dim());
  XTEN_CHECK(step > 0, ValueError, "slice", "step must be positive, but got {}", step);
  const int64_t n = self.size(d);
  auto clamp_index = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t start = clamp_index(start_opt.value_or(0));
  const int64_t end = std::max(start, clamp_index(end_opt.value_or(n)));
  DimVector sizes(self.sizes()), strides(self.strides());
  sizes[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  return make_view(self, sizes, strides, self.storage_offset() + start * self.stride(d));
}

Tensor narrow_kernel(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  XTEN_CHECK(self.dim() > 0, ValueError, "narrow", "cannot narrow a zero-dim tensor");
  const int64_t d = wrap_dim("narrow", dim, self.dim());
  const int64_t n = self.size(d);
  XTEN_CHECK(start >= -n && start <= n, IndexError, "narrow",
             "start ({}) is out of range for dimension {} of size {}", start, d, n);
  if (start < 0) start += n;
  XTEN_CHECK(length >= 0 && start + length <= n, ValueError, "narrow",
             "start ({}) + length ({}) exceeds dimension {} of size {}", start, length, d, n);
  return slice(self, d, start, start + length, 1);
}

Tensor select_kernel(const Tensor& self, int64_t dim, int64_t index) {
  XTEN_CHECK(self.dim() > 0, IndexError, "select", "cannot select from a zero-dim tensor");
  const int64_t d = wrap_dim("select", dim, self.dim());
  const int64_t n = self.size(d);
  XTEN_CHECK(index >= -n && index < n, IndexError, "select",
             "index {} is out of range for dimension {} with size {}", index, d, n);
  if (index < 0) index += n;
  DimVector sizes(self.sizes()), strides(self.strides());
  sizes.erase(d);
  strides.erase(d);
  return make_view(self, sizes, strides, self.storage_offset() + index * self.stride(d));
}

std::vector<Tensor> unbind_kernel(const Tensor& self, int64_t dim) {
  XTEN_CHECK(self.dim() > 0, ValueError, "unbind", "cannot unbind a zero-dim tensor");
  const int64_t d = wrap_dim("unbind", dim, self.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.size(d); ++i) out.push_back(select(self, d, i));
  return out;
}

std::vector<Tensor> split_kernel(const Tensor& self, int64_t split_size, int64_t dim) {
  XTEN_CHECK(self.dim() > 0, ValueError, "split", "cannot split a zero-dim tensor");
  const int64_t d = wrap_dim("split", dim, self.dim());
  const int64_t n = self.size(d);
  XTEN_CHECK(split_size > 0 || (split_size == 0 && n == 0), ValueError, "split",
             "split_size must be positive (0 only for an empty dimension), but got {}", split_size);
  std::vector<Tensor> out;
  if (n == 0) return {slice(self, d, 0, 0, 1)};
  for (int64_t s = 0; s < n; s += split_size)
    out.push_back(slice(self, d, s, std::min(n, s + split_size), 1));
  return out;
}

std::vector<Tensor> split_with_sizes_kernel(const Tensor& self, IntArrayRef split_sizes,
                                            int64_t dim) {
  XTEN_CHECK(self.dim() > 0, ValueError, "split_with_sizes", "cannot split a zero-dim tensor");
  const int64_t d = wrap_dim("split_with_sizes", dim, self.dim());
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    XTEN_CHECK(s >= 0, ValueError, "split_with_sizes",
               "split_sizes must be non-negative, but got split_sizes={}", split_sizes);
    total += s;
  }
  XTEN_CHECK(total == self.size(d), ValueError, "split_with_sizes",
             "split_sizes must sum exactly to {} (the size of dim {}), but got split_sizes={}",
             self.size(d), d, split_sizes);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(slice(self, d, start, start + s, 1));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk_kernel(const Tensor& self, int64_t chunks, int64_t dim) {
  XTEN_CHECK(chunks > 0, ValueError, "chunk", "chunks must be positive, but got {}", chunks);
  XTEN_CHECK(self.dim() > 0, ValueError, "chunk", "cannot chunk a zero-dim tensor");
  const int64_t n = self.size(wrap_dim("chunk", dim, self.dim()));
  return split(self, std::max<int64_t>((n + chunks - 1) / chunks, n == 0 ? 0 : 1), dim);
}

Tensor as_strided_kernel(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                         std::optional<int64_t> storage_offset) {
  XTEN_CHECK(size.size() == stride.size(), ValueError, "as_strided",
             "size {} and stride {} must have the same length", size, stride);
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  XTEN_CHECK(offset >= 0, ValueError, "as_strided", "storage_offset must be >= 0, but got {}",
             offset);
  const int64_t numel = check_sizes("as_strided", size);
  int64_t last = offset;
  for (size_t i = 0; i < size.size(); ++i) {
    XTEN_CHECK(stride[i] >= 0, ValueError, "as_strided", "strides must be >= 0, but got {}",
               stride);
    last += (size[i] - 1) * stride[i];
  }
  const int64_t capacity = static_cast<int64_t>(self.storage().nbytes() / self.element_size());
  XTEN_CHECK(numel == 0 || last < capacity, ValueError, "as_strided",
             "size {}, stride {} and offset {} reach element {}, out of bounds for a storage of "
             "{} elements",
             size, stride, offset, last, capacity);
  return make_view(self, size, stride, offset);
}

Tensor contiguous_kernel(const Tensor& self) {
  if (self.is_contiguous()) return self;
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  return copy_(out, self);
}

// clone keeps self's layout (Preserve: Note [Preserved layout], dispatch/ops.cpp).
Tensor clone_kernel(const Tensor& self) {
  Tensor out = empty_like(self);
  return copy_(out, self);
}

// detach shares the storage (and so the version counter) but is not a view autograd tracks: it
// has no history, and writing it in place does not touch self's.
Tensor detach_kernel(const Tensor& self) {
  Tensor d(std::make_shared<TensorImpl>(self.storage(), self.dtype(), self.sizes(), self.strides(),
                                        self.storage_offset()));
  share_quantizer(self, d);
  return d;
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("view", view_kernel);
  m.impl("reshape", reshape_kernel);
  m.impl("flatten", flatten_kernel);
  m.impl("squeeze", squeeze_kernel);
  m.impl("squeeze.dim", squeeze_dim_kernel);
  m.impl("unsqueeze", unsqueeze_kernel);
  m.impl("permute", permute_kernel);
  m.impl("transpose", transpose_kernel);
  m.impl("t", t_kernel);
  m.impl("expand", expand_kernel);
  m.impl("narrow", narrow_kernel);
  m.impl("slice", slice_kernel);
  m.impl("select", select_kernel);
  m.impl("unbind", unbind_kernel);
  m.impl("split", split_kernel);
  m.impl("split_with_sizes", split_with_sizes_kernel);
  m.impl("chunk", chunk_kernel);
  m.impl("as_strided", as_strided_kernel);
  m.impl("contiguous", contiguous_kernel);
  m.impl("clone", clone_kernel);
  m.impl("detach", detach_kernel);
}

}  // namespace xten
