// examples/gpt: a character-level GPT trained on Debian's fortunes (docs/training.md, "GPT").
//
//   ./build/examples/gpt                         # the reference configuration, 3,000 iterations
//   ./build/examples/gpt --iters 200 --device xpu --amp --svg gpt.svg
//
// Trains models::GPT with AdamW, cosine decay and gradient clipping on random windows of the
// corpus (the last 10% held out), evaluates the validation loss (mean cross-entropy over fixed
// random validation windows), checkpoints and resumes, writes the loss curve, and prints a
// sample of generated text. Exits 1 when --max-val-loss is given and the final validation loss
// is above it (the CTest run's check).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <xten/xten.h>

#include "../common/plot.h"

namespace {

const char* kUsage = R"(usage: gpt [options]
  --corpus DIR          text files to train on (default /usr/share/games/fortunes)
  --device cpu|xpu      where to train (default cpu)
  --amp                 autocast: bfloat16 on CPU, float16 on XPU (with a GradScaler)
  --compile             compile the training step whole and the evaluation forward (xten::compile)
  --compile-model       compile the model's loss alone (a generated backward; docs/compile.md, "A
                        compiled forward in an eager training loop") and the evaluation forward;
                        the step runs eagerly around it (with the XPU's GradScaler too)
  --iters N             training iterations (default 3000)
  --batch-size N        windows per iteration (default 32)
  --block-size N        context length (default 128)
  --layers N --heads N --width N    the model (default 4, 4, 256)
  --dropout P           (default 0)
  --tie                 tie the output projection to the token embedding
  --lr X                peak learning rate, cosine decay to 0 over the iterations (default 1e-3)
  --weight-decay X      AdamW's, on every parameter (default 0.1)
  --clip X              gradient norm clip (default 1.0; 0: none)
  --eval-every N        validation loss every N iterations and at the end (default 500)
  --eval-batches N      validation batches of --batch-size windows (default 50)
  --log-every N         a progress line and a curve point every N iterations (default 50)
  --seed N              (default 1337)
  --threads N           CPU threads (default: all)
  --checkpoint PATH     save at every evaluation; --resume continues from it
  --stop-after N        stop after N iterations of this run (with --checkpoint: to resume)
  --csv PATH --svg PATH the loss curve
  --sample-tokens N     characters to generate at the end (default 300)
  --temperature X --top-k N         sampling (default 0.8, 0: all)
  --max-val-loss X      exit 1 if the final validation loss is above X
)";

struct Args {
  std::string corpus = xten::data::kFortunesDir, device = "cpu", checkpoint, csv, svg;
  bool amp = false, compile = false, compile_model = false, tie = false, resume = false;
  int64_t iters = 3000, batch_size = 32, block_size = 128, layers = 4, heads = 4, width = 256;
  int64_t eval_every = 500, eval_batches = 50, log_every = 50, seed = 1337, threads = 0;
  int64_t stop_after = 0, sample_tokens = 300, top_k = 0;
  double dropout = 0, lr = 1e-3, weight_decay = 0.1, clip = 1.0, temperature = 0.8;
  double max_val_loss = -1;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw xten::ValueError("[gpt] " + flag + " needs a value");
      return argv[++i];
    };
    auto integer = [&] { return std::stoll(value()); };
    auto real = [&] { return std::stod(value()); };
    if (flag == "--corpus")
      a.corpus = value();
    else if (flag == "--device")
      a.device = value();
    else if (flag == "--amp")
      a.amp = true;
    else if (flag == "--compile")
      a.compile = true;
    else if (flag == "--compile-model")
      a.compile_model = true;
    else if (flag == "--tie")
      a.tie = true;
    else if (flag == "--resume")
      a.resume = true;
    else if (flag == "--iters")
      a.iters = integer();
    else if (flag == "--batch-size")
      a.batch_size = integer();
    else if (flag == "--block-size")
      a.block_size = integer();
    else if (flag == "--layers")
      a.layers = integer();
    else if (flag == "--heads")
      a.heads = integer();
    else if (flag == "--width")
      a.width = integer();
    else if (flag == "--dropout")
      a.dropout = real();
    else if (flag == "--lr")
      a.lr = real();
    else if (flag == "--weight-decay")
      a.weight_decay = real();
    else if (flag == "--clip")
      a.clip = real();
    else if (flag == "--eval-every")
      a.eval_every = integer();
    else if (flag == "--eval-batches")
      a.eval_batches = integer();
    else if (flag == "--log-every")
      a.log_every = integer();
    else if (flag == "--seed")
      a.seed = integer();
    else if (flag == "--threads")
      a.threads = integer();
    else if (flag == "--checkpoint")
      a.checkpoint = value();
    else if (flag == "--stop-after")
      a.stop_after = integer();
    else if (flag == "--csv")
      a.csv = value();
    else if (flag == "--svg")
      a.svg = value();
    else if (flag == "--sample-tokens")
      a.sample_tokens = integer();
    else if (flag == "--temperature")
      a.temperature = real();
    else if (flag == "--top-k")
      a.top_k = integer();
    else if (flag == "--max-val-loss")
      a.max_val_loss = real();
    else if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      throw xten::ValueError("[gpt] unknown option " + flag + "\n" + kUsage);
    }
  }
  if (a.iters <= 0 || a.batch_size <= 0 || a.eval_every <= 0 || a.log_every <= 0 ||
      a.eval_batches <= 0)
    throw xten::ValueError(
        "[gpt] --iters, --batch-size, --eval-every, --log-every and "
        "--eval-batches must be positive");
  if (a.resume && a.checkpoint.empty())
    throw xten::ValueError("[gpt] --resume needs --checkpoint PATH");
  if (a.compile && a.compile_model)
    throw xten::ValueError("[gpt] --compile and --compile-model exclude each other");
  return a;
}

