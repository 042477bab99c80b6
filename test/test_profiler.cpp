// The profiler (docs/profiler.md): the events of a known sequence of ops, their nesting (a
// composite's inner ops, the autograd and backend layers, user ranges), input shapes, the
// key_averages table, the Chrome trace (parsed back as JSON), recording on several threads,
// nothing recorded when no profiler runs, and CPU memory events (profile_memory). The XPU's
// device work and memory: test_profiler_xpu.cpp.
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include <xten/profiler/profiler.h>

#include "test_util.h"

using namespace xten;
namespace prof = xten::profiler;

namespace {

std::vector<const prof::Event*> named(const prof::Profiler& p, const std::string& name) {
  std::vector<const prof::Event*> out;
  for (const auto& e : p.events())
    if (e.name == name) out.push_back(&e);
  return out;
}

bool inside(const prof::Event& child, const prof::Event& parent) {
  return child.thread == parent.thread && child.start_ns >= parent.start_ns &&
         child.end_ns <= parent.end_ns && child.depth > parent.depth;
}

}  // namespace

TEST(Profiler, RecordsAKnownSequence) {
  const Tensor a = ones({2, 3});
  prof::Profiler p;
  p.start();
  const Tensor b = a + a;
  const Tensor c = relu(b);
  const Tensor d = c * 2;
  p.stop();
  EXPECT_EQ(named(p, "xten::add").size(), 1u);
  EXPECT_EQ(named(p, "xten::relu").size(), 1u);
  EXPECT_EQ(named(p, "xten::mul").size(), 1u);
  for (const auto& e : p.events()) {
    EXPECT_GE(e.end_ns, e.start_ns) << e.name;
    EXPECT_TRUE(e.input_shapes.empty()) << "shapes recorded without record_shapes";
  }
  EXPECT_EQ(named(p, "xten::add")[0]->key, "CPU");
  // In call order.
  EXPECT_LT(named(p, "xten::add")[0]->start_ns, named(p, "xten::relu")[0]->start_ns);
  EXPECT_LT(named(p, "xten::relu")[0]->start_ns, named(p, "xten::mul")[0]->start_ns);
  // Nothing is recorded once stopped.
  (void)(a + a);
  EXPECT_EQ(named(p, "xten::add").size(), 1u);
  // The table: add, relu and mul, once each.
  const prof::Averages avg = p.key_averages();
  int found = 0;
  for (const auto& r : avg.rows)
    if (r.name == "xten::add" || r.name == "xten::relu" || r.name == "xten::mul") {
      EXPECT_EQ(r.calls, 1) << r.name;
      EXPECT_GE(r.total_ns, r.self_ns) << r.name;
      ++found;
    }
  EXPECT_EQ(found, 3);
  for (size_t i = 1; i < avg.rows.size(); ++i)
    EXPECT_GE(avg.rows[i - 1].self_ns, avg.rows[i].self_ns);  // sorted by self time
  const std::string t = avg.table(5);
  EXPECT_NE(t.find("Self CPU (ms)"), std::string::npos) << t;
  EXPECT_NE(t.find("xten::"), std::string::npos) << t;
}

