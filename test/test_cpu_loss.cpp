// Losses against double-precision references.
#include <cmath>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {
double reduce_ref(const std::vector<double>& v, const std::string& r) {
  double s = 0;
  for (double x : v) s += x;
  return r == "sum" ? s : s / v.size();
}
std::vector<double> elems(const Tensor& a, const Tensor& b,
                          const std::function<double(double, double)>& f) {
  std::vector<double> out;
  for_each_index(a.sizes(), [&](const std::vector<int64_t>& i) {
    out.push_back(f(value_at(a, i), value_at(b, i)));
  });
  return out;
}
}  // namespace

TEST(Loss, Regression) {
  manual_seed(90);
  Tensor x = random_tensor({4, 5}, kDouble), y = random_tensor({4, 5}, kDouble);
  for (const std::string r : {"mean", "sum"}) {
    EXPECT_NEAR(mse_loss(x, y, r).item<double>(),
                reduce_ref(elems(x, y, [](double a, double b) { return (a - b) * (a - b); }), r),
                1e-9);
    EXPECT_NEAR(l1_loss(x, y, r).item<double>(),
                reduce_ref(elems(x, y, [](double a, double b) { return std::abs(a - b); }), r),
                1e-9);
    EXPECT_NEAR(smooth_l1_loss(x, y, r, 2.0).item<double>(),
                reduce_ref(elems(x, y,
                                 [](double a, double b) {
                                   const double d = std::abs(a - b);
                                   return d < 2 ? 0.5 * d * d / 2 : d - 1;
                                 }),
                           r),
                1e-9);
    EXPECT_NEAR(huber_loss(x, y, r, 1.5).item<double>(),
                reduce_ref(elems(x, y,
                                 [](double a, double b) {
                                   const double d = std::abs(a - b);
                                   return d <= 1.5 ? 0.5 * d * d : 1.5 * (d - 0.75);
                                 }),
                           r),
                1e-9);
  }
  EXPECT_EQ(mse_loss(x, y, "none").sizes(), x.sizes());
  EXPECT_THROW_MSG(mse_loss(x, y, "avg"), ValueError,
                   "reduction must be 'none', 'mean' or 'sum', but got 'avg'");
  EXPECT_THROW_MSG(mse_loss(x, arange(20).reshape({4, 5})), TypeError,
                   "[mse_loss] expected a floating target, but got Long");
  EXPECT_THROW_MSG(smooth_l1_loss(x, y, "mean", -1), ValueError, "beta must be non-negative");
}

// mse_loss's CPU kernel (kernels/cpu/loss.cpp): 'mean' and 'sum' of a same-shape contiguous pair
// in one pairwise pass over threads' pieces, the rest (a broadcast target, a transposed input,
// mixed dtypes, 'none') elementwise then reduced; each against double, at 1 and 3 threads.
TEST(Loss, MseLossOnePassAndGeneralPaths) {
  manual_seed(92);
  const int threads = get_num_threads();
  const Tensor x = random_tensor({300, 1000}, kFloat, -3, 3),
               y = random_tensor({300, 1000}, kFloat, -3, 3);
  const Tensor ref_sum = (x.to(kDouble) - y.to(kDouble)).pow(2).sum();
  for (int t : {1, 3}) {
    set_num_threads(t);
    EXPECT_NEAR(mse_loss(x, y, "sum").item<double>(), ref_sum.item<double>(),
                1e-6 * ref_sum.item<double>());
    EXPECT_NEAR(mse_loss(x, y).item<double>(), ref_sum.item<double>() / x.numel(), 1e-6);
    // A transposed input and a broadcast target: the general path.
    const Tensor xt = x.t().contiguous().t();
    EXPECT_NEAR(mse_loss(xt, y).item<double>(), ref_sum.item<double>() / x.numel(), 1e-6);
    const Tensor row = y.select(0, 0);
    const double ref_b = (x.to(kDouble) - row.to(kDouble)).pow(2).mean().item<double>();
    EXPECT_NEAR(mse_loss(x, row.expand(x.sizes())).item<double>(), ref_b, 1e-6);
  }
  set_num_threads(threads);
  // bfloat16: summed in float, the result in bfloat16.
  const Tensor xb = x.to(kBFloat16), yb = y.to(kBFloat16);
  const Tensor lb = mse_loss(xb, yb);
  EXPECT_EQ(lb.dtype(), kBFloat16);
  const double ref_lb = (xb.to(kDouble) - yb.to(kDouble)).pow(2).mean().item<double>();
  EXPECT_NEAR(lb.item<double>(), ref_lb, ref_lb * 8e-3);
  // Empty: the mean is NaN and the sum 0, as PyTorch's.
  EXPECT_TRUE(std::isnan(mse_loss(empty({0}), empty({0})).item<double>()));
  EXPECT_EQ(mse_loss(empty({0}), empty({0}), "sum").item<double>(), 0.0);
  EXPECT_THROW_MSG(mse_loss(arange(4), arange(4).to(kFloat)), NotImplementedError,
                   "[mse_loss] not implemented for input dtype Long");
}

