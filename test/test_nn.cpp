// nn: Module's registration, walks, modes, moves, state dicts and repr; every layer's forward
// against the functional op it wraps; default initialisation and nn::init's distributions.
#include "test_util.h"

#include <xten/nn/init.h>
#include <xten/nn/modules.h>
#include <xten/nn/utils.h>
#include <xten/profiler/profiler.h>

using namespace xten;
using namespace xten::testing;

namespace {

struct NetImpl : nn::Module {
  NetImpl() : nn::Module("Net") {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)));
    bn = register_module("bn", nn::BatchNorm2d(4));
    fc = register_module("fc", nn::Linear(4 * 4 * 4, 3));
  }
  Tensor forward(const Tensor& x) { return fc(flatten(relu(bn(conv(x))), 1)); }
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Linear fc{nullptr};
};
XTEN_MODULE(Net);

std::vector<std::string> names(const nn::NamedTensors& list) {
  std::vector<std::string> r;
  for (const auto& [n, t] : list) r.push_back(n);
  return r;
}

}  // namespace

TEST(Module, HoldersParametersAndNames) {
  manual_seed(1);
  nn::Linear lin(784, 256);
  EXPECT_EQ(lin->weight.sizes(), IntArrayRef({256, 784}));
  EXPECT_TRUE(lin->weight.requires_grad());
  EXPECT_TRUE(lin->weight.is_leaf());
  EXPECT_EQ(lin->parameters().size(), 2u);
  nn::Linear copy = lin;  // shared ownership, as libtorch's holders
  EXPECT_EQ(copy->weight.impl(), lin->weight.impl());
  Tensor x = randn({5, 784});
  EXPECT_TRUE(allclose(lin(x), linear(x, lin->weight, lin->bias), 0, 0));
  nn::Linear no_bias(nn::LinearOptions(3, 2).bias(false));
  EXPECT_EQ(names(no_bias->named_parameters()), std::vector<std::string>{"weight"});

  Net net;
  EXPECT_EQ(names(net->named_parameters()),
            (std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                      "fc.weight", "fc.bias"}));
  EXPECT_EQ(
      names(net->named_buffers()),
      (std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_EQ(net->parameters(false).size(), 0u);
  EXPECT_EQ(net->children().size(), 3u);
  EXPECT_EQ(net->modules().size(), 4u);
  EXPECT_EQ(net->named_modules()[1].first, "conv");
  int visited = 0;
  net->apply([&](nn::Module&) { ++visited; });
  EXPECT_EQ(visited, 4);
  EXPECT_EQ(net(randn({2, 1, 4, 4})).sizes(), IntArrayRef({2, 3}));
}

TEST(Module, RegistrationErrors) {
  nn::Module m("M");
  m.register_parameter("w", ones({2}));
  EXPECT_THROW_MSG(m.register_parameter("w", ones({2})), ValueError, "'w' is already registered");
  EXPECT_THROW_MSG(m.register_buffer("a.b", ones({2})), ValueError, "contain no '.'");
  EXPECT_THROW_MSG(nn::Linear(-1, 2), ValueError, "features must be non-negative");
  EXPECT_THROW_MSG(nn::Conv2d(3, 4, 3)->register_module("weight", nn::ReLU()), ValueError,
                   "already registered");
  EXPECT_THROW_MSG(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)), ValueError,
                   "must be divisible by groups");
}

