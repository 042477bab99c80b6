// Transformer layers and the GPT (docs/nn.md, "Transformers", "GPT"): MultiheadAttention and
// the encoder/decoder layers against PyTorch's outputs and gradients with the same state dict
// (test/data/transformer_refs.json, made by scripts/gen_transformer_refs.py), on CPU and XPU;
// the GPT's shape, parameter count, cached generation and a short training run.
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using xten::testing::allclose;
using json = nlohmann::json;

namespace {

const bool kEnv = xten::testing::set_xpu_test_env("1G");

Tensor decode(const json& t, Device device) {
  std::vector<int64_t> shape = t.at("shape");
  std::vector<double> data;
  for (const json& v : t.at("data")) {
    if (v.is_string()) {
      const std::string s = v;
      data.push_back(s == "nan" ? NAN : s == "inf" ? INFINITY : -INFINITY);
    } else {
      data.push_back(v.get<double>());
    }
  }
  Tensor x = tensor(data, TensorOptions(kDouble)).reshape(shape);
  x = t.at("dtype") == "bool" ? x.to(kBool) : x.to(kFloat);
  return x.to(device);
}

const json& refs() {
  static const json j = [] {
    std::ifstream f(XTEN_TRANSFORMER_REFS);
    return json::parse(f);
  }();
  return j;
}

struct Case {
  std::shared_ptr<nn::Module> module;
  std::function<std::pair<Tensor, Tensor>(const std::map<std::string, Tensor>&)> call;
};

// xten's module for each case of the file, built with the generator's options.
Case make(const std::string& name) {
  using M = std::map<std::string, Tensor>;
  auto in = [](const M& m, const char* k) { return m.at(k); };
  auto opt = [](const M& m, const char* k) {
    return m.count(k) ? std::optional<Tensor>(m.at(k)) : std::nullopt;
  };
  if (name == "mha_self") {
    nn::MultiheadAttention m(8, 2);
    return {m.ptr(), [=](const M& i) {
              const Tensor x = in(i, "x");
              auto [o, w] = m(x, x, x, opt(i, "key_padding_mask"), true, opt(i, "attn_mask"));
              return std::make_pair(o, w);
            }};
  }
  if (name == "mha_cross") {
    nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 4).kdim(6).vdim(5).batch_first(true));
    return {m.ptr(), [=](const M& i) {
              auto [o, w] = m(in(i, "x"), in(i, "key"), in(i, "value"), std::nullopt, true,
                              opt(i, "attn_mask"), false);
              return std::make_pair(o, w);
            }};
  }
  if (name == "encoder_post_relu") {
    nn::TransformerEncoderLayer m(
        nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0).batch_first(true));
    return {m.ptr(), [=](const M& i) {
              return std::make_pair(
                  m(in(i, "x"), opt(i, "src_mask"), opt(i, "src_key_padding_mask")), Tensor());
            }};
  }
  if (name == "encoder_pre_gelu") {
    nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions(8, 2)
                                      .dim_feedforward(16)
                                      .dropout(0)
                                      .activation("gelu")
                                      .norm_first(true));
    return {m.ptr(), [=](const M& i) { return std::make_pair(m(in(i, "x")), Tensor()); }};
  }
  if (name == "decoder") {
    nn::TransformerDecoderLayer m(
        nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16).dropout(0).batch_first(true));
    return {m.ptr(), [=](const M& i) {
              return std::make_pair(m(in(i, "x"), in(i, "memory"), opt(i, "tgt_mask"), std::nullopt,
                                      std::nullopt, opt(i, "memory_key_padding_mask")),
                                    Tensor());
            }};
  }
  if (name == "encoder_stack") {
    nn::TransformerEncoder m(nn::TransformerEncoderOptions(nn::TransformerEncoderLayerOptions(8, 2)
                                                               .dim_feedforward(16)
                                                               .dropout(0)
                                                               .batch_first(true)
                                                               .norm_first(true),
                                                           2)
                                 .final_norm(true));
    return {m.ptr(), [=](const M& i) {
              return std::make_pair(m(in(i, "x"), std::nullopt, std::nullopt, true), Tensor());
            }};
  }
  throw std::runtime_error("no case " + name);
}

