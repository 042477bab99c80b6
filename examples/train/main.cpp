// Trains a classifier on Fashion-MNIST (Debian's dataset-fashion-mnist), the way PyTorch's XPU
// getting-started guide trains: a model moved to the device, a DataLoader with transforms, SGD
// with momentum (or AdamW) and a one-cycle schedule, cross entropy, float32 or autocast
// (bfloat16 on CPU, float16 with a GradScaler on XPU), and a checkpoint per epoch from which
// --resume continues exactly. docs/training.md walks through it.
//
//   train                                  # small CNN, CPU float32, 8 epochs
//   train --device xpu --amp               # XPU autocast float16 + GradScaler
//   train --epochs 1 --limit-batches 300 --checkpoint ck.safetensors --eval-xpu
//   train --epochs 8 --checkpoint ck.safetensors --resume   # continue after an interruption
//   xtenrun --nproc-per-node 2 train --batch-size 32        # data parallel: 2 ranks, batch 64
//   train --quantize                       # then INT8: calibrate, convert, test accuracy
//   train --compile                        # each training step one compiled graph
//   train --device xpu --amp --compile-model  # the model compiled, GradScaler and loop eager
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <xten/xten.h>

#include "curve.h"
#include "progress.h"

using xten::Tensor;
namespace data = xten::data;
namespace tf = xten::data::transforms;

