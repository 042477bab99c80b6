"""The cases of bench/bench_compile.cpp in PyTorch: eager and torch.compile (Inductor, CPU).

Run: python3 bench/reference/torch_compile.py THREADS   (one thread count per process, so that
Inductor's cache from another thread count is not reused: compare_compile.sh gives each run a
fresh TORCHINDUCTOR_CACHE_DIR). Timing as bench_compile: median of 7 blocks after 2 warm-up calls;
"first call" is torch.compile's first call (tracing and code generation included).
"""
import sys
import time

import torch
import torchvision


def time_ms(f, per_block):
    for _ in range(2):
        f()
    blocks = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(per_block):
            f()
        blocks.append((time.perf_counter() - t0) * 1e3 / per_block)
    return sorted(blocks)[3]


def report(name, threads, eager, first, compiled):
    print(f"{name:<28} {threads:2d} threads: torch eager {eager:9.3f} ms  torch.compile "
          f"{compiled:9.3f} ms  ({eager / compiled:.2f}x)  first call {first:7.1f} ms", flush=True)


def first_call(f, *args):
    t0 = time.perf_counter()
    f(*args)
    return (time.perf_counter() - t0) * 1e3


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with torch.no_grad():
        x, b = torch.randn(4096, 1024), torch.randn(1024)

        def chain(x, b):
            return torch.nn.functional.layer_norm(x * torch.sigmoid(x) + b, (1024,))

        per = 5 if threads == 1 else 20
        eager = time_ms(lambda: chain(x, b), per)
        c = torch.compile(chain)
        first = first_call(c, x, b)
        report("layer_norm chain 4096x1024", threads, eager, first, time_ms(lambda: c(x, b), per))

        model = torchvision.models.resnet18().eval()
        img = torch.randn(8, 3, 224, 224)
        per = 1 if threads == 1 else 3
        for bf16 in (False, True):
            def fwd(m, t):
                if not bf16:
                    return m(t)
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return m(t)
            eager = time_ms(lambda: fwd(model, img), per)
            torch._dynamo.reset()
            cm = torch.compile(model)
            first = first_call(lambda: fwd(cm, img))
            name = "resnet18 b8 autocast bf16" if bf16 else "resnet18 b8 float32"
            report(name, threads, eager, first, time_ms(lambda: fwd(cm, img), per))


if __name__ == "__main__":
    main()
