// XPU indexing (index.cl): index_select, gather, scatter (value or src; scatter_add with
// atomics), nonzero and masked_select (a cumsum of the kept flags, then compaction), sort and
// topk (a bitonic network over index arrays), and the row writes behind index_put_. The
// checks are the CPU's (kernels/common/op_checks.h); an out-of-range index is found on the
// device (a flag) and reported with the CPU's message from a host copy of the index.
// nonzero and masked_select read their output size back (one synchronization), as on any GPU.
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/common/reduce_rows.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

// Raw copies move elements by width.
std::string width_tag(ScalarType t) {
  return "w" + std::to_string(element_size(t));
}

Kernel& index_kernel(const char* op, const Tensor& t, const std::string& name) {
  return get_kernel(device_of(t), op, family_for("index", {t.dtype()}), name);
}

// The device's out-of-range flag for one launch; check() raises the CPU's IndexError.
struct RangeFlag {
  Tensor flag;
  explicit RangeFlag(const Tensor& like)
      : flag(zeros({1}, TensorOptions().dtype(kInt).device(like.device()))) {}
  void* ptr() const { return flag.data_ptr(); }
  void check(const char* op, const Tensor& index, int64_t size, int64_t dim) const {
    if (flag.item<int32_t>() == 0) return;
    index_values(op, index.to(kCPU), size, dim);  // raises the IndexError
    XTEN_CHECK(false, IndexError, op, "an index is out of range for dim {} of size {}", dim, size);
  }
};

// The index on the device as contiguous int64.
Tensor device_index(const char* op, const Tensor& index, const Tensor& self) {
  check_index_dtype(op, index);
  check_same_device(op, {&self, &index});
  return index.to(kLong).contiguous();
}

Long8 long8_of(const char* op, IntArrayRef v) {
  XTEN_CHECK(v.size() <= 8, NotImplementedError, op,
             "XPU indexing takes at most 8 dims, but got {}", v.size());
  Long8 out{};
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  return out;
}

Tensor index_select_kernel(const Tensor& self, int64_t dim, const Tensor& index) {
  check_index_select_index(index);
  const Tensor s = self.dim() == 0 ? self.reshape({1}) : self;
  const int64_t d = wrap_dim("index_select", dim, s.dim());
  const Tensor idx = device_index("index_select", index, self).reshape({-1});
  const Tensor x = s.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= s.size(i);
  for (int64_t i = d + 1; i < s.dim(); ++i) inner *= s.size(i);
  const int64_t n = s.size(d), k = idx.numel();
  DimVector shape(s.sizes());
  shape[d] = k;
  Tensor out = empty(shape, self.dtype(), self.device());
  if (out.numel() == 0) {
    if (k > 0) index_values("index_select", index.to(kCPU), n, d);  // still range-checked
  } else {
    const RangeFlag flag(out);
    launch(stream_of(out),
           index_kernel("index_select", out, "index_select_" + width_tag(out.dtype())), out.numel(),
           out.data_ptr(), x.data_ptr(), idx.data_ptr(), n, k, inner, out.numel(), flag.ptr());
    flag.check("index_select", index, n, d);
  }
  return self.dim() == 0 && index.dim() == 0 ? out.reshape({}) : out;
}

