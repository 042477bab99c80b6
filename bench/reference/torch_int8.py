"""PyTorch's twin of bench_int8: ResNet-50 inference, batch 32, float32 and INT8 through
torch.ao.quantization's eager post-training static quantization on the x86 backend
(torchvision's quantizable ResNet-50: fused conv-bn-relu, default x86 qconfig, 16 calibration
images), NCHW and channels-last, the modes alternating, median of `reps`.

    python3 torch_int8.py [--reps N] [--batch N] THREADS...
"""
import argparse
import statistics
import time

import torch
import torchvision
from torch.ao import quantization as tq


def make(quantize, channels_last, calibration):
    torch.manual_seed(0)
    net = torchvision.models.quantization.resnet50(weights=None, quantize=False).eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(1 + 0.1 * torch.randn(c))
                m.bias.copy_(0.1 * torch.randn(c))
                m.running_mean.copy_(0.1 * torch.randn(c))
                m.running_var.copy_(1 + 0.1 * torch.rand(c))
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    if quantize:
        net.fuse_model(is_qat=False)
        net.qconfig = tq.get_default_qconfig("x86")
        tq.prepare(net, inplace=True)
        with torch.no_grad():
            for i in range(0, calibration.shape[0], 8):
                net(calibration[i:i + 8].contiguous(memory_format=fmt))
        tq.convert(net, inplace=True)
    return net.to(memory_format=fmt)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("threads", type=int, nargs="*")
    a = p.parse_args()
    torch.backends.quantized.engine = "x86"
    torch.manual_seed(1)
    images = torch.randn(a.batch, 3, 224, 224)
    calibration = torch.randn(16, 3, 224, 224)
    modes = []
    for cl in (False, True):
        for q in (False, True):
            fmt = torch.channels_last if cl else torch.contiguous_format
            name = f"{'int8' if q else 'float32'} {'channels-last' if cl else 'NCHW'}"
            modes.append([name, make(q, cl, calibration), images.contiguous(memory_format=fmt), []])
    print(f"PyTorch {torch.__version__}: ResNet-50 inference, batch {a.batch} (quantized engine "
          f"{torch.backends.quantized.engine})")
    for t in a.threads or [1, torch.get_num_threads()]:
        torch.set_num_threads(t)
        with torch.no_grad():
            for m in modes:
                m[3] = []
                m[1](m[2])
            for _ in range(a.reps):
                for m in modes:
                    t0 = time.perf_counter()
                    m[1](m[2])
                    m[3].append((time.perf_counter() - t0) * 1e3)
        print(f"threads {t} (median of {a.reps}):")
        for i, m in enumerate(modes):
            extra = ""
            if i % 2 == 1:
                extra = f"  {statistics.median(modes[i - 1][3]) / statistics.median(m[3]):.2f}x float32"
            print(f"  {m[0]:<22} {statistics.median(m[3]):9.1f} ms{extra}")


if __name__ == "__main__":
    main()