TEST(Module, TrainEvalDropoutAndBatchNorm) {
  manual_seed(2);
  nn::Sequential seq(nn::BatchNorm2d(3), nn::Dropout(0.5));
  EXPECT_TRUE(seq->is_training());
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>((*seq)[0]);
  ASSERT_TRUE(bn);
  Tensor x = randn({4, 3, 5, 5}) * 2 + 1;
  Tensor rm = zeros({3}), rv = ones({3});
  Tensor expect = batch_norm(x, ones({3}), zeros({3}), rm, rv, true, 0.1, 1e-5);
  Tensor y = bn->forward(x);
  EXPECT_TRUE(allclose(y, expect, 1e-6, 1e-6));
  EXPECT_TRUE(allclose(bn->running_mean, rm, 1e-6, 1e-6));
  EXPECT_TRUE(allclose(bn->running_var, rv, 1e-6, 1e-6));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  seq->eval();
  EXPECT_FALSE(bn->is_training());
  EXPECT_TRUE(allclose(seq(x), batch_norm(x, ones({3}), zeros({3}), rm, rv, false, 0.1, 1e-5), 1e-6,
                       1e-6));  // Dropout is the identity in evaluation
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_THROW_MSG(bn->forward(randn({4, 3})), ValueError,
                   "[BatchNorm2d] expected 4-D input, but got 2-D input");
  nn::BatchNorm1d untracked(nn::BatchNormOptions(3).track_running_stats(false));
  untracked->eval();
  Tensor x2 = randn({8, 3});
  EXPECT_TRUE(
      allclose(untracked(x2),
               batch_norm(x2, ones({3}), zeros({3}), std::nullopt, std::nullopt, true, 0.1, 1e-5),
               1e-6, 1e-6));
  nn::Dropout drop(0.5);
  Tensor big = ones({10000});
  Tensor d = drop(big);
  const double kept = (d != 0).to(kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.5, 0.03);
  EXPECT_THROW_MSG(nn::Dropout(1.5), ValueError, "between 0 and 1");
}

TEST(Module, ToDtypeAndZeroGradKeepHandles) {
  manual_seed(3);
  nn::Linear lin(4, 3);
  Tensor w = lin->weight;  // as an optimizer holds it
  lin(randn({2, 4})).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  lin->to(kDouble);
  EXPECT_EQ(w.dtype(), kDouble);
  EXPECT_EQ(w.grad().dtype(), kDouble);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(lin(randn({2, 4}, kDouble)).dtype(), kDouble);
  lin->zero_grad(false);
  EXPECT_EQ(w.grad().abs().sum().item<double>(), 0);
  lin->zero_grad();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_THROW_MSG(lin->to(kLong), TypeError, "only accepts floating dtypes");
}

TEST(Module, StateDictRoundTripAndErrors) {
  manual_seed(4);
  Net a, b;
  a(randn({2, 1, 4, 4}));  // moves a's running statistics
  b->load_state_dict(a->state_dict());
  for (auto& [n, t] : a->state_dict()) {
    bool found = false;
    for (auto& [m, u] : b->state_dict())
      if (m == n) {
        found = true;
        EXPECT_TRUE(allclose(u, t, 0, 0)) << n;
      }
    EXPECT_TRUE(found) << n;
  }
  Tensor x = randn({2, 1, 4, 4});
  a->eval();
  b->eval();
  EXPECT_TRUE(allclose(a(x), b(x), 0, 0));
  nn::NamedTensors partial = a->state_dict();
  partial.erase(partial.begin());
  partial.emplace_back("extra.weight", ones({1}));
  EXPECT_THROW_MSG(b->load_state_dict(partial), ValueError,
                   "missing keys [conv.weight], unexpected keys [extra.weight]");
  b->load_state_dict(partial, /*strict=*/false);
  nn::NamedTensors wrong = a->state_dict();
  wrong[0].second = ones({2, 2});
  EXPECT_THROW_MSG(b->load_state_dict(wrong), ValueError, "size mismatch for conv.weight");
  wrong[0].second = a->state_dict()[0].second.to(kDouble);
  EXPECT_THROW_MSG(b->load_state_dict(wrong), ValueError, "dtype mismatch for conv.weight");
}

TEST(Module, ReprLikePyTorch) {
  nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).stride(2).padding(1).bias(false)),
                     nn::BatchNorm2d(8), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                     nn::Linear(32, 10));
  EXPECT_EQ(nn::repr(*seq.ptr()),
            "Sequential(\n"
            "  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=false)\n"
            "  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=true, "
            "track_running_stats=true)\n"
            "  (2): ReLU()\n"
            "  (3): MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, "
            "1), ceil_mode=false)\n"
            "  (4): Flatten(start_dim=1, end_dim=-1)\n"
            "  (5): Linear(in_features=32, out_features=10, bias=true)\n"
            ")");
}

