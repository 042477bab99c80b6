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

// The CPU kernels of layer_norm and group_norm (Note [Normalization forward]) against the
// definition written with ops in double: rows around the vector widths, contiguous and strided
// inputs (channels last for group_norm), with and without weight and bias, every float dtype.
TEST(Norm, LayerNormAndGroupNormKernelsMatchTheDefinition) {
  manual_seed(82);
  auto tol = [](ScalarType t) { return t == kDouble ? 1e-12 : t == kFloat ? 2e-5 : 2e-2; };
  auto affine = [](Tensor y, const std::optional<Tensor>& w, const std::optional<Tensor>& b,
                   IntArrayRef shape) {
    if (w) y = y * w->to(kDouble).view(shape);
    if (b) y = y + b->to(kDouble).view(shape);
    return y;
  };
  for (ScalarType t : float_dtypes()) {
    for (int64_t n : {1, 7, 33, 768}) {
      // An offset of 5: the variance is computed around the mean, not as E[x^2] - E[x]^2.
      const Tensor x = random_tensor({5, n}, t, 4, 6);
      const Tensor xd = x.to(kDouble);
      const Tensor xhat = (xd - xd.mean({1}, true)) / (xd.var({1}, 0, true) + 1e-5).sqrt();
      for (int with = 0; with < 4; ++with) {
        const std::optional<Tensor> w =
            with & 1 ? std::optional<Tensor>(random_tensor({n}, t)) : std::nullopt;
        const std::optional<Tensor> b =
            with & 2 ? std::optional<Tensor>(random_tensor({n}, t)) : std::nullopt;
        const Tensor want = affine(xhat, w, b, {n});
        for (bool strided : {false, true}) {
          const Tensor in = strided ? non_contiguous(x) : x;
          const Tensor got = layer_norm(in, {n}, w, b, 1e-5);
          ASSERT_EQ(got.dtype(), t);
          EXPECT_TRUE(allclose(got.to(kDouble), want, tol(t), tol(t)))
              << to_string(t) << " n=" << n << " with=" << with << " strided=" << strided;
        }
      }
    }
    const Tensor g = random_tensor({3, 6, 5, 7}, t, -2, 3);
    const Tensor gd = g.to(kDouble).reshape({3, 3, -1});
    const Tensor ghat =
        ((gd - gd.mean({2}, true)) / (gd.var({2}, 0, true) + 1e-5).sqrt()).view({3, 6, 5, 7});
    const Tensor gw = random_tensor({6}, t), gb = random_tensor({6}, t);
    const Tensor want = affine(ghat, gw, gb, {1, 6, 1, 1});
    for (bool channels_last : {false, true}) {
      const Tensor in =
          channels_last ? g.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}) : g;
      EXPECT_TRUE(allclose(group_norm(in, 3, gw, gb).to(kDouble), want, tol(t), tol(t)))
          << to_string(t) << " channels_last=" << channels_last;
    }
    EXPECT_TRUE(allclose(group_norm(g, 3).to(kDouble), ghat, tol(t), tol(t))) << to_string(t);
  }
  // Constant rows normalize to exactly 0; empty inputs give empty outputs.
  EXPECT_TRUE(layer_norm(full({2, 9}, 3.0), {9}).eq(0).all().item<bool>());
  EXPECT_EQ(layer_norm(empty({0, 4}), {4}).sizes(), IntArrayRef({0, 4}));
  EXPECT_EQ(group_norm(empty({0, 4, 3}), 2).sizes(), IntArrayRef({0, 4, 3}));
  EXPECT_THROW_MSG(layer_norm(ones({2, 5}), {5}, ones({4})), ValueError,
                   "[layer_norm] weight must have shape (5), but got (4)");
  EXPECT_THROW_MSG(group_norm(ones({2, 4, 3}), 2, std::nullopt, ones({3})), ValueError,
                   "[group_norm] bias must have shape (4), but got (3)");
}

// layer_norm_backward's weight and bias gradients are summed per part of 32 rows while each row
// is in cache, then over the parts in order (Note [Layer norm weight gradients in one pass]):
// the same bits at 1, 3 and 8 threads, with a last part of 8 rows, in float32 and bfloat16, and
// all three gradients against double precision.
TEST(Norm, LayerNormBackwardWeightGradientsAtAnyThreadCount) {
  manual_seed(12);
  const Tensor x = randn({1000, 300}) * 3 + 1, g = randn({1000, 300}), w = randn({300});
  const auto [rx, rw, rb] =
      layer_norm_backward(g.to(kDouble), x.to(kDouble), {300}, w.to(kDouble), 1e-5);
  const int threads = get_num_threads();
  for (ScalarType t : {kFloat, kBFloat16}) {
    Tensor first[3];
    for (int th : {1, 3, 8}) {
      set_num_threads(th);
      const auto [dx, dw, db] = layer_norm_backward(g.to(t), x.to(t), {300}, w.to(t), 1e-5);
      if (th == 1) {
        first[0] = dx, first[1] = dw, first[2] = db;
        const double tol = t == kFloat ? 1e-4 : 3e-2;
        EXPECT_TRUE(allclose(dx.to(kDouble), rx, tol, tol)) << to_string(t);
        if (t == kFloat) {  // bfloat16's inputs are rounded: compare in float32 only
          EXPECT_TRUE(allclose(dw.to(kDouble), rw, 1e-4, 1e-3));
          EXPECT_TRUE(allclose(db.to(kDouble), rb, 1e-4, 1e-3));
        }
      } else {
        EXPECT_TRUE(same_bytes(dx, first[0])) << to_string(t) << " " << th;
        EXPECT_TRUE(same_bytes(dw, first[1])) << to_string(t) << " " << th;
        EXPECT_TRUE(same_bytes(db, first[2])) << to_string(t) << " " << th;
      }
    }
  }
  set_num_threads(threads);
}