// The curve: training loss per logged step (the mean since the last log) and validation points;
// the sum and count of the losses since the last log go into a checkpoint too.
struct Curve {
  std::vector<std::pair<double, double>> train, val;
  double pending_sum = 0;
  int64_t pending_n = 0;
  std::string to_csv() const {
    std::ostringstream s;
    s << "iter,train_loss,val_loss\n";
    size_t v = 0;
    for (auto [it, loss] : train) {
      s << it << ',' << loss << ',';
      if (v < val.size() && val[v].first == it) s << val[v++].second;
      s << '\n';
    }
    return s.str();
  }
  static Curve from_csv(const std::string& text) {
    Curve c;
    std::istringstream s(text);
    std::string line;
    std::getline(s, line);
    while (std::getline(s, line)) {
      std::istringstream f(line);
      std::string it, tl, vl;
      std::getline(f, it, ',');
      std::getline(f, tl, ',');
      std::getline(f, vl, ',');
      c.train.emplace_back(std::stod(it), std::stod(tl));
      if (!vl.empty()) c.val.emplace_back(std::stod(it), std::stod(vl));
    }
    return c;
  }
};

// The settings a checkpoint must share with the run that resumes it.
std::vector<std::pair<std::string, std::string>> run_settings(const Args& a) {
  auto s = [](auto v) { return std::to_string(v); };
  return {{"iters", s(a.iters)},
          {"batch_size", s(a.batch_size)},
          {"block_size", s(a.block_size)},
          {"layers", s(a.layers)},
          {"heads", s(a.heads)},
          {"width", s(a.width)},
          {"tie", s(a.tie)},
          {"lr", s(a.lr)},
          {"weight_decay", s(a.weight_decay)},
          {"seed", s(a.seed)},
          {"amp", s(a.amp)},
          {"dropout", s(a.dropout)}};
}