TEST(Layers, ForwardEqualsTheFunctionalOp) {
  manual_seed(5);
  Tensor x = randn({2, 4, 6, 6});
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  EXPECT_TRUE(
      allclose(conv(x), conv2d(x, conv->weight, conv->bias, {2, 2}, {1, 1}, {1, 1}, 2), 0, 0));
  Tensor x1 = randn({2, 4, 9});
  nn::Conv1d c1(nn::Conv1dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  EXPECT_TRUE(allclose(c1(x1), conv1d(x1, c1->weight, c1->bias, {2}, {1}, {1}, 2), 0, 0));
  nn::ConvTranspose2d ct(
      nn::ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).output_padding(1));
  EXPECT_EQ(ct->weight.sizes(), IntArrayRef({4, 6, 3, 3}));
  EXPECT_TRUE(
      allclose(ct(x), conv_transpose2d(x, ct->weight, ct->bias, {2, 2}, {1, 1}, {1, 1}), 0, 0));
  EXPECT_EQ(ct(x).sizes(), IntArrayRef({2, 6, 12, 12}));
  EXPECT_TRUE(allclose(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1))(x),
                       max_pool2d(x, {3, 3}, {2, 2}, {1, 1}), 0, 0));
  EXPECT_TRUE(allclose(nn::AvgPool2d(2)(x), avg_pool2d(x, {2, 2}), 0, 0));
  EXPECT_TRUE(allclose(nn::AdaptiveAvgPool2d(1)(x), adaptive_avg_pool2d(x, {1, 1}), 0, 0));
  nn::LayerNorm ln(nn::LayerNormOptions({6, 6}));
  EXPECT_TRUE(allclose(ln(x), layer_norm(x, {6, 6}, ln->weight, ln->bias), 0, 0));
  nn::GroupNorm gn(2, 4);
  EXPECT_TRUE(allclose(gn(x), group_norm(x, 2, gn->weight, gn->bias), 0, 0));
  EXPECT_TRUE(allclose(nn::GELU("tanh")(x), gelu(x, "tanh"), 0, 0));
  EXPECT_TRUE(allclose(nn::LeakyReLU(0.2)(x), leaky_relu(x, 0.2), 0, 0));
  EXPECT_TRUE(allclose(nn::ELU(0.5)(x), elu(x, 0.5), 0, 0));
  EXPECT_TRUE(allclose(nn::Softplus(2, 10)(x), softplus(x, 2, 10), 0, 0));
  EXPECT_TRUE(allclose(nn::SiLU()(x), silu(x), 0, 0));
  EXPECT_TRUE(allclose(nn::Hardswish()(x), hardswish(x), 0, 0));
  EXPECT_TRUE(allclose(nn::Tanh()(x), tanh(x), 0, 0));
  EXPECT_TRUE(allclose(nn::Sigmoid()(x), sigmoid(x), 0, 0));
  EXPECT_TRUE(allclose(nn::Softmax(1)(x), softmax(x, 1), 0, 0));
  EXPECT_TRUE(allclose(nn::LogSoftmax(1)(x), log_softmax(x, 1), 0, 0));
  EXPECT_TRUE(allclose(nn::Identity()(x), x, 0, 0));
  nn::Embedding emb(10, 3);
  Tensor idx = tensor({1, 7, 7});
  EXPECT_TRUE(allclose(emb(idx), embedding(emb->weight, idx), 0, 0));
  Tensor logits = randn({5, 4}), target = tensor({0, 3, 1, 1, 2});
  EXPECT_TRUE(allclose(
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.1))(logits, target),
      cross_entropy(logits, target, std::nullopt, "mean", -100, 0.1), 0, 0));
  EXPECT_TRUE(allclose(nn::NLLLoss("sum")(log_softmax(logits, 1), target),
                       nll_loss(log_softmax(logits, 1), target, std::nullopt, "sum"), 0, 0));
  Tensor a = rand({5, 4}), b = rand({5, 4});
  EXPECT_TRUE(allclose(nn::MSELoss()(a, b), mse_loss(a, b), 0, 0));
  EXPECT_TRUE(allclose(nn::L1Loss("sum")(a, b), l1_loss(a, b, "sum"), 0, 0));
  EXPECT_TRUE(
      allclose(nn::SmoothL1Loss("mean", 0.5)(a, b), smooth_l1_loss(a, b, "mean", 0.5), 0, 0));
  EXPECT_TRUE(allclose(nn::BCELoss()(a, b), binary_cross_entropy(a, b), 0, 0));
  EXPECT_TRUE(
      allclose(nn::BCEWithLogitsLoss()(a, b), binary_cross_entropy_with_logits(a, b), 0, 0));
  EXPECT_TRUE(allclose(nn::KLDivLoss("batchmean")(log_softmax(a, 1), softmax(b, 1)),
                       kl_div(log_softmax(a, 1), softmax(b, 1), "batchmean"), 0, 0));
  nn::ModuleList list;
  list->push_back(nn::ReLU());
  list->push_back(nn::Linear(2, 2));
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(list->parameters().size(), 2u);
  EXPECT_THROW_MSG((*list)[2], IndexError, "index 2 is out of range for 2 modules");
  nn::ModuleDict dict;
  dict->insert("act", nn::ReLU());
  EXPECT_TRUE(dict->contains("act"));
  EXPECT_EQ((*dict)["act"]->name(), "ReLU");
  EXPECT_THROW_MSG((*dict)["x"], IndexError, "no module named 'x'");
}