// Note [Batch norm statistics] and Note [Channels-last batch norm backward]: batch_norm's
// training forward and its channels-last backward from one pass of sums, against float64, in
// every layout the kernel walks (NCHW planes, NHWC and [N, C] columns), with a mean far from 0
// (the shifted sums), and the same bits at any thread count.
TEST(Norm, BatchNormOnePassStatisticsAtAnyThreadCount) {
  manual_seed(13);
  const int threads = get_num_threads();
  const MemoryFormat cl = MemoryFormat::ChannelsLast;
  for (auto shape : {std::vector<int64_t>{8, 6, 30, 20}, std::vector<int64_t>{700, 5},
                     std::vector<int64_t>{4, 3, 40}}) {
    for (bool nhwc : {false, true}) {
      if (nhwc && shape.size() != 4) continue;
      // Around 300 with std 1: without the shift, a float sum of squares (9e4 per value) would
      // leave the variance ~1e-3 off. The references take the float32 values the kernels see.
      const Tensor x64 = (randn(shape) + 300).to(kDouble);
      const Tensor g64 = randn(shape).to(kDouble);
      const int64_t c = shape[1];
      const Tensor w64 = randn({c}).to(kDouble);
      const Tensor y_ref = batch_norm(x64, w64, std::nullopt, std::nullopt, std::nullopt, true);
      const auto [dx_ref, dw_ref, db_ref] =
          batch_norm_backward(g64, x64, w64, std::nullopt, std::nullopt, true);
      Tensor first[4];
      for (int th : {1, 3, 8}) {
        set_num_threads(th);
        Tensor x = x64.to(kFloat), g = g64.to(kFloat);
        if (nhwc) x = x.contiguous(cl), g = g.contiguous(cl);
        const Tensor w = w64.to(kFloat);
        Tensor rm = zeros({c}), rv = ones({c});
        const Tensor y = batch_norm(x, w, std::nullopt, rm, rv, true, 1.0);
        const auto [dx, dw, db] = batch_norm_backward(g, x, w, std::nullopt, std::nullopt, true);
        const std::string what =
            fmt::format("{} nhwc {} threads {}", to_string(IntArrayRef(shape)), nhwc, th);
        EXPECT_EQ(dx.is_contiguous(cl), nhwc) << what;
        if (th == 1) {
          // The statistics: momentum 1 puts the batch's own into the running buffers.
          const Tensor xs = x64.transpose(0, 1).reshape({c, -1});
          const Tensor count = full({}, static_cast<double>(xs.size(1)), kDouble);
          EXPECT_TRUE(allclose(rm.to(kDouble), xs.mean({1}), 1e-6, 0)) << what;
          EXPECT_TRUE(allclose(rv.to(kDouble), xs.var({1}, 1), 2e-5, 0)) << what;
          EXPECT_TRUE(allclose(y.to(kDouble), y_ref, 1e-4, 1e-4)) << what;
          EXPECT_TRUE(allclose(dx.to(kDouble), dx_ref, 1e-4, 1e-3)) << what;
          EXPECT_TRUE(allclose(db.to(kDouble), db_ref, 1e-5, 1e-3)) << what;
          EXPECT_TRUE(allclose(dw.to(kDouble), dw_ref, 1e-4, 1e-3)) << what;
          first[0] = y, first[1] = dx, first[2] = dw, first[3] = db;
        } else {
          EXPECT_TRUE(same_bytes(y, first[0])) << what;
          EXPECT_TRUE(same_bytes(dx, first[1])) << what;
          EXPECT_TRUE(same_bytes(dw, first[2])) << what;
          EXPECT_TRUE(same_bytes(db, first[3])) << what;
        }
      }
    }
  }
  set_num_threads(threads);
  // 16-bit inputs are widened as they are read: the statistics of their values.
  const Tensor xb = (randn({6, 4, 9, 9}) * 3 + 2).to(kBFloat16).contiguous(cl);
  Tensor rm = zeros({4}), rv = ones({4});
  (void)batch_norm(xb, std::nullopt, std::nullopt, rm, rv, true, 1.0);
  const Tensor xs = xb.to(kDouble).transpose(0, 1).reshape({4, -1});
  EXPECT_TRUE(allclose(rm.to(kDouble), xs.mean({1}), 1e-6, 1e-6));
  EXPECT_TRUE(allclose(rv.to(kDouble), xs.var({1}, 1), 1e-5, 0));
  // An empty batch has NaN statistics (0 / 0) in every layout, as the composite's mean and var.
  using Stats = std::tuple<Tensor, Tensor>(const Tensor&);
  const auto op = Dispatcher::singleton().find("norms::batch_norm_stats").typed<Stats>();
  for (const Tensor& e :
       {zeros({0, 3, 4, 4}), zeros({0, 3, 4, 4}).contiguous(cl), zeros({0, 3}), zeros({2, 3, 0})}) {
    const auto [m, v] = op.call(e);
    EXPECT_TRUE(isnan(m).all().item<bool>() && isnan(v).all().item<bool>()) << e.sizes();
  }
}

