// scaled_dot_product_attention on CPU: the flash kernel against the math path and a reference
// written with loops, its backward (fused against the closed form), the path choice, memory at
// long lengths, autocast and the errors (docs/attention.md). Gradchecks of every path are in the
// op database (test/op_db.h: sdpa*), run by test_autograd; the XPU in test_attention_xpu.
#include <atomic>
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace xten;
using xten::testing::allclose;
using xten::testing::value_at;

namespace {

// softmax(q k^T * scale + mask) v by loops in double over [B, H, L, E] (key/value heads shared by
// groups of query heads), the mask given as a function of (b, h, i, j) returning the additive
// term (-inf to mask). A row with nothing attended gives 0.
template <class MaskFn>
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, double scale, MaskFn mask) {
  const Tensor qd = q.to(kDouble).contiguous(), kd = k.to(kDouble).contiguous(),
               vd = v.to(kDouble).contiguous();
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3);
  const int64_t Hk = k.size(1), S = k.size(2), Ev = v.size(3);
  Tensor out = zeros({B, H, L, Ev}, kDouble);
  const double* Q = qd.data_ptr<double>();
  const double* K = kd.data_ptr<double>();
  const double* V = vd.data_ptr<double>();
  double* O = out.data_ptr<double>();
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / (H / Hk);
      for (int64_t i = 0; i < L; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t c = 0; c < E; ++c)
            d += Q[((b * H + h) * L + i) * E + c] * K[((b * Hk + hk) * S + j) * E + c];
          s[j] = d * scale + mask(b, h, i, j);
          mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) continue;
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t j = 0; j < S; ++j)
          for (int64_t c = 0; c < Ev; ++c)
            O[((b * H + h) * L + i) * Ev + c] += s[j] / sum * V[((b * Hk + hk) * S + j) * Ev + c];
      }
    }
  return out;
}

// t[i][j]...: the sub-tensor at leading indices.
Tensor at(Tensor t, std::initializer_list<int64_t> idx) {
  for (int64_t i : idx) t = t.select(0, i);
  return t;
}
bool same(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && (a.to(kDouble) == b.to(kDouble)).all().item<bool>();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kDouble) - b.to(kDouble)).abs().max().item<double>();
}

// Tolerances of the flash kernel against the double reference, by dtype.
double tolerance(ScalarType t) {
  return t == kDouble ? 1e-12 : t == kFloat ? 2e-5 : t == kBFloat16 ? 3e-2 : 4e-3;
}

}  // namespace

TEST(Attention, FlashMatchesTheReferenceInEveryDtype) {
  manual_seed(1);
  // Lengths across several tiles of the kernel (64 queries, 256 keys) and ragged ends.
  for (ScalarType t : {kDouble, kFloat, kBFloat16, kHalf}) {
    SCOPED_TRACE(to_string(t));
    const Tensor q = randn({2, 3, 130, 16}).to(t), k = randn({2, 3, 300, 16}).to(t),
                 v = randn({2, 3, 300, 8}).to(t);
    const Tensor want = reference(q, k, v, 0.25, [](auto...) { return 0.0; });
    auto [out, lse] = _scaled_dot_product_flash_attention(q, k, v, std::nullopt, false, 0.25);
    EXPECT_EQ(out.dtype(), t);
    EXPECT_EQ(lse.dtype(), t == kDouble ? kDouble : kFloat);
    EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 130, 8}));
    EXPECT_LT(max_abs_diff(out, want), tolerance(t));
    // logsumexp of the first row, by hand.
    const Tensor s = matmul(at(q.to(kDouble), {0, 0, 0}), at(k.to(kDouble), {0, 0}).t()) * 0.25;
    EXPECT_NEAR(value_at(lse, {0, 0, 0}), logsumexp(s, {0}).item<double>(),
                t == kDouble ? 1e-12 : 1e-2);
  }
}

