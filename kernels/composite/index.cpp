// Joining and indexing ops written with other ops (valid on every backend).
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/composite/value_checks.h>

namespace xten {
namespace {

// Constant padding writes the input into a slice of a filled tensor; reflect and replicate
// gather, dim by dim, the source index of every padded position.
Tensor pad_kernel(const Tensor& input, IntArrayRef pads, const std::string& mode,
                  std::optional<double> value) {
  XTEN_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) / 2 <= input.dim(),
             ValueError, "pad",
             "pad {} must have an even length of at most 2 x the input's dims ({})", pads,
             input.dim());
  XTEN_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate", ValueError, "pad",
             "mode must be 'constant', 'reflect' or 'replicate', but got '{}'", mode);
  XTEN_CHECK(mode == "constant" || !value, ValueError, "pad",
             "a value is only used with mode 'constant'");
  const int64_t npad = static_cast<int64_t>(pads.size()) / 2;
  if (mode == "constant") {
    DimVector shape(input.sizes());
    for (int64_t i = 0; i < npad; ++i) {
      const int64_t d = input.dim() - 1 - i;
      shape[d] += pads[2 * i] + pads[2 * i + 1];
      XTEN_CHECK(shape[d] >= 0, ValueError, "pad", "padding {} makes dim {} negative", pads, d);
      // Negative pads crop: together at most the dim (found by the op fuzzer, seed 54510621).
      const int64_t crop =
          std::max<int64_t>(-pads[2 * i], 0) + std::max<int64_t>(-pads[2 * i + 1], 0);
      XTEN_CHECK(crop <= input.size(d), ValueError, "pad",
                 "padding {} crops {} elements from dim {} of size {}", pads, crop, d,
                 input.size(d));
    }
    Tensor out = full(shape, value.value_or(0.0), input.options());
    Tensor src = input, dst = out;
    for (int64_t i = 0; i < npad; ++i) {  // negative padding crops the input
      const int64_t d = input.dim() - 1 - i, lo = pads[2 * i], hi = pads[2 * i + 1];
      src = src.slice(d, std::max<int64_t>(-lo, 0), input.size(d) - std::max<int64_t>(-hi, 0));
      dst = dst.slice(d, std::max<int64_t>(lo, 0), shape[d] - std::max<int64_t>(hi, 0));
    }
    dst.copy_(src);
    return out;
  }
  Tensor out = input;
  for (int64_t i = 0; i < npad; ++i) {
    const int64_t d = input.dim() - 1 - i, lo = pads[2 * i], hi = pads[2 * i + 1],
                  n = input.size(d);
    XTEN_CHECK(lo >= 0 && hi >= 0, ValueError, "pad",
               "mode '{}' needs non-negative padding, but got {}", mode, pads);
    XTEN_CHECK(mode == "replicate" ? n > 0 : (lo < n && hi < n), ValueError, "pad",
               "mode '{}': padding ({}, {}) must be smaller than the input's dim {} ({})", mode, lo,
               hi, d, n);
    std::vector<int64_t> idx;
    for (int64_t j = -lo; j < n + hi; ++j) {
      int64_t k = j;
      if (mode == "replicate")
        k = std::clamp<int64_t>(j, 0, n - 1);
      else
        k = j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
      idx.push_back(k);
    }
    out = index_select(out, d, tensor(idx).to(input.device()));
  }
  return out;
}

// Tensors join in their promoted dtype (cat_meta checks them), each copied into its slice of
// the output (the CPU has a one-pass kernel, kernels/cpu/index.cpp).
Tensor cat_kernel(const std::vector<Tensor>& tensors, int64_t dim) {
  return cat_by_copies(cat_meta(tensors, dim));
}

Tensor stack_kernel(const std::vector<Tensor>& tensors, int64_t dim) {
  XTEN_CHECK(!tensors.empty(), ValueError, "stack", "expected a non-empty list of tensors");
  const int64_t d = wrap_dim("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    XTEN_CHECK(tensors[i].sizes() == tensors[0].sizes(), ValueError, "stack",
               "all tensors must have the same shape: tensor 0 has {}, tensor {} has {}",
               tensors[0].sizes(), i, tensors[i].sizes());
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

Tensor arange_like(int64_t n, const Tensor& t) {
  return arange(n, TensorOptions(kLong).device(t.device()));
}

Tensor flip_kernel(const Tensor& self, IntArrayRef dims) {
  Tensor out = self;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)), false);
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim("flip", dim, self.dim());
    XTEN_CHECK(!seen[d], ValueError, "flip", "dim {} appears more than once in {}", d, dims);
    seen[d] = true;
    if (self.dim() == 0) continue;
    out = index_select(
        out, d, arange(self.size(d) - 1, -1, -1, TensorOptions(kLong).device(self.device())));
  }
  return out.is_same(self) ? self.clone() : out;
}

