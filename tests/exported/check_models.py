#!/usr/bin/env python3
"""`flopsprof MODEL.pt2` against FlopCounterMode and against the TorchScript path (ctest exported_models).

  tests/exported/check_models.py FLOPSPROF_BIN WORKDIR [MODEL...]

For each model: exports it with torch.export (built under FakeTensorMode: no weights, as a user exports
a 7 B LLM on a laptop) and saves the .pt2; counts the saved program with FlopCounterMode per
nn_module_stack module (make_programs.fcm_counts); traces a real instance to TorchScript and runs
`flopsprof MODEL.pt --input ...`; runs `flopsprof MODEL.pt2 --json`. Checks, per module: 2 x MACs of the
.pt2 == FCM's FLOPs; MACs and parameters of the .pt2 == those of the TorchScript run; the root's params ==
the model's. `llama7b` also checks the closed form of a Llama-2-7B-shaped model's FLOPs (2 x the matrices' params
(neither the embedding nor the norms) per token + the attention's 4 x layers x T^2 x d). Exits 77 (ctest: skipped) without PyTorch >= 2.6's
torch.export and torchvision."""
import json
import os
import subprocess
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision.models as tvm
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode  # noqa: F401 (make_programs uses it)
    torch.export.save  # noqa: B018
except Exception as e:  # noqa: BLE001 - any import problem means: cannot run here
    print(f"SKIP: needs python3 with torch >= 2.6 (torch.export) and torchvision: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_programs import GPT2, Llama, TiedGPT, fcm_counts  # noqa: E402

torch.set_num_threads(2)


class BertLayer(nn.Module):
    """BERT's layer in plain torch (HF's structure): self-attention by matmuls, GELU MLP."""

    def __init__(self, d, heads, hidden):
        super().__init__()
        self.h = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d)
        self.intermediate = nn.Linear(d, hidden)
        self.output = nn.Linear(hidden, d)
        self.out_norm = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q = self.query(x).view(b, t, self.h, -1).transpose(1, 2)
        k = self.key(x).view(b, t, self.h, -1).transpose(1, 2)
        v = self.value(x).view(b, t, self.h, -1).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-1, -2) / (d // self.h) ** 0.5, dim=-1)
        a = (p @ v).transpose(1, 2).reshape(b, t, d)
        x = self.attn_norm(x + self.attn_out(a))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, vocab=1000, d=128, layers=2, heads=4, hidden=512, ctx=64):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d)
        self.position_embeddings = nn.Embedding(ctx, d)
        self.norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(BertLayer(d, heads, hidden) for _ in range(layers))
        self.pooler = nn.Linear(d, d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.norm(self.word_embeddings(ids) + self.position_embeddings(pos))
        for layer in self.layers:
            x = layer(x)
        return torch.tanh(self.pooler(x[:, 0]))


class FcnOut(nn.Module):
    """torchvision's FCN returns a dict; the command's TorchScript path takes the tensor."""

    def __init__(self):
        super().__init__()
        self.fcn = tvm.segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)

    def forward(self, x):
        return self.fcn(x)["out"]


IMG = ((1, 3, 64, 64), torch.float32)
MODELS = {  # name: (constructor, input (shape, dtype))
    "resnet50": (lambda: tvm.resnet50(), IMG),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(), IMG),
    "vit_b_16": (lambda: tvm.vit_b_16(image_size=64), IMG),
    "fcn_resnet50": (FcnOut, IMG),
    "llama": (lambda: Llama(vocab=1000, d=128, layers=2, heads=8, kv_heads=2, hidden=344), ((2, 32), torch.int64)),
    "gpt2": (lambda: GPT2(vocab=1000, d=128, layers=2, heads=4, ctx=64), ((1, 64), torch.int64)),
    "bert": (lambda: Bert(), ((2, 64), torch.int64)),
    "gpt2_tied": (lambda: TiedGPT(), ((1, 32), torch.int64)),  # lm_head.weight = wte.weight
}
# Llama-2-7B's shape (d 4096, 32 layers, 32 heads, SwiGLU 11008, vocab 32000) at 128 tokens.
LLAMA7B = dict(vocab=32000, d=4096, layers=32, heads=32, kv_heads=32, hidden=11008)


def example(spec, fake_mode=None):
    shape, dtype = spec
    t = torch.randn(shape) if dtype.is_floating_point else torch.randint(0, 2, shape, dtype=dtype)
    return fake_mode.from_tensor(t) if fake_mode is not None else t


