// XPU copy_ (within a device, between devices, and to and from the CPU) and fill_.
// Within a device every copy is one strided kernel, copy_<src>_<dst>, that converts dtypes
// as the CPU kernels do; across devices or the host boundary, contiguous bytes move with
// Level Zero copies and the strided kernel (or the CPU copy) does the rest.
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/xpu/ops/xpu_ops.h>
#include <xten/kernels/xpu/runtime/module_cache.h>

namespace xten::xpu {

const char* dtype_tag(ScalarType t) {
  switch (t) {
    case kBool:
      return "b8";
    case kByte:
      return "u8";
    case kChar:
      return "i8";
    case kShort:
      return "i16";
    case kInt:
      return "i32";
    case kLong:
      return "i64";
    case kHalf:
      return "f16";
    case kBFloat16:
      return "bf16";
    case kFloat:
      return "f32";
    case kDouble:
      return "f64";
    default:
      XTEN_FAIL(TypeError, "xpu", "dtype {} has no XPU kernels", to_string(t));
  }
}

std::string family_for(const char* family, std::initializer_list<ScalarType> dtypes) {
  bool integral = false;
  for (ScalarType t : dtypes) {
    if (t == kDouble) return std::string(family) + "_f64";
    integral = integral || !is_floating_type(t);
  }
  if (integral && has_spirv_module(std::string(family) + "_int"))
    return std::string(family) + "_int";
  return family;
}

Geometry geometry(const char* op, IntArrayRef sizes, std::initializer_list<IntArrayRef> strides) {
  Geometry g;
  const size_t k = strides.size();
  XTEN_ASSERT(k >= 1 && k <= static_cast<size_t>(Geometry::kMaxOperands));
  const IntArrayRef* st = strides.begin();
  g.numel = 1;
  DimVector sz;
  std::array<DimVector, Geometry::kMaxOperands> ops;
  for (size_t d = 0; d < sizes.size(); ++d) {
    g.numel *= sizes[d];
    if (sizes[d] == 1) continue;
    bool mergeable = !sz.empty();
    for (size_t j = 0; j < k && mergeable; ++j) mergeable = ops[j].back() == st[j][d] * sizes[d];
    if (mergeable) {  // with the outer neighbour
      sz.back() *= sizes[d];
      for (size_t j = 0; j < k; ++j) ops[j].back() = st[j][d];
      continue;
    }
    sz.push_back(sizes[d]);
    for (size_t j = 0; j < k; ++j) ops[j].push_back(st[j][d]);
  }
  XTEN_CHECK(sz.size() <= 8, NotImplementedError, op,
             "XPU kernels take at most 8 non-mergeable dims, but got {} (shape {})", sz.size(),
             sizes);
  g.ndim = sz.empty() ? 1 : static_cast<int32_t>(sz.size());
  g.sizes[0] = 1;
  for (size_t d = 0; d < sz.size(); ++d) {
    g.sizes[d] = sz[d];
    for (size_t j = 0; j < k; ++j) g.st[j][d] = ops[j][d];
  }
  return g;
}

void device_copy(const Tensor& dst_, const Tensor& src_) {
  // Walked in the destination's memory order (Note [Pointwise layout], core/meta.h).
  Tensor dst = dst_, src = src_;
  if (!all_contiguous({&dst, &src})) {
    const DimVector order = pointwise_dim_order(dst.sizes(), {&dst, &src});
    dst = dst.permute(order);
    src = src.permute(order);
  }
  const Geometry g = geometry("copy_", dst.sizes(), {dst.strides(), src.strides()});
  if (g.numel == 0) return;
  const std::string name =
      std::string("copy_") + dtype_tag(src.dtype()) + "_" + dtype_tag(dst.dtype());
  const std::string family = family_for("copy", {src.dtype(), dst.dtype()});
  if (g.ndim == 1) {  // the one-dim variant
    Kernel& k = get_kernel(device_of(dst), "copy_", family, name + "_1d");
    launch(stream_of(dst), k, g.numel, dst.data_ptr(), src.data_ptr(), g.numel, g.st[0][0],
           g.st[1][0]);
    return;
  }
  if (g.ndim == 2) {  // the two-dim variant: one division per element, not the long8 walk
    Kernel& k = get_kernel(device_of(dst), "copy_", family, name + "_2d");
    launch(stream_of(dst), k, g.numel, dst.data_ptr(), src.data_ptr(), g.numel, g.sizes[1],
           g.st[0][0], g.st[0][1], g.st[1][0], g.st[1][1]);
    return;
  }
  Kernel& k = get_kernel(device_of(dst), "copy_", family, name);
  launch(stream_of(dst), k, g.numel, dst.data_ptr(), src.data_ptr(), g.numel, g.ndim, g.sizes,
         g.st[0], g.st[1]);
}

namespace {

Tensor copy_kernel(const Tensor& self, const Tensor& src) {
  const DimVector shape = broadcast_shapes("copy_", self.sizes(), src.sizes());
  XTEN_CHECK(IntArrayRef(shape) == self.sizes(), ValueError, "copy_",
             "source of shape {} cannot be broadcast to the destination's shape {}", src.sizes(),
             self.sizes());
  if (self.is_same(src) || self.numel() == 0) return self;
  check_no_internal_overlap("copy_", self);
  const bool dst_xpu = self.device().type() == kXPU, src_xpu = src.device().type() == kXPU;
  XTEN_CHECK(dst_xpu || src_xpu, DeviceError, "copy_",
             "the XPU copy kernel got tensors on {} and {}", self.device().str(),
             src.device().str());
  XTEN_CHECK((dst_xpu || self.is_cpu()) && (src_xpu || src.is_cpu()), NotImplementedError, "copy_",
             "copy between {} and {} is not supported", self.device().str(), src.device().str());

  if (dst_xpu && src_xpu && device_of(self) == device_of(src)) {
    device_copy(self, src.expand(self.sizes()));
  } else if (dst_xpu && src_xpu) {
    // Across devices: the source's bytes, contiguous, are copied after its stream has
    // finished producing them; the destination's stream then converts and scatters.
    const Tensor s = src.contiguous();
    stream_of(s).synchronize();
    Tensor staged = empty(src.sizes(), src.dtype(), self.device());
    memcpy_async(stream_of(self), staged.data_ptr(), s.data_ptr(), s.nbytes());
    device_copy(self, staged.expand(self.sizes()));
  } else if (dst_xpu) {
    // From the host: convert and broadcast on the CPU into the destination's layout where it
    // fills its memory (contiguous or channels-last), then one copy of the bytes; other
    // destinations are scattered on the device from contiguous bytes.
    const MemoryFormat f = self.suggest_memory_format();
    const bool dense = self.is_contiguous(f);
    const MemoryFormat host_format = dense ? f : MemoryFormat::Contiguous;
    Tensor host = src.expand(self.sizes());
    if (host.dtype() != self.dtype() || !host.is_contiguous(host_format)) {
      Tensor converted =
          empty(self.sizes(), TensorOptions(self.dtype()).memory_format(host_format));
      host = converted.copy_(host);
    }
    if (dense) {
      memcpy_blocking(stream_of(self), self.data_ptr(), host.data_ptr(), host.nbytes());
    } else {
      Tensor staged = empty(self.sizes(), self.dtype(), self.device());
      memcpy_blocking(stream_of(self), staged.data_ptr(), host.data_ptr(), host.nbytes());
      device_copy(self, staged);
    }
  } else {
    // To the host: the bytes of a contiguous or channels-last source come back as they lie
    // (others made contiguous first); the CPU copy converts, broadcasts, scatters.
    const MemoryFormat f = src.suggest_memory_format();
    const Tensor s = src.is_contiguous(f) ? src : src.contiguous();
    const MemoryFormat sf = s.is_contiguous() ? MemoryFormat::Contiguous : f;
    Tensor host =
        self.is_contiguous(sf) && self.dtype() == src.dtype() && self.sizes() == src.sizes()
            ? self
            : empty(src.sizes(), TensorOptions(src.dtype()).memory_format(sf));
    memcpy_blocking(stream_of(s), host.data_ptr(), s.data_ptr(), s.nbytes());
    if (!host.is_same(self)) {
      Tensor out = self;
      out.copy_(host);
    }
  }
  return self;
}

Tensor fill_kernel(const Tensor& self, const Scalar& value) {
  device_of(self);
  if (self.numel() == 0) return self;
  check_no_internal_overlap("fill_", self);
  // The value's bytes in the tensor's dtype, converted exactly as on the CPU.
  const Tensor bits = full({}, value, TensorOptions().dtype(self.dtype()));
  const size_t width = element_size(self.dtype());
  if (self.is_contiguous()) {
    memset_async(stream_of(self), self.data_ptr(), bits.data_ptr(), width, self.nbytes());
    return self;
  }
  const Geometry g = geometry("fill_", self.sizes(), {self.strides()});
  Kernel& k = get_kernel(device_of(self), "fill_", "copy", "fill_" + std::to_string(width * 8));
  const Stream st = stream_of(self);
  const void* v = bits.data_ptr();
  switch (width) {
    case 1:
      launch(st, k, g.numel, self.data_ptr(), *static_cast<const uint8_t*>(v), g.numel, g.ndim,
             g.sizes, g.st[0]);
      break;
    case 2:
      launch(st, k, g.numel, self.data_ptr(), *static_cast<const uint16_t*>(v), g.numel, g.ndim,
             g.sizes, g.st[0]);
      break;
    case 4:
      launch(st, k, g.numel, self.data_ptr(), *static_cast<const uint32_t*>(v), g.numel, g.ndim,
             g.sizes, g.st[0]);
      break;
    default:
      launch(st, k, g.numel, self.data_ptr(), *static_cast<const uint64_t*>(v), g.numel, g.ndim,
             g.sizes, g.st[0]);
      break;
  }
  return self;
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("copy_", copy_kernel);
  m.impl("fill_", fill_kernel);
}

}  // namespace xten::xpu