namespace {

struct Args {
  std::string device = "cpu";
  std::vector<std::string> quantize_devices;  // --quantize-device; empty: the training device
  bool amp = false;
  std::string model = "small";    // small | resnet18
  std::string optimizer = "sgd";  // sgd | adamw
  int64_t epochs = 8, batch_size = 64, limit_batches = 0, test_limit = 0, workers = 2;
  double lr = 0.05;
  uint64_t seed = 0;
  int threads = 0;
  std::string data_dir = data::kFashionMnistDir;
  std::string checkpoint, csv, svg;
  bool resume = false, eval_xpu = false, quantize = false, compile = false, compile_model = false;
  bool channels_last = false;
  double min_accuracy = 0;
  int64_t compare_steps = 0;
  int64_t stop_after = 0;
  std::string profile;
};

const char* kUsage = R"(usage: train [options]
  --device cpu|xpu        where to train (default cpu)
  --amp                   autocast: bfloat16 on CPU, float16 with a GradScaler on XPU
  --compile               compile the training step whole (forward, loss, backward, optimizer:
                          docs/compile.md, "Training steps"), the XPU's GradScaler included; a
                          step with a graph break (DDP's all-reduce) runs eagerly, as the
                          summary says
  --compile-model         compile the model's forward alone: the loss, backward(), the scaler and
                          the optimizer run eagerly, the backward through the compiled forward's
                          generated backward (docs/compile.md, "A compiled forward in an eager
                          training loop"); works with the GradScaler and with DDP
  --model small|resnet18  the small CNN (default) or ResNet-18 with a 28x28 stem
  --channels-last         the model's 4-d weights and its input images channels-last (NHWC;
                          docs/memory_format.md): convolutions, pooling and batch norm run
                          without reorders, and the gradients keep that layout
  --optimizer sgd|adamw   SGD with Nesterov momentum 0.9 (default) or AdamW
  --epochs N              epochs (default 8)
  --batch-size N          (default 64)
  --lr X                  peak learning rate of the one-cycle schedule (default 0.05)
  --limit-batches N       train on the first N batches of each epoch (default: all)
  --test-limit N          evaluate on the first N test images (default: all 10,000)
  --workers N             data loader threads (default 2)
  --threads N             compute threads (default: all cores)
  --seed N                seeds the weights, the data order and dropout (default 0)
  --data DIR              Fashion-MNIST's IDX files (default /usr/share/datasets/fashion-mnist,
                          where Debian's dataset-fashion-mnist installs them)
  --checkpoint PATH       save model, optimizer, scheduler and scaler after every epoch
  --resume                continue from --checkpoint (exactly where it stopped)
  --csv PATH, --svg PATH  write the loss/accuracy curve
  --eval-xpu              reload the checkpoint onto the XPU and evaluate it with autocast
                          float16; exit 1 if its accuracy differs by more than 0.2 points
  --min-accuracy X        exit 1 if the final test accuracy is below X percent
  --quantize              after training, quantize the model to INT8 on the training device
                          (calibrated on 1,000 training images, docs/quantization.md) and
                          report float32 and INT8 test accuracy; exit 1 if they differ by more
                          than 0.5 points
  --quantize-device D     quantize and test on D instead: cpu, xpu, or cpu,xpu for both (one
                          training run, each device quantizing its own copy)
  --compare-steps N       train the same model on CPU and XPU (float32) side by side for N
                          steps and compare their losses; exit 1 if they part
  --stop-after N          stop after epoch N as if interrupted (to try --resume)
  --profile PATH          record training steps 11-20 of the first epoch trained (op calls;
                          forward, backward and optimizer.step ranges; XPU kernels and copies;
                          memory), print the ten ops with the most self CPU time (and XPU
                          time, on the XPU) and write a Chrome trace to PATH

Under xtenrun (xtenrun --nproc-per-node N train ...), each of the N ranks trains on its share
of every epoch with --batch-size images per step (global batch N x --batch-size) and
DistributedDataParallel averages the gradients; rank 0 prints, evaluates and checkpoints.
)";

// "cpu,xpu" -> {"cpu", "xpu"}.
std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    out.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "train: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> double {
      const std::string v = value();
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') usage_error(flag + " expects a number, but got '" + v + "'");
      return d;
    };
    auto count = [&](int64_t min) -> int64_t {
      const double d = number();
      if (d != std::floor(d) || d < static_cast<double>(min))
        usage_error(flag + " expects an integer >= " + std::to_string(min));
      return static_cast<int64_t>(d);
    };
    if (flag == "--device")
      a.device = value();
    else if (flag == "--amp")
      a.amp = true;
    else if (flag == "--model")
      a.model = value();
    else if (flag == "--optimizer")
      a.optimizer = value();
    else if (flag == "--epochs")
      a.epochs = count(1);
    else if (flag == "--batch-size")
      a.batch_size = count(1);
    else if (flag == "--lr")
      a.lr = number();
    else if (flag == "--limit-batches")
      a.limit_batches = count(1);
    else if (flag == "--test-limit")
      a.test_limit = count(1);
    else if (flag == "--workers")
      a.workers = count(0);
    else if (flag == "--threads")
      a.threads = static_cast<int>(count(1));
    else if (flag == "--seed")
      a.seed = static_cast<uint64_t>(count(0));
    else if (flag == "--data")
      a.data_dir = value();
    else if (flag == "--checkpoint")
      a.checkpoint = value();
    else if (flag == "--resume")
      a.resume = true;
    else if (flag == "--csv")
      a.csv = value();
    else if (flag == "--svg")
      a.svg = value();
    else if (flag == "--eval-xpu")
      a.eval_xpu = true;
    else if (flag == "--quantize")
      a.quantize = true;
    else if (flag == "--quantize-device")
      a.quantize_devices = split_list(value());
    else if (flag == "--compile")
      a.compile = true;
    else if (flag == "--compile-model")
      a.compile_model = true;
    else if (flag == "--channels-last")
      a.channels_last = true;
    else if (flag == "--min-accuracy")
      a.min_accuracy = number();
    else if (flag == "--compare-steps")
      a.compare_steps = count(1);
    else if (flag == "--stop-after")
      a.stop_after = count(1);
    else if (flag == "--profile")
      a.profile = value();
    else if (flag == "--help" || flag == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    } else {
      usage_error("unknown option '" + flag + "'");
    }
  }
  if (a.device != "cpu" && a.device != "xpu") usage_error("--device must be cpu or xpu");
  for (const std::string& d : a.quantize_devices)
    if (d != "cpu" && d != "xpu")
      usage_error("--quantize-device takes cpu, xpu or cpu,xpu, not '" + d + "'");
  if (!a.quantize_devices.empty() && !a.quantize) usage_error("--quantize-device needs --quantize");
  if (a.compile && a.compile_model)
    usage_error("--compile and --compile-model exclude each other: pick the step or the model");
  if (a.model != "small" && a.model != "resnet18") usage_error("--model must be small or resnet18");
  if (a.optimizer != "sgd" && a.optimizer != "adamw")
    usage_error("--optimizer must be sgd or adamw");
  if ((a.resume || a.eval_xpu) && a.checkpoint.empty())
    usage_error("--resume and --eval-xpu need --checkpoint PATH");
  return a;
}

