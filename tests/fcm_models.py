#!/usr/bin/env python3
# The `flopsprof` command against PyTorch's FlopCounterMode on real models (ctest fcm_models).
#   tests/fcm_models.py FLOPSPROF_BIN WORKDIR [MODEL...]
# For each model: builds it with random weights (torchvision, weights=None: nothing is downloaded),
# saves it as TorchScript in WORKDIR, counts it with FlopCounterMode (total and per module), runs
# `flopsprof MODEL --json` and compares: 2 x MACs == FCM's FLOPs, in total and per module
# (inclusive), and parameters per module == named_modules(). Exits 77 (ctest: skipped) when
# torch, torchvision or FlopCounterMode is missing (Debian 12's python3 has torch 1.13, no FCM).
#
# Where FlopCounterMode is blind (measured on 2.6 CPU), its run is set up so that it sees the work:
# the MHA/encoder fast path off (it scores _native_multi_head_attention 0), the math SDPA backend
# (it has no formula for _scaled_dot_product_flash_attention_for_cpu), oneDNN off (it scores
# mkldnn_rnn_layer 0). flopsprof runs the saved model as LibTorch does by default.
#
# Two more checks (by name, like the models; run with them by default): `inputs_file` feeds a model
# its argument from Python torch.save files (a tensor, a tuple, a list: the counts equal --input's;
# a dict and the legacy format are refused); `lstm_backward` profiles a scripted LSTM training step
# (--backward: oneDNN's mkldnn_rnn_layer and mkldnn_rnn_layer_backward) against FCM's forward and
# backward FLOPs of the unfused LSTM.
import json
import os
import subprocess
import sys
import time

try:
    import torch
    import torchvision.models as tvm
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode
except Exception as e:  # noqa: BLE001 - any import problem means: cannot run here
    print(f"SKIP: needs python3 with torch >= 2.1 (FlopCounterMode, torch.nn.attention) and "
          f"torchvision: {e}")
    sys.exit(77)

torch.manual_seed(0)
torch.set_num_threads(2)
# FLOPSPROF_TEST_DEVICE=cuda (scripts/gpu_check.sh, on a GPU machine): the models, their inputs and
# FCM's run on the GPU, and `flopsprof --device cuda`; FCM's run then also has cuDNN off (it scores
# _cudnn_rnn 0 as it does mkldnn_rnn_layer).
DEVICE = os.environ.get("FLOPSPROF_TEST_DEVICE", "cpu")
DEVICE_ARGS = ["--device", DEVICE] if DEVICE != "cpu" else []


class TinyTransformer(torch.nn.Module):
    """A small encoder-only language model: embedding, 2 TransformerEncoderLayers, a head."""

    def __init__(self, vocab=100, d=64, heads=4, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=128, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


class TinyLSTM(torch.nn.Module):
    """Embedding, a 2-layer LSTM, a classifier on the last step."""

    def __init__(self, vocab=100, d=32, hidden=48):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, hidden, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(hidden, 10)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.fc(out[:, -1])


IMG = [((1, 3, 64, 64), torch.float32)]
TOK = [((1, 16), torch.int64)]
# name: (constructor, inputs, how it is saved)
MODELS = {
    "resnet50": (lambda: tvm.resnet50(), IMG, "trace"),
    "resnet50_script": (lambda: tvm.resnet50(), IMG, "script"),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), IMG, "trace"),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), IMG, "trace"),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), IMG, "trace"),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), IMG, "trace"),
    "densenet121": (lambda: tvm.densenet121(), IMG, "trace"),
    "swin_t": (lambda: tvm.swin_t(), IMG, "trace"),
    "vit_b_16": (lambda: tvm.vit_b_16(image_size=64), IMG, "trace"),
    "tiny_transformer": (lambda: TinyTransformer(), TOK, "trace"),
    # Scripted, the layer's fast path is a run-time branch that LibTorch takes under no_grad (in
    # TorchScript torch.backends.mha.get_fastpath_enabled() is always True): one
    # _transformer_encoder_layer_fwd per layer, the interpreter's evidence places it in the layer
    # itself. Its FLOPs are compared at the layer (FCM's run, fast path off, sees the unfused ops);
    # its submodules run no op of their own there.
    "tiny_transformer_script": (lambda: TinyTransformer(), TOK, "script"),
    "tiny_lstm": (lambda: TinyLSTM(), TOK, "trace"),
    "tiny_lstm_script": (lambda: TinyLSTM(), TOK, "script"),
}