def export_fake(ctor, spec, path):
    with FakeTensorMode() as mode:
        model = ctor().eval()
        ep = torch.export.export(model, (example(spec, mode),), strict=False)
    torch.export.save(ep, path)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
    return r


def modules_of(path):
    with open(path) as f:
        j = json.load(f)
    return j, {m["name"]: m for m in j["modules"]}


def input_arg(spec):
    shape, dtype = spec
    arg = "x".join(str(s) for s in shape)
    return arg if dtype == torch.float32 else arg + ":" + str(dtype).replace("torch.", "")


def check(name, binary, workdir):
    ctor, spec = MODELS[name]
    problems = []
    pt2 = os.path.join(workdir, name + ".pt2")
    t0 = time.time()
    export_fake(ctor, spec, pt2)
    total, per_module = fcm_counts(torch.export.load(pt2))
    run([binary, pt2, "--quiet", "--json", pt2 + ".json"])
    j2, m2 = modules_of(pt2 + ".json")
    if 2 * j2["summary"]["fwd_macs"] != total:
        problems.append(f"total: 2 x MACs {2 * j2['summary']['fwd_macs']} != FCM {total}")
    for path, flops in per_module.items():
        if path not in m2:
            problems.append(f"{path}: in FCM's count, not in the profile")
        elif 2 * m2[path]["macs"] != flops:
            problems.append(f"{path}: 2 x MACs {2 * m2[path]['macs']} != FCM {flops}")
    # The TorchScript path on a real instance of the same model.
    torch.manual_seed(0)
    model = ctor().eval()
    x = example(spec)
    pt = os.path.join(workdir, name + ".pt")
    torch.jit.save(torch.jit.trace(model, (x,), check_trace=False, strict=False), pt)
    params = sum(p.numel() for p in model.parameters())
    if j2["summary"]["params"] != params:
        problems.append(f"params: {j2['summary']['params']} != the model's {params}")
    run([binary, pt, "--input", input_arg(spec), "--int-max", "2", "--no-roofline", "--quiet",
         "--json", pt + ".json"])
    _, m1 = modules_of(pt + ".json")
    for path, m in m2.items():
        ts = m1.get(path)
        if ts is None:
            problems.append(f"{path}: in the .pt2's tree, not in the TorchScript model's")
            continue
        for key in ("macs", "params"):
            if m[key] != ts[key]:
                problems.append(f"{path}: {key} {m[key]} (.pt2) != {ts[key]} (TorchScript run)")
    for path, ts in m1.items():
        if path not in m2 and ts["macs"] != 0:
            problems.append(f"{path}: {ts['macs']} MACs in the TorchScript run, absent from the .pt2's tree")
    os.remove(pt)
    print(f"{name}: {len(m2)} modules, 2 x MACs {2 * j2['summary']['fwd_macs']}, FCM {total}, "
          f"{time.time() - t0:.1f} s: {'ok' if not problems else 'FAILED'}")
    return problems


def check_llama7b(binary, workdir):
    pt2 = os.path.join(workdir, "llama7b.pt2")
    tokens = 128
    export_fake(lambda: Llama(**LLAMA7B), ((1, tokens), torch.int64), pt2)
    t0 = time.time()
    run([binary, pt2, "--quiet", "--json", pt2 + ".json"])
    took = time.time() - t0
    j, m = modules_of(pt2 + ".json")
    params = j["summary"]["params"]
    embedding = m["tok_embeddings"]["params"]
    norms = sum(x["params"] for x in j["modules"] if x["type"] == "RMSNorm")  # no matmul: 0 MACs
    d, layers = LLAMA7B["d"], LLAMA7B["layers"]
    closed = 2 * tokens * (params - embedding - norms) + 4 * layers * tokens ** 2 * d
    flops = 2 * j["summary"]["fwd_macs"]
    print(f"llama7b: {params} params, 2 x MACs {flops} = {flops / tokens:.4g} per token, closed form {closed}, "
          f"profiled in {took:.1f} s: {'ok' if flops == closed else 'FAILED'}")
    return [] if flops == closed else [f"llama7b: 2 x MACs {flops} != closed form {closed}"]


def main():
    binary, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    names = sys.argv[3:] or list(MODELS) + ["llama7b"]
    problems = []
    for name in names:
        problems += [f"{name}: {p}" for p in (check_llama7b(binary, workdir) if name == "llama7b"
                                                 else check(name, binary, workdir))]
    for p in problems:
        print("FAIL", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