// A model and its forward, whichever architecture --model picked.
struct Net {
  std::shared_ptr<xten::nn::Module> module;
  std::function<Tensor(const Tensor&)> forward;
};

// The model on `device`; with `channels_last`, its 4-d weights and every input channels-last.
Net make_net(const std::string& name, const xten::Device& device, bool channels_last) {
  Net net;
  if (name == "resnet18") {
    auto m = xten::models::resnet18_small_input(10, 1);
    net = {m.ptr(), [m](const Tensor& x) mutable { return m(x); }};
  } else {
    xten::models::SmallCNN m(10);
    net = {m.ptr(), [m](const Tensor& x) mutable { return m(x); }};
  }
  net.module->to(device);
  if (channels_last) {
    net.module->to(xten::MemoryFormat::ChannelsLast);
    net.forward = [f = net.forward](const Tensor& x) {
      return f(x.contiguous(xten::MemoryFormat::ChannelsLast));
    };
  }
  return net;
}

// Fashion-MNIST's pixel mean and standard deviation over the training set.
tf::Compose fashion_mnist_transform() {
  return tf::Compose({tf::ToTensor(), tf::Normalize({0.2860}, {0.3530})});
}

// The training run's SGD: Nesterov momentum 0.9, weight decay 5e-4 (also the --compare-steps
// runs').
xten::optim::SGDOptions sgd_options(const Args& a) {
  return xten::optim::SGDOptions(a.lr).momentum(0.9).nesterov(true).weight_decay(5e-4);
}

// autocast's dtype for a device: bfloat16 on CPU, float16 on XPU (the guide's choices).
xten::ScalarType amp_dtype(const xten::Device& d) {
  return d.is_cpu() ? xten::kBFloat16 : xten::kHalf;
}

struct Evaluation {
  double accuracy, loss;
};

Evaluation evaluate(const Net& net, data::DataLoader& loader, const xten::Device& device,
                    bool amp) {
  xten::NoGradGuard no_grad;
  net.module->eval();
  int64_t correct = 0, seen = 0;
  double loss_sum = 0;
  for (data::Batch& b : loader) {
    const Tensor x = b.data.to(device), y = b.target.to(device);
    std::optional<xten::autocast::AutocastGuard> ac;
    if (amp) ac.emplace(device.type(), amp_dtype(device));
    const Tensor logits = net.forward(x);
    loss_sum += xten::cross_entropy(logits.to(xten::kFloat), y, std::nullopt, "sum").item<double>();
    correct += (logits.argmax(1) == y).sum().item<int64_t>();
    seen += y.numel();
  }
  net.module->train();
  return {100.0 * correct / seen, loss_sum / seen};
}

