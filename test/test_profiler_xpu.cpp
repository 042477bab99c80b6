// The profiler on the XPU (docs/profiler.md, Note [Device activity]): kernels, copies and fills
// with device timestamps on the host clock, each tied to the op that launched it; the table's
// device columns; the trace's device tracks and flow arrows; XPU memory events; activities;
// several threads; sessions longer than the harvest interval.
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include <xten/kernels/xpu/runtime/xpu.h>
#include <xten/profiler/profiler.h>

#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using xten::testing::allclose;
namespace prof = xten::profiler;

namespace {

const bool kEnv = xten::testing::set_xpu_test_env("1G");

// How far apart the host and device clocks may be after alignment: the alignment samples the
// device clock between two host reads and takes their midpoint, so its error is half the
// tightest of three brackets (about a microsecond); the margin covers a descheduled sample.
constexpr int64_t kAlignNs = 100'000;

std::map<uint64_t, const prof::Event*> by_id(const prof::Profiler& p) {
  std::map<uint64_t, const prof::Event*> m;
  for (const auto& e : p.events()) m[e.id] = &e;
  return m;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Runs the ops once outside any profile, so that kernel builds are not in the session.
void warm_up(const Tensor& x) {
  (void)relu(x + x).to("cpu");
  xpu::synchronize();
}

}  // namespace

TEST(ProfilerXpu, KernelsAndCopiesHaveDeviceTimesOnTheHostClock) {
  const Tensor h = randn({1 << 16});
  Tensor x = h.to("xpu");
  warm_up(x);
  prof::Profiler p;
  p.start();
  x = h.to("xpu");  // Memcpy HtoD
  const Tensor y = x + x;
  const Tensor z = relu(y);
  const Tensor w = z.to("cpu");  // Memcpy DtoH, waited for inside copy_
  p.stop();
  EXPECT_TRUE(allclose(w, relu(h + h)));
  const auto ops = by_id(p);
  std::map<std::string, const prof::DeviceEvent*> first;  // by kind/prefix
  for (const auto& d : p.device_events()) {
    EXPECT_EQ(d.device, "xpu:0");
    EXPECT_GT(d.duration_ns(), 0) << d.name;
    ASSERT_TRUE(ops.count(d.correlation)) << d.name << " has no launching op";
    const prof::Event& op = *ops.at(d.correlation);
    EXPECT_EQ(op.key, "XPU") << d.name << " launched by " << op.name;
    // Appended inside its op; started on the device after the op began (clocks aligned).
    EXPECT_GE(d.launch_ns, op.start_ns) << d.name;
    EXPECT_LE(d.launch_ns, op.end_ns) << d.name;
    EXPECT_GE(d.start_ns, op.start_ns - kAlignNs) << d.name;
    EXPECT_GE(d.start_ns, d.launch_ns - kAlignNs) << d.name;
    if (d.kind == "kernel") {
      EXPECT_EQ(d.local_size, 256u);
      EXPECT_GE(d.global_size, uint64_t{1} << 16);
    }
    const std::string key = starts_with(d.name, "add") ? "add" : starts_with(d.name, "relu") ? "relu" : d.name;
    if (!first.count(key)) first[key] = &d;
  }
  ASSERT_TRUE(first.count("add") && first.count("relu") && first.count("Memcpy HtoD") &&
              first.count("Memcpy DtoH"))
      << p.device_events().size() << " device events";
  EXPECT_EQ(ops.at(first["add"]->correlation)->name, "xten::add");
  EXPECT_EQ(ops.at(first["relu"]->correlation)->name, "xten::relu");
  EXPECT_EQ(first["Memcpy HtoD"]->kind, "memcpy");
  EXPECT_EQ(first["Memcpy HtoD"]->bytes, size_t{4} << 16);
  // One stream runs in order: relu starts after add ends.
  EXPECT_GE(first["relu"]->start_ns, first["add"]->end_ns - kAlignNs);
  // The blocking copy to the host ends before its op returns.
  const prof::Event& copy = *ops.at(first["Memcpy DtoH"]->correlation);
  EXPECT_EQ(copy.name, "xten::copy_");
  EXPECT_LE(first["Memcpy DtoH"]->end_ns, copy.end_ns + kAlignNs);
}

TEST(ProfilerXpu, TableAndTraceShowTheDeviceWork) {
  Tensor x = randn({4096}).to("xpu");
  warm_up(x);
  prof::Profiler p;
  p.start();
  {
    prof::RecordFunction r("step");
    for (int i = 0; i < 3; ++i) x = relu(x + x);
    (void)x.sum().item<float>();
  }
  p.stop();
  const prof::Averages avg = p.key_averages();
  ASSERT_TRUE(avg.has_device);
  int64_t add_kernels_ns = 0;
  for (const auto& d : p.device_events())
    if (starts_with(d.name, "add")) add_kernels_ns += d.duration_ns();
  for (const auto& r : avg.rows) {
    if (r.name == "xten::add") {
      EXPECT_EQ(r.calls, 3);
      EXPECT_EQ(r.self_device_ns, add_kernels_ns);  // its kernels, launched by it directly
    }
    if (r.name == "step") {
      EXPECT_EQ(r.self_device_ns, 0);  // launched nothing itself
      int64_t all = 0;
      for (const auto& d : p.device_events()) all += d.duration_ns();
      EXPECT_EQ(r.device_total_ns, all);  // everything ran inside it
    }
  }
  const std::string t = avg.table(5, "self_xpu_time_total");
  EXPECT_NE(t.find("Self XPU (ms)"), std::string::npos) << t;
  EXPECT_NE(t.find("Self XPU time total"), std::string::npos) << t;

  const std::string path = ::testing::TempDir() + "xten_trace_xpu.json";
  p.export_chrome_trace(path);
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::map<double, const nlohmann::json*> kernel_at;  // device slices by ts
  std::vector<const nlohmann::json*> host_slices, starts, finishes;
  bool device_named = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "xpu:0") {
      EXPECT_EQ(e["pid"], 1);
      device_named = true;
    }
    if (e["ph"] == "X" && e["pid"] == 1) kernel_at[e["ts"].get<double>()] = &e;
    if (e["ph"] == "X" && e["pid"] == 0) host_slices.push_back(&e);
    if (e["ph"] == "s") starts.push_back(&e);
    if (e["ph"] == "f") finishes.push_back(&e);
  }
  EXPECT_TRUE(device_named);
  EXPECT_EQ(kernel_at.size(), p.device_events().size());
  ASSERT_EQ(starts.size(), p.device_events().size()) << "one flow arrow per piece of work";
  ASSERT_EQ(finishes.size(), starts.size());
  for (const auto* fe : finishes) {
    EXPECT_EQ((*fe)["bp"], "e");
    EXPECT_TRUE(kernel_at.count((*fe)["ts"].get<double>())) << "arrow ends at a device slice";
  }
  for (const auto* s : starts) {  // each arrow leaves from inside a host op slice
    const double ts = (*s)["ts"].get<double>();
    bool in_slice = false;
    for (const auto* h : host_slices)
      in_slice |= (*h)["tid"] == (*s)["tid"] && (*h)["ts"].get<double>() <= ts &&
                  ts <= (*h)["ts"].get<double>() + (*h)["dur"].get<double>();
    EXPECT_TRUE(in_slice) << s->dump();
  }
}