// Note [Linear -> ReLU]: Sequential runs a Linear and the ReLU after it as one _linear_relu; the
// values and gradients are those of the two modules called one after the other.
TEST(Layers, SequentialRunsLinearThenReluAsOneOp) {
  manual_seed(8);
  nn::Sequential seq(nn::Linear(6, 5), nn::ReLU(), nn::Linear(5, 4), nn::ReLU(), nn::Tanh(),
                     nn::Linear(nn::LinearOptions(4, 3).bias(false)), nn::ReLU());
  const Tensor x = randn({7, 6}).requires_grad_();
  profiler::Profiler prof;
  prof.start();
  const Tensor y = seq(x);
  prof.stop();
  int fused = 0, relus = 0;
  for (const auto& e : prof.events()) {
    fused += e.name == "xten::_linear_relu" && e.key == "AutogradCPU";
    relus += e.name == "xten::relu";
  }
  EXPECT_EQ(fused, 3);
  EXPECT_EQ(relus, 0);
  auto lin = [&](size_t i) { return std::dynamic_pointer_cast<nn::LinearImpl>((*seq)[i]); };
  Tensor h = x;  // the modules one by one
  for (size_t i = 0; i < seq->size(); ++i) {
    if (lin(i))
      h = lin(i)->forward(h);
    else
      h = i == 4 ? tanh(h) : relu(h);
  }
  EXPECT_TRUE(allclose(y, h, 1e-6, 1e-7));
  const auto grads = autograd::grad({y.sum()}, {x, lin(0)->weight, lin(0)->bias, lin(5)->weight});
  const auto want = autograd::grad({h.sum()}, {x, lin(0)->weight, lin(0)->bias, lin(5)->weight});
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(allclose(grads[i], want[i], 1e-6, 1e-7));
}

