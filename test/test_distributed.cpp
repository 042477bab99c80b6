// distributed/: stores, process groups, DDP, the sampler and the launcher (docs/distributed.md).
// In-process tests use one rank (or several stores in one process); the multi-process tests run
// test/distributed_worker.cpp under xtenrun on 127.0.0.1 (XTEN_XTENRUN, XTEN_DISTRIBUTED_WORKER).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <xten/xten.h>

#include "child_process.h"
#include "test_util.h"

using namespace xten;
namespace dist = xten::distributed;
using namespace std::chrono_literals;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("xten_dist_{}_{}", ::getpid(), name))
      .string();
}

// Runs `argv` to its end; its output in the result.
xten::testing::ChildResult run(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env = {}) {
  static int count = 0;
  return xten::testing::run_child(argv, env, temp_path(fmt::format("out{}", count++)));
}

std::vector<std::string> launch(int nproc, const std::string& mode) {
  return {XTEN_XTENRUN,
          "--nproc-per-node",
          std::to_string(nproc),
          "--master-port",
          "0",
          XTEN_DISTRIBUTED_WORKER,
          mode};
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

// ---- stores --------------------------------------------------------------------------------

template <class S>
void store_operations(S& a, S& b) {
  a.set("x", "hello");
  EXPECT_EQ(b.get_string("x"), "hello");
  EXPECT_EQ(a.add("n", 5), 5);
  EXPECT_EQ(b.add("n", -2), 3);
  EXPECT_TRUE(b.check({"x", "n"}));
  EXPECT_FALSE(b.check({"x", "absent"}));
  // compare_set: swaps only on the expected value; absent counts as empty.
  EXPECT_EQ(dist::Bytes(a.compare_set("c", {}, {'1'})), dist::Bytes{'1'});
  EXPECT_EQ(dist::Bytes(b.compare_set("c", {'0'}, {'2'})), dist::Bytes{'1'});
  EXPECT_EQ(dist::Bytes(b.compare_set("c", {'1'}, {'2'})), dist::Bytes{'2'});
  // wait returns once another client sets the key.
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    a.set("late", "1");
  });
  b.wait({"late", "x"}, 10s);
  later.join();
  EXPECT_EQ(a.num_keys(), 4);
  EXPECT_TRUE(a.delete_key("late"));
  EXPECT_FALSE(a.delete_key("late"));
  EXPECT_EQ(b.num_keys(), 3);
  // Missing keys time out naming themselves.
  b.set_timeout(100ms);
  try {
    b.get("never");
    ADD_FAILURE() << "get of a missing key returned";
  } catch (const dist::DistributedTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'never'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b.wait({"x", "nope"}, 100ms), dist::DistributedTimeoutError);
}

TEST(Store, TcpStoreOperationsAcrossClients) {
  dist::TCPStore master("127.0.0.1", 0, true, 10s);
  ASSERT_GT(master.port(), 0);
  dist::TCPStore client("127.0.0.1", master.port(), false, 10s);
  store_operations(master, client);
  // The connection still works after a timed-out wait (the server answered it).
  client.set("after", "ok");
  EXPECT_EQ(master.get_string("after"), "ok");
}

