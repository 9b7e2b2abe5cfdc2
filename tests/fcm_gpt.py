#!/usr/bin/env python3
# examples/models/gpt.h's GPT against PyTorch's FlopCounterMode, per module, for a prefill and one
# decode step with a KV cache (ctest fcm_gpt).
#   tests/fcm_gpt.py GPT_DECODE_BIN WORKDIR
# Runs `flopsprof_example_gpt_decode PROMPT 1 BATCH --json WORKDIR/gpt.json` (one profile, the two
# phases as regions "prefill" and "decode"), builds the same model here (same module names and
# ops: hand-written causal attention, K/V heads repeated by hand, LM head tied to the token
# embedding), counts each phase with FlopCounterMode and compares, module by module (inclusive):
# 2 x flopsprof's MACs in the region == FCM's FLOPs (FCM counts GEMMs only; the dense convention:
# hand-written attention computes the whole square). Parameters are compared too (the structures
# match). Exits 77 (ctest: skipped) when torch or FlopCounterMode is missing (Debian 12's python3).
import json
import math
import os
import subprocess
import sys

try:
    import torch
    from torch.utils.flop_counter import FlopCounterMode
except Exception as e:  # noqa: BLE001 - any import problem means: cannot run here
    print(f"SKIP: needs python3 with torch >= 2.1 (FlopCounterMode): {e}")
    sys.exit(77)

# examples/models/gpt.h's GptConfig defaults.
VOCAB, D, LAYERS, HEADS, KV_HEADS, MAX_CTX, MLP = 8192, 256, 4, 8, 2, 512, 1024
PROMPT, BATCH = 24, 2


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.h = D // HEADS
        self.q = torch.nn.Linear(D, D, bias=False)
        self.k = torch.nn.Linear(D, KV_HEADS * self.h, bias=False)
        self.v = torch.nn.Linear(D, KV_HEADS * self.h, bias=False)
        self.o = torch.nn.Linear(D, D, bias=False)

    def forward(self, x, cache, i):
        b, t, _ = x.shape
        qh = self.q(x).view(b, t, HEADS, self.h).transpose(1, 2)
        kh = self.k(x).view(b, t, KV_HEADS, self.h).transpose(1, 2)
        vh = self.v(x).view(b, t, KV_HEADS, self.h).transpose(1, 2)
        cache[i] = (kh, vh) if cache[i] is None else (torch.cat([cache[i][0], kh], 2),
                                                       torch.cat([cache[i][1], vh], 2))
        ck, cv = cache[i]
        s = ck.size(2)
        keys = ck.repeat_interleave(HEADS // KV_HEADS, 1)
        values = cv.repeat_interleave(HEADS // KV_HEADS, 1)
        scores = torch.matmul(qh, keys.transpose(-2, -1)) / math.sqrt(self.h)
        mask = torch.ones(t, s, dtype=torch.bool).triu(s - t + 1)
        scores = scores.masked_fill(mask, float("-inf"))
        out = torch.matmul(torch.softmax(scores, -1), values)
        return self.o(out.transpose(1, 2).reshape(b, t, HEADS * self.h))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D)
        self.attn = Attention()
        self.ln2 = torch.nn.LayerNorm(D)
        self.fc1 = torch.nn.Linear(D, MLP, bias=False)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(MLP, D, bias=False)

    def forward(self, x, cache, i):
        h = x + self.attn(self.ln1(x), cache, i)
        return h + self.fc2(self.act(self.fc1(self.ln2(h))))


class Gpt(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, D)
        self.wpe = torch.nn.Embedding(MAX_CTX, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D)

    def forward(self, ids, cache, past):
        t = ids.size(1)
        x = self.wte(ids) + self.wpe(torch.arange(past, past + t).unsqueeze(0))
        for i, blk in enumerate(self.blocks):
            x = blk(x, cache, i)
        return torch.nn.functional.linear(self.ln_f(x), self.wte.weight)


def fcm_per_module(model, fn):
    """FlopCounterMode's FLOPs per module (inclusive), keyed by flopsprof's dotted names."""
    with FlopCounterMode(model, display=False) as m:
        fn()
    out = {}
    root = type(model).__name__
    for key, ops in m.get_flop_counts().items():
        if key == "Global":
            continue
        name = key[len(root):].lstrip(".") if key.startswith(root) else key
        out[name] = sum(ops.values())
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__ or "usage: fcm_gpt.py GPT_DECODE_BIN WORKDIR")
        return 2
    binary, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "gpt.json")
    subprocess.run([binary, str(PROMPT), "1", str(BATCH), "--json", path], check=True,
                   stdout=subprocess.DEVNULL)
    with open(path) as f:
        prof = json.load(f)

    torch.manual_seed(0)
    model = Gpt().eval()
    n_params = sum(p.numel() for p in model.parameters())  # tied: wte once
    failures = []
    if prof["summary"]["params"] != n_params:
        failures.append(f"params: flopsprof {prof['summary']['params']} vs the Python model {n_params}")
    ids = torch.randint(0, VOCAB, (BATCH, PROMPT))
    cache = [None] * LAYERS
    with torch.no_grad():
        prefill = fcm_per_module(model, lambda: model(ids, cache, 0))
        token = torch.randint(0, VOCAB, (BATCH, 1))
        decode = fcm_per_module(model, lambda: model(token, cache, PROMPT))
    modules = {m["name"]: m for m in prof["modules"]}
    checked = 0
    for region, fcm in (("prefill", prefill), ("decode", decode)):
        for name, m in modules.items():
            r = m.get("regions", {}).get(region, {})
            if r.get("calls", 0) == 0 and name not in fcm:
                continue  # a container never called (the ModuleList): FCM has no entry for it
            ours = 2 * r.get("macs", -1)
            theirs = fcm.get(name, 0)
            if ours != theirs:
                failures.append(f"{region}: '{name}': flopsprof 2 x MACs {ours} vs FlopCounterMode {theirs}")
            checked += 1
        for name in fcm:
            if name not in modules:
                failures.append(f"{region}: FlopCounterMode has '{name}', flopsprof has no such module")
    total = {r: 2 * modules[""]["regions"][r]["macs"] for r in ("prefill", "decode")}
    print(f"fcm_gpt: {checked} module x region counts compared; prefill {total['prefill']} "
          f"(FCM {prefill.get('', 0)}), decode step {total['decode']} (FCM {decode.get('', 0)})")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
