// Graph mode against eager (issue: Graph mode I; docs/compile.md). The same cases in PyTorch,
// eager and torch.compile: bench/reference/torch_compile.py; both in one command:
// bench/reference/compare_compile.sh. Figures: bench/README.md, "bench_compile".
// Run: build/bench/bench_compile [THREADS...]   (default: 1 and all threads)
//      build/bench/bench_compile --xpu              (the chain on the XPU, against XPU eager)
//
// Cases: the pointwise chain layer_norm(x * sigmoid(x) + b) on x [4096, 1024]; ResNet-18
// inference at batch 8, 224x224, float32 and under autocast bfloat16 (compiled with freeze);
// training steps compiled whole (docs/compile.md, "Training steps": zero_grad, forward, cross
// entropy, backward, SGD with momentum 0.9): the MLP 64 x 784 -> 256 -> 10, SmallCNN at batch 128
// (28x28), ResNet-18 at batch 8 (224x224), float32.
// Each prints eager and compiled times (median of 7 blocks), the first call's time (capture and
// passes included; for a training step the first two calls: the warm-up and the capture), the
// graph's node count before and after the passes, and the largest difference between the
// compiled and the eager result (training steps: their correctness is test_compile's).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <xten/xten.h>

#include "reference/block_timing.h"

namespace {
using namespace xten;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Median over 7 blocks of `per_block` calls, in ms per call.
double time_ms(const std::function<void()>& f, int per_block) {
  for (int i = 0; i < 2; ++i) f();
  std::vector<double> blocks;
  for (int b = 0; b < 7; ++b) blocks.push_back(seconds_per_call(f, per_block) * 1e3);
  return median(blocks);
}

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kFloat) - b.to(kFloat)).abs().max().item<double>();
}

template <class Compiled>
void report(const char* name, int threads, double eager_ms, double first_ms, double compiled_ms,
            const Compiled& c, double diff) {
  const CompileStats& s = c.stats();
  std::printf(
      "%-28s %2d threads: eager %9.3f ms  compiled %9.3f ms  (%.2fx)  first call %7.1f ms  nodes "
      "%lld -> %lld (%lld fused groups)  max diff %.3g\n",
      name, threads, eager_ms, compiled_ms, eager_ms / compiled_ms, first_ms,
      static_cast<long long>(s.nodes_captured), static_cast<long long>(s.nodes_after),
      static_cast<long long>(s.fused_groups), diff);
}

// On the XPU each timed call waits for the device (xpu::synchronize).
void chain(int threads, const Device& dev = Device("cpu")) {
  NoGradGuard no_grad;
  manual_seed(0);
  const Tensor x = randn({4096, 1024}).to(dev), b = randn({1024}).to(dev);
  auto fn = [](const Tensor& x, const Tensor& b) { return layer_norm(x * sigmoid(x) + b, {1024}); };
  const bool on_xpu = dev.type() == kXPU;
  auto done = [&] {
    if (on_xpu) xpu::synchronize();
  };
  const int per_block = on_xpu ? 2 : threads == 1 ? 5 : 20;
  const double eager = time_ms(
      [&] {
        fn(x, b);
        done();
      },
      per_block);
  auto c = compile(fn);
  const auto t0 = std::chrono::steady_clock::now();
  c(x, b);
  done();
  const double first = ms_since(t0);
  const double compiled = time_ms(
      [&] {
        c(x, b);
        done();
      },
      per_block);
  report(on_xpu ? "layer_norm chain 4096x1024 xpu" : "layer_norm chain 4096x1024", threads, eager,
         first, compiled, c, max_diff(c(x, b), fn(x, b)));
}

