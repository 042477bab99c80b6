// batch_norm, layer_norm and group_norm against double-precision references.
#include <cmath>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {
// Mean and biased variance of x over the positions where select(index) is true.
std::pair<double, double> stats(const Tensor& x,
                                const std::function<bool(const std::vector<int64_t>&)>& select) {
  double s = 0, ss = 0;
  int64_t n = 0;
  for_each_index(x.sizes(), [&](const std::vector<int64_t>& i) {
    if (!select(i)) return;
    s += value_at(x, i);
    ++n;
  });
  const double mean = s / n;
  for_each_index(x.sizes(), [&](const std::vector<int64_t>& i) {
    if (select(i)) ss += (value_at(x, i) - mean) * (value_at(x, i) - mean);
  });
  return {mean, ss / n};
}
}  // namespace

TEST(Norm, BatchNormTrainingAndEval) {
  manual_seed(80);
  for (ScalarType t : float_dtypes()) {
    Tensor x = random_tensor({4, 3, 5, 2}, t), w = random_tensor({3}, t), b = random_tensor({3}, t);
    Tensor rm = zeros({3}, t), rv = ones({3}, t);
    Tensor y = batch_norm(x, w, b, rm, rv, /*training=*/true, 0.1, 1e-5);
    std::vector<std::pair<double, double>> st;
    for (int64_t c = 0; c < 3; ++c) st.push_back(stats(x, [c](auto& i) { return i[1] == c; }));
    expect_elements(
        y,
        [&](auto& i) {
          const auto [m, v] = st[i[1]];
          return (value_at(x, i) - m) / std::sqrt(v + 1e-5) * value_at(w, {i[1]}) +
                 value_at(b, {i[1]});
        },
        std::string("batch_norm train ") + to_string(t), 20.0);
    const int64_t n = 4 * 5 * 2;
    expect_elements(
        rm, [&](auto& i) { return 0.1 * st[i[0]].first; }, "running_mean", 4.0);
    expect_elements(
        rv, [&](auto& i) { return 0.9 + 0.1 * st[i[0]].second * n / (n - 1); }, "running_var", 4.0);
    Tensor ye = batch_norm(x, w, b, rm, rv, /*training=*/false, 0.1, 1e-5);
    expect_elements(
        ye,
        [&](auto& i) {
          return (value_at(x, i) - value_at(rm, {i[1]})) / std::sqrt(value_at(rv, {i[1]}) + 1e-5) *
                     value_at(w, {i[1]}) +
                 value_at(b, {i[1]});
        },
        "batch_norm eval", 20.0);
    EXPECT_EQ(ye.dtype(), t);
  }
  EXPECT_EQ(batch_norm(ones({2, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, true)
                .sizes(),
            IntArrayRef({2, 3}));
  EXPECT_THROW_MSG(
      batch_norm(ones({1, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, true),
      ValueError, "expected more than 1 value per channel when training");
  EXPECT_THROW_MSG(
      batch_norm(ones({2, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, false),
      ValueError, "running_mean and running_var must be given in evaluation mode");
  EXPECT_THROW_MSG(
      batch_norm(ones({2, 3}), ones({4}), std::nullopt, std::nullopt, std::nullopt, true),
      ValueError, "[batch_norm] weight must have shape (3), but got (4)");
}

TEST(Norm, LayerNormAndGroupNorm) {
  manual_seed(81);
  for (ScalarType t : float_dtypes()) {
    Tensor x = random_tensor({2, 3, 4}, t), w = random_tensor({3, 4}, t),
           b = random_tensor({3, 4}, t);
    Tensor y = layer_norm(x, {3, 4}, w, b);
    std::vector<std::pair<double, double>> st;
    for (int64_t n = 0; n < 2; ++n) st.push_back(stats(x, [n](auto& i) { return i[0] == n; }));
    expect_elements(
        y,
        [&](auto& i) {
          const auto [m, v] = st[i[0]];
          return (value_at(x, i) - m) / std::sqrt(v + 1e-5) * value_at(w, {i[1], i[2]}) +
                 value_at(b, {i[1], i[2]});
        },
        std::string("layer_norm ") + to_string(t), 20.0);
    Tensor g = random_tensor({2, 6, 3}, t), gw = random_tensor({6}, t), gb = random_tensor({6}, t);
    Tensor gy = group_norm(g, 3, gw, gb);
    expect_elements(
        gy,
        [&](auto& i) {
          const int64_t grp = i[1] / 2;
          const auto [m, v] = stats(g, [&](auto& j) { return j[0] == i[0] && j[1] / 2 == grp; });
          return (value_at(g, i) - m) / std::sqrt(v + 1e-5) * value_at(gw, {i[1]}) +
                 value_at(gb, {i[1]});
        },
        std::string("group_norm ") + to_string(t), 20.0);
  }
  EXPECT_EQ(layer_norm(ones({2, 5}), {5}).sum().item<float>(), 0.0f);
  EXPECT_THROW_MSG(layer_norm(ones({2, 5}), {4}), ValueError,
                   "normalized_shape (4) must match the last dims of the input's shape (2, 5)");
  EXPECT_THROW_MSG(group_norm(ones({2, 5, 3}), 2), ValueError,
                   "the number of channels (5) must be divisible by num_groups (2)");
  EXPECT_THROW_MSG(layer_norm(ones({2, 5}, kInt), {5}), NotImplementedError,
                   "[layer_norm] not implemented for dtype Int");
}
