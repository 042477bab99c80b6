#pragma once
// Checks of the multi-tensor ops (docs/optim.md, "One kernel for many tensors") that run on
// every device: test_optim.cpp calls them on the CPU, test_nn_xpu.cpp on the XPU.
#include <limits>
#include <string>
#include <vector>

#include <xten/xten.h>

#include "test_util.h"

namespace xten::testing {

// Same shape, dtype and values (no NaN among them).
inline bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         (a.numel() == 0 || eq(a, b).all().item<bool>());
}

// _amp_foreach_non_finite_check_and_unscale_ on `device` over tensors of `dtypes`, sizes that
// cross both backends' chunk sizes (4,096 on the XPU, 65,536 on the CPU): every value equals
// the value times inv_scale rounded once to its dtype; found_inf rises only for inf or NaN,
// wherever they are, and is never cleared; every tensor's version is bumped.
inline void check_amp_unscale(Device device, const std::vector<ScalarType>& dtypes) {
  manual_seed(3);
  const float inv = 1.0f / 64;
  const std::vector<int64_t> sizes = {0, 1, 1000, 4097, 70000};
  std::vector<Tensor> list, before;
  for (ScalarType t : dtypes)
    for (int64_t n : sizes) {
      list.push_back((randn({n}) * 100).to(device, t));
      before.push_back(list.back().to("cpu").clone());  // on the CPU, to() is no copy
    }
  std::vector<uint32_t> versions;
  for (const Tensor& t : list) versions.push_back(t._version());
  const Tensor found = zeros({1}, kFloat, device), inv_t = full({1}, inv, TensorOptions(kFloat, device));
  _amp_foreach_non_finite_check_and_unscale_(list, found, inv_t);
  EXPECT_EQ(found.item<float>(), 0.f);
  for (size_t i = 0; i < list.size(); ++i) {
    const ScalarType t = list[i].dtype();
    const ScalarType m = t == kDouble ? kDouble : kFloat;
    const Tensor want = (before[i].to(m) * inv).to(t);
    EXPECT_TRUE(same_values(list[i].to("cpu"), want)) << to_string(t) << " " << list[i].numel();
    EXPECT_GT(list[i]._version(), versions[i]) << "written: version bumped";
  }
  // One inf in the second XPU chunk of a tensor, one NaN at the end of another dtype's.
  Tensor a = list[3], b = list.back();
  a.narrow(0, 4096, 1).fill_(std::numeric_limits<float>::infinity());
  b.narrow(0, b.numel() - 1, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  const Tensor a0 = a.to("cpu").clone();
  _amp_foreach_non_finite_check_and_unscale_({a}, found, inv_t);
  EXPECT_EQ(found.item<float>(), 1.f) << "an inf";
  EXPECT_TRUE(same_values(a.to("cpu").narrow(0, 0, 10), (a0.narrow(0, 0, 10).to(kFloat) * inv).to(a.dtype())))
      << "still unscaled";
  const Tensor found2 = zeros({1}, kFloat, device);
  _amp_foreach_non_finite_check_and_unscale_({list[1], b}, found2, inv_t);
  EXPECT_EQ(found2.item<float>(), 1.f) << "a NaN";
  _amp_foreach_non_finite_check_and_unscale_({list[1]}, found2, inv_t);
  EXPECT_EQ(found2.item<float>(), 1.f) << "never cleared by the op";
  _amp_foreach_non_finite_check_and_unscale_({}, found2, inv_t);  // nothing to do

  // Bad input: the same errors on every device.
  const char* op = "[_amp_foreach_non_finite_check_and_unscale_]";
  const Tensor x = ones({4}, kFloat, device);
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x}, zeros({1}, kDouble, device),
                                                              inv_t),
                   ValueError, std::string(op) + " found_inf must be a one-element float32 tensor");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x}, found, ones({2}, kFloat, device)),
                   ValueError, "inv_scale must be a one-element float32 tensor, got Float of shape (2)");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x, ones({2, 3}, kFloat, device).t()},
                                                              found, inv_t),
                   ValueError, "self[1] is not contiguous (sizes (3, 2), strides (1, 3))");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({ones({3}, kLong, device)}, found, inv_t),
                   NotImplementedError, "self[0] has dtype Long: only floating dtypes");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x, x.narrow(0, 1, 2)}, found, inv_t),
                   ValueError, "two tensors of self share memory");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x, Tensor()}, found, inv_t),
                   ValueError, "self[1] is an undefined tensor");
  if (device.type() != kCPU) {
    EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({ones({2})}, found, inv_t),
                     DeviceError, "self[0] is on cpu, expected " + x.device().str());
    EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x}, found, inv_t.to("cpu")),
                     DeviceError, "found_inf is on " + x.device().str() + " and inv_scale on cpu");
  }
}

}  // namespace xten::testing