void resnet(int threads, bool bf16) {
  NoGradGuard no_grad;
  manual_seed(0);
  auto model = models::resnet18();
  model->eval();
  const Tensor x = randn({8, 3, 224, 224});
  std::function<Tensor(const Tensor&)> fn = [&](const Tensor& in) {
    if (!bf16) return model(in);
    autocast::AutocastGuard ac(kCPU, kBFloat16);
    return model(in);
  };
  const int per_block = threads == 1 ? 1 : 3;
  const double eager = time_ms([&] { fn(x); }, per_block);
  auto c = compile(fn, CompileOptions().freeze(true));
  const auto t0 = std::chrono::steady_clock::now();
  c(x);
  const double first = ms_since(t0);
  const double compiled = time_ms([&] { c(x); }, per_block);
  report(bf16 ? "resnet18 b8 autocast bf16" : "resnet18 b8 float32", threads, eager, first,
         compiled, c, max_diff(c(x), fn(x)));
}

// The most memory one call of `f` had allocated beyond its start, at any moment (the profiler's
// peak of a range around it), in MB.
double peak_mb(const std::function<void()>& f) {
  profiler::Profiler prof(profiler::ProfilerOptions().profile_memory(true));
  prof.start();
  {
    profiler::RecordFunction range("bench_step");
    f();
  }
  prof.stop();
  for (const profiler::Average& a : prof.key_averages().rows)
    if (a.name == "bench_step") return static_cast<double>(a.cpu_memory.peak) / (1 << 20);
  return -1;
}

// One training step of `model` on (x, y), eager and compiled whole. The two runs start from the
// same parameters; the figure is the time per step.
void train_step(const char* name, int threads, std::shared_ptr<nn::Module> model,
                const std::function<Tensor(const Tensor&)>& forward, const Tensor& x,
                const Tensor& y, int per_block) {
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  model->train();
  auto step = [&](const Tensor& xb, const Tensor& yb) {
    opt.zero_grad();
    Tensor loss = cross_entropy(forward(xb), yb);
    loss.backward();
    opt.step();
    return loss;
  };
  const double eager = time_ms([&] { step(x, y); }, per_block);
  auto c = compile(step);
  const auto t0 = std::chrono::steady_clock::now();
  c(x, y);
  c(x, y);
  const double first = ms_since(t0);
  const double compiled = time_ms([&] { c(x, y); }, per_block);
  if (c.stats().compiled_calls == 0)
    std::printf("%s: ran eagerly: %s\n", name, c.stats().last_eager_reason.c_str());
  report(name, threads, eager, first, compiled, c, 0.0);
  std::printf(
      "%-28s %2d threads: peak memory of a step: eager %.1f MB, compiled %.1f MB (the "
      "graph's plan of intermediates: %.1f MB)\n",
      name, threads, peak_mb([&] { step(x, y); }), peak_mb([&] { c(x, y); }),
      static_cast<double>(c.stats().peak_bytes) / (1 << 20));
}

void train_steps(int threads) {
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  train_step(
      "mlp step 64x784", threads, mlp.ptr(), [&](const Tensor& in) { return mlp(in); },
      randn({64, 784}), randint(10, {64}), threads == 1 ? 100 : 200);
  models::SmallCNN cnn(10);
  train_step(
      "smallcnn step b128", threads, cnn.ptr(), [&](const Tensor& in) { return cnn(in); },
      randn({128, 1, 28, 28}), randint(10, {128}), threads == 1 ? 3 : 10);
  auto resnet = models::resnet18();
  train_step(
      "resnet18 step b8 float32", threads, resnet.ptr(),
      [&](const Tensor& in) { return resnet(in); }, randn({8, 3, 224, 224}), randint(1000, {8}), 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--xpu") {
    std::printf("%s\n", xpu::get_device_properties(0).name.c_str());
    chain(get_num_threads(), Device("xpu"));
    return 0;
  }
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  std::printf("%s\n", cpu_backend_summary().c_str());
  for (int t : threads) {
    if (t < 1) {
      std::fprintf(stderr, "bench_compile: thread counts must be positive, got %d\n", t);
      return 2;
    }
    set_num_threads(t);
    chain(t);
    resnet(t, false);
    resnet(t, true);
    train_steps(t);
  }
}
