// Tensors on XPU: factories, fill_, copy_ and to() between CPU and XPU and between XPU devices,
// for every dtype and layout; printing, data_ptr, item; the missing-kernel error for the rest.
#include <xten/kernels/xpu/runtime/runtime.h>

#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using namespace xten::testing;

namespace {

const bool kEnv = set_xpu_test_env("1G");
const TensorOptions kXpu = TensorOptions().device(Device("xpu"));

TEST(XpuTensor, RoundTripOfEveryDtypeIsBitExact) {
  for (ScalarType t : all_dtypes()) {
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{}, {0}, {7}, {33, 65}, {2, 3, 4, 5}}) {
      const Tensor c = random_tensor(shape, t);
      const Tensor x = c.to("xpu");
      EXPECT_EQ(x.device().str(), "xpu:0");
      EXPECT_EQ(x.dtype(), t);
      EXPECT_TRUE(same_bytes(x.to(kCPU), c)) << to_string(t);
    }
  }
  // Every float16 and bfloat16 bit pattern, NaNs included.
  const Tensor bits = arange(-32768, 32768, 1, TensorOptions().dtype(kInt)).to(kShort);
  for (ScalarType t : {kHalf, kBFloat16}) {
    Tensor h = empty({65536}, TensorOptions().dtype(t));
    std::memcpy(h.data_ptr(), bits.data_ptr(), h.nbytes());
    EXPECT_TRUE(same_bytes(h.to("xpu").to(kCPU), h));
  }
}

TEST(XpuTensor, StridedAndConvertingCopiesMatchTheCpu) {
  for (ScalarType from : all_dtypes()) {
    const Tensor c = random_tensor({6, 10}, from, -100, 100);
    const Tensor x = c.to("xpu");
    for (ScalarType to : all_dtypes()) {
      const Tensor expected = c.t().to(to);  // the CPU's conversion
      // XPU -> XPU, strided source, converting.
      Tensor d = empty({10, 6}, kXpu.dtype(to));
      d.copy_(x.t());
      EXPECT_TRUE(same_bytes(d, expected)) << to_string(from) << " -> " << to_string(to);
      // CPU (strided) -> XPU (strided destination), converting.
      Tensor wide = zeros({10, 12}, kXpu.dtype(to));
      Tensor view = wide.slice(1, 0, std::nullopt, 2);
      view.copy_(c.t());
      EXPECT_TRUE(same_bytes(view, expected)) << to_string(from) << " -> " << to_string(to);
      // XPU (strided) -> CPU (strided), converting.
      Tensor host = zeros({6, 10}, TensorOptions().dtype(to)).t();
      host.copy_(x.t());
      EXPECT_TRUE(same_bytes(host, expected)) << to_string(from) << " -> " << to_string(to);
    }
  }
}

TEST(XpuTensor, BroadcastingCopiesAndErrors) {
  Tensor d = zeros({4, 3}, kXpu);
  d.copy_(tensor({1.0f, 2.0f, 3.0f}));
  EXPECT_TRUE(same_bytes(d, tensor({1.0f, 2.0f, 3.0f}).expand({4, 3})));
  d.copy_(full({4, 1}, 5, kXpu.dtype(kLong)));
  EXPECT_TRUE(same_bytes(d, full({4, 3}, 5.0f)));
  Tensor h = zeros({2, 4, 3});
  h.copy_(d);
  EXPECT_TRUE(same_bytes(h, full({2, 4, 3}, 5.0f)));
  EXPECT_THROW_MSG(d.copy_(ones({5})), ValueError, "[copy_]");
  EXPECT_THROW_MSG(ones({2}).copy_(d), ValueError, "[copy_]");
  Tensor e = zeros({3}, kXpu).expand({2, 3});
  EXPECT_THROW_MSG(e.copy_(ones({2, 3})), ValueError, "[copy_]");  // overlapping destination
  EXPECT_THROW_MSG(e.fill_(1), ValueError, "[fill_]");
}

TEST(XpuTensor, BetweenDevices) {
  const Tensor c = random_tensor({5, 7}, kFloat);
  const Tensor x0 = c.to("xpu:0");
  const Tensor x1 = x0.to("xpu:1");
  EXPECT_EQ(x1.device().str(), "xpu:1");
  EXPECT_TRUE(same_bytes(x1, c));
  Tensor y1 = zeros({7, 5}, TensorOptions().device(Device("xpu:1")).dtype(kHalf));
  y1.copy_(x0.t());
  EXPECT_TRUE(same_bytes(y1, c.t().to(kHalf)));
  EXPECT_TRUE(same_bytes(x1.to("xpu:0", kBFloat16), c.to(kBFloat16)));
}