TEST(Init, DefaultsAndDistributions) {
  manual_seed(6);
  nn::Linear lin(400, 300);
  const double bound = 1 / std::sqrt(400.0);
  EXPECT_LE(lin->weight.abs().max().item<float>(), bound);
  EXPECT_LE(lin->bias.abs().max().item<float>(), bound);
  // U(-b, b) has variance b^2 / 3.
  EXPECT_NEAR(lin->weight.var().item<float>(), bound * bound / 3, bound * bound / 3 * 0.03);
  Tensor t = empty({500, 400});
  nn::init::kaiming_normal_(t, 0, "fan_in", "relu");
  EXPECT_NEAR(t.std().item<float>(), std::sqrt(2.0 / 400), std::sqrt(2.0 / 400) * 0.02);
  EXPECT_NEAR(t.mean().item<float>(), 0, 0.002);
  nn::init::xavier_uniform_(t);
  EXPECT_LE(t.abs().max().item<float>(), std::sqrt(6.0 / 900));
  EXPECT_NEAR(t.var().item<float>(), 6.0 / 900 / 3, 6.0 / 900 / 3 * 0.03);
  nn::init::trunc_normal_(t, 1, 2, -1, 2);
  EXPECT_GE(t.min().item<float>(), -1);
  EXPECT_LE(t.max().item<float>(), 2);
  nn::init::constant_(t, 0.5);
  EXPECT_EQ(t.sum().item<float>(), 0.5f * 500 * 400);
  EXPECT_NEAR(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2 / 1.04), 1e-12);
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out(empty({8, 3, 5, 5}));
  EXPECT_EQ(fi, 75);
  EXPECT_EQ(fo, 200);
  Tensor v = empty({3});
  EXPECT_THROW_MSG(nn::init::xavier_uniform_(v), ValueError, "at least 2 dims");
  Tensor ints = zeros({3, 3}, kLong, Device("cpu"));
  EXPECT_THROW_MSG(nn::init::uniform_(ints), TypeError, "expected a floating tensor");
  EXPECT_THROW_MSG(nn::init::kaiming_uniform_(t, 0, "fan_mid"), ValueError,
                   "mode must be 'fan_in' or 'fan_out'");
}

// orthogonal_: rows orthonormal for a wide tensor, columns for a tall one, times gain; a conv
// weight flattened past dim 0; a fresh matrix per call; float64 to 1e-12.
TEST(Init, OrthogonalGivesOrthonormalRowsOrColumns) {
  manual_seed(7);
  auto gram_is = [](const Tensor& w, bool rows, double scale, double tol) {
    const Tensor m = w.reshape({w.size(0), -1}).to(kDouble);
    const Tensor g = rows ? m.mm(m.t()) : m.t().mm(m);
    return allclose(g, eye(g.size(0), std::nullopt, kDouble) * (scale * scale), 0, tol);
  };
  Tensor wide = empty({6, 10}), tall = empty({10, 6}), conv = empty({4, 3, 3, 3});
  Tensor sq = empty({32, 32}, kDouble);
  nn::init::orthogonal_(wide);
  nn::init::orthogonal_(tall, 2.0);
  nn::init::orthogonal_(conv);
  nn::init::orthogonal_(sq);
  EXPECT_TRUE(gram_is(wide, true, 1, 1e-6));
  EXPECT_TRUE(gram_is(tall, false, 2, 1e-5));
  EXPECT_TRUE(gram_is(conv, true, 1, 1e-6));
  EXPECT_TRUE(gram_is(sq, true, 1, 1e-12));
  EXPECT_TRUE(gram_is(sq, false, 1, 1e-12));
  Tensor again = empty({6, 10});
  nn::init::orthogonal_(again);
  EXPECT_GT((again - wide).abs().max().item<float>(), 0.01f);  // a new draw
  // Uniform over the orthogonal group: each entry of a 32 x 32 has mean 0 and variance 1/32.
  Tensor big = empty({64, 64}, kDouble);
  double m2 = 0;
  for (int k = 0; k < 20; ++k) {
    nn::init::orthogonal_(big);
    m2 += big.pow(2).mean().item<double>();
  }
  EXPECT_NEAR(m2 / 20, 1.0 / 64, 1e-12);  // rows of norm 1: exactly 1/64 on average
  // Signed by R's diagonal, Q's first entry is a00 / |a0| for the Gaussian a: symmetric about
  // 0 (without the signs, Householder's Q would have it always negative).
  Tensor small = empty({8, 8}, kDouble);
  int negative = 0;
  double sum = 0;
  for (int k = 0; k < 400; ++k) {
    nn::init::orthogonal_(small);
    const double q00 = small.select(0, 0).select(0, 0).item<double>();
    negative += q00 < 0;
    sum += q00;
  }
  EXPECT_GT(negative, 140);
  EXPECT_LT(negative, 260);
  EXPECT_NEAR(sum / 400, 0, 0.07);  // q00 has sd 1/sqrt(8): the mean's is 0.018
  Tensor v = empty({3});
  EXPECT_THROW_MSG(nn::init::orthogonal_(v), ValueError, "2 or more dimensions");
  Tensor ints = zeros({3, 3}, kLong, Device("cpu"));
  EXPECT_THROW_MSG(nn::init::orthogonal_(ints), TypeError, "expected a floating tensor");
  Tensor none = empty({0, 5});
  EXPECT_NO_THROW(nn::init::orthogonal_(none));
}

