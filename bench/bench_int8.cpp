// ResNet-50 inference, batch 32 of 3x224x224: float32 and INT8 (post-training static
// quantization, docs/quantization.md), NCHW and channels-last, at each thread count given
// (bench/README.md, "bench_int8"; PyTorch's x86 quantized backend beside it:
// bench/reference/compare_int8.sh). The modes alternate, each timed `reps` times; the median is
// printed with the ratio of INT8 to float32 of the same layout, and how often INT8's top class is
// float32's (random weights and images: the agreement says the quantized model computes the same
// function, not accuracy).
//
//   bench_int8 [--reps N] [--batch N] THREADS...     (default: 5 reps, batch 32, threads 1 and
//   nproc)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include <xten/xten.h>

using namespace xten;

namespace {

// resnet50 in evaluation mode with random batch-norm statistics (a fresh one normalizes by mean 0,
// variance 1), from one seed, so every copy has the same weights.
models::ResNet make_resnet50() {
  manual_seed(0);
  models::ResNet net = models::resnet50(1000);
  net->eval();
  NoGradGuard no_grad;
  net->apply([](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNormImpl*>(&m)) {
      const int64_t c = bn->options.num_features();
      bn->weight.copy_(1 + 0.1 * randn({c}));
      bn->bias.copy_(0.1 * randn({c}));
      bn->running_mean.copy_(0.1 * randn({c}));
      bn->running_var.copy_(1 + 0.1 * rand({c}));
    }
  });
  return net;
}

struct Mode {
  std::string name;
  models::ResNet net{nullptr};
  Tensor input;
  std::vector<double> ms;
  Tensor logits;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  int64_t batch = 32;
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--batch" && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
    } else {
      threads.push_back(std::atoi(a.c_str()));
    }
  }
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  NoGradGuard no_grad;
  manual_seed(1);
  const Tensor images = randn({batch, 3, 224, 224});
  const Tensor calibration = randn({16, 3, 224, 224});

  std::vector<Mode> modes;
  for (bool cl : {false, true})
    for (bool int8 : {false, true}) {
      Mode m;
      m.name = fmt::format("{} {}", int8 ? "int8" : "float32", cl ? "channels-last" : "NCHW");
      m.net = make_resnet50();
      const MemoryFormat fmt = cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
      if (cl) m.net->to(fmt);
      m.input = images.contiguous(fmt);
      if (int8) {
        const auto t0 = std::chrono::steady_clock::now();
        quantization::prepare(m.net, calibration.narrow(0, 0, 2).contiguous(fmt));
        for (int64_t i = 0; i < calibration.size(0); i += 8)
          m.net(calibration.narrow(0, i, 8).contiguous(fmt));
        quantization::convert(m.net);
        std::cout << fmt::format(
            "{}: prepared, calibrated on {} images, converted in {:.1f} s\n", m.name,
            calibration.size(0),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      modes.push_back(std::move(m));
    }

  std::cout << fmt::format("ResNet-50 inference, batch {} of 3x224x224 ({})\n", batch,
                           cpu_backend_summary());
  for (int t : threads) {
    set_num_threads(t);
    for (Mode& m : modes) {
      m.ms.clear();
      m.logits = m.net(m.input);  // warm-up: primitives built
    }
    for (int r = 0; r < reps; ++r)
      for (Mode& m : modes) {
        const auto t0 = std::chrono::steady_clock::now();
        m.logits = m.net(m.input);
        m.ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    std::cout << fmt::format("threads {} (median of {}):\n", t, reps);
    for (size_t i = 0; i < modes.size(); ++i) {
      const Mode& m = modes[i];
      std::string extra;
      if (i % 2 == 1) {  // int8 after its layout's float32
        const Mode& f = modes[i - 1];
        const Tensor top5 = std::get<1>(topk(f.logits, 5, 1));
        const Tensor top1 = m.logits.argmax(1, true);
        const double agree = (top1 == f.logits.argmax(1, true)).to(kFloat).mean().item<double>();
        const double in5 = (top5 == top1).any({1}).to(kFloat).mean().item<double>();
        extra = fmt::format(
            "  {:.2f}x float32 {}; top-1 agreement {:.0f}%, in float32's top-5 "
            "{:.0f}%",
            median(f.ms) / median(m.ms), m.name.substr(5), 100 * agree, 100 * in5);
      }
      std::cout << fmt::format("  {:<22} {:9.1f} ms{}\n", m.name, median(m.ms), extra);
    }
  }
  return 0;
}