// --quantize: a copy of the trained weights on `device` (one of --quantize-device's, default the
// training device), float32 accuracy, then post-training static quantization calibrated on the
// first 1,000 training images, and INT8 accuracy (oneDNN's int8 kernels on the CPU, the XPU's
// integer kernels there). Returns whether the two are within 0.5 points.
bool quantize_and_compare(const Args& a, const xten::Device& device, const Net& trained,
                          const data::TensorDataset& train_set, data::DataLoader& test_loader) {
  Net net = make_net(a.model, device, a.channels_last);
  net.module->load_state_dict(trained.module->state_dict());
  const Evaluation f = evaluate(net, test_loader, device, false);
  net.module->eval();
  const data::TensorDataset calibration =
      train_set.slice(0, std::min<int64_t>(1000, train_set.size()));
  data::DataLoader calib_loader(calibration, data::DataLoaderOptions().batch_size(100));
  xten::NoGradGuard no_grad;
  std::vector<Tensor> batches;
  for (data::Batch& b : calib_loader) batches.push_back(b.data.to(device));
  const Tensor example = batches.front().narrow(0, 0, 2);
  xten::quantization::prepare(*net.module, [&] { return net.forward(example); });
  for (const Tensor& b : batches) net.forward(b);
  xten::quantization::convert(*net.module);
  const Evaluation q = evaluate(net, test_loader, device, false);
  const double diff = std::abs(q.accuracy - f.accuracy);
  std::printf(
      "test accuracy on the %s: float32 %.2f%%, INT8 %.2f%% (difference %.2f points; "
      "calibrated on %lld training images)\n",
      device.type() == xten::kXPU ? "XPU" : "CPU", f.accuracy, q.accuracy, diff,
      static_cast<long long>(calibration.size()));
  if (diff > 0.5) std::printf("FAIL: INT8 differs from float32 by more than 0.5 points\n");
  return diff <= 0.5;
}

// The training state a checkpoint holds: model, optimizer, scheduler, scaler, and in its
// metadata the finished epochs, the settings that must match on resume, and the curve so far.
void save_checkpoint(const std::string& path, const Net& net, xten::optim::Optimizer& opt,
                     xten::optim::LRScheduler& sched, xten::amp::GradScaler& scaler, const Args& a,
                     int64_t epochs_done, const std::vector<EpochRecord>& curve,
                     const StepCurve& steps) {
  using xten::with_prefix;
  xten::NamedTensorList all = with_prefix("model.", net.module->state_dict());
  for (auto& e : with_prefix("optimizer.", opt.state_dict())) all.push_back(e);
  for (auto& e : with_prefix("scheduler.", sched.state_dict())) all.push_back(e);
  for (auto& e : with_prefix("scaler.", scaler.state_dict())) all.push_back(e);
  const xten::Metadata meta = {{"epochs_done", std::to_string(epochs_done)},
                               {"model", a.model},
                               {"optimizer", a.optimizer},
                               {"batch_size", std::to_string(a.batch_size)},
                               {"epochs", std::to_string(a.epochs)},
                               {"limit_batches", std::to_string(a.limit_batches)},
                               {"lr", std::to_string(a.lr)},
                               {"seed", std::to_string(a.seed)},
                               {"curve", to_csv(curve)},
                               {"step_curve", steps_to_csv(steps)}};
  // Written beside and renamed over: an interrupted save leaves the last checkpoint intact.
  const std::string tmp = path + ".tmp";
  xten::save(all, tmp, meta);
  std::filesystem::rename(tmp, path);
}

int64_t load_checkpoint(const std::string& path, const Net& net, xten::optim::Optimizer& opt,
                        xten::optim::LRScheduler& sched, xten::amp::GradScaler& scaler,
                        const Args& a, std::vector<EpochRecord>& curve, StepCurve& steps) {
  using xten::under_prefix;
  const xten::Metadata meta = xten::load_metadata(path);
  for (const auto& [key, expected] : std::vector<std::pair<std::string, std::string>>{
           {"model", a.model},
           {"optimizer", a.optimizer},
           {"batch_size", std::to_string(a.batch_size)},
           {"epochs", std::to_string(a.epochs)},  // the schedule spans all epochs' steps
           {"limit_batches", std::to_string(a.limit_batches)},
           {"lr", std::to_string(a.lr)},
           {"seed", std::to_string(a.seed)}}) {
    const auto it = meta.find(key);
    if (it == meta.end() || it->second != expected)
      throw xten::ValueError("[train] " + path + " was saved with " + key + " = " +
                             (it == meta.end() ? "(missing)" : it->second) + ", this run has " +
                             expected);
  }
  const xten::NamedTensorList all = xten::load(path);
  net.module->load_state_dict(under_prefix("model.", all));
  opt.load_state_dict(under_prefix("optimizer.", all));
  sched.load_state_dict(under_prefix("scheduler.", all));
  scaler.load_state_dict(under_prefix("scaler.", all));
  curve = from_csv(meta.at("curve"));
  steps = steps_from_csv(meta.at("step_curve"));
  return std::stoll(meta.at("epochs_done"));
}

