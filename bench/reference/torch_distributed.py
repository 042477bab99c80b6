# The twin of bench/bench_distributed.cpp in PyTorch (torch.distributed over Gloo, DDP), started by
# torch.distributed.run with the same ranks, threads and core split as xtenrun
# (bench/reference/compare_distributed.sh). Prints lines in bench_distributed's format, "torch"
# for "xten".
#   python3 -m torch.distributed.run --nproc-per-node N torch_distributed.py allreduce|ddp B|ddp-view B|alone B
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def pin():
    # xtenrun's split: each local rank on its own equal share of the cores, when they divide.
    cores = sorted(os.sched_getaffinity(0))
    n, local = int(os.environ["LOCAL_WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    per = max(1, len(cores) // n)
    if len(cores) >= n and len(cores) % n == 0:
        os.sched_setaffinity(0, cores[local * per:(local + 1) * per])
    torch.set_num_threads(int(os.environ.get("XTEN_BENCH_THREADS", per)))


def seconds_per_call(f, n):
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n


def allreduce(rank, n):
    for nbytes in (1 << 20, 100 << 20):
        t = torch.ones(nbytes // 4)
        per_round, rounds = (50, 15) if nbytes < (10 << 20) else (2, 7)
        for _ in range(3):
            dist.all_reduce(t)
        times = []
        for _ in range(rounds):
            dist.barrier()
            times.append(seconds_per_call(lambda: dist.all_reduce(t), per_round))
        s = statistics.median(times)
        if rank == 0:
            print(f"torch allreduce ranks={n} bytes={nbytes} us={s * 1e6:.1f} "
                  f"busbw_GBps={nbytes * 2.0 * (n - 1) / n / s / 1e9:.3f}", flush=True)


def resnet_steps(rank, n, batch, mode):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    if mode in ("ddp", "ddp-view"):
        model = torch.nn.parallel.DistributedDataParallel(
            model, gradient_as_bucket_view=mode == "ddp-view")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    def quiet_step():
        with model.no_sync():
            step()

    def timed(f):  # until the slowest rank is done, as bench_distributed.cpp
        def f_then_barrier():
            f()
            dist.barrier()

        dist.barrier()
        return seconds_per_call(f_then_barrier, 1)

    for _ in range(2):
        step()
    synced, quiet = [], []
    for r in range(9):
        if mode == "alone":
            synced.append(timed(step))
            continue
        if r % 2:
            synced.append(timed(step))
        quiet.append(timed(quiet_step))
        if r % 2 == 0:
            synced.append(timed(step))
    s = statistics.median(synced)
    if rank == 0:
        line = (f"torch {mode} ranks={n} threads={torch.get_num_threads()} "
                f"batch={batch} step_ms={s * 1e3:.1f} img_s={batch * n / s:.1f}")
        if quiet:
            q = statistics.median(quiet)
            line += f" no_sync_ms={q * 1e3:.1f} overlap={s / q:.3f}"
        print(line, flush=True)


def main():
    mode = sys.argv[1]
    pin()
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    if mode == "allreduce":
        allreduce(rank, n)
    else:
        resnet_steps(rank, n, int(sys.argv[2]), mode)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
