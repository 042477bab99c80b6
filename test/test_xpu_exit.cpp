// Programs that leave XPU work in flight and exit must exit 0 (docs/xpu_runtime.md, Note [Exit
// with work in flight]). Runs xpu_exit_child in child processes, two at a time: random op
// sequences with and without autocast, exiting by return and by exit(), with a thread still
// launching work, on fresh and warm kernel caches.
// XTEN_EXIT_PROGRAMS=N runs N: by default 60 (every combination the four choices below can make,
// since 60 is the first count where all residues of i mod 4, 3 and 5 meet) and 24 under
// AddressSanitizer. By hand, longer: XTEN_EXIT_PROGRAMS=200 (docs/testing.md, "CI time").
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"

namespace {

namespace fs = std::filesystem;

struct Program {
  int seed;
  std::vector<std::string> flags;
  bool fresh_cache;
};

// Every combination of the four choices recurs: autocast every 2nd, exit() every 3rd, a
// launching thread every 5th, fresh caches every 4th.
Program program(int i) {
  Program p{1000 + i, {}, i % 4 == 0};
  if (i % 2 == 0) p.flags.push_back("--autocast");
  if (i % 3 == 0) p.flags.push_back("--exit");
  if (i % 5 == 0) p.flags.push_back("--thread");
  return p;
}

std::string describe(const Program& p) {
  std::string s = "xpu_exit_child " + std::to_string(p.seed);
  for (const auto& f : p.flags) s += " " + f;
  return s + (p.fresh_cache ? " (fresh caches)" : " (warm caches)");
}

std::string tail_of(const fs::path& file) {
  const std::string all = xten::testing::read_text(file.string());
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

struct Running {
  pid_t pid;
  int index;
  fs::path out, cache;
  std::chrono::steady_clock::time_point deadline;
};

pid_t spawn(const Program& p, const fs::path& cache, const fs::path& out) {
  std::vector<std::string> args{XTEN_EXIT_CHILD, std::to_string(p.seed)};
  args.insert(args.end(), p.flags.begin(), p.flags.end());
  // As every XPU test: the validation layer and two devices (test/xpu_test_env.h).
  return xten::testing::spawn_child(
      args,
      {"POCL_CACHE_DIR=" + (cache / "pocl").string(),
       "ZE_OPENCL_CACHE_DIR=" + (cache / "ze_opencl").string(), "ZE_ENABLE_VALIDATION_LAYER=1",
       "ZE_ENABLE_PARAMETER_VALIDATION=1", "ZE_OPENCL_DEVICES=2", "ZE_OPENCL_DEVICE_MEMORY=1G"},
      out.string());
}

TEST(XpuExit, ProgramsLeavingWorkInFlightExitCleanly) {
#if defined(__SANITIZE_ADDRESS__)
  int count = 24;  // each child under ASan takes several times as long
#else
  int count = 60;
#endif
  if (const char* v = std::getenv("XTEN_EXIT_PROGRAMS")) count = std::atoi(v);
  const fs::path root = fs::path(XTEN_TEST_CACHE_DIR) / "exit_test";
  fs::remove_all(root);
  fs::create_directories(root / "logs");
  const fs::path warm = root / "warm";
  constexpr int kParallel = 2;
  constexpr auto kTimeout = std::chrono::seconds(180);  // a hang is a failure

  std::vector<Running> running;
  int next = 0, passed = 0;
  std::vector<std::string> failures;
  while (next < count || !running.empty()) {
    while (next < count && static_cast<int>(running.size()) < kParallel) {
      const Program p = program(next);
      const fs::path cache = p.fresh_cache ? root / ("fresh" + std::to_string(next)) : warm;
      const fs::path out = root / "logs" / (std::to_string(next) + ".txt");
      const pid_t pid = spawn(p, cache, out);
      ASSERT_GT(pid, 0) << "could not start " << XTEN_EXIT_CHILD;
      running.push_back({pid, next, out, p.fresh_cache ? cache : fs::path(),
                         std::chrono::steady_clock::now() + kTimeout});
      ++next;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (size_t r = 0; r < running.size();) {
      Running& c = running[r];
      int status = 0;
      const pid_t done = waitpid(c.pid, &status, WNOHANG);
      if (done == 0 && std::chrono::steady_clock::now() < c.deadline) {
        ++r;
        continue;
      }
      std::string why;
      if (done == 0) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        why = "hung (killed after 180 s)";
      } else if (WIFSIGNALED(status)) {
        why = "killed by signal " + std::to_string(WTERMSIG(status));
      } else if (WEXITSTATUS(status) != 0) {
        why = "exit status " + std::to_string(WEXITSTATUS(status));
      }
      if (why.empty())
        ++passed;
      else
        failures.push_back(describe(program(c.index)) + ": " + why + "\n" + tail_of(c.out));
      if (!c.cache.empty()) fs::remove_all(c.cache);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
    }
  }
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(passed, count);
  std::printf("%d of %d programs exited 0\n", passed, count);
  if (failures.empty()) fs::remove_all(root);
}

}  // namespace