TEST(Attention, CausalMasksAndGroupedHeadsMatchTheReference) {
  manual_seed(2);
  const Tensor q = randn({1, 4, 70, 8}, kDouble), k = randn({1, 2, 90, 8}, kDouble),
               v = randn({1, 2, 90, 8}, kDouble);
  // Causal, top-left aligned: query i sees keys j <= i (also where L != S).
  for (auto [l, s] : {std::pair<int64_t, int64_t>{70, 90}, {90, 70}}) {
    const Tensor qq = randn({1, 4, l, 8}, kDouble), kk = randn({1, 2, s, 8}, kDouble),
                 vv = randn({1, 2, s, 8}, kDouble);
    const Tensor want = reference(qq, kk, vv, 0.5, [](int64_t, int64_t, int64_t i, int64_t j) {
      return j > i ? -INFINITY : 0.0;
    });
    const Tensor got = scaled_dot_product_attention(qq, kk, vv, std::nullopt, 0.0, true, 0.5, true);
    EXPECT_LT(max_abs_diff(got, want), 1e-12) << l << " x " << s;
  }
  // A boolean mask broadcast over batch and heads ([L, S]), with one row masked whole.
  Tensor m = rand({70, 90}) > 0.3;
  m.select(0, 5).fill_(false);
  const Tensor want =
      reference(q, k, v, 1 / std::sqrt(8.0), [&](int64_t, int64_t, int64_t i, int64_t j) {
        return value_at(m, {i, j}) != 0 ? 0.0 : -INFINITY;
      });
  const Tensor got = scaled_dot_product_attention(q, k, v, m, 0.0, false, std::nullopt, true);
  EXPECT_LT(max_abs_diff(got, want), 1e-12);
  EXPECT_EQ(at(got, {0, 1, 5}).abs().max().item<double>(), 0.0);  // attends nothing: 0, not NaN
  // An additive mask per head ([H, 1, S]).
  const Tensor a = randn({4, 1, 90}, kDouble);
  const Tensor want_a =
      reference(q, k, v, 1 / std::sqrt(8.0), [&](int64_t, int64_t h, int64_t, int64_t j) {
        return value_at(a, {h, 0, j});
      });
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v, a, 0.0, false, std::nullopt, true),
                         want_a),
            1e-12);
}

TEST(Attention, FlashAndMathPathsAgreeOnEveryForm) {
  manual_seed(3);
  // 2-d, 3-d, 5-d (two batch dims), broadcast batch dims, heads broadcast from 1.
  struct Case {
    std::vector<int64_t> q, k, v;
  };
  for (const Case& c : std::vector<Case>{{{7, 4}, {9, 4}, {9, 3}},
                                         {{3, 7, 4}, {3, 9, 4}, {3, 9, 5}},
                                         {{2, 3, 2, 7, 4}, {2, 3, 2, 9, 4}, {2, 3, 2, 9, 4}},
                                         {{2, 3, 7, 4}, {1, 3, 9, 4}, {1, 3, 9, 4}},
                                         {{2, 4, 7, 4}, {2, 1, 9, 4}, {2, 1, 9, 4}}}) {
    const Tensor q = randn(c.q), k = randn(c.k), v = randn(c.v);
    const Tensor mask = rand({7, 9}) > 0.2, add = randn({7, 9});
    for (int form = 0; form < 3; ++form) {
      std::optional<Tensor> m = form == 1   ? std::optional<Tensor>(mask)
                                : form == 2 ? std::optional<Tensor>(add)
                                            : std::nullopt;
      const Tensor flash = scaled_dot_product_attention(q, k, v, m);
      Tensor math;
      {
        SdpBackendGuard only_math({SdpBackend::kMath});
        math = scaled_dot_product_attention(q, k, v, m);
      }
      EXPECT_EQ(flash.sizes(), math.sizes());
      EXPECT_TRUE(allclose(flash, math, 1e-5, 1e-5)) << form << " " << IntArrayRef(c.q);
    }
  }
}

TEST(Attention, FusedBackwardMatchesItsClosedForm) {
  manual_seed(4);
  // 130 queries: a full tile and a ragged one; 100: shorter than a tile, which bfloat16 takes
  // through the widening path (docs/attention.md, "The CPU kernel"); 300: causal tiles whose
  // diagonal lies inside a key tile (Note [Causal diagonal in halves]).
  for (int64_t len : {130, 100, 300})
    for (ScalarType t : {kDouble, kFloat, kBFloat16}) {
      for (int form = 0; form < 3; ++form) {  // plain, causal, boolean mask; grouped heads
        SCOPED_TRACE(std::string(to_string(t)) + " form " + std::to_string(form) + " length " +
                     std::to_string(len));
        const Tensor q = randn({2, 4, len, 16}).to(t), k = randn({2, 2, 300, 16}).to(t),
                     v = randn({2, 2, 300, 12}).to(t), g = randn({2, 4, len, 12}).to(t);
        std::optional<Tensor> m;
        if (form == 2) m = rand({2, 1, len, 300}) > 0.5;
        auto [out, lse] = _scaled_dot_product_flash_attention(q, k, v, m, form == 1, 0.3);
        auto [dq, dk, dv] =
            _scaled_dot_product_flash_attention_backward(g, q, k, v, out, lse, m, form == 1, 0.3);
        // The composite, as a backward with create_graph runs it.
        const Tensor qd = q.to(kDouble).requires_grad_(), kd = k.to(kDouble).requires_grad_(),
                     vd = v.to(kDouble).requires_grad_();
        const Tensor o = std::get<0>(
            _scaled_dot_product_attention_math(qd, kd, vd, m, 0.0, form == 1, 0.3, true));
        auto want = autograd::grad({(o * g.to(kDouble)).sum()}, {qd, kd, vd});
        const double tol = t == kDouble ? 1e-10 : t == kFloat ? 1e-4 : 0.1;
        EXPECT_LT(max_abs_diff(out, o.detach()), t == kBFloat16 ? 0.02 : tol);
        EXPECT_LT(max_abs_diff(dq, want[0]), tol);
        EXPECT_LT(max_abs_diff(dk, want[1]), tol);
        EXPECT_LT(max_abs_diff(dv, want[2]), tol);
        EXPECT_EQ(dq.dtype(), t);
      }
    }
}