def make_inputs(specs):
    out = []
    for shape, dtype in specs:
        if dtype.is_floating_point:
            out.append(torch.randn(shape, dtype=dtype, device=DEVICE))
        else:
            out.append(torch.randint(0, 2, shape, dtype=dtype, device=DEVICE))
    return out


def fcm_counts(model, inputs):
    """FCM's FLOPs per module (inclusive) with the blind spots avoided, and the called modules."""
    called = set()
    names = {m: n for n, m in model.named_modules()}
    hooks = [m.register_forward_pre_hook(lambda m, _a: called.add(names[m]))
             for m in model.modules()]
    counter = FlopCounterMode(display=False)
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), \
                torch.backends.mkldnn.flags(enabled=False), \
                torch.backends.cudnn.flags(enabled=DEVICE == "cpu"), counter:
            model(*inputs)
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
        for h in hooks:
            h.remove()
    root = type(model).__name__
    per_module = {}
    for key, ops in counter.get_flop_counts().items():
        if key == "Global":
            continue
        name = key[len(root) + 1:] if key.startswith(root + ".") else ("" if key == root else None)
        if name is None:
            continue
        per_module[name] = sum(ops.values())
    return counter.get_total_flops(), per_module, called


def save(model, inputs, how, path):
    # Traced as FCM's run sees it: the fast path is a run-time branch that tracing would bake in.
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        if how == "script":
            sm = torch.jit.script(model)
        else:
            sm = torch.jit.trace(model, tuple(inputs), check_trace=False)
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    torch.jit.save(sm, path)


def input_args(specs):
    args = []
    for shape, dtype in specs:
        arg = "x".join(str(s) for s in shape)
        if dtype != torch.float32:
            arg += ":" + str(dtype).replace("torch.", "")
        args += ["--input", arg]
    return args


def uncalled_expectation(name, called, per_module):
    """A module FCM never saw called: a container (ModuleList) holds the work of its topmost called
    descendants; a module whose parent runs its weights functionally (MultiheadAttention's
    out_proj) has none: the op is its caller's, for FCM as for the interpreter."""
    prefix = name + "." if name else ""
    tops = [c for c in called if c.startswith(prefix) and c != name]
    tops = [c for c in tops if not any(c.startswith(o + ".") for o in tops if o != c)]
    return sum(per_module.get(c, 0) for c in tops)


# Models whose modules of these types run as one fused op in LibTorch (see MODELS).
FUSED = {"tiny_transformer_script": ("TransformerEncoderLayer",)}


