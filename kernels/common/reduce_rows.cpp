#include <xten/kernels/common/reduce_rows.h>

#include <algorithm>
#include <numeric>

#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/op_checks.h>

namespace xten {

std::vector<int64_t> reduction_dims(const char* op, const Tensor& self, IntArrayRef dims) {
  std::vector<bool> mask(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, self.dim());
    XTEN_CHECK(!mask[w] || dims.empty(), ValueError, op, "dim {} appears more than once in {}", w,
               dims);
    mask[w] = true;
  }
  std::vector<int64_t> out;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) out.push_back(d);
  return out;
}

Rows make_rows(const char* op, const Tensor& self, IntArrayRef dims, ScalarType dtype) {
  Rows r;
  r.rdims = reduction_dims(op, self, dims);
  std::vector<bool> reduced(static_cast<size_t>(self.dim()), false);
  for (int64_t d : r.rdims) reduced[d] = true;
  DimVector order;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (reduced[d]) continue;
    order.push_back(d);
    r.out_shape.push_back(self.size(d));
    r.outer *= self.size(d);
  }
  for (int64_t d : r.rdims) {
    order.push_back(d);
    r.inner *= self.size(d);
  }
  r.in = permute(self.to(dtype), order).contiguous();
  return r;
}

std::optional<DimVector> memory_order(const Tensor& self) {
  if (self.is_contiguous()) return std::nullopt;
  DimVector order(static_cast<size_t>(self.dim()));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  if (!permute(self, order).is_contiguous()) return std::nullopt;
  return order;
}

Tensor reduced_in_input_order(const Tensor& kept, const Tensor& self,
                              const std::vector<int64_t>& rdims, bool keepdim) {
  Tensor out = kept;
  if (const std::optional<DimVector> order = memory_order(self)) {
    DimVector sizes, pos(order->size());
    for (size_t k = 0; k < order->size(); ++k) {
      sizes.push_back(kept.size((*order)[k]));
      pos[static_cast<size_t>((*order)[k])] = static_cast<int64_t>(k);
    }
    Tensor laid = permute(empty_tensor(sizes, kept.dtype(), kept.device()), pos);
    if (!laid.is_contiguous() || !kept.is_contiguous()) {
      if (laid.strides() != kept.strides()) {
        laid.copy_(kept);
        out = laid;
      }
    }
  }
  if (keepdim) return out;
  for (auto d = rdims.rbegin(); d != rdims.rend(); ++d) out = out.squeeze(*d);
  return out;
}

Tensor finish(const Tensor& out, const Tensor& self, const Rows& r, bool keepdim) {
  DimVector kept(self.sizes());
  for (int64_t d : r.rdims) kept[d] = 1;
  return reduced_in_input_order(out.view(kept), self, r.rdims, keepdim);
}

void check_nonempty(const char* op, const Tensor& self, const Rows& r) {
  XTEN_CHECK(r.inner > 0 || r.outer == 0, ValueError, op,
             "cannot reduce over a zero-size dimension (input shape {}); give a dim of nonzero "
             "size",
             self.sizes());
}

ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  return dtype ? *dtype : is_integral_type(self.dtype(), true) ? kLong : self.dtype();
}

SortRows sort_rows_meta(const char* op, const Tensor& self, int64_t dim, int64_t k) {
  SortRows r;
  r.self = self;
  if (self.dim() == 0) {
    r.zero_dim = true;
    return r;
  }
  r.d = wrap_dim(op, dim, self.dim());
  r.rows_in = self.transpose(r.d, -1).contiguous();
  r.n = r.rows_in.size(-1);
  check_topk_k(op, k, r.n, r.d);
  r.k = k;
  DimVector shape(r.rows_in.sizes());
  shape.back() = k;
  r.values = empty_tensor(shape, self.dtype(), self.device());
  r.indices = empty_tensor(shape, kLong, self.device());
  r.rows = r.n ? r.rows_in.numel() / r.n : 0;
  return r;
}

std::tuple<Tensor, Tensor> SortRows::finish() const {
  if (zero_dim) return {self.clone(), zeros({}, TensorOptions(kLong).device(self.device()))};
  return {values.transpose(d, -1).contiguous(), indices.transpose(d, -1).contiguous()};
}

std::optional<Tensor> reduce_in_memory_order(
    const char* op, const Tensor& self, IntArrayRef dims, bool keepdim,
    const std::function<Tensor(const Tensor&, IntArrayRef)>& reduce_keepdim) {
  if (self.numel() == 0) return std::nullopt;
  const std::optional<DimVector> order = memory_order(self);
  if (!order) return std::nullopt;
  DimVector pos(order->size()), mdims;  // pos[d]: where dim d is in memory order
  for (size_t k = 0; k < order->size(); ++k) pos[static_cast<size_t>((*order)[k])] = k;
  const std::vector<int64_t> rd = reduction_dims(op, self, dims);
  for (int64_t d : rd) mdims.push_back(pos[static_cast<size_t>(d)]);
  const Tensor kept = permute(reduce_keepdim(permute(self, *order), mdims), pos);
  return reduced_in_input_order(kept, self, rd, keepdim);
}

int64_t leading_dims_reduction(const char* op, const Tensor& self, IntArrayRef dims,
                               ScalarType out_dtype) {
  if (self.dtype() != out_dtype || !is_floating_type(out_dtype) || !self.is_contiguous() ||
      dims.empty() || self.numel() == 0)
    return 0;
  const std::vector<int64_t> rd = reduction_dims(op, self, dims);
  for (size_t k = 0; k < rd.size(); ++k)
    if (rd[k] != static_cast<int64_t>(k)) return 0;
  return static_cast<int64_t>(rd.size()) < self.dim() ? static_cast<int64_t>(rd.size()) : 0;
}

}  // namespace xten
