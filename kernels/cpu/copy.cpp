// copy_ and fill_ on CPU, and the dtype conversions the elementwise engine uses.
#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>

#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {

void convert_element(const void* src, ScalarType src_dtype, void* dst, ScalarType dst_dtype) {
  visit_dtype<dtypes::kAll>("copy_", src_dtype, [&](auto s) {
    using S = typename decltype(s)::type;
    visit_dtype<dtypes::kAll>("copy_", dst_dtype, [&](auto d) {
      using D = typename decltype(d)::type;
      *static_cast<D*>(dst) = cast_value<D>(*static_cast<const S*>(src));
    });
  });
}

namespace {
struct Identity {
  template <class M>
  M operator()(M x) const {
    return x;
  }
};
}  // namespace

void copy_into(const char* op, const Tensor& dst, const Tensor& src) {
  XTEN_CHECK(dst.is_cpu() && src.is_cpu(), DeviceError, op,
             "the CPU copy kernel got tensors on {} and {}", dst.device().str(),
             src.device().str());
  Elementwise e(op, dst, {src});
  // The input stays in its dtype; the loop converts each element on store.
  e.keep_input_dtype(0).compute_dtype(src.dtype()).result_dtype(dst.dtype());
  e.prepare();
  visit_dtype<dtypes::kAll>(op, src.dtype(), [&](auto s) {
    using S = typename decltype(s)::type;
    visit_dtype<dtypes::kAll>(op, dst.dtype(), [&](auto d) {
      using D = typename decltype(d)::type;
      e.run([](char** data, const int64_t* st, int64_t n) {
        if (st[0] == sizeof(D) && st[1] == sizeof(S)) {
          if constexpr (std::is_same_v<D, S>) {
            std::memcpy(data[0], data[1], static_cast<size_t>(n) * sizeof(D));
          } else {
            D* __restrict__ out = reinterpret_cast<D*>(data[0]);
            const S* __restrict__ in = reinterpret_cast<const S*>(data[1]);
            for (int64_t i = 0; i < n; ++i) out[i] = cast_value<D>(in[i]);
          }
          return;
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<D*>(data[0] + i * st[0]) =
              cast_value<D>(*reinterpret_cast<const S*>(data[1] + i * st[1]));
      });
    });
  });
}

namespace {

Tensor copy_kernel(const Tensor& self, const Tensor& src) {
  XTEN_CHECK(self.is_cpu() && src.is_cpu(), NotImplementedError, "copy_",
             "copy between {} and {} needs a device kernel; none is registered for it",
             self.device().str(), src.device().str());
  if (self.is_same(src) || self.numel() == 0) {
    broadcast_shapes("copy_", self.sizes(), src.sizes());
    return self;
  }
  copy_into("copy_", self, src);
  return self;
}

Tensor fill_kernel(const Tensor& self, const Scalar& value) {
  visit_dtype<dtypes::kAll>("fill_", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.is_floating_point() ? cast_value<T>(value.to<double>())
                : value.is_boolean()      ? cast_value<T>(value.to<bool>())
                                          : cast_value<T>(value.to<int64_t>());
    Elementwise e("fill_", self, {});
    e.compute_dtype(self.dtype());
    e.run([v](char** data, const int64_t* st, int64_t n) {
      if (st[0] == sizeof(T)) {
        std::fill_n(reinterpret_cast<T*>(data[0]), n, v);
        return;
      }
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * st[0]) = v;
    });
  });
  return self;
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("copy_", copy_kernel);
  m.impl("fill_", fill_kernel);
}

}  // namespace xten::cpu