TEST(Attention, TheMathPathTakesWhatTheFlashKernelDoesNot) {
  manual_seed(5);
  const Tensor q = randn({2, 2, 5, 4}), k = randn({2, 2, 6, 4}), v = randn({2, 2, 6, 4});
  auto flash_calls = [](const std::function<void()>& f) {
    profiler::Profiler prof{profiler::ProfilerOptions()};
    prof.start();
    f();
    prof.stop();
    int n = 0;
    for (const auto& e : prof.events()) n += e.name == "xten::_scaled_dot_product_flash_attention";
    return n;
  };
  EXPECT_EQ(flash_calls([&] { scaled_dot_product_attention(q, k, v); }), 1);
  // Dropout: the math path, with the generator's numbers (the same seed gives the same result).
  manual_seed(9);
  Tensor a;
  EXPECT_EQ(flash_calls([&] { a = scaled_dot_product_attention(q, k, v, std::nullopt, 0.5); }), 0);
  manual_seed(9);
  const Tensor b = scaled_dot_product_attention(q, k, v, std::nullopt, 0.5);
  EXPECT_TRUE(same(a, b));
  EXPECT_FALSE(allclose(a, scaled_dot_product_attention(q, k, v)));
  // A mask that requires grad gets its gradient from the math path.
  const Tensor m = randn({5, 6}).requires_grad_();
  EXPECT_EQ(flash_calls([&] { scaled_dot_product_attention(q, k, v, m).sum().backward(); }), 0);
  ASSERT_TRUE(m.grad().defined());
  EXPECT_GT(m.grad().abs().sum().item<double>(), 0);
  {
    NoGradGuard no_grad;  // no gradient wanted: the flash kernel again
    EXPECT_EQ(flash_calls([&] { scaled_dot_product_attention(q, k, v, m); }), 1);
  }
  // Only the flash kernel allowed, and it cannot take the call: the reason is named.
  SdpBackendGuard only_flash({SdpBackend::kFlash});
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, v, std::nullopt, 0.1), ValueError,
                   "[scaled_dot_product_attention] no allowed path takes this call: the math path "
                   "is not allowed and the flash kernel takes no dropout (dropout_p > 0)");
  SdpBackendGuard none({});
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, v), ValueError,
                   "neither is the flash kernel");
}

