#!/usr/bin/env python3
"""Writes test/data/transformer_refs.json: PyTorch's outputs and gradients of nn.MultiheadAttention,
nn.TransformerEncoderLayer, nn.TransformerDecoderLayer and nn.TransformerEncoder on small inputs
with masks, for test/test_transformer.cpp, which loads the same state dict into xten's modules
(the parameter names are PyTorch's) and compares (docs/nn.md, "Transformers").

Run with PyTorch (the device host has it):
    python3 scripts/gen_transformer_refs.py test/data/transformer_refs.json

Each case stores the module's state dict, its inputs (float32; masks as bool or float), the output,
the attention weights where asked, and the gradients of sum(output * g) for a stored g with
respect to the first input and every parameter. Modules run in training mode with dropout 0
(PyTorch's inference fast path is a different kernel with the same values).
"""
import json
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)


def enc(t):
    t = t.detach()
    if t.dtype == torch.bool:
        return {"shape": list(t.shape), "dtype": "bool", "data": t.reshape(-1).int().tolist()}
    data = [x if x == x and abs(x) != float("inf") else str(x) for x in t.reshape(-1).double().tolist()]
    return {"shape": list(t.shape), "dtype": "float", "data": data}


def causal(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1)


def run(module, inputs, call):
    module.train()
    inputs = {k: (v.clone().requires_grad_(True) if k == "x" else v) for k, v in inputs.items()}
    out = call(module, inputs)
    weights = None
    if isinstance(out, tuple):
        out, weights = out
    g = torch.randn(out.shape)
    (out * g).sum().backward()
    case = {
        "state": {k: enc(v) for k, v in module.state_dict().items()},
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "g": enc(g),
        "output": enc(out),
        "grads": {"x": enc(inputs["x"].grad)},
    }
    for name, p in module.named_parameters():
        case["grads"][name] = enc(p.grad)
    if weights is not None:
        case["weights"] = enc(weights)
    return case


cases = {}
# Self-attention [L, N, E] with a boolean attn_mask (true: may not attend) and key padding.
kpm = torch.zeros(3, 5, dtype=torch.bool)
kpm[0, 4] = True
kpm[2, 1] = True
cases["mha_self"] = run(
    nn.MultiheadAttention(8, 2),
    {"x": torch.randn(5, 3, 8), "attn_mask": causal(5), "key_padding_mask": kpm},
    lambda m, i: m(i["x"], i["x"], i["x"], key_padding_mask=i["key_padding_mask"],
                   need_weights=True, attn_mask=i["attn_mask"]),
)
# Cross-attention, batch first, kdim/vdim, an additive mask, weights per head.
cases["mha_cross"] = run(
    nn.MultiheadAttention(8, 4, kdim=6, vdim=5, batch_first=True),
    {"x": torch.randn(2, 4, 8), "key": torch.randn(2, 7, 6), "value": torch.randn(2, 7, 5),
     "attn_mask": torch.randn(4, 7)},
    lambda m, i: m(i["x"], i["key"], i["value"], attn_mask=i["attn_mask"], need_weights=True,
                   average_attn_weights=False),
)
# Encoder layers: post-norm relu batch-first with a causal float mask and padding; pre-norm gelu.
cases["encoder_post_relu"] = run(
    nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
    {"x": torch.randn(2, 5, 8), "src_mask": nn.Transformer.generate_square_subsequent_mask(5),
     "src_key_padding_mask": torch.tensor([[False] * 4 + [True], [False] * 5])},
    lambda m, i: m(i["x"], src_mask=i["src_mask"], src_key_padding_mask=i["src_key_padding_mask"]),
)
cases["encoder_pre_gelu"] = run(
    nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True),
    {"x": torch.randn(5, 2, 8)},
    lambda m, i: m(i["x"]),
)
cases["decoder"] = run(
    nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
    {"x": torch.randn(2, 4, 8), "memory": torch.randn(2, 6, 8), "tgt_mask": causal(4),
     "memory_key_padding_mask": torch.tensor([[False] * 5 + [True], [False] * 6])},
    lambda m, i: m(i["x"], i["memory"], tgt_mask=i["tgt_mask"],
                   memory_key_padding_mask=i["memory_key_padding_mask"]),
)
cases["encoder_stack"] = run(
    nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                     norm_first=True),
                          2, norm=nn.LayerNorm(8), enable_nested_tensor=False),
    {"x": torch.randn(2, 5, 8)},
    lambda m, i: m(i["x"], is_causal=True, mask=nn.Transformer.generate_square_subsequent_mask(5)),
)

# For docs/attention.md: what PyTorch gives a query row whose keys are all masked.
q = torch.randn(1, 1, 2, 4)
m = torch.tensor([[True, True, True], [False, False, False]])
print("fully masked row:", torch.nn.functional.scaled_dot_product_attention(
    q, torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4), attn_mask=m)[0, 0, 1].tolist())

with open(sys.argv[1], "w") as f:
    json.dump(cases, f)
print("wrote", sys.argv[1], "cases:", list(cases))