void check_against_pytorch(Device device) {
  ASSERT_TRUE(kEnv);
  ASSERT_EQ(refs().size(), 6u);
  for (const auto& [name, c] : refs().items()) {
    SCOPED_TRACE(name);
    Case m = make(name);
    nn::NamedTensors state;
    for (const auto& [k, v] : c.at("state").items())
      state.emplace_back(k, decode(v, Device("cpu")));
    m.module->load_state_dict(state);  // strict: PyTorch's names, all of them
    m.module->to(device);
    std::map<std::string, Tensor> inputs;
    for (const auto& [k, v] : c.at("inputs").items()) inputs[k] = decode(v, device);
    inputs["x"].requires_grad_();
    auto [out, weights] = m.call(inputs);
    EXPECT_TRUE(allclose(out.to("cpu"), decode(c.at("output"), Device("cpu")), 1e-4, 1e-5));
    if (c.contains("weights")) {
      EXPECT_TRUE(allclose(weights.to("cpu"), decode(c.at("weights"), Device("cpu")), 1e-4, 1e-6));
    }
    (out * decode(c.at("g"), device)).sum().backward();
    EXPECT_TRUE(allclose(inputs["x"].grad().to("cpu"), decode(c.at("grads").at("x"), Device("cpu")),
                         1e-4, 1e-5));
    for (const auto& [pname, p] : m.module->named_parameters()) {
      SCOPED_TRACE(pname);
      ASSERT_TRUE(c.at("grads").contains(pname));
      ASSERT_TRUE(p.grad().defined());
      EXPECT_TRUE(
          allclose(p.grad().to("cpu"), decode(c.at("grads").at(pname), Device("cpu")), 1e-4, 1e-5));
    }
  }
}

}  // namespace

TEST(Transformer, LayersMatchPyTorchOnTheCpu) {
  check_against_pytorch(Device("cpu"));
}

TEST(Transformer, LayersMatchPyTorchOnTheXpu) {
  check_against_pytorch(Device("xpu"));
}

TEST(Transformer, MultiheadAttentionEqualsItsFormulaAndChecksItsInputs) {
  manual_seed(1);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  const Tensor x = randn({3, 5, 8});
  // Weights without need_weights: none; the output is the same either way.
  auto [a, none] = m(x, x, x, std::nullopt, false);
  auto [b, w] = m(x, x, x);
  EXPECT_FALSE(none.defined());
  EXPECT_EQ(w.sizes(), IntArrayRef({3, 5, 5}));
  EXPECT_TRUE(allclose(a, b, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(w.sum({-1}), ones({3, 5}), 1e-5, 1e-6));
  // Unbatched input [L, E].
  auto [u, uw] = m(x.select(0, 1), x.select(0, 1), x.select(0, 1));
  EXPECT_TRUE(allclose(u, a.select(0, 1), 1e-5, 1e-6));
  EXPECT_EQ(uw.sizes(), IntArrayRef({5, 5}));
  // The causal hint equals the explicit mask.
  auto [c1, cw] = m(x, x, x, std::nullopt, false, std::nullopt, true, true);
  auto [c2, cw2] = m(x, x, x, std::nullopt, false, nn::generate_square_subsequent_mask(5));
  EXPECT_TRUE(allclose(c1, c2, 1e-5, 1e-6));
  EXPECT_THROW_MSG(
      m(x, x, x, std::nullopt, true, ones({4, 5}, kBool)), ValueError,
      "[MultiheadAttention] attn_mask must be [L, S] = [5, 5] or [N * num_heads, L, S] "
      "= [6, 5, 5], but got (4, 5)");
  EXPECT_THROW_MSG(m(x, x, x, ones({3, 4}, kBool)), ValueError,
                   "key_padding_mask must be [N, S] = [3, 5], but got (3, 4)");
  EXPECT_THROW_MSG(m(randn({3, 5, 6}), x, x), ValueError, "do not fit embed_dim 8");
  EXPECT_THROW_MSG(nn::MultiheadAttention(10, 3), ValueError,
                   "embed_dim (10) must be positive and divisible by num_heads (3)");
  EXPECT_THROW_MSG(
      nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).activation("tanh")),
      ValueError, "activation must be \"relu\" or \"gelu\", but got \"tanh\"");
}

TEST(Transformer, StackedLayersStartEqualAndTrain) {
  manual_seed(2);
  nn::TransformerEncoder enc(nn::TransformerEncoderOptions(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).batch_first(true), 3));
  const auto state = enc->state_dict();
  for (const auto& [k, v] : state)
    if (k.rfind("layers.1.", 0) == 0) {
      const std::string first = "layers.0." + k.substr(9);
      for (const auto& [k0, v0] : state)
        if (k0 == first) {
          EXPECT_TRUE(allclose(v, v0, 0, 0)) << k;
        }
    }
  // Learns to copy its input through 3 layers (dropout 0.1 on, training mode).
  optim::Adam opt(enc->parameters(), optim::AdamOptions(1e-2));
  const Tensor x = randn({16, 6, 8});
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    const Tensor loss = mse_loss(enc(x), x);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.5) << first << " -> " << last;
}