TEST(ProfilerXpu, XpuMemoryEventsSumToZeroAndFollowTheAllocator) {
  Tensor keep = randn({1000}).to("xpu");
  xpu::synchronize();
  const int64_t before = static_cast<int64_t>(xpu::memory_allocated(0));
  prof::Profiler p(prof::ProfilerOptions().profile_memory(true));
  p.start();
  {
    const Tensor a = randn({256, 256}).to("xpu");
    const Tensor b = (a * 2 + keep.sum()).relu();
    (void)b.sum().item<float>();
  }
  p.stop();
  EXPECT_EQ(static_cast<int64_t>(xpu::memory_allocated(0)), before);
  int64_t sum = 0, total = before, n = 0;
  for (const auto& m : p.memory_events()) {
    if (m.device != "xpu:0") continue;
    ++n;
    sum += m.bytes;
    total += m.bytes;
    EXPECT_EQ(m.total_allocated, total) << "the caching allocator's running total";
    if (m.bytes > 0) {  // frees happen where tensors die: here, at the scope's end, outside ops
      EXPECT_NE(m.correlation, 0u) << "every allocation here happens inside an op";
    }
  }
  EXPECT_GE(n, 8);
  EXPECT_EQ(sum, 0);
  bool cpu_seen = false;
  for (const auto& m : p.memory_events()) cpu_seen |= m.device == "cpu";
  EXPECT_TRUE(cpu_seen) << "randn on the host";
  const prof::Averages avg = p.key_averages();
  for (const auto& r : avg.rows)
    if (r.name == "xten::mul") {  // its output, and the scalar 2 on the device (a 512-byte block)
      EXPECT_GE(r.xpu_memory.peak, 256 * 256 * 4);
      EXPECT_LE(r.xpu_memory.peak, 256 * 256 * 4 + 512);
    }
  EXPECT_NE(avg.table(10, "xpu_memory_usage").find("Peak XPU"), std::string::npos);
  // The trace has a counter track per device.
  const std::string path = ::testing::TempDir() + "xten_trace_mem.json";
  p.export_chrome_trace(path);
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::set<std::string> counters;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C") counters.insert(e["name"].get<std::string>());
  EXPECT_TRUE(counters.count("Memory xpu:0") && counters.count("Memory cpu"));
}