// Gradient clipping (nn/utils.h): the total norm of the per-tensor norms, scaled down to
// max_norm only when above it, parameters without gradients skipped, bad values rejected.
TEST(NnUtils, ClipGradNormScalesToTheTotalNorm) {
  Tensor a = ones({3}).requires_grad_(true), b = ones({2, 2}).requires_grad_(true);
  Tensor unused = ones({4}).requires_grad_(true);
  a.grad() = full({3}, 3.0);      // norm sqrt(27)
  b.grad() = full({2, 2}, -4.0);  // norm 8
  const double total = std::sqrt(27.0 + 64.0);
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b, unused}, 1.0), total, 1e-5);
  EXPECT_FALSE(unused.grad().defined());
  const double scale = 1.0 / (total + 1e-6);
  EXPECT_TRUE(allclose(a.grad(), full({3}, 3.0 * scale), 1e-6, 1e-7));
  EXPECT_TRUE(allclose(b.grad(), full({2, 2}, -4.0 * scale), 1e-6, 1e-7));
  const double now = std::sqrt((a.grad() * a.grad()).sum().item<double>() +
                               (b.grad() * b.grad()).sum().item<double>());
  EXPECT_NEAR(now, 1.0, 1e-5);
  // Below max_norm: untouched, bit for bit.
  const Tensor before = a.grad().clone();
  EXPECT_NEAR(nn::utils::clip_grad_norm_(a, 100.0), std::sqrt(27.0) * scale, 1e-5);
  EXPECT_EQ((a.grad() != before).sum().item<int64_t>(), 0);
  // inf: the largest absolute value; order 1: the sum of absolute values.
  b.grad() = tensor({1.0f, -7.0f, 2.0f, 0.5f}).reshape({2, 2});
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_(b, 1e9, INFINITY), 7.0);
  EXPECT_NEAR(nn::utils::clip_grad_norm_(b, 1e9, 1.0), 10.5, 1e-5);
  // bfloat16 gradients: the norm in float32.
  Tensor h = ones({1000}, kBFloat16).requires_grad_(true);
  h.grad() = full({1000}, 0.1, kBFloat16);
  EXPECT_NEAR(nn::utils::clip_grad_norm_(h, 1e9), std::sqrt(1000.0) * 0.10009765625, 1e-4);
  // None has a gradient: 0.
  EXPECT_EQ(nn::utils::clip_grad_norm_({unused}, 1.0), 0.0);
  // A non-finite total clips nothing, or raises when asked.
  a.grad() = tensor({1.0f, NAN, 2.0f});
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_(a, 1.0)));
  EXPECT_EQ(a.grad().select(0, 0).item<float>(), 1.0f);
  a.grad() = tensor({1.0f, INFINITY, 2.0f});
  EXPECT_THROW_MSG(nn::utils::clip_grad_norm_(a, 1.0, 2.0, true), ValueError,
                   "total norm of order 2 of 1 gradients is inf");
  EXPECT_THROW_MSG(nn::utils::clip_grad_norm_(a, 1.0, 0.0), ValueError,
                   "norm_type must be positive or inf, got 0");
  EXPECT_THROW_MSG(nn::utils::clip_grad_norm_(a, 1.0, -INFINITY), ValueError,
                   "norm_type must be positive or inf");
}