TEST(Store, TcpStoreErrors) {
  dist::TCPStore master("127.0.0.1", 0, true, 10s);
  try {
    dist::TCPStore again("127.0.0.1", master.port(), true, 1s);
    ADD_FAILURE() << "a second master on the same port";
  } catch (const dist::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  // Nobody listens on a port just released: a client gives up at its timeout, naming it.
  int free_port;
  {
    dist::TCPStore tmp("127.0.0.1", 0, true, 1s);
    free_port = tmp.port();
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    dist::TCPStore lost("127.0.0.1", free_port, false, 300ms);
    ADD_FAILURE() << "connected to a closed port";
  } catch (const dist::DistributedTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("127.0.0.1:{}", free_port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_THROW(dist::TCPStore("127.0.0.1", 70000, true), ValueError);
  EXPECT_THROW(dist::TCPStore("127.0.0.1", 0, false), ValueError);
  // A server that goes away: the client's next call raises.
  auto server = std::make_unique<dist::TCPStore>("127.0.0.1", 0, true, 2s);
  dist::TCPStore client("127.0.0.1", server->port(), false, 2s);
  client.set("k", "v");
  server.reset();
  EXPECT_THROW(client.set("k", "w"), dist::DistributedError);
}

TEST(Store, FileStoreAndPrefixStore) {
  const std::string dir = temp_path("filestore");
  std::filesystem::remove_all(dir);
  {
    dist::FileStore a(dir, 10s), b(dir, 10s);
    store_operations(a, b);
  }
  auto base = std::make_shared<dist::FileStore>(dir, 10s);
  dist::PrefixStore p("group1", base), q("group2", base);
  p.set("k", "one");
  q.set("k", "two");
  EXPECT_EQ(p.get_string("k"), "one");
  EXPECT_EQ(base->get_string("group2/k"), "two");
  std::filesystem::remove_all(dir);
}

// ---- one rank in this process ---------------------------------------------------------------

class SingleRank : public ::testing::Test {
 protected:
  void SetUp() override {
    dist::InitOptions o;
    o.store = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, 10s);
    o.rank = 0;
    o.world_size = 1;
    o.timeout = 10s;
    dist::init_process_group(o);
  }
  void TearDown() override { dist::destroy_process_group(); }
};

TEST_F(SingleRank, CollectivesOfOneRankKeepTheValues) {
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_EQ(dist::get_rank(), 0);
  EXPECT_EQ(dist::get_world_size(), 1);
  Tensor t = arange(6, TensorOptions().dtype(kFloat));
  dist::all_reduce(t, dist::ReduceOp::AVG);
  EXPECT_EQ(t.sum().item<float>(), 15.f);
  std::vector<Tensor> outs{zeros({6})};
  dist::all_gather(outs, t);
  EXPECT_EQ(outs[0].sum().item<float>(), 15.f);
  dist::broadcast(t, 0);
  dist::barrier();
  auto w = dist::all_reduce(t, dist::ReduceOp::SUM, nullptr, true);
  w->wait(5000ms);
  EXPECT_TRUE(w->is_success());
}

TEST_F(SingleRank, BadArgumentsRaiseNamingTheOp) {
  Tensor i = ones({3}, TensorOptions().dtype(kLong));
  try {
    dist::all_reduce(i, dist::ReduceOp::AVG);
    ADD_FAILURE();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("[all_reduce]"), std::string::npos) << e.what();
  }
  Tensor t = ones({3});
  EXPECT_THROW(dist::broadcast(t, 1), ValueError);
  Tensor undefined;
  EXPECT_THROW(dist::all_reduce(undefined), ValueError);
  std::vector<Tensor> two{zeros({3}), zeros({3})};
  EXPECT_THROW(dist::all_gather(two, t), ValueError);
  Tensor wrong = zeros({4});
  EXPECT_THROW(dist::all_gather_into_tensor(wrong, t), ValueError);
  Tensor out = zeros({3});
  EXPECT_THROW(dist::all_to_all_single(out, t, {2}, {3}), ValueError);
  EXPECT_THROW(dist::init_process_group(dist::InitOptions()), ValueError);  // twice
  EXPECT_THROW(dist::new_group({0, 1}), ValueError);
}

TEST_F(SingleRank, ACompiledTrainingStepWithACollectiveRunsEagerly) {
  // A collective is a graph break (a compiled graph cannot replay communication), and a training
  // step with a break runs eagerly (docs/compile.md, "Training steps"): the values are eager's.
  auto run = [](bool compiled) {
    manual_seed(0);
    nn::Linear lin(4, 2);
    optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1));
    auto body = [&](const Tensor& x) {
      opt.zero_grad();
      Tensor loss = lin(x).pow(2).sum();
      loss.backward();
      for (const Tensor& p : lin->parameters()) {
        Tensor g = p.grad();
        dist::all_reduce(g, dist::ReduceOp::AVG);
      }
      opt.step();
      return loss;
    };
    auto step = compile(body);
    const Tensor x = arange(12, TensorOptions().dtype(kFloat)).view({3, 4}) / 10;
    for (int i = 0; i < 4; ++i) compiled ? step(x) : body(x);
    if (compiled) {
      EXPECT_EQ(step.stats().compiled_calls, 0);
      EXPECT_NE(step.stats().last_eager_reason.find("all_reduce"), std::string::npos)
          << step.stats().last_eager_reason;
    }
    return lin->weight.detach().clone();
  };
  EXPECT_TRUE(xten::testing::same_bytes(run(true), run(false)));
}

TEST(Distributed, InitErrors) {
  dist::InitOptions o;
  o.backend = "nccl";
  EXPECT_THROW(dist::init_process_group(o), NotImplementedError);
  o.backend = "gloo";
  o.init_method = "udp://x";
  o.rank = 0;
  o.world_size = 1;
  EXPECT_THROW(dist::init_process_group(o), ValueError);
  o.init_method = "tcp://127.0.0.1:1";
  o.rank = 2;
  EXPECT_THROW(dist::init_process_group(o), ValueError);  // rank outside the world
  EXPECT_FALSE(dist::is_initialized());
  Tensor t = ones({2});
  EXPECT_THROW(dist::all_reduce(t), ValueError);  // not initialized
}