TEST(Loss, BinaryCrossEntropy) {
  manual_seed(91);
  Tensor logits = random_tensor({6, 3}, kDouble, -5, 5), t = random_tensor({6, 3}, kDouble, 0, 1),
         pw = random_tensor({3}, kDouble, 0.5, 2);
  Tensor p = sigmoid(logits);
  const double bce = reduce_ref(
      elems(p, t,
            [](double a, double b) { return -(b * std::log(a) + (1 - b) * std::log(1 - a)); }),
      "mean");
  EXPECT_NEAR(binary_cross_entropy(p, t).item<double>(), bce, 1e-9);
  EXPECT_NEAR(binary_cross_entropy_with_logits(logits, t).item<double>(), bce, 1e-9);
  std::vector<double> wl;
  for_each_index(logits.sizes(), [&](const std::vector<int64_t>& i) {
    const double x = value_at(logits, i), y = value_at(t, i), w = value_at(pw, {i[1]});
    const double s = 1 / (1 + std::exp(-x));
    wl.push_back(-(w * y * std::log(s) + (1 - y) * std::log(1 - s)));
  });
  EXPECT_NEAR(binary_cross_entropy_with_logits(logits, t, std::nullopt, pw, "sum").item<double>(),
              reduce_ref(wl, "sum"), 1e-8);
  EXPECT_TRUE(
      std::isfinite(binary_cross_entropy_with_logits(full({1}, 1000.0), zeros({1})).item<float>()));
  EXPECT_EQ(binary_cross_entropy(zeros({1}), zeros({1})).item<float>(), 0.0f);  // 0 log 0 is 0
  EXPECT_THROW_MSG(binary_cross_entropy(full({1}, 1.5), zeros({1})), ValueError,
                   "all elements of input must be in [0, 1]");
}

TEST(Loss, KlDiv) {
  manual_seed(92);
  Tensor logq = log_softmax(random_tensor({3, 4}, kDouble), 1),
         p = softmax(random_tensor({3, 4}, kDouble), 1);
  const std::vector<double> e =
      elems(logq, p, [](double lq, double pp) { return pp * (std::log(pp) - lq); });
  EXPECT_NEAR(kl_div(logq, p, "sum").item<double>(), reduce_ref(e, "sum"), 1e-9);
  EXPECT_NEAR(kl_div(logq, p, "batchmean").item<double>(), reduce_ref(e, "sum") / 3, 1e-9);
  EXPECT_NEAR(kl_div(logq, log(p), "mean", true).item<double>(), reduce_ref(e, "mean"), 1e-9);
}