Tensor gather_kernel(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim("gather", dim, self.dim());
  if (self.dim() == 0) return index_select_kernel(self, 0, index);
  check_gather_shapes("gather", self, d, index, nullptr);
  const Tensor idx = device_index("gather", index, self);
  Tensor out = empty(index.sizes(), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const RangeFlag flag(out);
  launch(stream_of(out), index_kernel("gather", out, "gather_" + width_tag(out.dtype())),
         out.numel(), out.data_ptr(), self.data_ptr(), idx.data_ptr(),
         static_cast<int32_t>(index.dim()), long8_of("gather", index.sizes()),
         long8_of("gather", self.strides()), static_cast<int32_t>(d), self.size(d), out.numel(),
         flag.ptr());
  flag.check("gather", index, self.size(d), d);
  return out;
}

// A contiguous copy of self with src scattered along dim (added with atomics when `add`).
Tensor scatter_impl(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor& src, bool add) {
  const int64_t d = wrap_dim(op, dim, self.dim());
  check_scatter_src(op, self, src);
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  device_copy(out, self);
  if (self.dim() == 0) return out;
  check_gather_shapes(op, self, d, index, &src);  // an empty index too (its shape can be wrong)
  if (index.numel() == 0) return out;
  check_same_device(op, {&self, &src});
  const Tensor idx = device_index(op, index, self);
  const std::string kernel = add ? std::string("scatter_add_") + dtype_tag(self.dtype())
                                 : "scatter_" + width_tag(self.dtype());
  const RangeFlag flag(out);
  launch(stream_of(out), index_kernel(op, out, kernel), index.numel(), out.data_ptr(),
         src.data_ptr(), idx.data_ptr(), static_cast<int32_t>(index.dim()),
         long8_of(op, index.sizes()), long8_of(op, out.strides()), long8_of(op, src.strides()),
         static_cast<int32_t>(d), self.size(d), index.numel(), flag.ptr());
  flag.check(op, index, self.size(d), d);
  return out;
}

// The kept flags of a flattened bool tensor, their running count (cumsum) and total.
struct Kept {
  Tensor flags, pos;
  int64_t count = 0;
};
Kept kept_positions(const Tensor& flags) {
  Kept k;
  k.flags = flags.reshape({-1}).contiguous();
  k.pos = cumsum(k.flags, 0);
  if (k.pos.numel() > 0) k.count = k.pos.select(0, -1).item<int64_t>();
  return k;
}

Tensor nonzero_kernel(const Tensor& self) {
  const Kept k = kept_positions(ne(self, 0));
  Tensor out = empty({k.count, self.dim()}, kLong, self.device());
  if (k.count > 0 && self.dim() > 0) {
    Kernel& kern = get_kernel(device_of(out), "nonzero", "index", "nonzero_coords");
    launch(stream_of(out), kern, k.flags.numel(), out.data_ptr(), k.flags.data_ptr(),
           k.pos.data_ptr(), static_cast<int32_t>(self.dim()), long8_of("nonzero", self.sizes()),
           k.flags.numel());
  }
  return out;
}

Tensor masked_select_kernel(const Tensor& self, const Tensor& mask) {
  check_masked_select_mask(mask);
  check_same_device("masked_select", {&self, &mask});
  const DimVector shape = broadcast_shapes("masked_select", self.sizes(), mask.sizes());
  const Tensor x = self.expand(shape).contiguous();
  const Kept k = kept_positions(mask.expand(shape));
  Tensor out = empty({k.count}, self.dtype(), self.device());
  if (k.count > 0)
    launch(stream_of(out), index_kernel("masked_select", out, "compact_" + width_tag(out.dtype())),
           x.numel(), out.data_ptr(), x.data_ptr(), k.flags.data_ptr(), k.pos.data_ptr(),
           x.numel());
  return out;
}

// The first k of each row along dim in sorted order (the CPU's stable order), with indices.
constexpr int64_t kTopkRowsMax = 16;  // TOPK_MAX in index.cl

std::tuple<Tensor, Tensor> sort_rows(const char* op, const Tensor& self, int64_t dim,
                                     bool descending, int64_t k) {
  const SortRows m = sort_rows_meta(op, self, dim, k);
  if (m.zero_dim) return m.finish();
  const Tensor &rows_in = m.rows_in, &values = m.values, &indices = m.indices;
  const int64_t n = m.n, rows = m.rows;
  if (rows > 0 && k > 0 && k <= kTopkRowsMax && k < n) {  // a few of each row: one pass
    launch(stream_of(values),
           index_kernel(op, self, std::string("topk_rows_") + dtype_tag(self.dtype())), rows,
           values.data_ptr(), indices.data_ptr(), rows_in.data_ptr(), n, k,
           static_cast<int32_t>(descending ? 1 : 0), rows);
  } else if (rows > 0 && k > 0) {
    int64_t p = 1;
    while (p < n) p <<= 1;
    Tensor idx = empty({rows * p}, kLong, self.device());
    const Stream s = stream_of(values);
    const std::string tag = dtype_tag(self.dtype());
    launch(s, get_kernel(device_of(values), op, "index", "sort_init"), rows * p, idx.data_ptr(), p,
           rows * p);
    Kernel& step = index_kernel(op, self, "bitonic_" + tag);
    const int32_t desc = descending ? 1 : 0;
    for (int64_t size = 2; size <= p; size <<= 1)
      for (int64_t j = size >> 1; j > 0; j >>= 1)
        launch(s, step, rows * p, idx.data_ptr(), rows_in.data_ptr(), n, p, j, size, desc,
               rows * p);
    launch(s, index_kernel(op, self, "take_sorted_" + tag), rows * k, values.data_ptr(),
           indices.data_ptr(), rows_in.data_ptr(), idx.data_ptr(), n, p, k, rows * k);
  }
  return m.finish();
}

// self[index[j], ...] = values[j, ...] along dim 0 (atomically += when accumulating).
Tensor index_put_rows_kernel(const Tensor& self, const Tensor& index, const Tensor& values,
                             bool accumulate) {
  XTEN_CHECK(self.dim() >= 1 && index.dim() == 1, ValueError, "index_put_",
             "internal row layout expected");
  XTEN_CHECK(self.is_contiguous(), ValueError, "index_put_", "internal: rows must be contiguous");
  const Tensor idx = device_index("index_put_", index, self);
  DimVector vshape(self.sizes());
  vshape[0] = idx.numel();
  const Tensor v = values.to(self.dtype()).expand(vshape).contiguous();
  const int64_t inner = self.numel() / std::max<int64_t>(self.size(0), 1);
  const int64_t total = idx.numel() * inner;
  if (total == 0) {
    if (idx.numel() > 0) index_values("index_put_", index.to(kCPU), self.size(0), 0);
    return self;
  }
  const std::string kernel = accumulate ? std::string("put_rows_add_") + dtype_tag(self.dtype())
                                        : "put_rows_" + width_tag(self.dtype());
  const RangeFlag flag(self);
  launch(stream_of(self), index_kernel("index_put_", self, kernel), total, self.data_ptr(),
         v.data_ptr(), idx.data_ptr(), self.size(0), inner, total, flag.ptr());
  flag.check("index_put_", index, self.size(0), 0);
  return self;
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("index_select", index_select_kernel);
  m.impl("gather", gather_kernel);
  m.impl("scatter.src",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
           return scatter_impl("scatter", self, dim, index, src, false);
         });
  m.impl("scatter.value",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
           return scatter_impl("scatter", self, dim, index,
                               full(index.sizes(), value, self.options()), false);
         });
  m.impl("scatter_add",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
           check_scatter_add_dtype(self);
           return scatter_impl("scatter_add", self, dim, index, src, true);
         });
  m.impl("nonzero", nonzero_kernel);
  m.impl("masked_select", masked_select_kernel);
  m.impl("sort", [](const Tensor& self, int64_t dim, bool descending) {
    return sort_rows("sort", self, dim, descending,
                     self.dim() ? self.size(wrap_dim("sort", dim, self.dim())) : 1);
  });
  m.impl("topk", [](const Tensor& self, int64_t k, int64_t dim, bool largest, bool) {
    return sort_rows("topk", self, dim, largest, k);
  });
  m.impl("_index_put_rows_", index_put_rows_kernel);
}

}  // namespace xten::xpu