// The model and what a checkpoint keeps of training: AdamW (betas 0.9, 0.99; weight decay on
// every parameter), the cosine schedule to 0 over all iterations, the GradScaler (float16 only).
struct Training {
  Training(xten::models::GPT m, const Args& a, bool scaled)
      : model(std::move(m)),
        opt(model->parameters(),
            xten::optim::AdamOptions(a.lr).betas({0.9, 0.99}).weight_decay(a.weight_decay)),
        sched(opt, a.iters, 0.0),
        scaler(xten::amp::GradScalerOptions().enabled(scaled)) {}
  xten::models::GPT model;
  xten::optim::AdamW opt;
  xten::optim::CosineAnnealingLR sched;
  xten::amp::GradScaler scaler;
};

void save_checkpoint(const std::string& path, Training& t, const Args& a,
                     const xten::data::CharTokenizer& tok, int64_t iters_done, const Curve& curve) {
  using xten::with_prefix;
  xten::NamedTensorList all = with_prefix("model.", t.model->state_dict());
  for (auto& e : with_prefix("optimizer.", t.opt.state_dict())) all.push_back(e);
  for (auto& e : with_prefix("scheduler.", t.sched.state_dict())) all.push_back(e);
  for (auto& e : with_prefix("scaler.", t.scaler.state_dict())) all.push_back(e);
  all.emplace_back("vocab", tok.to_tensor());
  char pending[64];
  std::snprintf(pending, sizeof pending, "%.17g %lld", curve.pending_sum,
                static_cast<long long>(curve.pending_n));
  xten::Metadata meta = {{"iters_done", std::to_string(iters_done)},
                         {"curve", curve.to_csv()},
                         {"curve_pending", pending}};
  for (auto& [k, v] : run_settings(a)) meta[k] = v;
  const std::string tmp = path + ".tmp";  // renamed over: an interrupted save keeps the last one
  xten::save(all, tmp, meta);
  std::filesystem::rename(tmp, path);
}

int64_t load_checkpoint(const std::string& path, Training& t, const Args& a,
                        const xten::data::CharTokenizer& tok, Curve& curve) {
  using xten::under_prefix;
  const xten::Metadata meta = xten::load_metadata(path);
  for (const auto& [key, expected] : run_settings(a)) {
    const auto it = meta.find(key);
    if (it == meta.end() || it->second != expected)
      throw xten::ValueError("[gpt] " + path + " was saved with " + key + " = " +
                             (it == meta.end() ? "(missing)" : it->second) + ", this run has " +
                             expected);
  }
  const xten::NamedTensorList all = xten::load(path);
  for (const auto& [name, v] : all)
    if (name == "vocab" && xten::data::CharTokenizer::from_tensor(v).vocab() != tok.vocab())
      throw xten::ValueError("[gpt] " + path + " was trained on another vocabulary");
  t.model->load_state_dict(under_prefix("model.", all));
  t.opt.load_state_dict(under_prefix("optimizer.", all));
  t.sched.load_state_dict(under_prefix("scheduler.", all));
  t.scaler.load_state_dict(under_prefix("scaler.", all));
  curve = Curve::from_csv(meta.at("curve"));
  std::istringstream(meta.at("curve_pending")) >> curve.pending_sum >> curve.pending_n;
  return std::stoll(meta.at("iters_done"));
}

std::string settings_line(const Args& a, int64_t params) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "GPT %lld layers x %lld heads x %lld wide, block %lld, batch %lld, %lld params; "
                "AdamW lr %g wd %g, clip %g, %lld iters, %s%s",
                (long long)a.layers, (long long)a.heads, (long long)a.width,
                (long long)a.block_size, (long long)a.batch_size, (long long)params, a.lr,
                a.weight_decay, a.clip, (long long)a.iters, a.device.c_str(), a.amp ? " amp" : "");
  return buf;
}