TEST(Loss, NllAndCrossEntropy) {
  manual_seed(93);
  Tensor x = random_tensor({5, 4}, kDouble), w = random_tensor({4}, kDouble, 0.5, 2);
  Tensor target = tensor(std::vector<int64_t>{0, 3, -100, 1, 3});
  Tensor logp = log_softmax(x, 1);
  double num = 0, den = 0;
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t c = target.select(0, i).item<int64_t>();
    if (c == -100) continue;
    num += -value_at(w, {c}) * value_at(logp, {i, c});
    den += value_at(w, {c});
  }
  EXPECT_NEAR(nll_loss(logp, target, w).item<double>(), num / den, 1e-9);
  EXPECT_NEAR(cross_entropy(x, target, w).item<double>(), num / den, 1e-9);
  EXPECT_NEAR(cross_entropy(x, target, w, "sum").item<double>(), num, 1e-9);
  EXPECT_EQ(cross_entropy(x, target, std::nullopt, "none").select(0, 2).item<double>(), 0.0);
  // Spatial: [N, C, d] with target [N, d].
  Tensor xs = random_tensor({2, 3, 4}, kDouble);
  Tensor ts = randint(0, 3, {2, 4});
  double s = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < 4; ++d) {
      double z = 0;
      for (int64_t c = 0; c < 3; ++c) z += std::exp(value_at(xs, {n, c, d}));
      s += std::log(z) -
           value_at(xs, {n, value_at(ts, {n, d}) > 1.5 ? 2 : int64_t(value_at(ts, {n, d})), d});
    }
  EXPECT_NEAR(cross_entropy(xs, ts).item<double>(), s / 8, 1e-9);
  // Label smoothing and probability targets.
  const double ls = 0.2;
  Tensor t2 = tensor(std::vector<int64_t>{1, 0, 2, 3, 3});
  double smooth = 0;
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t c = t2.select(0, i).item<int64_t>();
    double mean_all = 0;
    for (int64_t k = 0; k < 4; ++k) mean_all += -value_at(logp, {i, k}) / 4;
    smooth += (1 - ls) * -value_at(logp, {i, c}) + ls * mean_all;
  }
  EXPECT_NEAR(cross_entropy(x, t2, std::nullopt, "mean", -100, ls).item<double>(), smooth / 5,
              1e-9);
  Tensor probs = one_hot(t2, 4).to(kDouble);
  EXPECT_NEAR(cross_entropy(x, probs).item<double>(), cross_entropy(x, t2).item<double>(), 1e-9);
  EXPECT_NEAR(cross_entropy(x, probs, std::nullopt, "mean", -100, ls).item<double>(), smooth / 5,
              1e-9);
  // Errors.
  EXPECT_THROW_MSG(nll_loss(logp, target.to(kInt)), TypeError,
                   "expected a target of class indices of dtype Long, but got Int");
  EXPECT_THROW_MSG(cross_entropy(x, tensor(std::vector<int64_t>{0, 4, 1, 1, 1})), IndexError,
                   "target 4 is out of bounds for 4 classes");
  EXPECT_THROW_MSG(cross_entropy(x, tensor(std::vector<int64_t>{0, 1})), ValueError,
                   "target shape (2) does not fit input shape (5, 4)");
  EXPECT_THROW_MSG(cross_entropy(x, t2, std::nullopt, "mean", -100, 1.5), ValueError,
                   "label_smoothing must be in [0, 1]");
}

// nll_loss's CPU kernels (kernels/cpu/loss.cpp): the loss and its input gradient against double
// loops, for every float dtype, reduction and layout, with and without class weights and
// ignored targets; the gradient also against the composite backward (create_graph runs it).
TEST(Loss, NllLossKernelsEveryDtypeReductionAndLayout) {
  manual_seed(95);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    const double tol = t == kDouble ? 1e-12 : t == kFloat ? 1e-5 : 2e-2;
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{6, 5}, {2, 5, 3}, {5}}) {
      const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
      DimVector tshape{IntArrayRef(shape)};
      if (tshape.size() >= 2)
        tshape.erase(1);
      else
        tshape = DimVector();
      Tensor target = randint(0, classes, IntArrayRef(tshape));
      if (target.numel() > 1) target.view({-1}).select(0, 1).fill_(-100);  // one ignored
      for (bool weighted : {false, true}) {
        const Tensor w = random_tensor({classes}, t, 0.5, 2);
        const std::optional<Tensor> weight = weighted ? std::optional<Tensor>(w) : std::nullopt;
        for (const char* reduction : {"none", "mean", "sum"}) {
          const Tensor x = random_tensor(IntArrayRef(shape), t, -4, 0).requires_grad_();
          const Tensor y = nll_loss(x, target, weight, reduction);
          // The reference: per-target terms, the total weight, and the gradient.
          std::vector<double> terms, wts;
          std::vector<std::vector<int64_t>> at;
          for_each_index(target.sizes(), [&](const std::vector<int64_t>& i) {
            const int64_t c = int64_t(value_at(target, i));
            std::vector<int64_t> xi(i.begin(), i.end());
            if (shape.size() == 1)
              xi = {c};
            else
              xi.insert(xi.begin() + 1, c);
            const double wi = c == -100 ? 0 : weighted ? value_at(w, {c}) : 1;
            terms.push_back(c == -100 ? 0 : -value_at(x, xi) * wi);
            wts.push_back(wi);
            at.push_back(c == -100 ? std::vector<int64_t>{} : xi);
          });
          double sum = 0, total = 0;
          for (size_t k = 0; k < terms.size(); ++k) sum += terms[k], total += wts[k];
          if (std::string(reduction) == "none") {
            size_t k = 0;
            for_each_index(target.sizes(), [&](const std::vector<int64_t>& i) {
              EXPECT_NEAR(value_at(y, i), terms[k], tol * (1 + std::abs(terms[k])))
                  << to_string(t) << " " << reduction;
              ++k;
            });
          } else {
            const double want = std::string(reduction) == "sum" ? sum : sum / total;
            EXPECT_NEAR(y.item<double>(), want, tol * (1 + std::abs(want)))
                << to_string(t) << " " << reduction << " " << to_string(IntArrayRef(shape));
          }
          const Tensor g = y.dim() ? ones_like(y) : ones({}, y.options());
          const Tensor gx = autograd::grad({y}, {x}, {g}, true)[0];
          const Tensor gc = autograd::grad({y}, {x}, {g}, true, /*create_graph=*/true)[0];
          EXPECT_TRUE(allclose(gx, gc.detach(), tol, tol)) << to_string(t) << " " << reduction;
          Tensor want = zeros(IntArrayRef(shape), kDouble);
          for (size_t k = 0; k < at.size(); ++k) {
            if (at[k].empty()) continue;
            int64_t off = 0;
            for (size_t d = 0; d < at[k].size(); ++d) off += at[k][d] * want.stride(int64_t(d));
            want.data_ptr<double>()[off] =
                std::string(reduction) == "mean" ? -wts[k] / total : -wts[k];
          }
          EXPECT_TRUE(allclose(gx, want, tol, tol)) << to_string(t) << " " << reduction;
        }
      }
    }
  }
  // Rows of the gradient on several threads (each zeroes its rows and writes their targets'
  // entries): against the composite's gradient (the create_graph path), [N, C] and spatial.
  for (const std::vector<int64_t>& tshape : std::vector<std::vector<int64_t>>{{3000}, {300, 9}}) {
    DimVector xshape{IntArrayRef(tshape)};
    xshape.insert(1, 40);
    const Tensor x = log_softmax(randn(IntArrayRef(xshape)), 1).detach().requires_grad_();
    Tensor target = randint(0, 40, IntArrayRef(tshape));
    target.view({-1}).narrow(0, 7, 5).fill_(-100);
    const Tensor y = nll_loss(x, target, random_tensor({40}, kFloat, 0.5, 2), "mean");
    const Tensor gx = autograd::grad({y}, {x}, {}, true)[0];
    const Tensor gc = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true)[0];
    EXPECT_TRUE(allclose(gx, gc.detach(), 1e-6, 1e-9)) << to_string(IntArrayRef(tshape));
    EXPECT_EQ((gx != 0).sum().item<int64_t>(), target.numel() - 5);
  }
  // Every target ignored: 'mean' is 0 / 0 (NaN, as PyTorch), 'sum' 0.
  const Tensor logp = log_softmax(randn({3, 4}), 1), none = full({3}, int64_t{-100});
  EXPECT_TRUE(std::isnan(nll_loss(logp, none).item<float>()));
  EXPECT_EQ(nll_loss(logp, none, std::nullopt, "sum").item<float>(), 0.0f);
}

