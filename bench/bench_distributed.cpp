// bench_distributed: one rank of the distributed benchmarks, started by xtenrun (bench/README.md,
// "bench_distributed"; bench/reference/compare_distributed.sh runs it beside PyTorch's Gloo).
//
//   xtenrun --nproc-per-node N bench_distributed allreduce      # 1 MB and 100 MB float32
//   xtenrun --nproc-per-node N bench_distributed ddp BATCH      # ResNet-18 steps under DDP
//   xtenrun --nproc-per-node N bench_distributed ddp-view BATCH # ... gradient_as_bucket_view
//   xtenrun --nproc-per-node N bench_distributed ddp-onecap BATCH  # ... every bucket 25 MB
//   xtenrun --nproc-per-node N bench_distributed alone BATCH    # the same steps, no DDP
//
// Rank 0 prints one line per measurement:
//   xten allreduce ranks=2 bytes=1048576 us=812.3 busbw_GBps=1.29
//   xten ddp ranks=4 threads=4 batch=8 step_ms=301.2 img_s=106.2 no_sync_ms=270.1 overlap=1.115
// Bus bandwidth is NCCL's measure: bytes x 2 (n - 1) / n per second. Times are medians over
// rounds, each round started together by a barrier.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <xten/xten.h>

#include "reference/block_timing.h"

using namespace xten;
namespace dist = xten::distributed;

namespace {

void allreduce(int rank, int n) {
  for (int64_t bytes : {int64_t{1} << 20, int64_t{100} << 20}) {
    Tensor t = ones({bytes / 4});
    const int per_round = bytes < (int64_t{10} << 20) ? 50 : 2;
    const int rounds = bytes < (int64_t{10} << 20) ? 15 : 7;
    for (int i = 0; i < 3; ++i) dist::all_reduce(t);
    std::vector<double> times;
    for (int r = 0; r < rounds; ++r) {
      dist::barrier();
      times.push_back(seconds_per_call([&] { dist::all_reduce(t); }, per_round));
    }
    const double s = median(times);
    if (rank == 0)
      std::printf("xten allreduce ranks=%d bytes=%lld us=%.1f busbw_GBps=%.3f\n", n,
                  static_cast<long long>(bytes), s * 1e6, bytes * 2.0 * (n - 1) / n / s / 1e9);
  }
}

// Sets the nice value of this process's threads named `name`.
void renice_thread(const std::string& name, int nice) {
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string n;
    std::getline(comm, n);
    if (n == name)
      setpriority(PRIO_PROCESS, static_cast<id_t>(std::stoi(e.path().filename().string())), nice);
  }
}

// mode: alone (no DDP), ddp (the defaults), ddp-view (gradient_as_bucket_view), ddp-onecap (the
// last bucket as large as the others: the layout before Note [DDP buckets]'s small last bucket).
// Under DDP, synchronized steps alternate with the same steps under no_sync() (no communication
// at all), so the overlap ratio compares steps taken at the same time on the same ranks (the
// host is shared: runs minutes apart differed by 30%). Each step is timed from a barrier to a
// barrier after it, i.e. until the slowest rank is done.
void resnet_steps(int rank, int n, int64_t batch, const std::string& mode) {
  manual_seed(0);
  auto model = models::resnet18();
  std::optional<nn::parallel::DistributedDataParallel> ddp;
  nn::parallel::DistributedDataParallelOptions options;
  if (mode == "ddp-view") options.gradient_as_bucket_view(true);
  if (mode == "ddp-onecap") options.last_bucket_cap_mb(options.bucket_cap_mb());
  // Bucket sizes to try (bench/README.md): XTEN_BENCH_BUCKET_MB, XTEN_BENCH_LAST_BUCKET_MB.
  if (const char* v = std::getenv("XTEN_BENCH_BUCKET_MB")) options.bucket_cap_mb(std::atof(v));
  if (const char* v = std::getenv("XTEN_BENCH_LAST_BUCKET_MB"))
    options.last_bucket_cap_mb(std::atof(v));
  if (mode != "alone") ddp.emplace(model.ptr(), options);
  // XTEN_BENCH_COMM_NICE: the communication thread's nice value (an experiment, README).
  if (const char* v = std::getenv("XTEN_BENCH_COMM_NICE")) renice_thread("xten-comm", std::atoi(v));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Tensor x = randn({batch, 3, 224, 224}), y = randint(0, 1000, {batch});
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(model->forward(x), y).backward();
    opt.step();
  };
  auto quiet_step = [&] {
    auto guard = ddp->no_sync();
    step();
  };
  // A step of the job: from a barrier to the barrier after the slowest rank's step (ranks
  // differ by several percent on the shared host; a synchronized step always waits for the
  // slowest, so the steps without communication are measured the same way).
  auto timed = [&](auto&& f) {
    dist::barrier();
    return seconds_per_call(
        [&] {
          f();
          dist::barrier();
        },
        1);
  };
  for (int i = 0; i < 2; ++i) step();
  std::vector<double> synced, quiet;
  for (int r = 0; r < 9; ++r) {
    if (!ddp) {
      synced.push_back(timed(step));
      continue;
    }
    if (r % 2) synced.push_back(timed(step));
    quiet.push_back(timed(quiet_step));
    if (r % 2 == 0) synced.push_back(timed(step));
  }
  // XTEN_BENCH_PROFILE=1: where a synchronized step's extra time goes (DDP's finish and its
  // waits for the buckets, per step over 3 steps).
  std::string profile;
  if (ddp && std::getenv("XTEN_BENCH_PROFILE")) {
    profiler::Profiler prof;
    prof.start();
    for (int r = 0; r < 3; ++r) timed(step);
    prof.stop();
    for (const auto& row : prof.key_averages().rows)
      if (row.name.rfind("DistributedDataParallel", 0) == 0)
        profile += fmt::format(" {}_ms={:.1f}", row.name.substr(24), row.total_ns / 3e6);
  }
  const double s = median(synced);
  if (rank != 0) return;
  std::printf("xten %s ranks=%d threads=%d batch=%lld step_ms=%.1f img_s=%.1f", mode.c_str(), n,
              get_num_threads(), static_cast<long long>(batch), s * 1e3, batch * n / s);
  if (ddp)
    std::printf(" no_sync_ms=%.1f overlap=%.3f%s", median(quiet) * 1e3, s / median(quiet),
                profile.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "allreduce" && mode != "ddp" && mode != "ddp-view" && mode != "ddp-onecap" &&
      mode != "alone") {
    std::fprintf(stderr,
                 "usage: xtenrun ... bench_distributed allreduce | ddp BATCH | ddp-view BATCH | "
                 "ddp-onecap BATCH | alone BATCH\n");
    return 2;
  }
  dist::init_process_group("gloo");
  const int rank = dist::get_rank(), n = dist::get_world_size();
  if (mode == "allreduce")
    allreduce(rank, n);
  else
    resnet_steps(rank, n, argc > 2 ? std::atoll(argv[2]) : 8, mode);
  dist::destroy_process_group();
  return 0;
}
