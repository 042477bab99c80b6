// The training example (examples/train) as a whole: a run interrupted after an epoch and
// resumed from its checkpoint ends with exactly the state of an uninterrupted run; --profile.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {

void run_train(const std::string& args) {
  const std::string cmd = std::string(XTEN_TRAIN_EXAMPLE) + " " + args + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace

TEST(TrainExample, AResumedRunEndsWithTheStateOfAnUninterruptedOne) {
  const std::string dir = ::testing::TempDir() + "xten_train_resume";
  std::filesystem::create_directories(dir);
  const std::string common = "--epochs 3 --limit-batches 12 --test-limit 500 --seed 5 --workers 2";
  run_train(common + " --checkpoint " + dir + "/straight.safetensors");
  run_train(common + " --checkpoint " + dir + "/resumed.safetensors --stop-after 1");
  EXPECT_EQ(load_metadata(dir + "/resumed.safetensors").at("epochs_done"), "1");
  run_train(common + " --checkpoint " + dir + "/resumed.safetensors --resume");

  const NamedTensorList a = load(dir + "/straight.safetensors");
  const NamedTensorList b = load(dir + "/resumed.safetensors");
  ASSERT_EQ(a.size(), b.size());
  int64_t model_tensors = 0, optimizer_tensors = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    // Model, momentum buffers, scheduler and scaler state: bit for bit.
    EXPECT_TRUE(allclose(a[i].second.to(kDouble), b[i].second.to(kDouble), 0, 0)) << a[i].first;
    model_tensors += a[i].first.rfind("model.", 0) == 0;
    optimizer_tensors += a[i].first.rfind("optimizer.", 0) == 0;
  }
  EXPECT_EQ(model_tensors,
            16);  // SmallCNN: 2 x (conv weight + 5 batch-norm tensors) + 2 x 2 linear
  EXPECT_GT(optimizer_tensors, 0);
  EXPECT_EQ(load_metadata(dir + "/resumed.safetensors").at("epochs_done"), "3");
  std::filesystem::remove_all(dir);
}

// The same under xtenrun with 2 ranks: rank 0's checkpoint after a resume equals the
// uninterrupted run's, bit for bit (every rank reloads it, the sampler continues the epoch).
TEST(TrainExample, ADistributedRunResumesExactly) {
  const std::string dir = ::testing::TempDir() + "xten_train_ddp_resume";
  std::filesystem::create_directories(dir);
  const std::string common = std::string(XTEN_XTENRUN) + " --nproc-per-node 2 --master-port 0 " +
                             XTEN_TRAIN_EXAMPLE +
                             " --epochs 2 --batch-size 16 --limit-batches 10 --test-limit 200 "
                             "--seed 3 --workers 1";
  auto train = [](const std::string& cmd) {
    ASSERT_EQ(std::system((cmd + " > /dev/null").c_str()), 0) << cmd;
  };
  train(common + " --checkpoint " + dir + "/straight.safetensors");
  train(common + " --checkpoint " + dir + "/resumed.safetensors --stop-after 1");
  train(common + " --checkpoint " + dir + "/resumed.safetensors --resume");
  const NamedTensorList a = load(dir + "/straight.safetensors");
  const NamedTensorList b = load(dir + "/resumed.safetensors");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(allclose(a[i].second.to(kDouble), b[i].second.to(kDouble), 0, 0)) << a[i].first;
  EXPECT_EQ(load_metadata(dir + "/resumed.safetensors").at("epochs_done"), "2");
  std::filesystem::remove_all(dir);
}

// examples/gpt the same way: model, AdamW state and schedule bit for bit after a resume.
TEST(GptExample, AResumedRunEndsWithTheStateOfAnUninterruptedOne) {
  const std::string dir = ::testing::TempDir() + "xten_gpt_resume";
  std::filesystem::create_directories(dir);
  auto run_gpt = [](const std::string& args) {
    const std::string cmd = std::string(XTEN_GPT_EXAMPLE) + " " + args + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  };
  const std::string common =
      "--iters 30 --layers 1 --width 32 --heads 2 --block-size 32 --batch-size 8 "
      "--eval-every 10 --eval-batches 2 --log-every 5 --sample-tokens 0 --seed 3";
  run_gpt(common + " --checkpoint " + dir + "/straight.safetensors");
  run_gpt(common + " --checkpoint " + dir + "/resumed.safetensors --stop-after 13");
  EXPECT_EQ(load_metadata(dir + "/resumed.safetensors").at("iters_done"), "13");
  run_gpt(common + " --checkpoint " + dir + "/resumed.safetensors --resume");
  const NamedTensorList a = load(dir + "/straight.safetensors");
  const NamedTensorList b = load(dir + "/resumed.safetensors");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(allclose(a[i].second.to(kDouble), b[i].second.to(kDouble), 0, 0)) << a[i].first;
  }
  EXPECT_EQ(load_metadata(dir + "/resumed.safetensors").at("curve"),
            load_metadata(dir + "/straight.safetensors").at("curve"));
  std::filesystem::remove_all(dir);
}

// --profile (docs/profiler.md): steps 11-20 recorded, the table printed, the trace written with
// the forward, backward and optimizer.step ranges around the ops.
TEST(TrainExample, ProfileWritesTheTableAndATrace) {
  const std::string dir = ::testing::TempDir() + "xten_train_profile";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/out.txt", trace = dir + "/trace.json";
  const std::string cmd = std::string(XTEN_TRAIN_EXAMPLE) +
                          " --epochs 1 --limit-batches 22 --test-limit 100 --profile " + trace +
                          " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("Profile of training steps 11-20"), std::string::npos) << text;
  EXPECT_NE(text.find("xten::conv2d"), std::string::npos) << text;
  std::ifstream t(trace);
  const nlohmann::json j = nlohmann::json::parse(t);
  std::set<std::string> ranges;
  int64_t steps = 0;
  for (const auto& e : j["traceEvents"])
    if (e["cat"] == "user_annotation") {
      ranges.insert(e["name"].get<std::string>());
      steps += e["name"] == "forward";
    }
  EXPECT_EQ(ranges, (std::set<std::string>{"backward", "forward", "optimizer.step"}));
  EXPECT_EQ(steps, 10);
}

// On the XPU the table has the device columns and the trace the kernels, the arrows from the
// ops that launched them, and the memory counters.
TEST(TrainExample, ProfileOnTheXpuShowsKernelsAndMemory) {
  const std::string dir = ::testing::TempDir() + "xten_train_profile_xpu";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/out.txt", trace = dir + "/trace.json";
  const std::string cmd = std::string(XTEN_TRAIN_EXAMPLE) +
                          " --device xpu --batch-size 8 --epochs 1 --limit-batches 21"
                          " --test-limit 16 --profile " +
                          trace + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("Self XPU (ms)"), std::string::npos) << text;
  EXPECT_NE(text.find("by self XPU time"), std::string::npos) << text;
  EXPECT_NE(text.find("Peak XPU"), std::string::npos) << text;
  std::ifstream t(trace);
  const nlohmann::json j = nlohmann::json::parse(t);
  int64_t kernels = 0, arrows = 0;
  std::set<std::string> counters;
  for (const auto& e : j["traceEvents"]) {
    kernels += e["ph"] == "X" && e["cat"] == "kernel";
    arrows += e["ph"] == "s";
    if (e["ph"] == "C") counters.insert(e["name"].get<std::string>());
  }
  EXPECT_GT(kernels, 100);
  EXPECT_GE(arrows, kernels);  // kernels, copies and fills each have one
  EXPECT_TRUE(counters.count("Memory xpu:0")) << "memory counters";
}
