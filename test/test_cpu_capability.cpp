// CPU capability levels (Note [CPU capability] in core/cpu_backend.h): the level chosen at load
// time, XTEN_CPU_CAPABILITY, and the same results at every level the machine runs.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include <xten/xten.h>

#include "child_process.h"
#include "cpu_levels.h"
#include "test_util.h"

using namespace xten;
namespace fs = std::filesystem;

namespace {

std::vector<CpuCapability> levels_this_cpu_runs() {
  std::vector<CpuCapability> out;
  for (CpuCapability l : {CpuCapability::Default, CpuCapability::Avx2, CpuCapability::Avx512})
    if (l <= cpu_capability_supported()) out.push_back(l);
  return out;
}

class CpuLevels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("xten_cpu_levels_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    inputs_ = (dir_ / "inputs.safetensors").string();
    save(xten::testing::level_inputs(), inputs_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the child at `level` (an XTEN_CPU_CAPABILITY value); its outputs file and output text.
  std::pair<std::string, xten::testing::ChildResult> run_at(const std::string& level) {
    const std::string out = (dir_ / ("out_" + level + ".safetensors")).string();
    auto r = xten::testing::run_child({XTEN_CPU_LEVEL_CHILD, inputs_, out},
                                      {"XTEN_CPU_CAPABILITY=" + level},
                                      (dir_ / ("log_" + level + ".txt")).string());
    return {out, r};
  }

  fs::path dir_;
  std::string inputs_;
};

}  // namespace

TEST(CpuCapability, LevelIsTheBestOrTheOneAskedFor) {
  const char* env = std::getenv("XTEN_CPU_CAPABILITY");
  if (env && *env)
    EXPECT_STREQ(to_string(cpu_capability()), env);
  else
    EXPECT_EQ(cpu_capability(), cpu_capability_supported());
  EXPECT_LE(cpu_capability(), cpu_capability_supported());
  EXPECT_NE(cpu_backend_summary().find(std::string(to_string(cpu_capability())) + " kernels"),
            std::string::npos)
      << cpu_backend_summary();
}

// Vector gathers (the 16-bit table lookups): on where Linux reports no Gather Data Sampling
// mitigation, or as XTEN_CPU_GATHER or set_cpu_gather says; the summary tells when they are off
// at a level that has them.
TEST(CpuCapability, GathersFollowTheSystemOrTheSetting) {
  const bool before = cpu_gather();
  if (const char* env = std::getenv("XTEN_CPU_GATHER"); env && (*env == '0' || *env == '1')) {
    EXPECT_EQ(before, *env == '1');
  }
  for (bool on : {false, true}) {
    set_cpu_gather(on);
    EXPECT_EQ(cpu_gather(), on);
    const bool said = cpu_backend_summary().find("no vector gathers") != std::string::npos;
    EXPECT_EQ(said, !on && cpu_capability() != CpuCapability::Default) << cpu_backend_summary();
  }
  set_cpu_gather(before);
}

TEST_F(CpuLevels, EveryLevelComputesTheSameResults) {
  std::vector<std::pair<std::string, NamedTensorList>> results;
  for (CpuCapability level : levels_this_cpu_runs()) {
    auto [path, r] = run_at(to_string(level));
    ASSERT_TRUE(r.exited_0()) << r.output;
    EXPECT_NE(r.output.find(std::string("level ") + to_string(level)), std::string::npos)
        << r.output;
    results.emplace_back(to_string(level), load(path));
  }
  if (cpu_has_avx512_bf16()) {
    // The avx512 level with AVX-512 BF16's conversions, which a forced avx512 leaves out.
    auto [path, r] = run_at("");
    ASSERT_TRUE(r.exited_0()) << r.output;
    EXPECT_NE(r.output.find("with AVX-512 BF16 conversions"), std::string::npos) << r.output;
    results.emplace_back("avx512 with BF16 conversions", load(path));
  }
  ASSERT_GE(results.size(), 1u);
  const NamedTensorList& base = results[0].second;  // the baseline
  auto find = [](const NamedTensorList& l, const std::string& name) {
    return xten::testing::input(l, name);
  };
  for (const auto& c : xten::testing::level_cases()) {
    const Tensor ref = find(base, c.name);
    for (size_t k = 1; k < results.size(); ++k) {
      const char* level = results[k].first.c_str();
      const Tensor got = find(results[k].second, c.name);
      if (c.exact) {
        EXPECT_TRUE(xten::testing::same_bytes(got, ref)) << c.name << " at " << level;
        continue;
      }
      ASSERT_EQ(got.sizes(), ref.sizes()) << c.name;
      const Tensor x = got.to(kDouble), y = ref.to(kDouble);
      Tensor bound = y.abs();
      if (c.scale) bound = bound + find(base, c.name + ".scale").to(kDouble);
      const double worst = ((x - y).abs() / (bound * c.rtol)).max().item<double>();
      std::printf("%-12s %-7s max |diff| / bound = %.3f\n", c.name.c_str(), level, worst);
      EXPECT_LE(worst, 1.0) << c.name << " at " << level << " differs from the baseline";
    }
  }
}

TEST_F(CpuLevels, ABadValueIsReportedAndTheBestLevelRuns) {
  const std::string best = to_string(cpu_capability_supported());
  for (const std::string bad : {"avx1024", "AVX2", "sse"}) {
    auto [path, r] = run_at(bad);
    ASSERT_TRUE(r.exited_0()) << r.output;
    EXPECT_NE(r.output.find("XTEN_CPU_CAPABILITY='" + bad +
                            "' is not one of default, avx2, avx512; using " + best),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("level " + best), std::string::npos) << r.output;
  }
}
