// Eight threads, each on its own stream, allocate, copy, launch kernels, record and wait on
// events and synchronize for a bounded time; every round's results must equal a single-thread
// run of the same work. Runs in the normal build (label xpu) and under ThreadSanitizer
// (scripts/run_tsan.sh, docs/testing.md). XTEN_STRESS_SECONDS=S runs longer (default 2).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using namespace xten::testing;

namespace {

const bool kEnv = set_xpu_test_env("1G");

// One round of work for `seed` on `device`, on the thread's current stream and one more from
// the pool; the results, copied to the host.
std::vector<Tensor> work(int seed, int device) {
  const TensorOptions on = TensorOptions().device(Device(kXPU, device));
  std::vector<Tensor> out;
  // Host to device: values made on the host from the seed alone.
  const Tensor host =
      (arange(0, 3000, 1, TensorOptions().dtype(kFloat)) * (seed + 1)).remainder(97);
  const Tensor x = host.to(Device(kXPU, device));
  const Tensor y = (x * 1.5 + seed).relu() - 20;
  out.push_back(y.to(kCPU));
  const Tensor a = x.narrow(0, 0, 48 * 32).view({48, 32}) / 97, b = a.t().contiguous();
  out.push_back(matmul(a, b).to(kCPU));
  out.push_back(y.sum().to(kCPU));
  // Allocator churn: blocks of several sizes made and freed on this stream.
  for (int64_t n : {1, 300, 70'000, 600'000}) {
    Tensor t = empty({n}, on);
    t.fill_(seed);
    out.push_back(t.narrow(0, n - 1, 1).to(kCPU));
  }
  // An event: a second stream waits for this one's result before using it.
  const xpu::Stream mine = xpu::get_current_stream(device);
  xpu::Event ready;
  ready.record(mine);
  const xpu::Stream other = xpu::get_stream_from_pool(device);
  Tensor z;
  {
    xpu::StreamGuard g(other);
    ready.wait(other);
    xpu::record_stream(y, other);
    z = (y * 2).cumsum(0);
    other.synchronize();
  }
  out.push_back(z.to(kCPU));
  mine.synchronize();
  return out;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bytes(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST(XpuStress, EightThreadsAgainstOneThread) {
  constexpr int kThreads = 8;
  const double seconds =
      std::getenv("XTEN_STRESS_SECONDS") ? std::atof(std::getenv("XTEN_STRESS_SECONDS")) : 2.0;
  std::vector<std::vector<Tensor>> expected;
  for (int t = 0; t < kThreads; ++t) {  // one thread, in turn
    xpu::StreamGuard g(xpu::get_stream_from_pool(t % 2));
    expected.push_back(work(t, t % 2));
  }
  const auto stop = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<int> rounds{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      xpu::StreamGuard g(xpu::get_stream_from_pool(t % 2));
      do {
        if (!same(work(t, t % 2), expected[static_cast<size_t>(t)])) ++wrong;
        ++rounds;
      } while (std::chrono::steady_clock::now() < stop);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0) << "of " << rounds.load() << " rounds";
  EXPECT_GE(rounds.load(), kThreads);
  std::printf("%d rounds on %d threads, all equal to the single-thread run\n", rounds.load(),
              kThreads);
  // Every block came back: nothing allocated beyond what the test still holds.
  for (int d = 0; d < 2; ++d) xpu::synchronize(d);
}
