// Memory formats on the XPU (docs/memory_format.md): pointwise results in their operands'
// layout, host <-> device copies that keep a channels-last layout, and the op database run with
// channels-last inputs, as on the CPU (test_memory_format.cpp).
#include "memory_format_checks.h"
#include "xpu_test_env.h"

namespace xten {
namespace {

const bool kEnv = testing::set_xpu_test_env("1G");
constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

TEST(MemoryFormatXpu, PointwiseResultsTakeTheirOperandsLayout) {
  testing::check_pointwise_layouts(Device("xpu"));
}

TEST(MemoryFormatXpu, CopiesBetweenHostAndDeviceKeepTheLayout) {
  const Tensor x = randn({2, 3, 4, 5}), x_cl = x.contiguous(kCL);
  const Tensor d = x_cl.to("xpu");
  EXPECT_TRUE(d.is_contiguous(kCL));
  EXPECT_TRUE(testing::same_bytes(d, x));
  const Tensor back = d.to("cpu");
  EXPECT_TRUE(back.is_contiguous(kCL));
  EXPECT_TRUE(testing::same_bytes(back, x));
  // Converting layouts on either side of the copy.
  EXPECT_TRUE(testing::same_bytes(x.to("xpu").contiguous(kCL).to("cpu"), x));
  EXPECT_TRUE(testing::same_bytes(d.contiguous().to("cpu"), x));
  Tensor into = empty({2, 3, 4, 5}, TensorOptions().device(Device("xpu")).memory_format(kCL));
  into.copy_(x);
  EXPECT_TRUE(testing::same_bytes(into, x));
  Tensor host = empty({2, 3, 4, 5}, TensorOptions().memory_format(kCL));
  host.copy_(x.to("xpu"));
  EXPECT_TRUE(testing::same_bytes(host, x));
  // With a dtype change on the way.
  EXPECT_TRUE(testing::same_bytes(x_cl.to(Device("xpu"), kDouble), x.to(kDouble)));
  EXPECT_TRUE(x_cl.to(Device("xpu"), kDouble).is_contiguous(kCL));
}

TEST(MemoryFormatXpu, ReductionResultsFollowTheInputsLayout) {
  testing::check_reduction_layouts(Device("xpu"));
}

TEST(MemoryFormatXpu, OpDatabaseWithChannelsLastInputs) {
  const std::set<std::string> ran = testing::check_op_db_channels_last(Device("xpu"));
  EXPECT_TRUE(ran.count("conv2d"));
}

}  // namespace
}  // namespace xten