// get_total_norm + clip_grads_with_norm_: clip_grad_norm_'s result with no host read (the
// factor is a device value), and clip_grad_norm_'s rule for a non-finite total.
TEST(NnUtils, TotalNormAndClipWithNormEqualClipGradNorm) {
  auto make = [] {
    Tensor a = ones({3}).requires_grad_(true), b = ones({2, 2}).requires_grad_(true);
    a.grad() = full({3}, 3.0);
    b.grad() = full({2, 2}, -4.0);
    return std::vector<Tensor>{a, b};
  };
  for (double norm_type : {2.0, 1.0, static_cast<double>(INFINITY)})
    for (double max_norm : {1.0, 1e9}) {
      auto one = make(), two = make();
      const double want = nn::utils::clip_grad_norm_(one, max_norm, norm_type);
      const Tensor total = nn::utils::get_total_norm({two[0].grad(), two[1].grad()}, norm_type);
      EXPECT_EQ(total.dim(), 0);
      EXPECT_EQ(total.dtype(), kFloat);
      EXPECT_NEAR(total.item<double>(), want, 1e-5);
      nn::utils::clip_grads_with_norm_(two, max_norm, total);
      for (size_t i = 0; i < 2; ++i)
        EXPECT_TRUE(allclose(one[i].grad(), two[i].grad(), 1e-6, 1e-7))
            << "norm_type " << norm_type << " max_norm " << max_norm;
    }
  // float64 gradients: a float64 total; undefined entries are skipped; none at all: 0.
  Tensor d = zeros({2}, kDouble).requires_grad_(true);
  d.grad() = tensor({3.0f, 4.0f}).to(kDouble);
  EXPECT_EQ(nn::utils::get_total_norm({d.grad(), Tensor()}).dtype(), kDouble);
  EXPECT_DOUBLE_EQ(nn::utils::get_total_norm({d.grad()}).item<double>(), 5.0);
  EXPECT_EQ(nn::utils::get_total_norm({Tensor()}).item<double>(), 0.0);
  // A non-finite total leaves the gradients alone (NaN stays, nothing scaled), or raises.
  Tensor a = ones({3}).requires_grad_(true);
  a.grad() = tensor({1.0f, INFINITY, 2.0f});
  const Tensor inf_total = nn::utils::get_total_norm({a.grad()});
  nn::utils::clip_grads_with_norm_({a}, 1.0, inf_total);
  EXPECT_EQ(a.grad().select(0, 0).item<float>(), 1.0f);
  EXPECT_THROW_MSG(nn::utils::get_total_norm({a.grad()}, 2.0, true), ValueError,
                   "[get_total_norm] the total norm of order 2 of 1 gradients is inf");
  EXPECT_THROW_MSG(nn::utils::get_total_norm({a.grad()}, -1.0), ValueError,
                   "norm_type must be positive or inf, got -1");
  EXPECT_THROW_MSG(
      nn::utils::clip_grads_with_norm_({a}, 1.0, ones({2})), ValueError,
      "[clip_grads_with_norm_] total_norm must be a one-element tensor, got shape (2)");
}

TEST(NnUtils, ClipGradValueClampsEachElement) {
  Tensor a = ones({4}).requires_grad_(true);
  a.grad() = tensor({-3.0f, 0.25f, 2.0f, NAN});
  nn::utils::clip_grad_value_({a}, 1.0);
  const Tensor g = a.grad();
  EXPECT_EQ(g.select(0, 0).item<float>(), -1.0f);
  EXPECT_EQ(g.select(0, 1).item<float>(), 0.25f);
  EXPECT_EQ(g.select(0, 2).item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(g.select(0, 3).item<float>()));
  EXPECT_THROW_MSG(nn::utils::clip_grad_value_(a, -1.0), ValueError,
                   "clip_value must be a non-negative number, got -1");
  EXPECT_THROW_MSG(nn::utils::clip_grad_value_(a, NAN), ValueError, "clip_value");
}