TEST(Gpt, ShapesParametersAndInitialLoss) {
  manual_seed(3);
  // The configuration of docs/nn.md's GPT goal: PyTorch's model of it has 3,250,289 parameters.
  models::GPT gpt(
      models::GPTConfig(113).block_size(128).n_layer(4).n_head(4).n_embd(256).tie_embeddings(
          false));
  EXPECT_EQ(gpt->num_parameters(), 3250289);
  models::GPT tied(models::GPTConfig(113));
  EXPECT_EQ(tied->num_parameters(), 3250289 - 113 * 257);
  const Tensor idx = randint(113, {2, 16});
  const Tensor logits = gpt(idx);
  EXPECT_EQ(logits.sizes(), IntArrayRef({2, 16, 113}));
  // Small initial weights: the first loss is near ln(113) = 4.727 (32 targets: within 0.25).
  EXPECT_NEAR(gpt->loss(idx, randint(113, {2, 16})).item<double>(), std::log(113.0), 0.25);
  EXPECT_THROW_MSG(gpt(randint(113, {1, 129})), ValueError,
                   "[GPT] 129 positions exceed the block size 128");
  EXPECT_THROW_MSG(gpt(randn({1, 4})), ValueError,
                   "expected token indices [batch, length] of dtype Long");
}

TEST(Gpt, CachedGenerationEqualsTheFullForward) {
  manual_seed(4);
  models::GPT gpt(models::GPTConfig(50).block_size(24).n_layer(2).n_head(2).n_embd(32));
  gpt->eval();
  const Tensor prompt = randint(50, {2, 5});
  // Greedy: the cached and uncached runs pick the same tokens, also past the block (40 > 24).
  const Tensor cached = gpt->generate(prompt, 35, 0.0, 0, true);
  const Tensor full = gpt->generate(prompt, 35, 0.0, 0, false);
  EXPECT_EQ(cached.sizes(), IntArrayRef({2, 40}));
  EXPECT_TRUE(allclose(cached, full, 0, 0));
  // The cache's logits equal the full forward's at every position.
  models::KVCache cache;
  NoGradGuard no_grad;
  const Tensor seq = cached.narrow(1, 0, 20);
  std::vector<Tensor> steps{gpt->forward_cached(seq.narrow(1, 0, 8), cache)};
  for (int64_t t = 8; t < 20; ++t) steps.push_back(gpt->forward_cached(seq.narrow(1, t, 1), cache));
  EXPECT_TRUE(allclose(cat(steps, 1), gpt(seq), 1e-4, 1e-5));
  // Sampling with top_k keeps to the k most likely tokens.
  manual_seed(5);
  const Tensor sampled = gpt->generate(prompt, 10, 1.0, 1);  // top_k 1: greedy again
  EXPECT_TRUE(allclose(sampled, cached.narrow(1, 0, 15), 0, 0));
  EXPECT_THROW_MSG(gpt->generate(prompt, 1, -1.0), ValueError, "temperature >= 0");
}

TEST(Gpt, LearnsARepeatingText) {
  manual_seed(6);
  models::GPT gpt(models::GPTConfig(8).block_size(16).n_layer(2).n_head(2).n_embd(32));
  optim::AdamW opt(gpt->parameters(), optim::AdamOptions(3e-3).weight_decay(1e-2));
  // 0 1 2 ... 7 0 1 2 ...: the next token is determined by the last.
  const Tensor seq = remainder(arange(17, TensorOptions(kLong)), 8).unsqueeze(0).expand({4, 17});
  const Tensor x = seq.narrow(1, 0, 16).contiguous(), y = seq.narrow(1, 1, 16).contiguous();
  double loss = 0;
  for (int step = 0; step < 80; ++step) {
    opt.zero_grad();
    const Tensor l = gpt->loss(x, y);
    l.backward();
    nn::utils::clip_grad_norm_(gpt->parameters(), 1.0);
    opt.step();
    loss = l.item<double>();
  }
  EXPECT_LT(loss, 0.1);
  gpt->eval();
  const Tensor out = gpt->generate(tensor(std::vector<int64_t>{3}).reshape({1, 1}), 10, 0.0);
  EXPECT_TRUE(
      allclose(out, remainder(arange(3, 14, 1, TensorOptions(kLong)), 8).unsqueeze(0), 0, 0));
}
