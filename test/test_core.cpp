// core/: dtypes, Half/BFloat16, Device, Scalar, Storage and TensorImpl, printing, errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include <xten/core/device_interface.h>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {
uint16_t half_bits(float f) {
  return Half(f).x;
}
uint16_t bf16_bits(float f) {
  return BFloat16(f).x;
}
float from_half_bits(uint16_t b) {
  return Half(b, from_bits);
}
float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST(ScalarType, NamesAndSizes) {
  EXPECT_STREQ(to_string(kFloat), "Float");
  EXPECT_STREQ(to_string(kBFloat16), "BFloat16");
  EXPECT_STREQ(dtype_name(kHalf), "float16");
  const size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  for (size_t i = 0; i < all_dtypes().size(); ++i)
    EXPECT_EQ(element_size(all_dtypes()[i]), sizes[i]);
  EXPECT_THROW_MSG(element_size(ScalarType::Undefined), TypeError, "no element size");
}

TEST(Half, RoundToNearestEven) {
  EXPECT_EQ(half_bits(1.0f), 0x3c00);
  EXPECT_EQ(half_bits(-2.0f), 0xc000);
  EXPECT_EQ(half_bits(65504.0f), 0x7bff);  // largest finite
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
  EXPECT_EQ(half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 lies halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
  EXPECT_EQ(half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // above half
}

TEST(Half, OverflowInfNanSubnormal) {
  EXPECT_EQ(half_bits(65519.0f), 0x7bff);  // below the rounding boundary
  EXPECT_EQ(half_bits(65520.0f), 0x7c00);  // rounds to Inf
  EXPECT_EQ(half_bits(1e10f), 0x7c00);
  EXPECT_EQ(half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  const uint16_t nan = half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_TRUE(std::isnan(from_half_bits(nan)));
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to even (0); 3*2^-25 rounds to 2*2^-24.
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(half_bits(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(half_bits(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(half_bits(std::ldexp(1023.0f, -24) + std::ldexp(1.0f, -25)),
            0x0400);  // rounds up into normal
  EXPECT_EQ(from_half_bits(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(from_half_bits(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(from_half_bits(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(from_half_bits(0x8000)));
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = from_half_bits(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(half_bits(f), b) << "bits " << b;
  }
}

TEST(BFloat16, RoundingAndSpecials) {
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(bits_to_float(0x3f808000)), 0x3f80);  // tie -> even
  EXPECT_EQ(bf16_bits(bits_to_float(0x3f818000)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(bf16_bits(bits_to_float(0x3f808001)), 0x3f81);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bf16_bits(bits_to_float(0x7f7fffff)), 0x7f80);  // max float rounds to Inf
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(
      static_cast<float>(BFloat16(bits_to_float(0x7f800001)))));  // signalling NaN stays NaN
  EXPECT_EQ(bf16_bits(bits_to_float(0x00010000)), 0x0001);        // subnormal kept
}

TEST(Device, Parse) {
  EXPECT_EQ(Device("cpu").type(), kCPU);
  EXPECT_EQ(Device("xpu").type(), kXPU);
  EXPECT_FALSE(Device("xpu").has_index());
  EXPECT_EQ(Device("xpu:1").index(), 1);
  EXPECT_EQ(Device("xpu:1").str(), "xpu:1");
  EXPECT_EQ(Device(kXPU, 0), Device("xpu:0"));
  EXPECT_THROW_MSG(Device("gpu"), ValueError, "invalid device string 'gpu'");
  EXPECT_THROW_MSG(Device("xpu:"), ValueError, "'xpu:'");
  EXPECT_THROW_MSG(Device("xpu:a"), ValueError, "'xpu:a'");
  EXPECT_THROW_MSG(Device("xpu:-1"), ValueError, "'xpu:-1'");
  EXPECT_THROW_MSG(Device("cpu:1"), ValueError, "cpu device has index 0");
}

TEST(Scalar, KindsAndConversion) {
  EXPECT_TRUE(Scalar(true).is_boolean());
  EXPECT_TRUE(Scalar(3).is_integral(false));
  EXPECT_TRUE(Scalar(int64_t{1} << 40).is_integral(false));
  EXPECT_TRUE(Scalar(2.5).is_floating_point());
  EXPECT_TRUE(Scalar(2.5f).is_floating_point());
  EXPECT_EQ(Scalar(7).type(), kLong);
  EXPECT_EQ(Scalar(7.0).type(), kDouble);
  EXPECT_EQ(Scalar(2.75).to<int64_t>(), 2);
  EXPECT_EQ(Scalar(3).to<double>(), 3.0);
  EXPECT_EQ(Scalar(0.5).to_string(), "0.5");
}

TEST(Storage, AllocatorAlignsTo64) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = empty({n}, kByte);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  }
}

TEST(Storage, LargeBlocksAreReused) {
  void* first;
  {
    Tensor big = empty({1 << 20}, kFloat);  // 4 MiB
    first = big.data_ptr();
  }
  Tensor again = empty({1 << 20}, kFloat);
  EXPECT_EQ(again.data_ptr(), first);
  Tensor other = empty({(1 << 20) + 100000}, kFloat);  // another size class
  EXPECT_NE(other.data_ptr(), first);
  empty_cpu_cache();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(other.data_ptr()) % 64, 0u);
}

// Note [CPU block cache]: a block returned to a full cache (1 GiB) evicts the oldest cached ones
// and is itself kept, so the next request of its size gets it back; blocks of another size that
// were returned earlier make room. Address space only: the blocks' pages are never touched.
TEST(Storage, AFullCacheKeepsTheBlockJustReturned) {
  empty_cpu_cache();
  Allocator* a = cpu_allocator();
  constexpr size_t kBlock = size_t{16} << 20, kOther = size_t{8} << 20;
  std::vector<DataPtr> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(a->allocate(kBlock, Device(kCPU)));  // 1 GiB
  DataPtr other = a->allocate(kOther, Device(kCPU));
  DataPtr last = a->allocate(kBlock, Device(kCPU));
  void* const last_ptr = last.get();
  other = DataPtr();  // the oldest in the cache
  blocks.clear();     // the 64th evicts the 8 MiB block: the cache is full
  last = DataPtr();   // evicts the oldest 16 MiB block, and stays
  DataPtr again = a->allocate(kBlock, Device(kCPU));
  EXPECT_EQ(again.get(), last_ptr);
  again = DataPtr();
  empty_cpu_cache();
}

TEST(Tensor, AccessorsAndViewsShareStorage) {
  Tensor a = arange(24).reshape({2, 3, 4});
  EXPECT_EQ(a.dim(), 3);
  EXPECT_EQ(a.numel(), 24);
  EXPECT_EQ(a.size(-1), 4);
  EXPECT_EQ(a.stride(0), 12);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(a.dtype(), kLong);
  EXPECT_EQ(a.scalar_type(), kLong);
  EXPECT_TRUE(a.device().is_cpu());
  Tensor v = a.transpose(0, 2);
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_TRUE(v.storage().is_alias_of(a.storage()));
  v.select(0, 1).fill_(-1);
  EXPECT_EQ(a.select(2, 1).sum().item<int64_t>(), -6);
  EXPECT_THROW_MSG(a.size(3), IndexError, "dim 3 is out of range for a tensor of 3 dims");
  EXPECT_THROW_MSG(a.stride(-4), IndexError, "expected in [-3, 2]");
}

TEST(Tensor, DataPtrIsTypeChecked) {
  Tensor a = zeros({2}, kInt);
  EXPECT_NE(a.data_ptr<int32_t>(), nullptr);
  EXPECT_THROW_MSG(
      a.data_ptr<float>(), TypeError,
      "expected a tensor of dtype Float for data_ptr<Float>, but the tensor has dtype Int");
}

TEST(Tensor, ItemNeedsOneElement) {
  EXPECT_EQ(full({1, 1}, 2.5).item<double>(), 2.5);
  EXPECT_EQ(tensor({7}).item<int>(), 7);
  EXPECT_EQ(full({}, true).item<bool>(), true);
  EXPECT_FLOAT_EQ(full({}, 0.1, kHalf).item<float>(), static_cast<float>(Half(0.1f)));
  EXPECT_THROW_MSG(
      zeros({2, 3}).item<float>(), ValueError,
      "[item] a tensor with 6 elements (shape (2, 3)) cannot be converted to a Scalar");
}

TEST(Tensor, RequiresGradFlag) {
  Tensor a = zeros({2});
  EXPECT_FALSE(a.requires_grad());
  a.set_requires_grad(true);
  EXPECT_TRUE(a.requires_grad());
  EXPECT_TRUE(ones({2}, TensorOptions().requires_grad(true)).requires_grad());
}

TEST(Tensor, FromBlobWrapsWithoutCopy) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data, {2, 3}, kFloat);
  EXPECT_EQ(t.data_ptr<float>(), data);
  t.mul_(2);
  EXPECT_EQ(data[5], 12.0f);
  Tensor s = from_blob(data, {3}, {2}, kFloat);
  EXPECT_EQ(s.sum().item<float>(), 2 + 6 + 10.0f);
  EXPECT_THROW_MSG(from_blob(nullptr, {2}, kFloat), ValueError,
                   "[from_blob] data is a null pointer");
  EXPECT_THROW_MSG(from_blob(data, {-1}, kFloat), ValueError, "sizes must be non-negative");
}

TEST(Tensor, FromVectorsAndLists) {
  Tensor a = tensor({1.f, 2.f, 3.f, 4.f}, IntArrayRef{2, 2});
  EXPECT_EQ(a.sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(a.dtype(), kFloat);
  EXPECT_EQ(tensor(std::vector<int64_t>{1, 2}).dtype(), kLong);
  EXPECT_EQ(tensor(std::vector<bool>{true, false}).dtype(), kBool);
  // Literals take libtorch's dtypes: integers int64, floating the default dtype float32.
  EXPECT_EQ(tensor({1, 2}).dtype(), kLong);
  EXPECT_EQ(tensor(std::vector<int>{1, 2}).dtype(), kLong);
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), kFloat);
  EXPECT_EQ(tensor(std::vector<double>{0.1}).item<float>(), 0.1f);  // rounded once
  EXPECT_EQ(tensor({int16_t(1)}).dtype(), kShort);
  EXPECT_EQ(tensor({uint8_t(1)}).dtype(), kByte);
  // Explicit options win, without passing through the literal dtype.
  EXPECT_EQ(tensor({0.1, 2.0}, kDouble).dtype(), kDouble);
  EXPECT_EQ(tensor({0.1}, kDouble).item<double>(), 0.1);
  EXPECT_EQ(tensor({1, 2}, kInt).dtype(), kInt);
  EXPECT_EQ(tensor({1.f, 2.f, 3.f, 4.f}, IntArrayRef{2, 2}, kHalf).sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(tensor({1.f, 2.f, 3.f, 4.f}, IntArrayRef{2, 2}, kHalf).dtype(), kHalf);
  EXPECT_TRUE(tensor({1.f}, TensorOptions().requires_grad(true)).requires_grad());
  EXPECT_THROW_MSG(tensor({1, 2, 3}, IntArrayRef{2, 2}), ValueError,
                   "shape (2, 2) holds 4 elements, but 3 values were given");
}

TEST(Print, PyTorchStyle) {
  EXPECT_EQ(tensor({1.f, 2.f, 3.f}).toString(), "tensor([1., 2., 3.])");
  EXPECT_EQ(tensor({1.5f, -2.f}).toString(), "tensor([ 1.5000, -2.0000])");
  EXPECT_EQ(arange(4).reshape({2, 2}).toString(), "tensor([[0, 1],\n        [2, 3]])");
  EXPECT_EQ(tensor({true, false}).toString(), "tensor([ True, False])");
  EXPECT_EQ(full({}, 3.0).toString(), "tensor(3.)");
  EXPECT_EQ(tensor({1, 2}).toString(), "tensor([1, 2])");
  EXPECT_EQ(tensor({1, 2}, kInt).toString(), "tensor([1, 2], dtype=int32)");
  EXPECT_EQ(tensor({0.5f}).to(kHalf).toString(), "tensor([0.5000], dtype=float16)");
  EXPECT_EQ(zeros({0}).toString(), "tensor([])");
  EXPECT_EQ(zeros({0, 3}).toString(), "tensor([], size=(0, 3))");
  EXPECT_EQ(tensor({1e-5f, 1.f}).toString(), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(tensor({std::nanf(""), 1.f, -INFINITY}).toString(), "tensor([nan, 1., -inf])");
  std::ostringstream os;
  os << ones({2});
  EXPECT_EQ(os.str(), "tensor([1., 1.])");
}

TEST(Print, SummarizesLargeTensors) {
  const std::string s = arange(2000).toString();
  EXPECT_EQ(s, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  const std::string m = arange(4000).reshape({40, 100}).toString();
  EXPECT_NE(m.find("...,"), std::string::npos);
  EXPECT_EQ(m.substr(0, 31), "tensor([[   0,    1,    2,  ...");
  EXPECT_LT(m.size(), 400u);
}

TEST(Errors, HierarchyAndTags) {
  try {
    ones({2, 3}) + ones({4, 3});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[add] shapes (2, 3) and (4, 3) are not broadcastable (dim 0: 2 vs 4)");
  }
  EXPECT_THROW(throw NotImplementedError("x"), Error);
  EXPECT_THROW(throw OutOfMemoryError("x"), Error);
  EXPECT_THROW(throw DeviceError("x"), Error);
  EXPECT_THROW(throw IndexError("x"), Error);
}

TEST(Errors, NegativeSizes) {
  EXPECT_THROW_MSG(empty({2, -1}), ValueError,
                   "[empty] sizes must be non-negative, but got (2, -1)");
  EXPECT_THROW_MSG(zeros({-3}), ValueError, "sizes must be non-negative");
}

TEST(Parallel, NumThreads) {
  const int before = get_num_threads();
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  Tensor big = ones({1 << 20});
  EXPECT_EQ(big.sum().item<double>(), 1 << 20);
  set_num_threads(before);
  EXPECT_THROW_MSG(set_num_threads(0), ValueError, "must be positive, but got 0");
}

TEST(Parallel, ThreadLimitGuardIsPerThreadAndScoped) {
  const int before = get_num_threads();
  set_num_threads(4);
  {
    ThreadLimitGuard one(1);
    EXPECT_EQ(get_num_threads(), 1);
    int other = 0;
    std::thread([&] { other = get_num_threads(); }).join();
    EXPECT_EQ(other, 4);  // another thread keeps the global setting
    {
      ThreadLimitGuard eight(8);  // a limit above the setting does not raise it
      EXPECT_EQ(get_num_threads(), 4);
    }
    EXPECT_EQ(get_num_threads(), 1);
    EXPECT_EQ(ones({1 << 20}).sum().item<double>(), 1 << 20);
  }
  EXPECT_EQ(get_num_threads(), 4);
  set_num_threads(before);
  EXPECT_THROW_MSG(ThreadLimitGuard(0), ValueError, "must be positive, but got 0");
}

// Note [Backend seam]: the CPU backend through the one device interface.
TEST(DeviceInterface, CpuBackend) {
  DeviceInterface& cpu = device_interface(kCPU);
  EXPECT_EQ(cpu.type(), kCPU);
  EXPECT_EQ(cpu.allocator(), cpu_allocator());
  EXPECT_EQ(allocator_for(kCPU), cpu_allocator());
  EXPECT_EQ(cpu.device_count(), 1);
  EXPECT_EQ(cpu.current_device(), 0);
  EXPECT_THROW_MSG(cpu.set_current_device(1), IndexError,
                   "cpu device must be in [0, 1), but got 1");
  cpu.manual_seed(5);
  const Tensor a = rand({4});
  manual_seed(5);
  EXPECT_TRUE(same_bytes(a, rand({4})));
  auto start = cpu.record_event(0);
  auto end = cpu.record_event(0);
  end->synchronize();
  EXPECT_GE(start->elapsed_ms(*end), 0.0);
  EXPECT_EQ(cpu.current_stream_id(0), 0);
  EXPECT_EQ(cpu.default_autocast_dtype(), kBFloat16);
  { DeviceIndexGuard g{Device(kCPU)}; }
  static struct Twice : DeviceInterface {
    DeviceType type() const override { return kCPU; }
    Allocator* allocator() override { return nullptr; }
    ScalarType default_autocast_dtype() const override { return kHalf; }
    void manual_seed(uint64_t) override {}
    int device_count() override { return 0; }
    int current_device() override { return 0; }
    void set_current_device(int) override {}
    void synchronize(int) override {}
    int64_t current_stream_id(int) override { return 0; }
    std::unique_ptr<DeviceEvent> record_event(int) override { return nullptr; }
    void wait_event(DeviceEvent&, int) override {}
  } twice;
  EXPECT_THROW_MSG(register_device_interface(&twice), ValueError,
                   "a backend for device type cpu is registered already");
}