TEST(XpuTensor, FactoriesMatchTheCpu) {
  for (ScalarType t : all_dtypes()) {
    EXPECT_TRUE(same_bytes(zeros({3, 4}, kXpu.dtype(t)), zeros({3, 4}, TensorOptions().dtype(t))));
    EXPECT_TRUE(same_bytes(ones({5}, kXpu.dtype(t)), ones({5}, TensorOptions().dtype(t))));
    EXPECT_TRUE(
        same_bytes(full({2, 2}, 3, kXpu.dtype(t)), full({2, 2}, 3, TensorOptions().dtype(t))));
    if (t == kBool) continue;
    EXPECT_TRUE(
        same_bytes(arange(-5, 50, 3, kXpu.dtype(t)), arange(-5, 50, 3, TensorOptions().dtype(t))));
    EXPECT_TRUE(same_bytes(arange(0.1, 9.7, 0.3, kXpu.dtype(t)),
                           arange(0.1, 9.7, 0.3, TensorOptions().dtype(t))))
        << to_string(t);
  }
  EXPECT_TRUE(same_bytes(eye(3, 4, kXpu), eye(3, 4)));
  EXPECT_TRUE(
      same_bytes(full({2}, 1.5, kXpu.dtype(kHalf)), full({2}, 1.5, TensorOptions().dtype(kHalf))));
  EXPECT_EQ(zeros({2}, TensorOptions().device(Device("xpu:1"))).device().str(), "xpu:1");
  // The CPU's argument errors, on XPU too.
  EXPECT_THROW_MSG(arange(0, 10, 0, kXpu), ValueError, "[arange] step must be nonzero");
  EXPECT_THROW_MSG(randint(5, 5, {2}, kXpu), ValueError, "[randint] expects low < high");
  EXPECT_THROW_MSG(randint(0, 300, {2}, kXpu.dtype(kByte)), ValueError, "does not fit dtype Byte");
  EXPECT_THROW(rand({2}, kXpu.dtype(kInt)), NotImplementedError);
  EXPECT_THROW(rand({2}, TensorOptions().dtype(kInt)), NotImplementedError);
}

TEST(XpuTensor, FillAndZeroOnEveryLayout) {
  for (ScalarType t : all_dtypes()) {
    Tensor x = zeros({4, 6}, kXpu.dtype(t));
    Tensor c = zeros({4, 6}, TensorOptions().dtype(t));
    x.narrow(1, 1, 3).fill_(7);  // strided
    c.narrow(1, 1, 3).fill_(7);
    x.select(0, 2).zero_();
    c.select(0, 2).zero_();
    x.t().narrow(0, 5, 1).fill_(-2.5);
    c.t().narrow(0, 5, 1).fill_(-2.5);
    EXPECT_TRUE(same_bytes(x, c)) << to_string(t);
  }
  Tensor s = full({}, 3.5, kXpu.dtype(kDouble));
  EXPECT_EQ(s.item<double>(), 3.5);
  EXPECT_EQ(empty({0}, kXpu).fill_(1).numel(), 0);
}

TEST(XpuTensor, PrintingDataPtrAndItem) {
  const Tensor x = arange(0, 4, 1, kXpu.dtype(kFloat));
  std::ostringstream os;
  os << x;
  EXPECT_EQ(os.str(), "tensor([0., 1., 2., 3.], device='xpu:0')");
  // data_ptr is the device allocation.
  ze_memory_allocation_properties_t p{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ze_device_handle_t dev = nullptr;
  ASSERT_EQ(zeMemGetAllocProperties(xpu::ze_context(0), x.data_ptr(), &p, &dev), ZE_RESULT_SUCCESS);
  EXPECT_EQ(p.type, ZE_MEMORY_TYPE_DEVICE);
  EXPECT_EQ(dev, xpu::ze_device(0));
  // item() waits for the work that produced the value.
  Tensor big = zeros({1 << 20}, kXpu);
  big.fill_(2);
  EXPECT_EQ(big.select(0, (1 << 20) - 1).item<float>(), 2.0f);
}

// Every xten op has an XPU kernel now (test_xpu_parity's registry test); an op defined with
// a CPU kernel only still reaches XPU tensors as the dispatcher's NotImplementedError.
TEST(XpuTensor, AnOpWithoutAnXpuKernelRaisesTheMissingKernelError) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("cpu_only(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("cpu_only", [](const Tensor& t) { return t; });
  auto call = [](const Tensor& t) {
    return Dispatcher::singleton().find("test::cpu_only").typed<Tensor(const Tensor&)>().call(t);
  };
  EXPECT_TRUE(call(ones({3})).defined());
  EXPECT_THROW_MSG(call(ones({3}, kXpu)), NotImplementedError,
                   "[xten] no kernel for 'cpu_only' on XPU; registered: CPU");
}

}  // namespace
