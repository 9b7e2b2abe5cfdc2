"""Writes the .pt2 programs tests/exported_test.cpp reads, and FlopCounterMode's counts of each.

Run in the Debian 13 root (PyTorch 2.6):  python3 tests/exported/make_programs.py OUTDIR
For each program NAME it writes OUTDIR/NAME.pt2 and OUTDIR/NAME.fcm.json: {"total": flops,
"modules": {dotted path: flops}, "params": n}, FlopCounterMode run over the loaded program's module,
each counted op added to every module of its node's nn_module_stack (as REFERENCE.md says it equals
the eager model's). The programs are exported under FakeTensorMode (no weights) unless said."""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=2), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        x = self.pool(self.features(x)).flatten(1)
        return self.head(x)


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Attention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.wk(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        rep = self.h // self.kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    def __init__(self, d, heads, kv_heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(d)
        self.attention = Attention(d, heads, kv_heads)
        self.ffn_norm = RMSNorm(d)
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        n = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


class Llama(nn.Module):
    def __init__(self, vocab=256, d=64, layers=2, heads=4, kv_heads=2, hidden=172):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block(d, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.output = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h))


class GPT2Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        a = self.ln_1(x)
        x = x + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab=300, d=64, layers=2, heads=4, ctx=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(GPT2Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device), diagonal=1)
        for block in self.h:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x))


class TiedGPT(GPT2):
    """GPT2 with its head tied to the token embedding (GPT-2's and nanoGPT's weight tying)."""

    def __init__(self):
        super().__init__()
        self.lm_head.weight = self.wte.weight


class Branchy(nn.Module):
    """A data-dependent branch: torch.cond, a higher-order op whose branches are subgraphs."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda t: self.a(t), lambda t: self.b(t), (x,))
        return self.head(y)


def fcm_counts(ep):
    """FlopCounterMode over the program's graph, per nn_module_stack module."""
    gm = ep.module()
    total = 0
    modules = {}
    placeholders = {}
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    env = {}
    with fake:
        for node in ep.graph.nodes:
            if node.op == "placeholder":
                val = node.meta["val"]
                env[node.name] = val
                continue
            if node.op == "output":
                continue
            if node.op != "call_function":
                raise RuntimeError(f"unexpected node {node.op}")
            args = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n.name])
            with FlopCounterMode(display=False) as m:
                out = node.target(*args, **kwargs)
            env[node.name] = out
            n = m.get_total_flops()
            if node.target == torch.ops.aten.scaled_dot_product_attention.default:
                # FlopCounterMode has no formula for the CPU's flash kernel SDPA runs (it scores
                # it 0): its own SDPA formula, on the node's shapes.
                assert n == 0
                q, k, v = args[:3]
                n = sdpa_flop_count(q.shape, k.shape, v.shape)
            total += n
            stack = node.meta.get("nn_module_stack", {})
            for _, (path, _) in stack.items():
                name = path.replace("L['self'].", "").replace("L__self___", "")
                modules[name] = modules.get(name, 0) + n
    return total, modules


def paths_of(ep):
    """nn_module_stack's paths as dotted names (the graph's own: 'layers.0.attention')."""
    out = set()
    for node in ep.graph.nodes:
        for _, (path, _) in node.meta.get("nn_module_stack", {}).items():
            out.add(path)
    return out


def export(name, make, inputs, outdir, fake=True, decompose=False, dynamic_shapes=None,
           count=True):
    if fake:
        with FakeTensorMode(allow_non_fake_inputs=False) as mode:
            model = make().eval()
            args = tuple(mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in inputs())
            ep = torch.export.export(model, args, strict=False, dynamic_shapes=dynamic_shapes)
    else:
        torch.manual_seed(0)
        model = make().eval()
        ep = torch.export.export(model, inputs(), dynamic_shapes=dynamic_shapes)
    if decompose:
        ep = ep.run_decompositions()
    path = os.path.join(outdir, name + ".pt2")
    torch.export.save(ep, path)
    ep = torch.export.load(path)
    if not count:  # FlopCounterMode cannot count symbolic sizes
        print(name, os.path.getsize(path))
        return
    total, modules = fcm_counts(ep)
    # Each tensor once: a tied weight is one tensor under two names (the loaded state dict keeps
    # the tie, as torch.save's memo wrote it).
    unique = {id(v): v for k, v in ep.state_dict.items() if k in set(ep.graph_signature.parameters)}
    params = sum(math.prod(v.shape) for v in unique.values())
    with open(os.path.join(outdir, name + ".fcm.json"), "w") as f:
        json.dump({"total": total, "modules": modules, "params": params}, f, indent=1, sort_keys=True)
    print(name, total, params, os.path.getsize(path))


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    export("mlp", MLP, lambda: (torch.randn(8, 64),), outdir, fake=False)
    export("cnn", SmallCNN, lambda: (torch.randn(2, 3, 16, 16),), outdir)
    export("cnn_core_aten", SmallCNN, lambda: (torch.randn(2, 3, 16, 16),), outdir, decompose=True)
    export("llama", Llama, lambda: (torch.randint(0, 256, (2, 16)),), outdir)
    export("gpt2", GPT2, lambda: (torch.randint(0, 300, (1, 32)),), outdir)
    export("tied", TiedGPT, lambda: (torch.randint(0, 300, (1, 32)),), outdir)
    export("cond", Branchy, lambda: (torch.randn(2, 16),), outdir, count=False)
    seq = torch.export.Dim("seq", min=2, max=64)
    export("llama_dynamic", Llama, lambda: (torch.randint(0, 256, (2, 16)),), outdir,
           dynamic_shapes=({1: seq},), count=False)  # counted as llama at seq 16


if __name__ == "__main__":
    main()