Tensor roll_kernel(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  if (dims.empty()) {
    XTEN_CHECK(shifts.size() == 1, ValueError, "roll",
               "without dims, shifts must have one value, but got {}", shifts);
    return roll(self.reshape({-1}), shifts, {0}).view(self.sizes());
  }
  XTEN_CHECK(shifts.size() == dims.size(), ValueError, "roll",
             "shifts {} and dims {} must have the same length", shifts, dims);
  Tensor out = self.clone();
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim("roll", dims[i], self.dim()), n = self.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    // out[j] = in[(j - s) mod n]
    out = index_select(out, d, remainder(arange_like(n, self) - s, n));
  }
  return out;
}

Tensor repeat_kernel(const Tensor& self, IntArrayRef repeats) {
  XTEN_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(), ValueError, "repeat",
             "the number of repeats ({}) must be at least the tensor's number of dims ({})",
             repeats.size(), self.dim());
  const int64_t n = static_cast<int64_t>(repeats.size()), lead = n - self.dim();
  DimVector interleaved, expanded, result;
  for (int64_t i = 0; i < n; ++i) {
    XTEN_CHECK(repeats[i] >= 0, ValueError, "repeat", "repeats must be non-negative, but got {}",
               repeats);
    const int64_t size = i < lead ? 1 : self.size(i - lead);
    interleaved.push_back(1);
    interleaved.push_back(size);
    expanded.push_back(repeats[i]);
    expanded.push_back(size);
    result.push_back(repeats[i] * size);
  }
  return self.reshape(interleaved).expand(expanded).reshape(result);
}

// Keeps elements with (col - row) <= diagonal (tril) or >= diagonal (triu) of the last two dims.
Tensor triangle(const char* op, const Tensor& self, int64_t diagonal, bool lower) {
  XTEN_CHECK(self.dim() >= 2, ValueError, op,
             "expected a tensor with at least 2 dims, but got shape {}", self.sizes());
  const Tensor rows = arange_like(self.size(-2), self).unsqueeze(1);
  const Tensor cols = arange_like(self.size(-1), self).unsqueeze(0);
  const Tensor keep = lower ? (cols - rows) <= diagonal : (cols - rows) >= diagonal;
  return where(keep, self, zeros({}, self.dtype(), self.device()));
}
Tensor tril_kernel(const Tensor& self, int64_t diagonal) {
  return triangle("tril", self, diagonal, true);
}
Tensor triu_kernel(const Tensor& self, int64_t diagonal) {
  return triangle("triu", self, diagonal, false);
}

Tensor embedding_kernel(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  XTEN_CHECK(weight.dim() == 2, ValueError, "embedding", "weight must be 2-D, but got shape {}",
             weight.sizes());
  XTEN_CHECK(indices.dtype() == kLong || indices.dtype() == kInt, TypeError, "embedding",
             "expected int64 or int32 indices, but got {}", to_string(indices.dtype()));
  XTEN_CHECK(padding_idx >= -weight.size(0) && padding_idx < weight.size(0), ValueError,
             "embedding", "padding_idx {} is out of range for {} embeddings", padding_idx,
             weight.size(0));
  DimVector shape(indices.sizes());
  shape.push_back(weight.size(1));
  const Tensor flat = indices.reshape({-1});
  check_values_in_range(
      flat, 0, static_cast<double>(weight.size(0) - 1), "embedding",
      fmt::format("index {{}} is out of range for the weight's {} rows", weight.size(0)));
  Tensor rows = index_select(weight, 0, flat);
  if (padding_idx >= 0 && weight.requires_grad()) {
    // The padding row gets no gradient (PyTorch's convention): its picks are the same values
    // without history. (A negative padding_idx means none, as in PyTorch's aten::embedding.)
    const Tensor pad = eq(flat, padding_idx).unsqueeze(1);
    rows = where(pad, rows.detach(), rows);
  }
  return rows.view(shape);
}

Tensor one_hot_kernel(const Tensor& self, int64_t num_classes) {
  XTEN_CHECK(self.dtype() == kLong, TypeError, "one_hot",
             "expected an int64 tensor of class indices, but got {}", to_string(self.dtype()));
  if (num_classes < 0) num_classes = self.numel() ? self.amax().item<int64_t>() + 1 : 0;
  if (self.numel()) {
    const int64_t lo = self.amin().item<int64_t>(), hi = self.amax().item<int64_t>();
    XTEN_CHECK(lo >= 0 && hi < num_classes, ValueError, "one_hot",
               "class values must be in [0, {}), but got [{}, {}]", num_classes, lo, hi);
  }
  return eq(self.unsqueeze(-1), arange_like(num_classes, self)).to(kLong);
}