def check(name, binary, workdir):
    ctor, specs, how = MODELS[name]
    torch.manual_seed(0)
    model = ctor().eval().to(DEVICE)
    inputs = make_inputs(specs)
    path = os.path.join(workdir, name + ".pt")
    out_json = os.path.join(workdir, name + ".json")
    t0 = time.time()
    save(model, inputs, how, path)
    total, per_module, called = fcm_counts(model, inputs)
    t1 = time.time()
    proc = subprocess.run([binary, path, *input_args(specs), *DEVICE_ARGS, "--quiet",
                           "--json", out_json],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t2 = time.time()
    errors = []
    if proc.returncode != 0:
        return [f"flopsprof exited {proc.returncode}: {proc.stderr.strip()}"], t1 - t0, t2 - t1, 0, 0
    if proc.stderr.strip():
        errors.append("flopsprof warned: " + proc.stderr.strip())
    with open(out_json) as f:
        prof = json.load(f)
    ours = {m["name"]: m for m in prof["modules"]}
    params = {n: sum(p.numel() for p in m.parameters()) for n, m in model.named_modules()}
    if set(ours) != set(params):
        errors.append(f"module names differ: only ours {sorted(set(ours) - set(params))[:5]}, "
                      f"only named_modules() {sorted(set(params) - set(ours))[:5]}")
    our_total = 2 * prof["summary"]["macs"] if "macs" in prof["summary"] else 2 * ours[""]["macs"]
    if our_total != total:
        errors.append(f"total: 2 x MACs {our_total} != FCM {total}")
    fused = [n for n, m in ours.items() if m["type"] in FUSED.get(name, ())]
    for n, m in ours.items():
        if n in params and m["params"] != params[n]:
            errors.append(f"'{n}': params {m['params']} != named_modules() {params[n]}")
        if any(n.startswith(f + ".") for f in fused):
            if m["macs"] != 0:
                errors.append(f"'{n}' inside a fused layer has {m['macs']} MACs")
            continue
        want = per_module.get(n, 0) if n in called else uncalled_expectation(n, called, per_module)
        if 2 * m["macs"] != want:
            errors.append(f"'{n}' ({m['type']}): 2 x MACs {2 * m['macs']} != FCM {want}")
    return errors, t1 - t0, t2 - t1, our_total, total


def run_json(binary, path, args, out_json):
    """Runs flopsprof; returns (exit code, stderr, JSON or None)."""
    if os.path.exists(out_json):
        os.remove(out_json)
    proc = subprocess.run([binary, path, *args, *DEVICE_ARGS, "--quiet", "--json", out_json],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    prof = None
    if proc.returncode == 0:
        with open(out_json) as f:
            prof = json.load(f)
    return proc.returncode, proc.stderr.strip(), prof


def check_inputs_file(binary, workdir):
    """--inputs with files Python's torch.save wrote: the counts equal --input's, per module."""
    torch.manual_seed(0)
    model = TinyLSTM().eval().to(DEVICE)  # traced where it runs: tracing bakes in h0's device
    tokens = torch.randint(0, 100, (2, 16))  # saved on the CPU, as the command asks
    path = os.path.join(workdir, "inputs_file_lstm.pt")
    save(model, [tokens.to(DEVICE)], "trace", path)
    out_json = os.path.join(workdir, "inputs_file.json")
    errors = []
    code, err, want = run_json(binary, path, ["--input", "2x16:int64"], out_json)
    if code != 0:
        return [f"--input: flopsprof exited {code}: {err}"], 0, 0
    want_macs = {m["name"]: m["macs"] for m in want["modules"]}
    for form, value in (("tensor", tokens), ("tuple", (tokens,)), ("list", [tokens])):
        file = os.path.join(workdir, f"inputs_{form}.pt")
        torch.save(value, file)
        code, err, prof = run_json(binary, path, ["--inputs", file], out_json)
        if code != 0:
            errors.append(f"--inputs ({form}): flopsprof exited {code}: {err}")
            continue
        got = {m["name"]: m["macs"] for m in prof["modules"]}
        if got != want_macs:
            errors.append(f"--inputs ({form}): MACs per module {got} != --input's {want_macs}")
        if prof["summary"]["batch_size"] != 2:
            errors.append(f"--inputs ({form}): batch size {prof['summary']['batch_size']} != 2")
    refused = (("dict", {"tokens": tokens}, {}, "holds a dict"),
               ("legacy", tokens, {"_use_new_zipfile_serialization": False}, "legacy format"))
    for form, value, kwargs, message in refused:
        file = os.path.join(workdir, f"inputs_{form}.pt")
        torch.save(value, file, **kwargs)
        code, err, _ = run_json(binary, path, ["--inputs", file], out_json)
        if code != 2 or message not in err or 'torch.save' not in err or os.path.exists(out_json):
            errors.append(f"--inputs ({form}): exit {code}, want 2 with '{message}': {err}")
    print(f"    inputs_file: MACs per module as --input's: {want_macs}")
    return errors


class LSTMWithState(torch.nn.Module):
    """TinyLSTM with a learned initial state: h0 requires grad, so the unfused backward computes
    every gradient GEMM oneDNN's backward does (with h0 = zeros it skips the one for h0)."""

    def __init__(self, vocab=100, d=32, hidden=48, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, hidden, num_layers=layers, batch_first=True)
        self.h0 = torch.nn.Parameter(torch.randn(layers, 1, hidden))
        self.c0 = torch.nn.Parameter(torch.randn(layers, 1, hidden))
        self.fc = torch.nn.Linear(hidden, 10)

    def forward(self, tokens):
        b = tokens.shape[0]
        state = (self.h0.expand(-1, b, -1).contiguous(), self.c0.expand(-1, b, -1).contiguous())
        out, _ = self.lstm(self.embed(tokens), state)
        return self.fc(out[:, -1])


def fcm_training_step(model, inputs):
    """FCM's FLOPs of the forward and of the backward (loss = sum of the outputs, as --backward),
    oneDNN off: the unfused LSTM's mm/addmm and their backward."""
    with torch.backends.mkldnn.flags(enabled=False):
        with FlopCounterMode(display=False) as fwd:
            out = model(*inputs)
        loss = out.sum()
        with FlopCounterMode(display=False) as bwd:
            loss.backward()
    return fwd.get_total_flops(), bwd.get_total_flops()


def check_lstm_backward(binary, workdir):
    """A scripted LSTM training step: 2 x our forward MACs == FCM's forward FLOPs and 2 x our
    backward MACs (mkldnn_rnn_layer_backward: twice the forward GEMMs) == FCM's backward FLOPs."""
    errors = []
    shape = (2, 16)
    fwd = bwd = fcm_fwd = fcm_bwd = skipped = 0
    for name, ctor in (("lstm_state", LSTMWithState), ("lstm_zero_state", TinyLSTM)):
        torch.manual_seed(0)
        model = ctor().train()
        tokens = torch.randint(0, 2, shape)
        path = os.path.join(workdir, f"backward_{name}.pt")
        save(model, [tokens], "script", path)
        fcm_fwd, fcm_bwd = fcm_training_step(model, [tokens])
        code, err, prof = run_json(binary, path, ["--input", "2x16:int64", "--backward"],
                                   os.path.join(workdir, f"backward_{name}.json"))
        if code != 0:
            errors.append(f"{name}: flopsprof exited {code}: {err}")
            continue
        fwd, bwd = 2 * prof["summary"]["fwd_macs"], 2 * prof["summary"]["bwd_macs"]
        # oneDNN's backward computes the gradient for h0 too; the unfused one only when h0
        # requires grad: with h0 = zeros, FCM counts one mm grad[B,4H] x w_hh[4H,H] per layer less
        lstm = model.lstm
        skipped = 0 if name == "lstm_state" else \
            lstm.num_layers * 2 * shape[0] * 4 * lstm.hidden_size * lstm.hidden_size
        print(f"    {name}: forward 2 x MACs {fwd} FCM {fcm_fwd}; backward 2 x MACs {bwd} "
              f"FCM {fcm_bwd} (+ {skipped} for h0's gradient)")
        if fwd != fcm_fwd:
            errors.append(f"{name}: forward 2 x MACs {fwd} != FCM {fcm_fwd}")
        if bwd != fcm_bwd + skipped:
            errors.append(f"{name}: backward 2 x MACs {bwd} != FCM {fcm_bwd} + {skipped}")
    return errors


CHECKS = {"inputs_file": check_inputs_file, "lstm_backward": check_lstm_backward}


def main():
    if len(sys.argv) < 3:
        print(__doc__ or "usage: fcm_models.py FLOPSPROF_BIN WORKDIR [MODEL...]")
        return 2
    binary, workdir = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(MODELS) + list(CHECKS)
    os.makedirs(workdir, exist_ok=True)
    print(f"torch {torch.__version__}; {len(names)} models")
    failed = 0
    for name in names:
        if name in CHECKS:
            t0 = time.time()
            errors = CHECKS[name](binary, workdir)
            status = "ok" if not errors else "FAILED"
            print(f"{name}: {status} ({time.time() - t0:.1f} s)", flush=True)
        else:
            errors, t_py, t_fp, ours, fcm = check(name, binary, workdir)
            status = "ok" if not errors else "FAILED"
            print(f"{name}: {status}: 2 x MACs {ours} FCM {fcm} (python {t_py:.1f} s, "
                  f"flopsprof {t_fp:.1f} s)", flush=True)
        for e in errors[:20]:
            print("   ", e)
        if len(errors) > 20:
            print(f"    ... {len(errors) - 20} more")
        failed += bool(errors)
    print(f"{len(names) - failed}/{len(names)} models and checks match FlopCounterMode")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