TEST(Profiler, NestingOfCompositesLayersAndUserRanges) {
  const Tensor x = randn({4, 5}), w = randn({5, 3}).requires_grad_();
  prof::Profiler p(prof::ProfilerOptions().record_shapes(true));
  p.start();
  {
    prof::RecordFunction forward("forward");
    const Tensor y = matmul(x, w);  // a composite: mm inside
    const Tensor z = w * 2;         // w requires grad: the autograd layer, then the CPU's
    (void)y, (void)z;
  }
  p.stop();
  const auto fwd = named(p, "forward");
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0]->key, "user");
  const auto mm = named(p, "xten::mm"), matmuls = named(p, "xten::matmul");
  ASSERT_FALSE(mm.empty());
  ASSERT_FALSE(matmuls.empty());
  EXPECT_TRUE(inside(*matmuls[0], *fwd[0]));
  for (const auto* e : mm) EXPECT_TRUE(inside(*e, *matmuls[0])) << "mm outside matmul";
  // mul ran in two layers: the autograd kernel, and inside it the CPU kernel.
  const auto mul = named(p, "xten::mul");
  ASSERT_EQ(mul.size(), 2u);
  EXPECT_EQ(mul[0]->key, "AutogradCPU");
  EXPECT_EQ(mul[1]->key, "CPU");
  EXPECT_TRUE(inside(*mul[1], *mul[0]));
  // The table counts mul once (the CPU layer is inside the autograd layer of the same op).
  for (const auto& r : p.key_averages().rows) {
    if (r.name == "xten::mul") {
      EXPECT_EQ(r.calls, 1);
    }
  }
  // Input shapes and dtypes, with record_shapes.
  const prof::Event& m = *matmuls[0];
  ASSERT_EQ(m.input_shapes.size(), 2u);
  EXPECT_EQ(m.input_shapes[0], (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(m.input_shapes[1], (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(m.input_dtypes[0], "Float");
}

TEST(Profiler, BackwardOpsAreRecordedInsideTheirGraphNodes) {
  const Tensor w = randn({3, 3}).requires_grad_();
  const Tensor loss = (w * w).sum();
  const std::string mul_node = (w * w).grad_fn()->name(), sum_node = loss.grad_fn()->name();
  prof::Profiler p;
  p.start();
  loss.backward();
  p.stop();
  // Each node's evaluation is a range named after it, key "backward", and the ops its formula
  // calls are inside it: d(w*w) multiplies, the sum's gradient expands.
  const auto node = named(p, mul_node), sum = named(p, sum_node);
  ASSERT_EQ(node.size(), 1u) << mul_node;
  ASSERT_EQ(sum.size(), 1u) << sum_node;
  EXPECT_EQ(node[0]->key, "backward");
  int inside_node = 0;
  for (const auto* m : named(p, "xten::mul")) inside_node += inside(*m, *node[0]);
  EXPECT_GE(inside_node, 2) << "the formula's products";
  EXPECT_EQ(named(p, "AccumulateGrad").size(), 1u);
  EXPECT_LT(sum[0]->start_ns, node[0]->start_ns) << "evaluated from the loss backwards";
}

TEST(Profiler, ChromeTraceParsesWithTheRequiredFields) {
  prof::Profiler p(prof::ProfilerOptions().record_shapes(true));
  p.start();
  {
    prof::RecordFunction r("step");
    (void)(ones({8}) + 1).sum();
  }
  p.stop();
  const std::string path = ::testing::TempDir() + "xten_trace.json";
  p.export_chrome_trace(path);
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);  // throws if it is not JSON
  ASSERT_TRUE(j.contains("traceEvents"));
  size_t slices = 0;
  bool step = false, host_named = false;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph")) << e.dump();
    if (e["ph"] == "M") {  // metadata: the host process's name
      host_named |= e["name"] == "process_name" && e["args"]["name"] == "host";
      continue;
    }
    for (const char* k : {"name", "ph", "ts", "dur", "pid", "tid", "cat", "args"})
      EXPECT_TRUE(e.contains(k)) << k << " missing in " << e.dump();
    EXPECT_EQ(e["ph"], "X");
    EXPECT_GE(e["dur"].get<double>(), 0);
    EXPECT_GE(e["ts"].get<double>(), 0);
    ++slices;
    step |= e["name"] == "step" && e["cat"] == "user_annotation";
  }
  EXPECT_EQ(slices, p.events().size());
  EXPECT_TRUE(host_named);
  EXPECT_TRUE(step);
  EXPECT_THROW_MSG(p.export_chrome_trace("/nonexistent/dir/trace.json"), ValueError,
                   "[export_chrome_trace] cannot write '/nonexistent/dir/trace.json'");
}

TEST(Profiler, SeveralThreadsAtOnce) {
  prof::Profiler p;
  p.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 50; ++i) (void)(ones({16}) * 3).sum();
    });
  for (auto& th : threads) th.join();
  p.stop();
  std::set<uint64_t> tids;
  int64_t sums = 0;
  for (const auto& e : p.events()) {
    if (e.name == "xten::sum") {
      ++sums;
      tids.insert(e.thread);
    }
  }
  EXPECT_EQ(sums, 200);
  EXPECT_EQ(tids.size(), 4u);
}

