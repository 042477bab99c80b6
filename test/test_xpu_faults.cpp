// Faults injected into the XPU stack, each in a child process (the runtime reads its settings
// once per process): docs/xpu_runtime.md, Note [Faults]. Each gives a typed error naming the
// cause (or, for the cache, a rebuild or a warning), and the CPU side keeps working.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"

namespace {

namespace fs = std::filesystem;
using xten::testing::ChildResult;

class XpuFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::path(XTEN_TEST_CACHE_DIR) /
        ("faults_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // Runs xpu_fault_child with fresh caches (so modules are built) and `env` on top.
  ChildResult run(std::vector<std::string> env, const std::string& cache = "") {
    const fs::path c = cache.empty() ? dir_ / "cache" : fs::path(cache);
    std::vector<std::string> all{"ZE_OPENCL_DEVICES=1", "ZE_OPENCL_DEVICE_MEMORY=1G",
                                 "POCL_CACHE_DIR=" + (dir_ / "pocl").string(),
                                 "ZE_OPENCL_CACHE_DIR=" + c.string()};
    all.insert(all.end(), env.begin(), env.end());
    ChildResult r = xten::testing::run_child({XTEN_FAULT_CHILD}, all, (dir_ / "out.txt").string());
    EXPECT_TRUE(r.exited_0()) << "status " << r.status << ":\n" << r.output;
    EXPECT_NE(r.output.find("cpu ok 192"), std::string::npos) << r.output;
    return r;
  }
  fs::path dir_;
};

#define EXPECT_HAS(text, needle)                                                             \
  EXPECT_NE((text).find(needle), std::string::npos) << "expected '" << (needle) << "' in:\n" \
                                                    << (text)

TEST_F(XpuFaults, TranslatorMissing) {
  const ChildResult r = run({"ZE_OPENCL_SPIRV_TRANSLATOR=/nonexistent/llvm-spirv-15"});
  EXPECT_HAS(r.output, "DeviceError: [");
  EXPECT_HAS(r.output, "cannot run the SPIR-V translator '/nonexistent/llvm-spirv-15'");
}

TEST_F(XpuFaults, TranslatorFailing) {
  const ChildResult r = run({"ZE_OPENCL_SPIRV_TRANSLATOR=false"});
  EXPECT_HAS(r.output, "DeviceError: [");
  EXPECT_HAS(r.output, "SPIR-V translation failed: 'false' exited with status 1");
}

TEST_F(XpuFaults, TranslatorWritingGarbage) {
  // Exits 0 but writes no bitcode: OpenCL must reject the module, not run it.
  const fs::path script = dir_ / "bad_translator.sh";
  std::ofstream(script) << "#!/bin/sh\necho not-bitcode > \"$5\"\n";
  fs::permissions(script, fs::perms::owner_all);
  const ChildResult r = run({"ZE_OPENCL_SPIRV_TRANSLATOR=" + script.string()});
  EXPECT_HAS(r.output, "DeviceError: [");
  EXPECT_HAS(r.output, "building kernel module");
}

TEST_F(XpuFaults, CacheDirectoryUnwritable) {
  // A path under a regular file can never be created (even by root, as in CI).
  const fs::path file = dir_ / "a_file";
  std::ofstream(file) << "x";
  const ChildResult r = run({}, (file / "cache").string());
  EXPECT_HAS(r.output, "xpu ok 192");  // still usable, without a cache
  EXPECT_HAS(r.output, "cannot write the module cache in '" + (file / "cache").string() + "'");
}

TEST_F(XpuFaults, CorruptedCacheEntriesAreRebuiltNeverLoaded) {
  const ChildResult first = run({});
  EXPECT_HAS(first.output, "xpu ok 192");
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir_ / "cache"))
    if (e.path().extension() == ".bc") entries.push_back(e.path());
  ASSERT_GE(entries.size(), 1u);
  std::vector<std::string> good;
  for (const auto& p : entries) good.push_back(xten::testing::read_text(p.string()));
  // Truncate one, flip a byte in the middle of the others.
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string bad = good[i];
    if (i == 0)
      bad.resize(bad.size() / 2);
    else
      bad[bad.size() / 2] ^= 0x5a;
    std::ofstream(entries[i], std::ios::binary | std::ios::trunc) << bad;
  }
  const ChildResult second = run({});
  EXPECT_HAS(second.output, "xpu ok 192");
  for (size_t i = 0; i < entries.size(); ++i)
    EXPECT_EQ(xten::testing::read_text(entries[i].string()), good[i])
        << entries[i] << " was not rewritten";
}

TEST_F(XpuFaults, NoOpenClPlatform) {
  fs::create_directories(dir_ / "no_icds");
  const ChildResult r = run({"OCL_ICD_VENDORS=" + (dir_ / "no_icds").string()});
  EXPECT_HAS(r.output, "DeviceError: [");
  EXPECT_HAS(r.output, "no XPU device found");
  EXPECT_HAS(r.output, "no OpenCL platform");
}

TEST_F(XpuFaults, VendorDriverWithoutVendorGpu) {
  const ChildResult r = run({"XTEN_XPU_DRIVER=vendor"});
  EXPECT_HAS(r.output, "DeviceError: [");
  EXPECT_HAS(r.output, "looked for Intel GPUs");
  EXPECT_HAS(r.output, "XTEN_XPU_DRIVER=vendor");
}

}  // namespace