// The CPU batch_norm kernel (one pass in the input's dtype) against the composite's formula,
// addcmul(shift, x in float, scale) rounded once: the same bits in every dtype and layout
// (evaluation, whose scale and shift the test can form). Its backward in 16-bit dtypes (widened
// as read) against the float32 backward of the same values.
TEST(Norm, BatchNormKernelMatchesTheCompositeInEveryDtypeAndLayout) {
  manual_seed(14);
  const MemoryFormat cl = MemoryFormat::ChannelsLast;
  for (auto shape : {std::vector<int64_t>{4, 6, 7, 5}, std::vector<int64_t>{33, 6},
                     std::vector<int64_t>{3, 6, 11}}) {
    for (bool nhwc : {false, true}) {
      if (nhwc && shape.size() != 4) continue;
      for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
        Tensor x = (randn(shape) * 2 + 1).to(t);
        if (nhwc) x = x.contiguous(cl);
        const ScalarType st = t == kDouble ? kDouble : kFloat;
        const Tensor w = randn({6}).to(t), b = randn({6}).to(t);
        const Tensor rm = randn({6}).to(st), rv = (rand({6}) + 0.5).to(st);
        const std::string what =
            fmt::format("{} {} nhwc {}", to_string(IntArrayRef(shape)), to_string(t), nhwc);
        const Tensor y = batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5);
        const Tensor scale = rsqrt(rv + 1e-5) * w.to(st), shift = -rm * scale + b.to(st);
        DimVector view(shape.size(), 1);
        view[1] = 6;
        const Tensor want = addcmul(shift.view(view), x.to(st), scale.view(view)).to(t);
        EXPECT_EQ(y.dtype(), t) << what;
        EXPECT_EQ(y.is_contiguous(cl), nhwc) << what;
        EXPECT_TRUE(same_bytes(y.contiguous(), want.contiguous())) << what;
        if (t == kBFloat16 || t == kHalf) {
          const Tensor g = randn(shape).to(t).contiguous(nhwc ? cl : MemoryFormat::Contiguous);
          for (bool training : {true, false}) {
            const auto [dx, dw, db] = batch_norm_backward(g, x, w, rm, rv, training);
            const auto [fx, fw, fb] =
                batch_norm_backward(g.to(kFloat), x.to(kFloat), w.to(kFloat), rm, rv, training);
            EXPECT_EQ(dx.dtype(), t);
            EXPECT_EQ(dx.is_contiguous(cl), nhwc) << what;
            // dx is rounded once from float; dw and db are float sums returned in w's dtype.
            EXPECT_TRUE(allclose(dx.to(kFloat), fx, 1e-2, 1e-2)) << what << " " << training;
            EXPECT_TRUE(same_bytes(dw, fw.to(t))) << what << " " << training;
            EXPECT_TRUE(same_bytes(db, fb.to(t))) << what << " " << training;
          }
        }
      }
    }
  }
}

// Note [Layer norm backward rows]: the row's statistics from shifted sums stay accurate for
// rows far from zero (around 300 with std 1, where a float sum of squares without the shift
// would leave the variance ~1e-3 off), at row lengths with and without a vector tail.
TEST(Norm, LayerNormBackwardRowsFarFromZero) {
  manual_seed(15);
  for (int64_t n : {768, 50, 3}) {
    const Tensor x = randn({64, n}) + 300, g = randn({64, n}), w = randn({n});
    const auto [rx, rw, rb] =
        layer_norm_backward(g.to(kDouble), x.to(kDouble), {n}, w.to(kDouble), 1e-5);
    const auto [dx, dw, db] = layer_norm_backward(g, x, {n}, w, 1e-5);
    // float's mean is within half an ulp of 300 (1.5e-5, a 1.5e-5 shift of every xhat).
    EXPECT_TRUE(allclose(dx.to(kDouble), rx, 1e-3, 1e-3)) << n;
    EXPECT_TRUE(allclose(dw.to(kDouble), rw, 1e-3, 1e-3)) << n;
    EXPECT_TRUE(allclose(db.to(kDouble), rb, 1e-5, 1e-5)) << n;
  }
}