void write_curve(const Args& a, const std::vector<EpochRecord>& curve, const StepCurve& steps) {
  if (!a.csv.empty()) std::ofstream(a.csv) << to_csv(curve);
  if (a.svg.empty()) return;
  char title[256];
  std::snprintf(title, sizeof title,
                "%s on Fashion-MNIST, %s%s%s, %s lr %g, batch %lld, %lld epochs",
                a.model == "small" ? "SmallCNN" : "ResNet-18", a.device.c_str(),
                a.amp ? " autocast" : " float32", a.channels_last ? " channels-last" : "",
                a.optimizer.c_str(), a.lr, static_cast<long long>(a.batch_size),
                static_cast<long long>(a.epochs));
  write_svg(a.svg, title, curve, steps);
}

// --compare-steps: one CPU and one XPU copy of the same model take the same batches; their
// float32 losses must agree step by step.
int compare_devices(const Args& a, data::DataLoader& loader) {
  xten::manual_seed(a.seed);
  Net cpu = make_net(a.model, xten::Device("cpu"), a.channels_last),
      xpu = make_net(a.model, xten::Device("xpu"), a.channels_last);
  xpu.module->load_state_dict(cpu.module->state_dict());
  xten::manual_seed(a.seed);  // both devices' generators at the same offset: the same dropout
  // The training run's optimizer and schedule (the one-cycle warm-up).
  xten::optim::SGD opt_cpu(cpu.module->parameters(), sgd_options(a));
  xten::optim::SGD opt_xpu(xpu.module->parameters(), sgd_options(a));
  const xten::optim::OneCycleLROptions cycle(a.lr, a.epochs * loader.size());
  xten::optim::OneCycleLR sched_cpu(opt_cpu, cycle), sched_xpu(opt_xpu, cycle);
  double worst = 0;
  int64_t step = 0;
  for (data::Batch& b : loader) {
    if (step == a.compare_steps) break;
    const Tensor l_cpu = xten::cross_entropy(cpu.forward(b.data), b.target);
    const Tensor l_xpu = xten::cross_entropy(xpu.forward(b.data.to("xpu")), b.target.to("xpu"));
    opt_cpu.zero_grad(), opt_xpu.zero_grad();
    l_cpu.backward(), l_xpu.backward();
    opt_cpu.step(), opt_xpu.step();
    sched_cpu.step(), sched_xpu.step();
    const double c = l_cpu.item<double>(), x = l_xpu.item<double>();
    const double rel = std::abs(c - x) / std::max(1.0, std::abs(c));
    worst = std::max(worst, rel);
    if (step % 10 == 0 || step + 1 == a.compare_steps)
      std::printf("step %3lld  CPU loss %.6f  XPU loss %.6f  rel. difference %.2e\n",
                  static_cast<long long>(step), c, x, rel);
    ++step;
  }
  // Step 0 agrees to the last bit; float32 rounding differences (summation orders) then grow
  // with each update, to about 2e-3 by step 50 (docs/training.md).
  constexpr double kTolerance = 1e-2;
  std::printf("largest relative difference over %lld steps: %.2e (tolerance %.0e)\n",
              static_cast<long long>(step), worst, kTolerance);
  return worst <= kTolerance && step == a.compare_steps ? 0 : 1;
}

