#pragma once
// bench_sweep's list (bench/README.md, "bench_sweep"): the ops of the op table that models run
// (pointwise, casts and copies, reductions, normalization, pooling, products, losses, indexing,
// attention), forward and backward, float32 and bfloat16, at shapes of ResNet-18, the GPT and
// the MLP; contiguous, transposed and broadcast operands where the op takes them. Written once,
// as a template over a library adapter `A`, and instantiated for xten (sweep_xten.h) and for
// libtorch (reference/interleaved_sweep_libtorch.cpp), so both run the same cases in the same
// order. Calls that are spelled alike in both libraries are unqualified (found through the
// tensor's namespace); the adapter has the rest: factories, dtypes, autograd, and the ops whose
// signatures differ. Standard C++ only.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct SweepCase {
  std::string name;
  std::function<void()> call;
};

template <class A>
std::vector<SweepCase> sweep_cases() {
  using T = typename A::Tensor;
  A::seed(0);
  std::vector<SweepCase> out;
  auto add = [&](std::string name, std::function<void()> f) {
    out.push_back({std::move(name), std::move(f)});
  };
  // The gradient of y with respect to xs for the output gradient g (graph kept).
  auto backward = [&](std::string name, const T& y, std::vector<T> xs) {
    const T g = A::randn_like(y);
    add(std::move(name), [=] { A::grad(y, xs, g); });
  };
  const auto f32 = A::f32(), bf16 = A::bf16();
  auto dname = [&](typename A::Dtype d) { return d == f32 ? std::string(" f32") : " bf16"; };

  // ---- pointwise, [2048, 2048] (16 MB in float32) --------------------------------------------
  for (auto d : {f32, bf16}) {
    const std::string s = dname(d) + " [2048,2048]";
    const T x = A::randn({2048, 2048}, d), y = A::randn({2048, 2048}, d);
    const T pos = abs(x) + 0.5;
    add("add" + s, [=] { (void)(x + y); });
    add("mul" + s, [=] { (void)(x * y); });
    add("div" + s, [=] { (void)(x / pos); });
    const T acc = A::zeros_like(x);  // grows by y per call; nothing else reads it
    add("add_ in place" + s, [=] {
      T z = acc;
      A::add_(z, y);
    });
    add("add scalar" + s, [=] { (void)(x + 1.5); });
    add("exp" + s, [=] { (void)exp(x); });
    add("log" + s, [=] { (void)log(pos); });
    add("sqrt" + s, [=] { (void)sqrt(pos); });
    add("rsqrt" + s, [=] { (void)rsqrt(pos); });
    add("tanh" + s, [=] { (void)tanh(x); });
    add("sigmoid" + s, [=] { (void)sigmoid(x); });
    add("relu" + s, [=] { (void)relu(x); });
    add("gelu" + s, [=] { (void)gelu(x, "none"); });
    add("gelu tanh" + s, [=] { (void)gelu(x, "tanh"); });
    add("silu" + s, [=] { (void)silu(x); });
    add("erf" + s, [=] { (void)erf(x); });
    add("abs" + s, [=] { (void)abs(x); });
    add("neg" + s, [=] { (void)neg(x); });
    add("sin" + s, [=] { (void)sin(x); });
    add("clamp" + s, [=] { (void)A::clamp(x, -0.5, 0.5); });
    add("pow 2" + s, [=] { (void)pow(x, 2); });
    add("where" + s, [=] { (void)where(x > 0, x, y); });
    add("masked_fill" + s, [=] { (void)A::masked_fill(x, y > 0, 0.0); });
  }
  // The rest of the table's pointwise ops, at the same shape.
  for (auto d : {f32, bf16}) {
    const std::string s = dname(d) + " [2048,2048]";
    const T x = A::randn({2048, 2048}, d);
    const T pos = abs(x) + 0.5;
    add("cos" + s, [=] { (void)cos(x); });
    add("tan" + s, [=] { (void)tan(x); });
    add("exp2" + s, [=] { (void)exp2(x); });
    add("expm1" + s, [=] { (void)expm1(x); });
    add("log2" + s, [=] { (void)log2(pos); });
    add("log10" + s, [=] { (void)log10(pos); });
    add("log1p" + s, [=] { (void)log1p(pos); });
    add("reciprocal" + s, [=] { (void)reciprocal(pos); });
    add("sign" + s, [=] { (void)sign(x); });
    add("softplus" + s, [=] { (void)softplus(x, 1, 20); });
    add("elu" + s, [=] { (void)elu(x); });
    add("leaky_relu" + s, [=] { (void)leaky_relu(x, 0.01); });
    add("hardswish" + s, [=] { (void)hardswish(x); });
    add("hardtanh" + s, [=] { (void)hardtanh(x, -1, 1); });
  }
  {
    const std::string s = " f32 [2048,2048]";
    const T x = A::randn({2048, 2048}, f32), y = A::randn({2048, 2048}, f32),
            z = A::randn({2048, 2048}, f32);
    add("round" + s, [=] { (void)round(x); });
    add("floor" + s, [=] { (void)floor(x); });
    add("nan_to_num" + s, [=] { (void)nan_to_num(x); });
    add("minimum" + s, [=] { (void)minimum(x, y); });
    add("maximum" + s, [=] { (void)maximum(x, y); });
    add("addcmul" + s, [=] { (void)addcmul(x, y, z, 0.5); });
    const T bx = x > 0, by = y > 0;
    add("logical_and bool [2048,2048]", [=] { (void)logical_and(bx, by); });
    add("amin dim 1" + s, [=] { (void)A::amin(x, 1); });
    add("argmin dim 1" + s, [=] { (void)A::argmin(x, 1); });
    const T near1 = A::randn({2048, 2048}, f32) * 0.01 + 1;
    add("cumprod dim 1" + s, [=] { (void)cumprod(near1, 1); });
    add("masked_select" + s, [=] { (void)masked_select(x, by); });
    add("nonzero bool [2048,2048]", [=] { (void)nonzero(bx); });
  }
  {
    const T x = A::randn({2048, 2048}, f32), row = A::randn({2048}, f32);
    const T s64 = A::randn({64, 64}, f32), r64 = A::randn({64}, f32);
    const T img = A::randn({8, 64, 56, 56}, f32), ch = A::randn({64, 1, 1}, f32);
    add("add broadcast row f32 [2048,2048]+[2048]", [=] { (void)(x + row); });
    add("add broadcast small f32 [64,64]+[64]", [=] { (void)(s64 + r64); });
    add("add transposed f32 [2048,2048]t+[2048,2048]", [=] { (void)(x.t() + x); });
    add("mul channel f32 [8,64,56,56]*[64,1,1]", [=] { (void)(img * ch); });
    add("tiny add f32 [1]+[1]", [=] { (void)(r64.narrow(0, 0, 1) + r64.narrow(0, 1, 1)); });
  }

  // ---- casts and copies ----------------------------------------------------------------------
  {
    const T x = A::randn({2048, 2048}, f32), xb = A::randn({2048, 2048}, bf16);
    const T img = A::randn({8, 64, 56, 56}, f32);
    const T ints = A::randint(1000, {2048, 2048});
    add("cast f32->bf16 [2048,2048]", [=] { (void)x.to(bf16); });
    add("cast bf16->f32 [2048,2048]", [=] { (void)xb.to(f32); });
    add("cast f32->f16 [2048,2048]", [=] { (void)x.to(A::f16()); });
    add("cast i64->f32 [2048,2048]", [=] { (void)ints.to(f32); });
    add("clone f32 [2048,2048]", [=] { (void)x.clone(); });
    add("transposing copy f32 [2048,2048]", [=] { (void)x.t().contiguous(); });
    add("transposing copy bf16 [2048,2048]", [=] { (void)xb.t().contiguous(); });
    add("NCHW->NHWC copy f32 [8,64,56,56]", [=] { (void)img.permute({0, 2, 3, 1}).contiguous(); });
    add("narrow copy f32 [2048,1024 of 2048]", [=] { (void)x.narrow(1, 512, 1024).contiguous(); });
  }

  // ---- reductions and softmax ----------------------------------------------------------------
  for (auto d : {f32, bf16}) {
    const std::string s = dname(d) + " [2048,2048]";
    const T x = A::randn({2048, 2048}, d);
    add("sum" + s, [=] { (void)x.sum(); });
    add("sum dim 1" + s, [=] { (void)A::sum(x, 1); });
    add("softmax dim 1" + s, [=] { (void)softmax(x, 1); });
    add("norm" + s, [=] { (void)norm(x); });
    add("amax dim 1" + s, [=] { (void)A::amax(x, 1); });
    if (d == bf16) continue;
    add("sum dim 0" + s, [=] { (void)A::sum(x, 0); });
    add("mean dim 1" + s, [=] { (void)A::mean(x, 1); });
    add("max dim 1 (values, indices)" + s, [=] { (void)A::max(x, 1); });
    add("argmax dim 1" + s, [=] { (void)A::argmax(x, 1); });
    add("var dim 1" + s, [=] { (void)A::var(x, 1); });
    add("logsumexp dim 1" + s, [=] { (void)A::logsumexp(x, 1); });
    add("log_softmax dim 1" + s, [=] { (void)log_softmax(x, 1); });
    add("cumsum dim 1" + s, [=] { (void)cumsum(x, 1); });
    add("sum dim 1 of transposed" + s, [=] { (void)A::sum(x.t(), 1); });
  }

  // ---- normalization, pooling ----------------------------------------------------------------
  for (auto d : {f32, bf16}) {
    const T x = A::randn({4096, 768}, d), w = A::randn({768}, d), b = A::randn({768}, d);
    add("layer_norm" + dname(d) + " [4096,768]", [=] { (void)layer_norm(x, {768}, w, b); });
  }
  {
    const T x = A::randn({8, 64, 56, 56}, f32), w = A::randn({64}, f32), b = A::randn({64}, f32);
    const T rm = A::randn({64}, f32) * 0.1, rv = abs(A::randn({64}, f32)) + 1;
    add("batch_norm train f32 [8,64,56,56]", [=] { (void)A::batch_norm(x, w, b, rm, rv, true); });
    add("batch_norm eval f32 [8,64,56,56]", [=] { (void)A::batch_norm(x, w, b, rm, rv, false); });
    add("group_norm 32 f32 [8,64,56,56]", [=] { (void)group_norm(x, 32, w, b); });
    add("avg_pool2d 2x2 f32 [8,64,56,56]", [=] { (void)avg_pool2d(x, {2, 2}); });
    const T big = A::randn({8, 64, 112, 112}, f32);
    add("max_pool2d 3/2/1 f32 [8,64,112,112]", [=] {
      (void)max_pool2d(big, {3, 3}, {2, 2}, {1, 1});
    });
    const T feat = A::randn({32, 512, 7, 7}, f32);
    add("adaptive_avg_pool2d 1x1 f32 [32,512,7,7]", [=] {
      (void)adaptive_avg_pool2d(feat, {1, 1});
    });
    const T feat16 = feat.to(bf16);  // a ResNet's last pool under autocast bfloat16
    add("adaptive_avg_pool2d 1x1 bf16 [32,512,7,7]", [=] {
      (void)adaptive_avg_pool2d(feat16, {1, 1});
    });
    add("adaptive_max_pool2d 1x1 f32 [32,512,7,7]", [=] {
      (void)adaptive_max_pool2d(feat, {1, 1});
    });
    add("upsample_bilinear2d to 112 f32 [8,64,56,56]", [=] { (void)A::upsample_bilinear(x, 112); });
    const T half = A::randn({8, 64, 28, 28}, f32), tw = A::randn({64, 32, 2, 2}, f32);
    add("conv_transpose2d 2/2 f32 [8,64,28,28]x[64,32,2,2]",
        [=] { (void)A::conv_transpose2d_s2(half, tw); });
  }

  // ---- products, attention --------------------------------------------------------------------
  for (auto d : {f32, bf16}) {
    const T x = A::randn({512, 1024}, d), w = A::randn({1024, 1024}, d) * 0.03,
            b = A::randn({1024}, d);
    add("linear" + dname(d) + " [512,1024]x[1024,1024]", [=] { (void)linear(x, w, b); });
    const T p = A::randn({32, 256, 64}, d), q = A::randn({32, 64, 256}, d);
    add("bmm" + dname(d) + " [32,256,64]x[32,64,256]", [=] { (void)bmm(p, q); });
    const T qq = A::randn({4, 8, 512, 64}, d), k = A::randn({4, 8, 512, 64}, d),
            v = A::randn({4, 8, 512, 64}, d);
    add("attention causal" + dname(d) + " [4,8,512,64]", [=] { (void)A::sdpa_causal(qq, k, v); });
  }
  {  // the GPT's (examples/gpt: batch 32, 4 heads of 64, block 128, width 256)
    const T q = A::randn({32, 4, 128, 64}, f32), k = A::randn({32, 4, 128, 64}, f32),
            v = A::randn({32, 4, 128, 64}, f32);
    add("attention causal f32 [32,4,128,64]", [=] { (void)A::sdpa_causal(q, k, v); });
    const T x = A::randn({4096, 256}, f32), w = A::randn({1024, 256}, f32) * 0.06,
            b = A::randn({1024}, f32), g = A::randn({4096, 1024}, f32);
    add("linear f32 [4096,256]x[1024,256]", [=] { (void)linear(x, w, b); });
    add("mm f32 [4096,1024]x[1024,256]", [=] { (void)mm(g, w); });
    add("mm f32 [1024,4096]x[4096,256] (weight gradient)", [=] { (void)mm(g.t(), x); });
  }

  // ---- losses, indexing ----------------------------------------------------------------------
  {
    const T logits = A::randn({4096, 1000}, f32), target = A::randint(1000, {4096});
    const T logp = log_softmax(logits, 1);
    add("cross_entropy f32 [4096,1000]", [=] { (void)A::cross_entropy(logits, target); });
    add("nll_loss f32 [4096,1000]", [=] { (void)A::nll_loss(logp, target); });
    const T a = A::randn({4096, 1024}, f32), b = A::randn({4096, 1024}, f32);
    add("mse_loss f32 [4096,1024]", [=] { (void)mse_loss(a, b); });
    const T x = A::randn({2048, 2048}, f32);
    add("dropout 0.1 f32 [2048,2048]", [=] { (void)dropout(x, 0.1, true); });
    // The random factories (their values differ: each library has its own generator).
    add("rand f32 [2048,2048]", [=] { (void)A::draw_rand({2048, 2048}, f32); });
    add("randn f32 [2048,2048]", [=] { (void)A::draw_randn({2048, 2048}, f32); });
    add("randn bf16 [2048,2048]", [=] { (void)A::draw_randn({2048, 2048}, bf16); });
    add("randint 1000 i64 [2048,2048]", [=] { (void)A::draw_randint(1000, {2048, 2048}); });
    const T probs = softmax(A::randn({64, 113}, f32), 1);
    add("multinomial 1 of [64,113] f32", [=] { (void)multinomial(probs, 1, false); });
    const T table = A::randn({8192, 512}, f32), idx = A::randint(8192, {8192});
    add("embedding f32 [8192,512] x 8192", [=] { (void)embedding(table, idx); });
    add("index_select dim 0 f32 [8192,512] x 8192", [=] { (void)index_select(table, 0, idx); });
    const T cols = A::randint(2048, {2048, 64});
    add("gather dim 1 f32 [2048,2048] x [2048,64]", [=] { (void)gather(x, 1, cols); });
    const T src = A::randn({2048, 64}, f32);
    add("scatter_add dim 1 f32 [2048,2048] x [2048,64]",
        [=] { (void)scatter_add(x, 1, cols, src); });
    const T p0 = A::randn({512, 2048}, f32), p1 = A::randn({512, 2048}, f32);
    add("cat dim 0 f32 4x[512,2048]", [=] { (void)A::cat({p0, p1, p0, p1}, 0); });
    add("cat dim 1 f32 4x[512,2048]", [=] { (void)A::cat({p0, p1, p0, p1}, 1); });
    add("stack f32 4x[512,2048]", [=] { (void)A::stack({p0, p1, p0, p1}, 0); });
    add("topk 5 dim 1 f32 [4096,1000]", [=] { (void)A::topk(logits, 5); });
    const T m = A::randn({1024, 1024}, f32);
    add("sort dim 1 f32 [1024,1024]", [=] { (void)A::sort(m); });
  }

  // ---- backward ------------------------------------------------------------------------------
  for (auto d : {f32, bf16}) {
    const std::string s = dname(d) + " [2048,2048]";
    const T x = A::leaf(A::randn({2048, 2048}, d));
    backward("gelu backward" + s, gelu(x, "none"), {x});
    const T li = A::leaf(A::randn({512, 1024}, d)), lw = A::leaf(A::randn({1024, 1024}, d) * 0.03),
            lb = A::leaf(A::randn({1024}, d));
    backward("linear backward" + dname(d) + " [512,1024]x[1024,1024]", linear(li, lw, lb),
             {li, lw, lb});
    const T ln = A::leaf(A::randn({4096, 768}, d)), w = A::leaf(A::randn({768}, d)),
            b = A::leaf(A::randn({768}, d));
    backward("layer_norm backward" + dname(d) + " [4096,768]", layer_norm(ln, {768}, w, b),
             {ln, w, b});
    if (d == bf16) continue;
    backward("gelu tanh backward" + s, gelu(x, "tanh"), {x});
    backward("relu backward" + s, relu(x), {x});
    backward("sigmoid backward" + s, sigmoid(x), {x});
    backward("tanh backward" + s, tanh(x), {x});
    backward("silu backward" + s, silu(x), {x});
    backward("exp backward" + s, exp(x), {x});
    backward("softplus backward" + s, softplus(x, 1, 20), {x});
    backward("elu backward" + s, elu(x), {x});
    backward("leaky_relu backward" + s, leaky_relu(x, 0.01), {x});
    backward("hardswish backward" + s, hardswish(x), {x});
    backward("softmax backward" + s, softmax(x, 1), {x});
    backward("log_softmax backward" + s, log_softmax(x, 1), {x});
    const T y = A::leaf(A::randn({2048, 2048}, d)), row = A::leaf(A::randn({2048}, d));
    backward("mul backward" + s, x * y, {x, y});
    backward("add broadcast row backward f32 [2048,2048]+[2048]", x + row, {x, row});
  }
  {
    const T img = A::leaf(A::randn({8, 64, 56, 56}, f32)), w = A::leaf(A::randn({64}, f32)),
            b = A::leaf(A::randn({64}, f32));
    backward("batch_norm train backward f32 [8,64,56,56]",
             A::batch_norm(img, w, b, A::randn({64}, f32), abs(A::randn({64}, f32)) + 1, true),
             {img, w, b});
    const T big = A::leaf(A::randn({8, 64, 112, 112}, f32));
    backward("max_pool2d 3/2/1 backward f32 [8,64,112,112]",
             max_pool2d(big, {3, 3}, {2, 2}, {1, 1}), {big});
    backward("avg_pool2d 2x2 backward f32 [8,64,56,56]", avg_pool2d(img, {2, 2}), {img});
    const T feat = A::leaf(A::randn({32, 512, 7, 7}, f32));
    backward("adaptive_avg_pool2d 1x1 backward f32 [32,512,7,7]", adaptive_avg_pool2d(feat, {1, 1}),
             {feat});
    const T logits = A::leaf(A::randn({4096, 1000}, f32));
    backward("cross_entropy backward f32 [4096,1000]",
             A::cross_entropy(logits, A::randint(1000, {4096})), {logits});
    // Its two parts: the log_softmax backward and the nll_loss backward.
    backward("log_softmax backward f32 [4096,1000]", log_softmax(logits, 1), {logits});
    const T logp = A::leaf(log_softmax(A::randn({4096, 1000}, f32), 1));
    backward("nll_loss backward f32 [4096,1000]", A::nll_loss(logp, A::randint(1000, {4096})),
             {logp});
    const T a = A::leaf(A::randn({4096, 1024}, f32));
    backward("mse_loss backward f32 [4096,1024]", mse_loss(a, A::randn({4096, 1024}, f32)), {a});
    const T table = A::leaf(A::randn({8192, 512}, f32));
    backward("embedding backward f32 [8192,512] x 8192", embedding(table, A::randint(8192, {8192})),
             {table});
    for (auto d : {f32, bf16}) {
      const T q = A::leaf(A::randn({4, 8, 512, 64}, d)), k = A::leaf(A::randn({4, 8, 512, 64}, d)),
              v = A::leaf(A::randn({4, 8, 512, 64}, d));
      backward("attention causal backward" + dname(d) + " [4,8,512,64]", A::sdpa_causal(q, k, v),
               {q, k, v});
    }
    const T q = A::leaf(A::randn({32, 4, 128, 64}, f32)),
            k = A::leaf(A::randn({32, 4, 128, 64}, f32)),
            v = A::leaf(A::randn({32, 4, 128, 64}, f32));
    backward("attention causal backward f32 [32,4,128,64]", A::sdpa_causal(q, k, v), {q, k, v});
    const T h = A::leaf(A::randn({4096, 1024}, f32)), ln = A::leaf(A::randn({4096, 256}, f32)),
            lw = A::leaf(A::randn({256}, f32)), lb = A::leaf(A::randn({256}, f32));
    backward("gelu backward f32 [4096,1024]", gelu(h, "none"), {h});
    backward("layer_norm backward f32 [4096,256]", layer_norm(ln, {256}, lw, lb), {ln, lw, lb});
  }
  return out;
}