Tensor masked_fill_kernel(const Tensor& self, const Tensor& mask, const Scalar& value) {
  XTEN_CHECK(mask.dtype() == kBool, TypeError, "masked_fill", "expected a bool mask, but got {}",
             to_string(mask.dtype()));
  const DimVector shape = broadcast_shapes("masked_fill", self.sizes(), mask.sizes());
  XTEN_CHECK(IntArrayRef(shape) == self.sizes(), ValueError, "masked_fill",
             "mask of shape {} does not broadcast to self's shape {}", mask.sizes(), self.sizes());
  return where(mask, full({}, value, self.options()), self);
}

// The index tensors (int64/int32, or bool masks) for the leading dims, as one linear index
// into those dims flattened; masks become their nonzero coordinates.
std::pair<Tensor, int64_t> linear_index(const char* op, const Tensor& self,
                                        const std::vector<Tensor>& indices) {
  std::vector<Tensor> idx;
  for (const Tensor& t : indices) {
    if (t.dtype() == kBool) {
      const Tensor nz = nonzero(t);
      for (int64_t k = 0; k < t.dim(); ++k) idx.push_back(nz.select(1, k));
    } else {
      XTEN_CHECK(t.dtype() == kLong || t.dtype() == kInt, TypeError, op,
                 "indices must be int64, int32 or bool tensors, but got {}", to_string(t.dtype()));
      idx.push_back(t.to(kLong));
    }
  }
  const int64_t k = static_cast<int64_t>(idx.size());
  XTEN_CHECK(k >= 1 && k <= self.dim(), IndexError, op,
             "too many indices ({}) for a tensor of {} dims", k, self.dim());
  Tensor lin = zeros({}, kLong, self.device());
  for (int64_t d = 0; d < k; ++d) {
    const int64_t n = self.size(d);
    const Tensor& i = idx[d];
    check_values_in_range(i, static_cast<double>(-n), static_cast<double>(n - 1), op,
                          fmt::format("index {{}} is out of range for dim {} of size {}", d, n));
    lin = lin * n + remainder(i, std::max<int64_t>(n, 1));
  }
  return {lin, k};
}

Tensor index_kernel(const Tensor& self, const std::vector<Tensor>& indices) {
  auto [lin, k] = linear_index("index", self, indices);
  DimVector shape(lin.sizes());
  for (int64_t d = k; d < self.dim(); ++d) shape.push_back(self.size(d));
  const Tensor flat = k > 1 ? self.flatten(0, k - 1) : self;
  return index_select(flat, 0, lin.reshape({-1})).view(shape);
}

Tensor index_put_kernel(const Tensor& self, const std::vector<Tensor>& indices,
                        const Tensor& values, bool accumulate) {
  check_no_internal_overlap("index_put_", self);
  auto [lin, k] = linear_index("index_put_", self, indices);
  DimVector vshape(lin.sizes());
  for (int64_t d = k; d < self.dim(); ++d) vshape.push_back(self.size(d));
  const Tensor v = values.to(self.dtype()).expand(vshape);  // errors if values do not fit
  if (lin.numel() == 0) return self;
  // Rows of the first k dims flattened, in a contiguous buffer (self itself when it is one).
  Tensor buf = self.is_contiguous() ? self : self.contiguous();
  int64_t nrows = 1;
  for (int64_t d = 0; d < k; ++d) nrows *= self.size(d);
  const Tensor rows = buf.reshape({nrows, -1});
  Dispatcher::singleton()
      .find("xten::_index_put_rows_")
      .typed<Tensor(const Tensor&, const Tensor&, const Tensor&, bool)>()
      .call(rows, lin.reshape({-1}), v.reshape({lin.numel(), -1}), accumulate);
  if (!buf.is_same(self)) Tensor(self).copy_(buf);
  return self;
}

Tensor argsort_kernel(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(sort(self, dim, descending));
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("pad", pad_kernel);
  m.impl("cat", cat_kernel);
  m.impl("stack", stack_kernel);
  m.impl("flip", flip_kernel);
  m.impl("roll", roll_kernel);
  m.impl("repeat", repeat_kernel);
  m.impl("tril", tril_kernel);
  m.impl("triu", triu_kernel);
  m.impl("embedding", embedding_kernel);
  m.impl("one_hot", one_hot_kernel);
  m.impl("masked_fill", masked_fill_kernel);
  m.impl("index.Tensor", index_kernel);
  m.impl("index_put_", index_put_kernel);
  m.impl("argsort", argsort_kernel);
}

}  // namespace xten
