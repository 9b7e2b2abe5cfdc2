#!/usr/bin/env python3
# FlopCounterMode's counts (torch.utils.flop_counter, PyTorch 2.x) for the attention shapes that
# tests/attention_test.cpp profiles; the numbers written in that test come from this script, run in
# the Debian 13 root: scripts/trixie_root.sh --bind "$PWD:/src" python3 /src/tests/fcm_attention.py
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

aten = torch.ops.aten


def fcm(fn):
    m = FlopCounterMode(display=False)
    with m:
        fn()
    return m.get_total_flops()


def qkv(b, h, l, s, e, ev, device="cpu", grad=False):
    torch.manual_seed(0)
    return (torch.randn(b, h, l, e, device=device, requires_grad=grad),
            torch.randn(b, h, s, e, device=device, requires_grad=grad),
            torch.randn(b, h, s, ev, device=device, requires_grad=grad))


print("torch", torch.__version__)
# SDPA q[2,3,5,8] k[2,3,7,8] v[2,3,7,8] (the CPU flash kernel needs E == Ev)
shape = (2, 3, 5, 7, 8, 8)
for causal in (False, True):
    q, k, v = qkv(*shape, device="meta")
    # the CUDA kernels, by FCM's formulas, on meta tensors
    for name, op in (("flash", aten._scaled_dot_product_flash_attention),
                     ("efficient", aten._scaled_dot_product_efficient_attention)):
        if name == "flash":
            f = fcm(lambda: op(q, k, v, 0.0, causal))
        else:
            f = fcm(lambda: op(q, k, v, None, False, 0.0, causal))
        print(f"{name} fwd causal={causal}: {f}")
    # the CPU kernel: FCM scores it 0
    q, k, v = qkv(*shape)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        print(f"cpu flash fwd causal={causal}: {fcm(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))}")
    with sdpa_kernel(SDPBackend.MATH):
        print(f"cpu math fwd causal={causal}: {fcm(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))}")

# backward by FCM's formula for the fused kernels: grad_out, q, k, v, out, logsumexp, ...
q, k, v = qkv(*shape, device="meta")
g = torch.randn(2, 3, 5, 8, device="meta")
lse = torch.empty(2, 3, 5, device="meta")
f = fcm(lambda: aten._scaled_dot_product_flash_attention_backward(
    g, q, k, v, g, lse, None, None, 5, 7, 0.0, False, torch.empty((), dtype=torch.int64, device="meta"),
    torch.empty((), dtype=torch.int64, device="meta")))
print(f"flash bwd: {f}")
f = fcm(lambda: aten._scaled_dot_product_efficient_attention_backward(
    g, q, k, v, None, g, lse, torch.empty(2, dtype=torch.int64, device="meta"),
    torch.empty(2, dtype=torch.int64, device="meta"), 0.0, [False, False, False, False]))
print(f"efficient bwd: {f}")

# CPU training step through the CPU flash kernel: forward and backward (FCM: 0 and 0)
q, k, v = qkv(*shape, grad=True)
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    print(f"cpu flash fwd+bwd: {fcm(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())}")
with sdpa_kernel(SDPBackend.MATH):
    print(f"cpu math fwd+bwd: {fcm(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())}")

# v[2,3,7,4] (Ev != E): the CPU runs the math backend (its bmm's), forward and backward
q, k, v = qkv(2, 3, 5, 7, 8, 4, grad=True)
print(f"cpu Ev=4 fwd: {fcm(lambda: F.scaled_dot_product_attention(q, k, v))}")
print(f"cpu Ev=4 fwd+bwd: {fcm(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())}")

# MultiheadAttention (E = 16, 4 heads) on x[L=5, N=2, E=16], self-attention, training mode, weights
# returned (the C++ module's only path): forward, then forward + backward
torch.manual_seed(0)
mha = torch.nn.MultiheadAttention(16, 4)
x = torch.randn(5, 2, 16)
print(f"mha fwd: {fcm(lambda: mha(x, x, x, need_weights=True))}")
x.requires_grad_(False)
print(f"mha fwd+bwd: {fcm(lambda: mha(x, x, x, need_weights=True)[0].sum().backward())}")
print(f"mha fwd need_weights=False (SDPA): {fcm(lambda: mha(x, x, x, need_weights=False))}")