TEST(Distributed, FileInitMethod) {
  const std::string dir = temp_path("fileinit");
  std::filesystem::remove_all(dir);
  dist::init_process_group("gloo", "file://" + dir, 0, 1, 10s);
  Tensor t = ones({4});
  dist::all_reduce(t);
  EXPECT_EQ(t.sum().item<float>(), 4.f);
  dist::destroy_process_group();
  std::filesystem::remove_all(dir);
}

// ---- autograd hooks DDP builds on -------------------------------------------------------------

TEST(Distributed, PostAccumulateHookAndQueuedCallback) {
  Tensor w = ones({3}).requires_grad_();
  std::vector<std::string> events;
  w.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    events.push_back(fmt::format("hook {}", leaf.grad().sum().item<float>()));
    autograd::queue_callback([&] { events.push_back("end"); });
  });
  (w * 2).sum().backward();
  (w * 3).sum().backward();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0], "hook 6");  // after accumulation: the grad holds the new sum
  EXPECT_EQ(events[1], "end");
  EXPECT_EQ(events[2], "hook 15");  // accumulated over both passes
  EXPECT_THROW(autograd::queue_callback([] {}), ValueError);
  EXPECT_THROW((w * 2).register_post_accumulate_grad_hook([](const Tensor&) {}), ValueError);
}

// ---- DistributedSampler ----------------------------------------------------------------------

TEST(DistributedSampler, RanksSplitEveryEpochWithPadding) {
  for (bool drop_last : {false, true})
    for (int64_t n : {10, 12, 3}) {
      const int64_t replicas = 4;
      std::vector<int64_t> all;
      for (int64_t r = 0; r < replicas; ++r) {
        data::DistributedSampler s(replicas, r, true, 5, drop_last);
        auto idx = s.indices(n, 2);
        EXPECT_EQ(static_cast<int64_t>(idx.size()), s.num_samples(n));
        all.insert(all.end(), idx.begin(), idx.end());
      }
      std::set<int64_t> distinct(all.begin(), all.end());
      if (drop_last) {
        EXPECT_EQ(static_cast<int64_t>(all.size()), n / replicas * replicas);
        EXPECT_EQ(distinct.size(), all.size());  // nothing repeated
      } else {
        EXPECT_EQ(static_cast<int64_t>(all.size()), (n + replicas - 1) / replicas * replicas);
        EXPECT_EQ(static_cast<int64_t>(distinct.size()), n);  // every example, some twice
      }
    }
  data::DistributedSampler s(2, 1, true, 5);
  EXPECT_NE(s.indices(100, 0), s.indices(100, 1));  // a new order per epoch
  EXPECT_EQ(s.indices(100, 3), data::DistributedSampler(2, 1, true, 5).indices(100, 3));
  data::DistributedSampler plain(3, 1, false);
  EXPECT_EQ(plain.indices(7, 0), (std::vector<int64_t>{1, 4, 0}));  // padded with index 0
  EXPECT_THROW(data::DistributedSampler(2, 2), ValueError);
  EXPECT_THROW(data::DistributedSampler(0, 0), ValueError);
}

TEST(DistributedSampler, DataLoaderVisitsTheRanksShare) {
  Tensor x = arange(10, TensorOptions().dtype(kFloat)).unsqueeze(1);
  data::TensorDataset ds(x, arange(10));
  auto sampler = std::make_shared<data::DistributedSampler>(2, 1, false);
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(2).sampler(sampler));
  EXPECT_EQ(loader.size(), 3);
  std::vector<int64_t> seen;
  for (auto& batch : loader)
    for (int64_t i = 0; i < batch.target.numel(); ++i)
      seen.push_back(batch.target.select(0, i).item<int64_t>());
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 3, 5, 7, 9}));
  EXPECT_THROW(data::DataLoader(ds, data::DataLoaderOptions().sampler(sampler).shuffle(true)),
               ValueError);
}

// ---- several processes -----------------------------------------------------------------------

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, EveryCollectiveOpAndDtypeAgainstLocalValues) {
  const int n = GetParam();
  auto r = run(launch(n, "collectives"));
  EXPECT_TRUE(r.exited_0()) << r.output;
  EXPECT_EQ(count_of(r.output, ": ok"), n) << r.output;
}
INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4));

class Ddp : public ::testing::TestWithParam<int> {};

TEST_P(Ddp, GradientsEqualOneProcessOnTheWholeBatch) {
  const int n = GetParam();
  auto r = run(launch(n, "ddp"));
  EXPECT_TRUE(r.exited_0()) << r.output;
  EXPECT_EQ(count_of(r.output, ": ok"), n) << r.output;
}
INSTANTIATE_TEST_SUITE_P(Ranks, Ddp, ::testing::Values(2, 3));