TEST(Loss, NllLossErrors) {
  const Tensor logp = log_softmax(randn({3, 4}), 1);
  const Tensor target = tensor(std::vector<int64_t>{0, 3, 1});
  EXPECT_THROW_MSG(nll_loss(logp, tensor(std::vector<int64_t>{0, -2, 9})), IndexError,
                   "[nll_loss] target -2 is out of bounds for 4 classes");
  EXPECT_THROW_MSG(nll_loss(logp, tensor(std::vector<int64_t>{0, 2, 9})), IndexError,
                   "[nll_loss] target 9 is out of bounds for 4 classes");
  EXPECT_THROW_MSG(nll_loss(logp, target, ones({3})), ValueError,
                   "[nll_loss] weight must have shape (4), but got (3)");
  EXPECT_THROW_MSG(nll_loss(logp, target, std::nullopt, "avg"), ValueError,
                   "[nll_loss] reduction must be 'none', 'mean' or 'sum', but got 'avg'");
  EXPECT_THROW_MSG(nll_loss(ones({3, 4}, kLong), target), NotImplementedError,
                   "[nll_loss] not implemented for dtype Long");
  EXPECT_THROW_MSG(nll_loss(ones({}), tensor(std::vector<int64_t>{0})), ValueError,
                   "[nll_loss] expected an input of at least 1 dim, but got a zero-dim tensor");
  EXPECT_THROW_MSG(nll_loss_backward(ones({}), logp, tensor(std::vector<int64_t>{0, 4, 1})),
                   IndexError, "[nll_loss_backward] target 4 is out of bounds for 4 classes");
  EXPECT_THROW_MSG(nll_loss_backward(ones({3}), logp, target), ValueError,
                   "[nll_loss_backward] grad_output must have shape () for reduction 'mean', but "
                   "got (3)");
  EXPECT_THROW_MSG(nll_loss_backward(ones({}), logp, target, std::nullopt, "none"), ValueError,
                   "[nll_loss_backward] grad_output must have shape (3) for reduction 'none'");
}