int run(const Args& a) {
  if (a.threads > 0) xten::set_num_threads(a.threads);
  // Under xtenrun (WORLD_SIZE set): one rank of a data-parallel job (docs/distributed.md). Each
  // rank trains on its share of every epoch with --batch-size images per step, DDP averages
  // the gradients, and rank 0 alone prints, evaluates and writes the checkpoint.
  namespace dist = xten::distributed;
  const bool distributed = std::getenv("WORLD_SIZE") != nullptr;
  int rank = 0, world = 1;
  if (distributed) {
    if (a.compare_steps > 0 || a.eval_xpu || !a.profile.empty())
      usage_error(
          "--compare-steps, --eval-xpu and --profile run in one process, not under xtenrun");
    dist::init_process_group("gloo");
    rank = dist::get_rank();
    world = dist::get_world_size();
    if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
  }
  const xten::Device device(a.device);
  const bool scaled = a.amp && amp_dtype(device) == xten::kHalf;  // float16 needs a GradScaler

  data::TensorDataset train_set = data::mnist(a.data_dir, true, fashion_mnist_transform());
  data::TensorDataset test_set = data::mnist(a.data_dir, false, fashion_mnist_transform());
  if (a.test_limit > 0) test_set = test_set.slice(0, std::min(a.test_limit, test_set.size()));
  // The ranks split each epoch's order (the one a single process would shuffle): at step k
  // their batches together are the single process's batch k at world x --batch-size.
  auto loader_options = data::DataLoaderOptions()
                            .batch_size(a.batch_size)
                            .drop_last(true)
                            .seed(a.seed)
                            .num_workers(a.workers);
  if (distributed)
    loader_options.sampler(std::make_shared<data::DistributedSampler>(world, rank, true, a.seed));
  else
    loader_options.shuffle(true);
  data::DataLoader train_loader(train_set, loader_options);
  data::DataLoader test_loader(test_set,
                               data::DataLoaderOptions().batch_size(500).num_workers(a.workers));
  if (a.compare_steps > 0) return compare_devices(a, train_loader);

  const int64_t batches =
      a.limit_batches > 0 ? std::min(a.limit_batches, train_loader.size()) : train_loader.size();
  xten::manual_seed(a.seed);
  Net net = make_net(a.model, device, a.channels_last);
  std::unique_ptr<xten::optim::Optimizer> opt;
  if (a.optimizer == "sgd") {
    opt = std::make_unique<xten::optim::SGD>(net.module->parameters(), sgd_options(a));
  } else {
    opt = std::make_unique<xten::optim::AdamW>(net.module->parameters(),
                                               xten::optim::AdamOptions(a.lr).weight_decay(0.05));
  }
  xten::optim::OneCycleLR sched(*opt, xten::optim::OneCycleLROptions(a.lr, a.epochs * batches));
  xten::amp::GradScaler scaler(xten::amp::GradScalerOptions().enabled(scaled));
  std::optional<xten::nn::parallel::DistributedDataParallel> ddp;
  // Every rank starts from rank 0's weights. The gradients live in DDP's buckets (nothing here
  // keeps a gradient across steps), which saves copying them back after each all-reduce.
  if (distributed)
    ddp.emplace(net.module,
                xten::nn::parallel::DistributedDataParallelOptions().gradient_as_bucket_view(true));

  std::vector<EpochRecord> curve;
  StepCurve steps;
  int64_t first_epoch = 0;
  if (a.resume) {
    first_epoch = load_checkpoint(a.checkpoint, net, *opt, sched, scaler, a, curve, steps);
    std::printf("resumed from %s after epoch %lld\n", a.checkpoint.c_str(),
                static_cast<long long>(first_epoch));
  }
  int64_t params = 0;
  for (const Tensor& p : net.module->parameters()) params += p.numel();
  std::printf(
      "%s (%lld parameters) on %s %s%s, %s, batch %lld, %lld batches/epoch, %d threads\n",
      a.model == "small" ? "SmallCNN" : "ResNet-18 (28x28 stem)", static_cast<long long>(params),
      a.device.c_str(),
      a.amp ? (device.is_cpu() ? "autocast bfloat16" : "autocast float16 + GradScaler") : "float32",
      a.channels_last ? " channels-last" : "", a.optimizer.c_str(),
      static_cast<long long>(a.batch_size), static_cast<long long>(batches),
      xten::get_num_threads());
  if (device.is_cpu()) std::printf("CPU: %s\n", xten::cpu_backend_summary().c_str());
  if (distributed)
    std::printf("distributed: %d ranks x batch %lld = global batch %lld (Gloo, DDP)\n", world,
                static_cast<long long>(a.batch_size), static_cast<long long>(world * a.batch_size));

  // With --compile-model, the model's forward compiled alone (its training flag is a guard).
  xten::Compiled<std::function<Tensor(const Tensor&)>> compiled_model(net.forward, {}, net.module);
  // One training step; with --compile, captured whole and run as one graph from its third call
  // (the first is the warm-up, the second the capture).
  auto train_step = [&](const Tensor& x, const Tensor& y) {
    Tensor loss;
    {
      xten::profiler::RecordFunction range("forward");
      std::optional<xten::autocast::AutocastGuard> ac;
      if (a.amp) ac.emplace(device.type(), amp_dtype(device));
      loss = xten::cross_entropy(a.compile_model ? compiled_model(x) : net.forward(x), y);
    }
    {
      xten::profiler::RecordFunction range("backward");
      opt->zero_grad();
      scaler.scale(loss).backward();
    }
    {
      xten::profiler::RecordFunction range("optimizer.step");
      scaler.step(*opt);
      scaler.update();
    }
    return loss;
  };
  auto compiled_step = xten::compile(train_step);

  for (int64_t epoch = first_epoch; epoch < a.epochs; ++epoch) {
    // Dropout draws from the device generators: reseeding per epoch makes a resumed epoch
    // draw what the uninterrupted run drew.
    xten::manual_seed(xten::data::derive_seed(a.seed, 1000 + epoch) + rank);
    train_loader.set_epoch(epoch);
    net.module->train();
    Progress progress("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(a.epochs),
                      batches);
    double loss_sum = 0, logged_sum = 0;
    int64_t done = 0, images = 0, logged_n = 0;
    const int64_t log_every = std::max<int64_t>(1, batches / 20);  // 20 curve points per epoch
    // --profile: steps 11-20 (after the warm-up of the first steps) of the first epoch run.
    const bool profiling = !a.profile.empty() && epoch == first_epoch;
    xten::profiler::Profiler prof(xten::profiler::ProfilerOptions().profile_memory(true));
    auto report_profile = [&] {
      if (!prof.recording()) return;
      prof.stop();
      const xten::profiler::Averages avg = prof.key_averages();
      std::printf("\nProfile of training steps 11-%lld (docs/profiler.md):\n%s",
                  static_cast<long long>(std::min<int64_t>(done, 20)), avg.table(10).c_str());
      if (avg.has_device)
        std::printf("\nby self XPU time:\n%s", avg.table(10, "self_xpu_time_total").c_str());
      prof.export_chrome_trace(a.profile);
      std::printf("Chrome trace: %s\n", a.profile.c_str());
    };
    for (data::Batch& b : train_loader) {
      if (profiling && done == 10) prof.start();
      const Tensor x = b.data.to(device), y = b.target.to(device);
      const Tensor loss = a.compile ? compiled_step(x, y) : train_step(x, y);
      sched.step();
      const double l = loss.item<double>();
      if (!std::isfinite(l) && !scaled)
        throw xten::ValueError("[train] the loss is " + std::to_string(l) + " at epoch " +
                               std::to_string(epoch + 1) + ", batch " + std::to_string(done + 1));
      loss_sum += l;
      logged_sum += l;
      ++logged_n;
      images += y.numel();
      ++done;
      if (done % log_every == 0 || done == batches) {
        steps.emplace_back(static_cast<double>(epoch) + static_cast<double>(done) / batches,
                           logged_sum / logged_n);
        logged_sum = 0;
        logged_n = 0;
      }
      progress.update(done, images, loss_sum / done);
      if (done == 20) report_profile();
      if (done == batches) break;
    }
    progress.finish();
    report_profile();  // fewer than 20 steps
    if ((a.compile || a.compile_model) && rank == 0) {
      const xten::CompileStats& cs = a.compile ? compiled_step.stats() : compiled_model.stats();
      std::printf("compile: %lld %s ran the graph, %lld were captured, %lld ran eagerly%s%s\n",
                  static_cast<long long>(cs.compiled_calls), a.compile ? "steps" : "forwards",
                  static_cast<long long>(cs.captures), static_cast<long long>(cs.eager_calls),
                  cs.eager_calls ? ": " : "", cs.eager_calls ? cs.last_eager_reason.c_str() : "");
    }
    double rate = images / progress.seconds();
    if (distributed) {
      // The epoch's loss over every rank's batches, and the job's images per second.
      Tensor sums = xten::tensor(std::vector<double>{loss_sum / done, rate},
                                 xten::TensorOptions().dtype(xten::kDouble));
      dist::all_reduce(sums);
      loss_sum = sums.data_ptr<double>()[0] / world * done;
      rate = sums.data_ptr<double>()[1];
    }
    const Evaluation test = rank == 0 ? evaluate(net, test_loader, device, a.amp) : Evaluation{};
    curve.push_back(
        {epoch + 1, loss_sum / done, test.accuracy, sched.get_last_lr()[0], rate, test.loss});
    std::printf("epoch %lld: train loss %.4f, test loss %.4f, test accuracy %.2f%%, %.0f img/s\n",
                static_cast<long long>(epoch + 1), loss_sum / done, test.loss, test.accuracy, rate);
    if (!a.checkpoint.empty() && rank == 0)
      save_checkpoint(a.checkpoint, net, *opt, sched, scaler, a, epoch + 1, curve, steps);
    if (rank == 0) write_curve(a, curve, steps);
    if (epoch + 1 == a.stop_after) {
      std::printf("stopping after epoch %lld (--stop-after)\n", static_cast<long long>(epoch + 1));
      break;
    }
  }
  if (first_epoch >= a.epochs) {
    std::printf("nothing to train: the checkpoint has all %lld epochs\n",
                static_cast<long long>(first_epoch));
    return 0;
  }
  const double accuracy = curve.back().test_accuracy;
  int status = 0;
  if (rank == 0 && accuracy < a.min_accuracy) {
    std::printf("FAIL: test accuracy %.2f%% is below --min-accuracy %.2f%%\n", accuracy,
                a.min_accuracy);
    status = 1;
  }
  if (a.eval_xpu) {
    // A fresh model from the checkpoint file, on the XPU, under autocast float16.
    Net reloaded = make_net(a.model, xten::Device("xpu"), a.channels_last);
    reloaded.module->load_state_dict(xten::under_prefix("model.", xten::load(a.checkpoint)));
    const Evaluation x = evaluate(reloaded, test_loader, xten::Device("xpu"), true);
    const double diff = std::abs(x.accuracy - accuracy);
    std::printf(
        "test accuracy: %s %s %.2f%%, reloaded on XPU autocast float16 %.2f%% "
        "(difference %.2f points)\n",
        a.device.c_str(), a.amp ? "autocast" : "float32", accuracy, x.accuracy, diff);
    if (diff > 0.2) {
      std::printf("FAIL: the accuracies differ by more than 0.2 points\n");
      status = 1;
    }
  }
  if (a.quantize && rank == 0) {
    const std::vector<std::string> devices =
        a.quantize_devices.empty() ? std::vector<std::string>{a.device} : a.quantize_devices;
    for (const std::string& d : devices)
      if (!quantize_and_compare(a, xten::Device(d), net, train_set, test_loader)) status = 1;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    return run(args);
  } catch (const xten::Error& e) {
    std::fprintf(stderr, "train: %s\n", e.what());
    return 1;
  }
}
