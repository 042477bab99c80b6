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

    # Training steps (bench_compile's): zero_grad, forward, cross entropy, backward, SGD with
    # momentum 0.9; torch.compile of the whole step function (Dynamo breaks the graph at
    # backward() and compiles the forward, the backward and the optimizer's step).
    steps = [
        ("mlp step 64x784", lambda: torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)),
         (64, 784), 10, 100 if threads == 1 else 200),
        ("smallcnn step b128", small_cnn, (128, 1, 28, 28), 10, 3 if threads == 1 else 10),
        ("resnet18 step b8 float32", torchvision.models.resnet18, (8, 3, 224, 224), 1000, 1),
    ]
    for name, make, shape, classes, per in steps:
        torch.manual_seed(0)
        model = make().train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(*shape), torch.randint(classes, (shape[0],))

        def step(x, y):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        eager = time_ms(lambda: step(x, y), per)
        torch._dynamo.reset()
        cstep = torch.compile(step)
        t0 = time.perf_counter()
        cstep(x, y)
        cstep(x, y)
        first = (time.perf_counter() - t0) * 1e3
        report(name, threads, eager, first, time_ms(lambda: cstep(x, y), per))


def small_cnn():
    """models::SmallCNN: two 3x3 convolutions without bias (32, 64 channels), each with batch
    norm, ReLU and 2x2 max pooling; flatten, dropout 0.25, linear 3136 -> 32, ReLU, linear 10."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 7 * 7, 32), nn.ReLU(),
        nn.Linear(32, 10))


if __name__ == "__main__":
    main()