TEST(Faults, MismatchedSizesRaiseOnEveryRank) {
  auto r = run(launch(3, "mismatch"));
  EXPECT_TRUE(r.exited_0()) << r.output;
  EXPECT_EQ(count_of(r.output, "the ranks disagree"), 3) << r.output;
}

TEST(Faults, LeavingWithAPendingCollectiveDoesNotWaitForTheTimeout) {
  auto r = run(launch(2, "abandon"));
  EXPECT_TRUE(r.exited_0()) << r.output;
  EXPECT_NE(r.output.find("destroyed with an operation pending"), std::string::npos) << r.output;
}

// Started without the launcher, so that the survivors are not stopped by it: each must raise
// DistributedError well within the group's timeout (20 s in the worker).
void survivors_raise(const std::string& mode) {
  const int n = 3;
  int port;
  {
    dist::TCPStore probe("127.0.0.1", 0, true, 1s);
    port = probe.port();
  }
  std::vector<pid_t> pids;
  std::vector<std::string> outs;
  for (int r = 0; r < n; ++r) {
    outs.push_back(temp_path(fmt::format("{}_{}", mode, r)));
    pids.push_back(
        xten::testing::spawn_child({XTEN_DISTRIBUTED_WORKER, mode},
                                   {"RANK=" + std::to_string(r), fmt::format("WORLD_SIZE={}", n),
                                    "MASTER_ADDR=127.0.0.1", fmt::format("MASTER_PORT={}", port)},
                                   outs.back()));
    ASSERT_GT(pids.back(), 0);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    const std::string out = xten::testing::read_text(outs[r]);
    if (r == n - 1) {
      EXPECT_TRUE(mode == "kill" ? WIFSIGNALED(status) : WEXITSTATUS(status) == 3) << out;
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
      EXPECT_NE(out.find("DistributedError after"), std::string::npos) << out;
    }
  }
}

TEST(Faults, ARankThatExitsMakesTheOthersRaise) {
  survivors_raise("exit");
}
TEST(Faults, ARankThatIsKilledMakesTheOthersRaise) {
  survivors_raise("kill");
}

TEST(Launcher, NamesTheFailedRankAndExitsWithItsStatus) {
  auto r = run(launch(3, "exit"));
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3) << r.output;
  EXPECT_NE(r.output.find("xtenrun: rank 2 (local rank 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exited with status 3"), std::string::npos) << r.output;
  auto k = run(launch(2, "kill"));
  EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 128 + SIGKILL) << k.output;
  EXPECT_NE(k.output.find("rank 1 (local rank 1"), std::string::npos) << k.output;
  EXPECT_NE(k.output.find("killed by signal 9"), std::string::npos) << k.output;
}

TEST(Launcher, SetsTheEnvironmentOfEachRank) {
  auto r = run({XTEN_XTENRUN, "--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "2",
                "--master-addr", "10.1.2.3", "--master-port", "1234", "/bin/sh", "-c",
                "echo \"R=$RANK L=$LOCAL_RANK W=$WORLD_SIZE LW=$LOCAL_WORLD_SIZE "
                "M=$MASTER_ADDR:$MASTER_PORT T=${OMP_NUM_THREADS:+set}\""},
               {"OMP_NUM_THREADS="});
  EXPECT_TRUE(r.exited_0()) << r.output;
  EXPECT_NE(r.output.find("R=2 L=0 W=4 LW=2 M=10.1.2.3:1234 T=set"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("R=3 L=1 W=4 LW=2 M=10.1.2.3:1234 T=set"), std::string::npos) << r.output;
  auto bad = run({XTEN_XTENRUN, "--nproc-per-node", "0", "/bin/true"});
  EXPECT_EQ(WEXITSTATUS(bad.status), 2) << bad.output;
  EXPECT_NE(bad.output.find("--nproc-per-node must be at least 1"), std::string::npos);
  auto missing = run({XTEN_XTENRUN, "--nproc-per-node", "2", "/nonexistent/program"});
  EXPECT_EQ(WEXITSTATUS(missing.status), 127) << missing.output;
  EXPECT_NE(missing.output.find("cannot run /nonexistent/program"), std::string::npos);
}

TEST(Launcher, ForwardsSignalsToTheWorkers) {
  const std::string out = temp_path("signal");
  const pid_t pid = xten::testing::spawn_child(
      {XTEN_XTENRUN, "--nproc-per-node", "2", "/bin/sleep", "60"}, {}, out);
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM)
      << xten::testing::read_text(out);
}