TEST(Attention, BadInputsNameTheOpAndTheValues) {
  const Tensor q = randn({2, 5, 4}), k = randn({2, 6, 4}), v = randn({2, 6, 4});
  EXPECT_THROW_MSG(scaled_dot_product_attention(randn({4}), k, v), ValueError,
                   "[scaled_dot_product_attention] expected query, key and value of at least 2 "
                   "dims [..., length, features], but got query (4)");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, randn({2, 6, 3}), v), ValueError,
                   "the query's features (4) and the key's (3) differ");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, randn({2, 7, 4})), ValueError,
                   "key and value have different lengths");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k.to(kDouble), v), TypeError,
                   "expected query, key and value to have the same dtype, but got Float, Double "
                   "and Float");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, v, ones({5, 6}, kBool), 0.0, true),
                   ValueError, "an explicit attn_mask cannot be combined with is_causal=true");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, v, ones({5, 6}, kLong)), TypeError,
                   "expected attn_mask of dtype Bool or the query's dtype Float, but got Long");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, v, std::nullopt, 1.5), ValueError,
                   "dropout_p must be in [0, 1], but got 1.5");
  EXPECT_THROW_MSG(
      scaled_dot_product_attention(randn({1, 3, 5, 4}), randn({1, 2, 6, 4}), randn({1, 2, 6, 4}),
                                   std::nullopt, 0.0, false, std::nullopt, true),
      ValueError, "enable_gqa needs heads at dim -3, the query's a multiple");
  EXPECT_THROW_MSG(
      scaled_dot_product_attention(randn({1, 4, 5, 4}), randn({1, 2, 6, 4}), randn({1, 2, 6, 4})),
      ValueError, "pass enable_gqa=true for grouped-query attention");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q, k, v, ones({4, 6}, kBool)), ValueError,
                   "[scaled_dot_product_attention]");
  EXPECT_THROW_MSG(scaled_dot_product_attention(q.to(kLong), k.to(kLong), v.to(kLong)),
                   NotImplementedError,
                   "[scaled_dot_product_attention] not implemented for dtype Long");
  // Empty forms: no heads, no queries, no keys (every query attends nothing: 0).
  for (auto [h, l, sl] : {std::tuple<int64_t, int64_t, int64_t>{0, 5, 6}, {2, 0, 6}, {2, 5, 0}}) {
    const Tensor q = randn({1, h, l, 4}).requires_grad_(),
                 k = randn({1, h, sl, 4}).requires_grad_(),
                 v = randn({1, h, sl, 4}).requires_grad_();
    const Tensor o = scaled_dot_product_attention(q, k, v);
    EXPECT_EQ(o.sizes(), IntArrayRef({1, h, l, 4}));
    o.sum().backward();
    if (sl == 0) {
      EXPECT_TRUE((o == 0).all().item<bool>());  // nothing attended: 0
    }
    EXPECT_EQ(q.grad().sizes(), q.sizes());
    EXPECT_EQ(k.grad().sizes(), k.sizes());
  }
  // The kernel's own checks.
  EXPECT_THROW_MSG(_scaled_dot_product_flash_attention(q, k, v, std::nullopt, false, 1.0),
                   ValueError,
                   "[_scaled_dot_product_flash_attention] expected 4-d query, key and value");
  EXPECT_THROW_MSG(
      _scaled_dot_product_flash_attention(randn({1, 2, 5, 4}), randn({1, 2, 6, 4}),
                                          randn({1, 2, 6, 4}), ones({3, 6}, kBool), false, 1.0),
      ValueError, "attn_mask (3, 6) does not broadcast to [batch, heads, L, S] = [1, 2, 5, 6]");
  auto [o, lse] = _scaled_dot_product_flash_attention(
      randn({1, 2, 5, 4}), randn({1, 2, 6, 4}), randn({1, 2, 6, 4}), std::nullopt, false, 1.0);
  EXPECT_THROW_MSG(
      _scaled_dot_product_flash_attention_backward(o, randn({1, 2, 5, 4}), randn({1, 2, 6, 4}),
                                                   randn({1, 2, 6, 4}), o, lse.to(kDouble),
                                                   std::nullopt, false, 1.0),
      ValueError, "expected logsumexp (1, 2, 5) of dtype Float, but got (1, 2, 5) of dtype Double");
}

namespace {
std::atomic<int64_t> g_peak{0}, g_base{0};
void track_peak(Device d, const void*, int64_t, int64_t total) {
  if (d.type() != kCPU) return;
  int64_t p = g_peak.load();
  while (total > p && !g_peak.compare_exchange_weak(p, total)) {
  }
}
}  // namespace

// The goal of docs/attention.md: length 16,384 forward and backward without an L x L buffer (1
// GiB in float32); every tensor the op allocates is counted by the allocator's memory reports.
TEST(Attention, LongSequencesNeverAllocateTheScoreMatrix) {
  const int64_t L = 16384;
  manual_seed(6);
  const Tensor q = randn({1, 1, L, 8}).requires_grad_(), k = randn({1, 1, L, 8}).requires_grad_(),
               v = randn({1, 1, L, 8}).requires_grad_();
  const Tensor g = randn({1, 1, L, 8});
  g_base = cpu_memory_allocated();
  g_peak = g_base.load();
  set_memory_observer(track_peak);
  const Tensor out = scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
  (out * g).sum().backward();
  set_memory_observer(nullptr);
  const int64_t used = g_peak - g_base;
  EXPECT_LT(used, 16 << 20) << "bytes above the start: " << used;
  EXPECT_GT(used, 0);
  // Spot checks: the last query attends to everything; its output is the reference's.
  const Tensor s =
      matmul(at(q.detach(), {0, 0, L - 1}), at(k.detach(), {0, 0}).t()) / std::sqrt(8.0);
  const Tensor want = matmul(softmax(s.to(kDouble), 0), at(v.detach(), {0, 0}).to(kDouble));
  EXPECT_LT(max_abs_diff(at(out.detach(), {0, 0, L - 1}), want), 1e-5);
  EXPECT_TRUE(isfinite(q.grad()).all().item<bool>());
}

