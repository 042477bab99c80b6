"""Per-op times of libtorch_gpt.cpp's training step through PyTorch's profiler, to set beside
bench_gpt's own table (XTEN_BENCH_PROFILE=1): the same model (4 pre-norm blocks, width 256, 4
heads, block 128, batch 32, 113 symbols), AdamW and clipping. Python eager adds its own
per-op time to the step, not to each op's self time. bench/README.md, "bench_gpt".
Usage: python3 bench/reference/torch_gpt_profile.py THREADS [ROWS]"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 30
torch.set_num_threads(threads)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.c_attn, self.attn_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.c_fc, self.c_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, 2)
        heads = lambda z: z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        a = x + self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return a + self.c_proj(F.gelu(self.c_fc(self.ln_2(a))))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, c):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, c), nn.Embedding(block, c)
        self.h = nn.ModuleList(Block(c, heads) for _ in range(layers))
        self.ln_f, self.lm_head = nn.LayerNorm(c), nn.Linear(c, vocab)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for m in self.h:
            x = m(x)
        return self.lm_head(self.ln_f(x))


gpt = GPT(113, 128, 4, 4, 256)
opt = torch.optim.AdamW(gpt.parameters(), 1e-3, betas=(0.9, 0.99), weight_decay=0.1, foreach=False)
x, y = torch.randint(113, (32, 128)), torch.randint(113, (32, 128))


def step():
    opt.zero_grad()
    F.cross_entropy(gpt(x).view(-1, 113), y.view(-1)).backward()
    torch.nn.utils.clip_grad_norm_(gpt.parameters(), 1.0)
    opt.step()


for _ in range(3):
    step()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
    for _ in range(3):
        step()
print(f"torch gpt train step profile, {threads} threads, 3 steps")
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=rows))
