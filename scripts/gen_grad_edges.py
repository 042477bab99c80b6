#!/usr/bin/env python3
"""Writes test/data/grad_edges.json: PyTorch's outputs and input gradients at the points where
conventions differ (ties, zeros, bounds, NaN and infinities, duplicate indices, padding_idx,
ignore_index), for every op with a derivative that has such a point. test/grad_edges.h reads it
and checks xten on the CPU (test_autograd) and the XPU (test_autograd_xpu); docs/autograd.md,
"Conventions at the edges", lists what each case pins down.

Run with PyTorch (the device host has it): python3 scripts/gen_grad_edges.py test/data/grad_edges.json

Each case names an op key that both sides map to a call (OPS below, kOps in test/grad_edges.h),
its float32 inputs (some requiring grad; int64 index inputs), and scalar parameters. The loss is
sum(output * g) with g a fixed pseudo-random tensor stored in the file, so every gradient entry
is checked, not only a sum of them.
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

NAN, INF = float("nan"), float("inf")

# op key -> f(inputs, params): the call, in PyTorch's Python API. test/grad_edges.h has the same
# keys with xten's C++ calls.
OPS = {
    "max": lambda x, p: x[0].max(),
    "min": lambda x, p: x[0].min(),
    "max_dim": lambda x, p: x[0].max(dim=p["dim"]).values,
    "min_dim": lambda x, p: x[0].min(dim=p["dim"]).values,
    "amax": lambda x, p: x[0].amax(dim=p["dim"]),
    "amin": lambda x, p: x[0].amin(dim=p["dim"]),
    "maximum": lambda x, p: torch.maximum(x[0], x[1]),
    "minimum": lambda x, p: torch.minimum(x[0], x[1]),
    "max_pool2d": lambda x, p: F.max_pool2d(x[0], p["kernel"], p["stride"]),
    "adaptive_max_pool2d": lambda x, p: F.adaptive_max_pool2d(x[0], p["out"]),
    "sort": lambda x, p: torch.sort(x[0], dim=-1, stable=True).values,
    "topk": lambda x, p: torch.topk(x[0], p["k"]).values,
    "prod": lambda x, p: x[0].prod(),
    "prod_dim": lambda x, p: x[0].prod(dim=p["dim"]),
    "cumprod": lambda x, p: x[0].cumprod(dim=p["dim"]),
    "norm": lambda x, p: torch.linalg.vector_norm(x[0], ord=p["p"]),
    "norm_dim": lambda x, p: torch.linalg.vector_norm(x[0], ord=p["p"], dim=p["dim"]),
    "pow_scalar": lambda x, p: x[0].pow(p["exponent"]),
    "pow_tensor": lambda x, p: x[0].pow(x[1]),
    "sqrt": lambda x, p: x[0].sqrt(),
    "rsqrt": lambda x, p: x[0].rsqrt(),
    "abs": lambda x, p: x[0].abs(),
    "relu": lambda x, p: x[0].relu(),
    "log": lambda x, p: x[0].log(),
    "exp": lambda x, p: x[0].exp(),
    "tanh": lambda x, p: x[0].tanh(),
    "sigmoid": lambda x, p: x[0].sigmoid(),
    "silu": lambda x, p: F.silu(x[0]),
    "reciprocal": lambda x, p: x[0].reciprocal(),
    "clamp": lambda x, p: x[0].clamp(p["min"], p["max"]),
    "hardtanh": lambda x, p: F.hardtanh(x[0], p["min"], p["max"]),
    "relu6": lambda x, p: F.relu6(x[0]),
    "leaky_relu": lambda x, p: F.leaky_relu(x[0], p["slope"]),
    "elu": lambda x, p: F.elu(x[0], p["alpha"]),
    "softplus": lambda x, p: F.softplus(x[0], p["beta"], p["threshold"]),
    "hardswish": lambda x, p: F.hardswish(x[0]),
    "gelu": lambda x, p: F.gelu(x[0], approximate=p["approximate"]),
    "atan2": lambda x, p: torch.atan2(x[0], x[1]),
    "hypot": lambda x, p: torch.hypot(x[0], x[1]),
    "lerp_scalar": lambda x, p: torch.lerp(x[0], x[1], p["weight"]),
    "logsumexp": lambda x, p: torch.logsumexp(x[0], dim=p["dim"]),
    "softmax": lambda x, p: torch.softmax(x[0], dim=p["dim"]),
    "log_softmax": lambda x, p: torch.log_softmax(x[0], dim=p["dim"]),
    "std": lambda x, p: x[0].std(),
    "var": lambda x, p: x[0].var(),
    "mse_loss": lambda x, p: F.mse_loss(x[0], x[1], reduction="sum"),
    "l1_loss": lambda x, p: F.l1_loss(x[0], x[1], reduction="sum"),
    "smooth_l1_loss": lambda x, p: F.smooth_l1_loss(x[0], x[1], reduction="sum", beta=p["beta"]),
    "huber_loss": lambda x, p: F.huber_loss(x[0], x[1], reduction="sum", delta=p["delta"]),
    "gather": lambda x, p: torch.gather(x[0], p["dim"], x[1]),
    "index_select": lambda x, p: torch.index_select(x[0], p["dim"], x[1]),
    "embedding": lambda x, p: F.embedding(x[1], x[0], padding_idx=(
        None if p["padding_idx"] < 0 else p["padding_idx"])),
    "index_put": lambda x, p: x[0].index_put((x[2],), x[1], accumulate=bool(p["accumulate"])),
    "nll_loss": lambda x, p: F.nll_loss(x[0], x[1], ignore_index=p["ignore_index"],
                                        reduction=p["reduction"]),
    "cross_entropy": lambda x, p: F.cross_entropy(x[0], x[1], ignore_index=p["ignore_index"],
                                                  reduction=p["reduction"],
                                                  label_smoothing=p.get("label_smoothing", 0.0)),
    "binary_cross_entropy": lambda x, p: F.binary_cross_entropy(x[0], x[1], reduction="sum"),
    "binary_cross_entropy_with_logits": lambda x, p: F.binary_cross_entropy_with_logits(
        x[0], x[1], reduction="sum"),
    "kl_div": lambda x, p: F.kl_div(x[0], x[1], reduction="sum"),
    "layer_norm": lambda x, p: F.layer_norm(x[0], [x[0].shape[-1]]),
    "prelu": lambda x, p: F.prelu(x[0], x[1]),
    "scatter_add": lambda x, p: torch.scatter_add(x[0], p["dim"], x[2], x[1]),
    "div": lambda x, p: x[0] / x[1],
    "log1p": lambda x, p: x[0].log1p(),
    "where": lambda x, p: torch.where(x[2] > 0, x[0], x[1]),
    "masked_fill": lambda x, p: x[0].masked_fill(x[1] > 0, p["value"]),
}


def f(*values):
    return {"values": list(values), "dtype": "float32", "grad": True}


def shaped(shape, *values):
    return {"values": list(values), "shape": shape, "dtype": "float32", "grad": True}


def index(shape, *values):
    return {"values": list(values), "shape": shape, "dtype": "int64", "grad": False}


def const(shape, *values):  # float32, no gradient
    return {"values": list(values), "shape": shape, "dtype": "float32", "grad": False}


CASES = [
    # ties and NaN in reductions and extremes
    ("max: a tie splits the gradient", "max", [f(1, 3, 3, -2)], {}),
    ("max: NaN takes the gradient", "max", [f(1, NAN, 3, NAN)], {}),
    ("min: a tie", "min", [f(1, -2, 3, -2)], {}),
    ("min: NaN", "min", [f(1, NAN, 3)], {}),
    ("max.dim: a tie goes to the returned index", "max_dim", [shaped([2, 3], 2, 2, 1, 0, 5, 5)], {"dim": 1}),
    ("max.dim: NaN", "max_dim", [shaped([2, 3], 2, NAN, 1, 0, 5, 5)], {"dim": 1}),
    ("min.dim: a tie", "min_dim", [shaped([2, 3], 1, 1, 2, 0, 0, 5)], {"dim": 1}),
    ("amax: ties split", "amax", [shaped([2, 3], 2, 2, 1, 4, 4, 4)], {"dim": 1}),
    ("amax: NaN", "amax", [shaped([2, 3], 2, NAN, 1, 4, 4, 4)], {"dim": 1}),
    ("amin: ties split", "amin", [shaped([2, 3], 1, 1, 2, 0, 3, 0)], {"dim": 1}),
    ("maximum: equal inputs split", "maximum", [f(1, 2, NAN, 3), f(1, 5, 0, NAN)], {}),
    ("minimum: equal inputs split", "minimum", [f(1, 2, NAN, -3), f(1, -5, 0, NAN)], {}),
    ("max_pool2d: ties in a window", "max_pool2d",
     [shaped([1, 1, 2, 4], 1, 1, 2, 2, 1, 0, 2, 2)], {"kernel": 2, "stride": 2}),
    ("max_pool2d: overlapping windows and NaN", "max_pool2d",
     [shaped([1, 1, 3, 3], 1, 3, 3, 3, NAN, 1, 0, 3, 2)], {"kernel": 2, "stride": 1}),
    ("adaptive_max_pool2d: ties", "adaptive_max_pool2d",
     [shaped([1, 1, 2, 2], 4, 4, 4, 4)], {"out": 1}),
    ("sort: ties (stable)", "sort", [f(2, 1, 2, 1, 3)], {}),
    # (topk's order among ties is not specified by PyTorch: no case pins it)
    ("topk: NaN is the largest", "topk", [f(2, NAN, 5, 1)], {"k": 2}),
    ("sort: NaN last", "sort", [f(2, NAN, -1, INF)], {}),
    # zeros
    ("prod: one zero", "prod", [f(2, 0, 3, 4)], {}),
    ("prod: two zeros", "prod", [f(2, 0, 3, 0)], {}),
    ("prod.dim: zeros in rows", "prod_dim", [shaped([3, 3], 1, 2, 3, 0, 2, 3, 0, 0, 3)], {"dim": 1}),
    ("cumprod: a zero", "cumprod", [f(2, 0, 3, 4)], {"dim": 0}),
    ("cumprod: two zeros", "cumprod", [f(2, 0, 3, 0, 5)], {"dim": 0}),
    ("norm 2 at zero", "norm", [f(0, 0, 0)], {"p": 2}),
    ("norm 1 at zeros", "norm", [f(0, 1, -2, 0)], {"p": 1}),
    ("norm inf: ties", "norm", [f(1, -3, 3, 0)], {"p": INF}),
    ("norm 3 at zero", "norm", [f(0, 0, 0)], {"p": 3}),
    ("norm 2 along a dim with a zero row", "norm_dim", [shaped([2, 2], 0, 0, 3, 4)], {"p": 2, "dim": 1}),
    ("pow: 0 ** 0", "pow_scalar", [f(0, 1, -2)], {"exponent": 0}),
    ("pow: 0 ** 0.5", "pow_scalar", [f(0, 4)], {"exponent": 0.5}),
    ("pow: 0 ** 2", "pow_scalar", [f(0, -1, 3)], {"exponent": 2}),
    ("pow: 0 ** -1", "pow_scalar", [f(0, 2)], {"exponent": -1}),
    ("pow: negative ** 1.5", "pow_scalar", [f(-1, 0, 4)], {"exponent": 1.5}),
    ("pow tensor: base 0", "pow_tensor", [f(0, 0, 0, 2, -1), f(0, 1, 2, 0, 2)], {}),
    ("sqrt at 0 and below", "sqrt", [f(0, -1, 4, INF)], {}),
    ("rsqrt at 0", "rsqrt", [f(0, 4, INF)], {}),
    ("abs at 0", "abs", [f(0, -0.0, -2, 3, NAN)], {}),
    ("relu at 0 and NaN", "relu", [f(0, -1, 2, NAN)], {}),
    ("log at 0", "log", [f(0, 1, -1, INF)], {}),
    ("reciprocal at 0", "reciprocal", [f(0, -0.0, 2)], {}),
    # bounds
    ("clamp at its bounds", "clamp", [f(-0.5, 2.0, 0, -1, 3, NAN)], {"min": -0.5, "max": 2.0}),
    ("hardtanh at its bounds", "hardtanh", [f(-0.5, 2.0, 0, -1, 3, NAN)], {"min": -0.5, "max": 2.0}),
    ("relu6 at 0 and 6", "relu6", [f(0, 6, 3, -1, 7, NAN)], {}),
    ("leaky_relu at 0", "leaky_relu", [f(0, -1, 2, NAN)], {"slope": 0.1}),
    ("elu at 0 and NaN", "elu", [f(0, -1, 2, NAN, -INF)], {"alpha": 1.0}),
    ("softplus at its threshold", "softplus", [f(20, 10, 10.5, 0, -INF, INF)], {"beta": 2.0, "threshold": 20.0}),
    ("hardswish at -3 and 3", "hardswish", [f(-3, 3, 0, -4, 4, NAN)], {}),
    ("smooth_l1 at |d| = beta", "smooth_l1_loss", [f(1.5, -0.5, 1, 0), const([4], 0.5, 0.5, 1, 0)], {"beta": 1.0}),
    ("huber at |d| = delta", "huber_loss", [f(1.5, -0.5, 1, 0), const([4], 0.5, 0.5, 1, 0)], {"delta": 1.0}),
    ("l1 at a zero difference", "l1_loss", [f(1, 2, 3), const([3], 1, 0, 4)], {}),
    ("mse with NaN", "mse_loss", [f(1, NAN), const([2], 0, 0)], {}),
    # NaN and infinities
    ("exp at -inf and inf", "exp", [f(-INF, INF, NAN)], {}),
    ("tanh at the infinities", "tanh", [f(-INF, INF, NAN)], {}),
    ("sigmoid at the infinities", "sigmoid", [f(-INF, INF, NAN)], {}),
    ("silu at the infinities", "silu", [f(-INF, INF, NAN)], {}),
    ("gelu (erf) at the infinities", "gelu", [f(-INF, INF, NAN, 0)], {"approximate": "none"}),
    ("gelu (tanh) at the infinities", "gelu", [f(-INF, INF, NAN, 0)], {"approximate": "tanh"}),
    ("atan2 at (0, 0)", "atan2", [f(0, 0, 1, -0.0), f(0, -0.0, 0, 0)], {}),
    ("hypot at (0, 0)", "hypot", [f(0, 3), f(0, 4)], {}),
    ("lerp (scalar weight), both inputs", "lerp_scalar", [f(1, 2, NAN), f(3, -1, 0)], {"weight": 0.3}),
    ("logsumexp of -inf", "logsumexp", [shaped([2, 2], -INF, -INF, 0, -INF)], {"dim": 1}),
    ("logsumexp with inf", "logsumexp", [shaped([2, 2], INF, 1, INF, INF)], {"dim": 1}),
    ("softmax with -inf", "softmax", [shaped([2, 3], -INF, 0, 1, -INF, -INF, 2)], {"dim": 1}),
    ("log_softmax with -inf", "log_softmax", [shaped([2, 3], -INF, 0, 1, -INF, -INF, 2)], {"dim": 1}),
    ("std of a constant", "std", [f(2, 2, 2)], {}),
    ("var of one element", "var", [f(2)], {}),
    ("where with NaN in the other branch", "where",
     [f(1, NAN, 3), f(NAN, 2, INF), const([3], 1, 0, 1)], {}),
    ("masked_fill", "masked_fill", [f(1, NAN, 3), const([3], 0, 1, 1)], {"value": 5.0}),
    ("clamp with min > max", "clamp", [f(0, 1.5, 3)], {"min": 2.0, "max": 1.0}),
    ("norm 0", "norm", [f(0, 1, -2)], {"p": 0.0}),
    ("smooth_l1 with beta 0", "smooth_l1_loss", [f(1, 0, -1), const([3], 1, 1, 1)], {"beta": 0.0}),
    ("log1p at -1", "log1p", [f(-1, -2, 0)], {}),
    ("div by zero", "div", [f(1, 0, -1), f(0, 0, -0.0)], {}),
    ("prelu at 0", "prelu", [f(0, -1, 2, NAN), f(0.25)], {}),
    ("binary_cross_entropy at 0 and 1", "binary_cross_entropy", [f(0, 1, 0.5, 0, 1), const([5], 0, 1, 1, 1, 0)], {}),
    ("binary_cross_entropy_with_logits at the infinities", "binary_cross_entropy_with_logits",
     [f(-INF, INF, 0, 100), const([4], 0, 1, 1, 0)], {}),
    ("kl_div at target 0", "kl_div", [f(-1, -2, -0.5), f(0, 0.5, 1)], {}),
    ("layer_norm of a constant row", "layer_norm", [shaped([2, 3], 2, 2, 2, 1, 2, 3)], {}),
    ("scatter_add: duplicate indices", "scatter_add",
     [f(1, 2, 3), f(10, 20, 30, 40), index([4], 0, 0, 2, 0)], {"dim": 0}),
    # duplicate indices, padding_idx, ignore_index
    ("gather: duplicate indices", "gather", [shaped([2, 3], 1, 2, 3, 4, 5, 6), index([2, 3], 0, 0, 2, 1, 1, 1)], {"dim": 1}),
    ("index_select: duplicate indices", "index_select", [shaped([3, 2], 1, 2, 3, 4, 5, 6), index([4], 2, 0, 2, 2)], {"dim": 0}),
    ("embedding: duplicates and padding_idx", "embedding",
     [shaped([3, 2], 1, 2, 3, 4, 5, 6), index([5], 0, 1, 0, 2, 1)], {"padding_idx": 0}),
    ("embedding: no padding_idx", "embedding",
     [shaped([3, 2], 1, 2, 3, 4, 5, 6), index([4], 0, 1, 0, 1)], {"padding_idx": -1}),
    ("index_put accumulate: duplicates", "index_put",
     [f(1, 2, 3, 4), f(10, 20, 30), index([3], 1, 1, 3)], {"accumulate": 1}),
    ("index_put: distinct indices", "index_put",
     [f(1, 2, 3, 4), f(10, 20), index([2], 0, 2)], {"accumulate": 0}),
    ("nll_loss: ignore_index (mean)", "nll_loss",
     [shaped([3, 2], -1, -2, -0.5, -1, -3, -0.1), index([3], 1, -100, 0)], {"ignore_index": -100, "reduction": "mean"}),
    ("nll_loss: ignore_index as a class (sum)", "nll_loss",
     [shaped([3, 2], -1, -2, -0.5, -1, -3, -0.1), index([3], 1, 0, 0)], {"ignore_index": 0, "reduction": "sum"}),
    ("nll_loss: every target ignored (mean)", "nll_loss",
     [shaped([2, 2], -1, -2, -0.5, -1), index([2], -100, -100)], {"ignore_index": -100, "reduction": "mean"}),
    ("cross_entropy: ignore_index", "cross_entropy",
     [shaped([3, 3], 1, 2, 3, 0, 0, 0, -1, 5, 2), index([3], 2, -100, 1)], {"ignore_index": -100, "reduction": "mean"}),
    ("cross_entropy: ignore_index with label smoothing", "cross_entropy",
     [shaped([3, 3], 1, 2, 3, 0, 0, 0, -1, 5, 2), index([3], 2, -100, 1)],
     {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.2}),
    ("cross_entropy: -inf logits", "cross_entropy",
     [shaped([2, 3], -INF, 0, 1, 2, -INF, 0), index([2], 1, 0)], {"ignore_index": -100, "reduction": "sum"}),
]


def encode(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor_json(t):
    t = t.detach()
    kind = "int64" if t.dtype == torch.int64 else "float32"
    return {"shape": list(t.shape), "dtype": kind,
            "values": [encode(float(v)) if kind == "float32" else int(v) for v in t.flatten().tolist()]}


def grad_json(g):
    return None if g is None else tensor_json(g)


def main(path):
    gen = torch.Generator().manual_seed(0)
    out_cases = []
    for name, op, inputs, params in CASES:
        xs = []
        for spec in inputs:
            shape = spec.get("shape", [len(spec["values"])])
            dtype = torch.int64 if spec["dtype"] == "int64" else torch.float32
            x = torch.tensor(spec["values"], dtype=dtype).reshape(shape)
            if spec["grad"]:
                x.requires_grad_(True)
            xs.append(x)
        y = OPS[op](xs, params)
        # g: values in [-2, 2] at steps of 1/8, never 0, so each entry of every gradient counts.
        g = (torch.randint(1, 17, y.shape, generator=gen).float() / 8.0) * \
            torch.where(torch.rand(y.shape, generator=gen) < 0.5, -1.0, 1.0)
        want = [x for x in xs if x.requires_grad]
        grads = torch.autograd.grad((y * g).sum(), want, allow_unused=True)
        it = iter(grads)
        out_cases.append({
            "name": name, "op": op,
            "params": {k: encode(v) if isinstance(v, float) else v for k, v in params.items()},
            "inputs": [dict(tensor_json(x), grad=bool(spec["grad"])) for x, spec in zip(xs, inputs)],
            "grad_output": tensor_json(g),
            "output": tensor_json(y),
            "grads": [grad_json(next(it)) if x.requires_grad else None for x in xs],
        })
    doc = {"generator": "scripts/gen_grad_edges.py", "torch": torch.__version__, "cases": out_cases}
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=None, separators=(",", ":"))
        fh.write("\n")
    print(f"{len(out_cases)} cases -> {path} (torch {torch.__version__})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "test/data/grad_edges.json")