TEST(ProfilerXpu, ActivitiesChooseWhatIsRecorded) {
  Tensor x = randn({512}).to("xpu");
  warm_up(x);
  prof::Profiler cpu_only(prof::ProfilerOptions().activities({prof::ProfilerActivity::CPU}));
  cpu_only.start();
  (void)(x + x).to("cpu");
  cpu_only.stop();
  EXPECT_FALSE(cpu_only.events().empty());
  EXPECT_TRUE(cpu_only.device_events().empty());
  EXPECT_EQ(cpu_only.key_averages().table().find("XPU"), std::string::npos);

  prof::Profiler xpu_only(prof::ProfilerOptions().activities({prof::ProfilerActivity::XPU}));
  xpu_only.start();
  (void)(x + x).to("cpu");
  xpu_only.stop();
  EXPECT_TRUE(xpu_only.events().empty());
  EXPECT_GE(xpu_only.device_events().size(), 2u);  // the kernel and the copy

  EXPECT_THROW_MSG(prof::Profiler(prof::ProfilerOptions().activities({})).start(), ValueError,
                   "[profiler] no activities to record");
  // Work from before a session is not in it.
  (void)(x + x);
  prof::Profiler later;
  later.start();
  later.stop();
  EXPECT_TRUE(later.device_events().empty());
}

TEST(ProfilerXpu, SeveralThreadsOnTheirOwnStreams) {
  Tensor x = randn({2048}).to("xpu");
  warm_up(x);
  prof::Profiler p;
  p.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&x] {
      xpu::StreamGuard g(xpu::get_stream_from_pool(0));
      Tensor y = x.clone();
      for (int i = 0; i < 20; ++i) y = y * 1.5f + 1;
      xpu::get_current_stream().synchronize();
    });
  for (auto& th : threads) th.join();
  p.stop();
  const auto ops = by_id(p);
  std::map<int, std::vector<const prof::DeviceEvent*>> by_stream;
  for (const auto& d : p.device_events()) {
    ASSERT_TRUE(ops.count(d.correlation));
    EXPECT_EQ(ops.at(d.correlation)->thread, d.thread) << "launched on the thread of its op";
    by_stream[d.stream].push_back(&d);
  }
  size_t kernels = 0;
  for (auto& [stream, list] : by_stream) {
    kernels += list.size();
    for (size_t i = 1; i < list.size(); ++i)  // each stream runs its work in order
      EXPECT_GE(list[i]->start_ns, list[i - 1]->end_ns - kAlignNs);
  }
  EXPECT_GE(kernels, 4u * 41);  // clone + 20 x (mul, add) per thread
}

TEST(ProfilerXpu, LongSessionsKeepEveryKernel) {
  // More kernels than the harvest interval (1024): finished events are read early and returned
  // to the pool, none lost.
  Tensor x = zeros({64}).to("xpu");
  warm_up(x);
  prof::Profiler p(prof::ProfilerOptions().activities({prof::ProfilerActivity::XPU}));
  p.start();
  for (int i = 0; i < 2500; ++i) x.add_(1);
  p.stop();
  size_t adds = 0;
  for (const auto& d : p.device_events()) {
    adds += starts_with(d.name, "add");
    EXPECT_GT(d.duration_ns(), 0);
  }
  EXPECT_EQ(adds, 2500u);
  EXPECT_EQ(x.to("cpu").max().item<float>(), 2500.f);
}