TEST(Profiler, OneAtATimeAndStopWithoutStart) {
  prof::Profiler a, b;
  a.start();
  EXPECT_THROW_MSG(b.start(), ValueError, "another profiler is recording");
  EXPECT_THROW_MSG(a.start(), ValueError, "already recording");
  a.stop();
  EXPECT_THROW_MSG(a.stop(), ValueError, "stop() without start()");
  b.start();  // free again
  b.stop();
  // No profiler: user ranges record nothing and cost nothing observable.
  { prof::RecordFunction r("unseen"); }
  EXPECT_TRUE(named(b, "unseen").empty());
}

TEST(Profiler, MemoryEventsSumToZeroOverAScopeThatFreesEverything) {
  const Tensor a = randn({256, 256});  // made before: its free is not in the scope
  prof::Profiler p(prof::ProfilerOptions().profile_memory(true));
  const int64_t before = cpu_memory_allocated();
  p.start();
  {
    const Tensor b = a * 2;       // 256 KiB
    const Tensor c = (b + 1).sum();  // a temporary of 256 KiB and a scalar
    const Tensor d = zeros({10});
    (void)c, (void)d;
  }
  p.stop();
  EXPECT_EQ(cpu_memory_allocated(), before);
  const auto& m = p.memory_events();
  ASSERT_GE(m.size(), 8u);  // b, b + 1, the sum, zeros: allocated and freed
  int64_t sum = 0, allocs = 0, frees = 0;
  int64_t total = before;
  for (const auto& e : m) {
    EXPECT_EQ(e.device, "cpu");
    EXPECT_NE(e.bytes, 0);
    sum += e.bytes;
    (e.bytes > 0 ? allocs : frees) += 1;
    total += e.bytes;
    EXPECT_EQ(e.total_allocated, total) << "running total";  // one thread allocates here
  }
  EXPECT_EQ(sum, 0);
  EXPECT_EQ(allocs, frees);
  // Attributed to the ops that allocated: mul's output is 256 KiB (self, not freed within it).
  const auto avg = p.key_averages();
  ASSERT_TRUE(avg.has_memory);
  for (const auto& r : avg.rows) {
    if (r.name == "xten::mul") {
      EXPECT_EQ(r.cpu_memory.total, 256 * 256 * 4) << "mul's output";
      EXPECT_EQ(r.cpu_memory.peak, 256 * 256 * 4);
    }
    if (r.name == "xten::sum") {
      EXPECT_EQ(r.cpu_memory.total, 4) << "one float";
    }
  }
  const std::string t = avg.table(20, "cpu_memory_usage");
  EXPECT_NE(t.find("CPU Mem"), std::string::npos) << t;
  EXPECT_EQ(t.find("Self XPU"), std::string::npos) << "no device work, no device column\n" << t;
  EXPECT_THROW_MSG((void)avg.table(5, "self_gpu_time"), ValueError,
                   "[key_averages().table] unknown sort_by 'self_gpu_time' (one of: "
                   "self_cpu_time_total, cpu_time_total, self_xpu_time_total");
  // Without profile_memory, none; and the allocators report nothing once stopped.
  prof::Profiler q;
  q.start();
  (void)(a * 3);
  q.stop();
  EXPECT_TRUE(q.memory_events().empty());
  EXPECT_FALSE(q.key_averages().has_memory);
}

TEST(Profiler, PeakPerOpSeesMemoryFreedBeforeTheOpEnds) {
  // (x * x).sum() inside a user range: the product is freed before the range ends, so the
  // range peaks at the product and the result together and ends holding one float.
  const Tensor x = randn({128, 128});
  prof::Profiler p(prof::ProfilerOptions().profile_memory(true));
  p.start();
  Tensor s;
  {
    prof::RecordFunction r("square_sum");
    s = (x * x).sum();
  }
  p.stop();
  for (const auto& r : p.key_averages().rows)
    if (r.name == "square_sum") {
      EXPECT_EQ(r.cpu_memory.peak, 128 * 128 * 4 + 4) << "product and result at once";
      EXPECT_EQ(r.cpu_memory.total, 4) << "only the result stays";
    }
}
