// models/: ResNet-18/34/50 have torchvision's parameter counts and state-dict names, and run;
// the small CNN takes 28x28 images.
#include "test_util.h"

#include <xten/models/resnet.h>

using namespace xten;
using namespace xten::testing;

namespace {
int64_t count(const nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}
bool has_key(const nn::Module& m, const std::string& key) {
  for (const auto& [n, t] : m.state_dict())
    if (n == key) return true;
  return false;
}
}  // namespace

TEST(Models, ResNetsHaveTorchvisionsParameterCounts) {
  EXPECT_EQ(count(*models::resnet18().ptr()), 11689512);
  EXPECT_EQ(count(*models::resnet34().ptr()), 21797672);
  EXPECT_EQ(count(*models::resnet50().ptr()), 25557032);
  auto r18 = models::resnet18();
  for (const char* key :
       {"conv1.weight", "bn1.running_mean", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.running_var", "layer4.1.bn2.bias", "fc.weight", "fc.bias"})
    EXPECT_TRUE(has_key(*r18.ptr(), key)) << key;
  EXPECT_FALSE(has_key(*r18.ptr(), "layer1.0.downsample.0.weight"));  // same shape: no projection
  auto r50 = models::resnet50(10);
  EXPECT_TRUE(has_key(*r50.ptr(), "layer1.0.downsample.0.weight"));  // 64 -> 256 channels
  EXPECT_TRUE(has_key(*r50.ptr(), "layer3.5.conv3.weight"));
  EXPECT_EQ(r50->fc->weight.sizes(), IntArrayRef({10, 2048}));
}

TEST(Models, ForwardShapesAndTraining) {
  manual_seed(30);
  auto r18 = models::resnet18(7);
  r18->eval();
  EXPECT_EQ(r18(randn({2, 3, 64, 64})).sizes(), IntArrayRef({2, 7}));
  // The small-input ResNet-18 keeps 28x28 through its stem: 11,172,810 parameters for 1
  // channel and 10 classes (the 1000-class count less the fc and 7x7x3 stem, plus a 3x3x1 one).
  auto small = models::resnet18_small_input(10, 1);
  int64_t small_count = 0;
  for (const Tensor& p : small->parameters()) small_count += p.numel();
  EXPECT_EQ(small_count, 11689512 - 513000 - 64 * 3 * 49 + 5130 + 64 * 9);
  small->eval();
  EXPECT_EQ(small(randn({2, 1, 28, 28})).sizes(), IntArrayRef({2, 10}));
  models::SmallCNN cnn(10);
  int64_t cnn_count = 0;
  for (const Tensor& p : cnn->parameters()) cnn_count += p.numel();
  EXPECT_EQ(cnn_count, 119626);  // issue's budget: at most 120k
  Tensor x = randn({4, 1, 28, 28});
  Tensor y = cnn(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({4, 10}));
  cross_entropy(y, tensor({1, 2, 3, 4})).backward();
  for (const auto& [n, p] : cnn->named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
}
