// bench_distributed: one rank of the distributed benchmarks, started by xtenrun (bench/README.md,
// "bench_distributed"; bench/reference/compare_distributed.sh runs it beside PyTorch's Gloo).
//
//   xtenrun --nproc-per-node N bench_distributed allreduce      # 1 MB and 100 MB float32
//   xtenrun --nproc-per-node N bench_distributed ddp BATCH      # ResNet-18 steps under DDP
//   xtenrun --nproc-per-node N bench_distributed alone BATCH    # the same steps, no DDP
//
// Rank 0 prints one line per measurement:
//   xten allreduce ranks=2 bytes=1048576 us=812.3 busbw_GBps=1.29
//   xten ddp ranks=4 threads=4 batch=8 step_ms=301.2 img_s=106.2
// Bus bandwidth is NCCL's measure: bytes x 2 (n - 1) / n per second. Times are medians over
// rounds, each round started together by a barrier.
#include <cstdio>
#include <cstdlib>
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

void resnet_steps(int rank, int n, int64_t batch, bool with_ddp) {
  manual_seed(0);
  auto model = models::resnet18();
  std::optional<nn::parallel::DistributedDataParallel> ddp;
  if (with_ddp) ddp.emplace(model.ptr());
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Tensor x = randn({batch, 3, 224, 224}), y = randint(0, 1000, {batch});
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(model->forward(x), y).backward();
    opt.step();
  };
  for (int i = 0; i < 2; ++i) step();
  std::vector<double> times;
  for (int r = 0; r < 7; ++r) {
    dist::barrier();
    times.push_back(seconds_per_call(step, 1));
  }
  const double s = median(times);
  if (rank == 0)
    std::printf("xten %s ranks=%d threads=%d batch=%lld step_ms=%.1f img_s=%.1f\n",
                with_ddp ? "ddp" : "alone", n, get_num_threads(), static_cast<long long>(batch),
                s * 1e3, batch * n / s);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "allreduce" && mode != "ddp" && mode != "alone") {
    std::fprintf(stderr, "usage: xtenrun ... bench_distributed allreduce | ddp BATCH | alone BATCH\n");
    return 2;
  }
  dist::init_process_group("gloo");
  const int rank = dist::get_rank(), n = dist::get_world_size();
  if (mode == "allreduce")
    allreduce(rank, n);
  else
    resnet_steps(rank, n, argc > 2 ? std::atoll(argv[2]) : 8, mode == "ddp");
  dist::destroy_process_group();
  return 0;
}