int run(const Args& a) {
  using namespace xten;
  if (a.threads > 0) set_num_threads(static_cast<int>(a.threads));
  const Device device(a.device);
  const ScalarType amp_dtype = device.is_cpu() ? kBFloat16 : kHalf;

  const std::string text = data::read_text_corpus(a.corpus);
  const data::CharTokenizer tok = data::CharTokenizer::from_text(text);
  auto [train_tokens, val_tokens] = data::split_tokens(tok.encode(text), 0.1);
  const data::TextWindows train(train_tokens, a.block_size), val(val_tokens, a.block_size);
  std::printf(
      "corpus %s: %zu bytes, %lld characters, vocabulary %lld; train %lld, validation %lld\n",
      a.corpus.c_str(), text.size(), (long long)(train.num_tokens() + val.num_tokens()),
      (long long)tok.vocab_size(), (long long)train.num_tokens(), (long long)val.num_tokens());

  manual_seed(static_cast<uint64_t>(a.seed));
  models::GPT model(models::GPTConfig(tok.vocab_size())
                        .block_size(a.block_size)
                        .n_layer(a.layers)
                        .n_head(a.heads)
                        .n_embd(a.width)
                        .dropout(a.dropout)
                        .tie_embeddings(a.tie));
  model->to(device);
  Training t(model, a, a.amp && amp_dtype == kHalf);
  const std::string settings = settings_line(a, model->num_parameters());
  std::printf("%s\n", settings.c_str());

  Curve curve;
  int64_t start = 0;
  if (a.resume && std::filesystem::exists(a.checkpoint)) {
    start = load_checkpoint(a.checkpoint, t, a, tok, curve);
    std::printf("resumed from %s after %lld iterations\n", a.checkpoint.c_str(), (long long)start);
  }

  // The compiled forward for evaluation (no grad; recompiles when train()/eval() flips).
  auto compiled = compile(model);
  // Validation loss over fixed windows: the same ones at every evaluation.
  auto evaluate = [&]() {
    NoGradGuard no_grad;
    model->eval();
    manual_seed(static_cast<uint64_t>(a.seed) ^ 0x5eed5eedull);
    double sum = 0;
    for (int64_t b = 0; b < a.eval_batches; ++b) {
      auto [x, y] = val.batch(a.batch_size);
      x = x.to(device);
      y = y.to(device);
      std::optional<autocast::AutocastGuard> amp;
      if (a.amp) amp.emplace(device.type(), amp_dtype);
      const Tensor logits = a.compile || a.compile_model ? compiled(x) : model(x);
      sum += cross_entropy(logits.reshape({-1, logits.size(-1)}).to(kFloat), y.reshape({-1}))
                 .item<double>();
    }
    model->train();
    return sum / static_cast<double>(a.eval_batches);
  };

  const auto t0 = std::chrono::steady_clock::now();
  double val_loss = -1;
  int64_t done_here = 0;
  double& logged = curve.pending_sum;
  int64_t& logged_n = curve.pending_n;
  const std::vector<Tensor> params = model->parameters();
  // One training step; with --compile, captured whole (forward, backward, clipping, AdamW) and
  // run as one graph from its third call (docs/compile.md, "Training steps"). Clipping takes the
  // two-step form (get_total_norm, clip_grads_with_norm_: no host read, so no graph break).
  // Under fp16 autocast (XPU) the GradScaler is in the graph too (its skip and scale update run
  // on the device: docs/optim.md, "GradScaler").
  // With --compile-model, the loss alone compiled (its backward generated).
  auto compiled_loss = compile([&](const Tensor& x, const Tensor& y) { return model->loss(x, y); });
  auto train_step = [&](const Tensor& x, const Tensor& y) {
    Tensor loss;
    {
      std::optional<autocast::AutocastGuard> amp;
      if (a.amp) amp.emplace(device.type(), amp_dtype);
      loss = a.compile_model ? compiled_loss(x, y) : model->loss(x, y);
    }
    t.opt.zero_grad();
    t.scaler.scale(loss).backward();
    if (a.clip > 0) {
      t.scaler.unscale_(t.opt);
      std::vector<Tensor> grads;
      for (const Tensor& p : params) grads.push_back(p.grad());
      nn::utils::clip_grads_with_norm_(params, a.clip, nn::utils::get_total_norm(grads));
    }
    t.scaler.step(t.opt);
    t.scaler.update();
    return loss;
  };
  auto compiled_step = compile(train_step);
  for (int64_t it = start; it < a.iters; ++it) {
    // Each iteration's windows (and dropout) from its own seed: a resumed run draws what the
    // uninterrupted one would.
    manual_seed(static_cast<uint64_t>(a.seed) * 1000003ull + static_cast<uint64_t>(it));
    auto [x, y] = train.batch(a.batch_size);
    x = x.to(device);
    y = y.to(device);
    const Tensor loss = a.compile ? compiled_step(x, y) : train_step(x, y);
    t.sched.step();
    logged += loss.item<double>();
    ++logged_n;
    ++done_here;
    const int64_t n = it + 1;
    if (n % a.log_every == 0 || n == a.iters) {
      curve.train.emplace_back(static_cast<double>(n), logged / static_cast<double>(logged_n));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double tok_s = static_cast<double>(done_here * a.batch_size * a.block_size) / s;
      std::printf("iter %lld/%lld  loss %.4f  lr %.2e  %.0f tokens/s  ETA %.0f s\n", (long long)n,
                  (long long)a.iters, logged / static_cast<double>(logged_n),
                  t.sched.get_last_lr()[0], tok_s,
                  static_cast<double>(a.iters - n) * s / static_cast<double>(done_here));
      std::fflush(stdout);
      logged = 0;
      logged_n = 0;
    }
    if (n % a.eval_every == 0 || n == a.iters) {
      val_loss = evaluate();
      curve.val.emplace_back(static_cast<double>(n), val_loss);
      std::printf("iter %lld  validation loss %.4f\n", (long long)n, val_loss);
      if (!a.checkpoint.empty()) save_checkpoint(a.checkpoint, t, a, tok, n, curve);
    }
    if (a.stop_after > 0 && done_here >= a.stop_after && n < a.iters) {
      if (!a.checkpoint.empty()) save_checkpoint(a.checkpoint, t, a, tok, n, curve);
      std::printf("stopped after %lld iterations of this run\n", (long long)done_here);
      return 0;
    }
  }
  if (val_loss < 0) val_loss = evaluate();  // resumed at the end: evaluate what was loaded
  std::printf("final validation loss %.4f nats per character\n", val_loss);
  if (a.compile || a.compile_model) {
    const CompileStats& cs = a.compile ? compiled_step.stats() : compiled_loss.stats();
    std::printf("compile: %lld %s ran the graph, %lld were captured, %lld ran eagerly%s%s\n",
                static_cast<long long>(cs.compiled_calls), a.compile ? "steps" : "forwards",
                static_cast<long long>(cs.captures), static_cast<long long>(cs.eager_calls),
                cs.eager_calls ? ": " : "", cs.eager_calls ? cs.last_eager_reason.c_str() : "");
  }

  if (!a.csv.empty()) std::ofstream(a.csv) << curve.to_csv();
  if (!a.svg.empty()) {
    plot::write_svg(a.svg, settings,
                    {{"loss",
                      "iteration",
                      "cross-entropy (nats per character)",
                      {{"train (mean per logged step)", "#c0392b", curve.train, false},
                       {"validation", "#2471a3", curve.val, true}}}});
  }
  if (a.sample_tokens > 0) {
    model->eval();
    manual_seed(static_cast<uint64_t>(a.seed));
    const Tensor prompt = tok.encode("\n").reshape({1, 1}).to(device);
    const Tensor out = model->generate(prompt, a.sample_tokens, a.temperature, a.top_k);
    std::printf("---- sample (temperature %g) ----\n%s\n----\n", a.temperature,
                tok.decode(out.select(0, 0).to("cpu")).c_str());
  }
  if (a.max_val_loss > 0 && val_loss > a.max_val_loss) {
    std::fprintf(stderr, "gpt: validation loss %.4f is above --max-val-loss %.4f\n", val_loss,
                 a.max_val_loss);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