TEST(Attention, AutocastRunsItInTheLowerPrecision) {
  const Tensor q = randn({1, 2, 5, 8}), k = randn({1, 2, 6, 8}), v = randn({1, 2, 6, 8});
  autocast::AutocastGuard guard(kCPU, kBFloat16);
  const Tensor out = scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.dtype(), kBFloat16);
  EXPECT_TRUE(allclose(
      out.to(kFloat),
      scaled_dot_product_attention(q.to(kBFloat16), k.to(kBFloat16), v.to(kBFloat16)).to(kFloat)));
}

TEST(Multinomial, DrawsFollowTheWeights) {
  manual_seed(7);
  const Tensor w = tensor(std::vector<double>{1, 0, 3, 6}, TensorOptions(kFloat));
  for (bool replacement : {true, false}) {
    SCOPED_TRACE(replacement);
    // One sample per row of many identical rows: the frequencies follow the weights.
    const Tensor rows = w.unsqueeze(0).expand({20000, 4}).contiguous();
    const Tensor s = rows.multinomial(1, replacement);
    EXPECT_EQ(s.sizes(), IntArrayRef({20000, 1}));
    EXPECT_EQ(s.dtype(), kLong);
    const Tensor counts = one_hot(s.reshape({-1}), 4).sum({0}).to(kDouble) / 20000;
    EXPECT_NEAR(value_at(counts, {0}), 0.1, 0.01);
    EXPECT_EQ(value_at(counts, {1}), 0.0);  // weight 0: never
    EXPECT_NEAR(value_at(counts, {2}), 0.3, 0.015);
    EXPECT_NEAR(value_at(counts, {3}), 0.6, 0.015);
  }
  // With replacement, many samples of one row: the same frequencies.
  const Tensor s = multinomial(w, 30000, true);
  const Tensor counts = one_hot(s, 4).sum({0}).to(kDouble) / 30000;
  EXPECT_NEAR(value_at(counts, {0}), 0.1, 0.01);
  EXPECT_EQ(value_at(counts, {1}), 0.0);
  EXPECT_NEAR(value_at(counts, {3}), 0.6, 0.015);
  // Without replacement: every row draws distinct categories of non-zero weight, and the first
  // draw follows the weights (the second, given the first, the remaining ones).
  const Tensor rows = w.unsqueeze(0).expand({5000, 4}).contiguous();
  const Tensor d = rows.multinomial(3, false);
  const Tensor sorted = std::get<0>(d.sort(1));
  EXPECT_TRUE(same(sorted, tensor(std::vector<int64_t>{0, 2, 3}).unsqueeze(0).expand({5000, 3})));
  const double first3 = (d.select(1, 0) == 3).to(kDouble).mean().item<double>();
  EXPECT_NEAR(first3, 0.6, 0.03);
  // The generator decides: the same seed, the same samples.
  manual_seed(11);
  const Tensor a = multinomial(w, 50, true);
  manual_seed(11);
  EXPECT_TRUE(same(a, multinomial(w, 50, true)));
  EXPECT_EQ(multinomial(w.to(kDouble).unsqueeze(0), 2).dtype(), kLong);
}

TEST(Multinomial, BadWeightsNameTheProblem) {
  const Tensor w = tensor(std::vector<double>{1, 0, 3}, TensorOptions(kFloat));
  EXPECT_THROW_MSG(multinomial(w, 4), ValueError,
                   "[multinomial] cannot draw 4 samples without replacement from 3 categories");
  EXPECT_THROW_MSG(multinomial(w, 3), ValueError,
                   "cannot draw 3 samples without replacement from a row with only 2 categories "
                   "of non-zero weight");
  EXPECT_THROW_MSG(multinomial(w, 0), ValueError, "num_samples must be positive, but got 0");
  EXPECT_THROW_MSG(multinomial(zeros({2, 3}), 1), ValueError, "a row of weights sums to 0");
  EXPECT_THROW_MSG(multinomial(w * -1, 1), ValueError, "inf, NaN or a negative value");
  EXPECT_THROW_MSG(multinomial(w / 0.0, 1), ValueError, "inf, NaN or a negative value");
  EXPECT_THROW_MSG(multinomial(zeros({2, 2, 2}), 1), ValueError, "expected 1-d or 2-d weights");
  EXPECT_THROW_MSG(multinomial(ones({3}, kLong), 1), NotImplementedError,
                   "[multinomial] not implemented for dtype Long");
}
