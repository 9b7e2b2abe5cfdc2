// Fused attention formulas (LibTorch 2.x scaled_dot_product_attention and the kernels it runs).
// Convention, as PyTorch's FlopCounterMode (torch.utils.flop_counter) counts the fused kernels,
// with FLOPs = 2 * MACs + the softmax, as flopsprof counts an unfused softmax (numel of the
// scores):
//   forward:  Q K^T and P V:                      MACs = B*L*S*E + B*L*S*Ev
//   backward: recomputed Q K^T, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q:
//                                                 MACs = B*L*S*(3*E + 2*Ev)
// (B: batch and query heads; L, S: query and key lengths; E, Ev: head sizes of q/k and v). 2 * MACs
// equals FlopCounterMode's count; it ignores causal masks (the masked half is counted), and so do
// these formulas. FlopCounterMode scores the CPU kernels
// (_scaled_dot_product_flash_attention_for_cpu and its backward) 0; they are counted here as the
// CUDA kernels are.
// Bytes: q, k, v (and a mask) read once; the output [..., L, Ev] written, and the log-sum-exp
// [B, H, L] (fp32) where the kernel returns it for its backward; the math backend also its
// attention weights [..., L, S]. Backward: writes the gradients of q, k and v.
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

struct AttentionDims {
  uint64_t scores = 0;  // B*L*S
  uint64_t e = 0, ev = 0;
};

// q[..., L, E], k[..., S, E], v[..., S, Ev] (the scaled_dot_product_* ops: B, H, L, E), or with
// `heads_before_head_size` q[B, L, H, E] (the _flash/_efficient_attention_* kernels). nullopt for
// ranks it does not know, e.g. the 3-d packed inputs of nested (jagged) tensors.
std::optional<AttentionDims> attention_dims(const OpInputs& in, size_t first,
                                            bool heads_before_head_size) {
  IntSpan q = in.shape(first), k = in.shape(first + 1), v = in.shape(first + 2);
  AttentionDims d;
  uint64_t l = 0, s = 0, batch = 0;
  if (heads_before_head_size) {
    if (q.size() != 4 || k.size() != 4 || v.size() != 4) return std::nullopt;
    l = u(q[1]);
    s = u(k[1]);
    d.e = u(q[3]);
    d.ev = u(v[3]);
    batch = checked_mul(u(q[0]), u(q[2]));
  } else {
    if (q.size() < 2 || k.size() < 2 || v.size() < 2) return std::nullopt;
    l = u(q.back(1));
    s = u(k.back(1));
    d.e = u(q.back(0));
    d.ev = u(v.back(0));
    uint64_t le = checked_mul(l, d.e);
    batch = le == 0 ? 0 : numel_of(q) / le;
  }
  d.scores = checked_mul(checked_mul(batch, l), s);
  return d;
}

// Forward: MACs = B*L*S*(E + Ev); FLOPs = 2 * MACs + B*L*S (softmax).
std::optional<FlopCount> forward_count(const OpInputs& in, size_t first, bool bl_layout) {
  std::optional<AttentionDims> d = attention_dims(in, first, bl_layout);
  if (!d) return std::nullopt;
  return gemm_count(checked_mul(d->scores, checked_add(d->e, d->ev)), d->scores);
}

// Backward: MACs = B*L*S*(3*E + 2*Ev); FLOPs = 2 * MACs + B*L*S (softmax backward).
std::optional<FlopCount> backward_count(const OpInputs& in, bool bl_layout) {
  std::optional<AttentionDims> d = attention_dims(in, 1, bl_layout);  // after grad_out
  if (!d) return std::nullopt;
  uint64_t per_score = checked_add(checked_mul(3, d->e), checked_mul(2, d->ev));
  return gemm_count(checked_mul(d->scores, per_score), d->scores);
}

// sdpa(query[B, H, L, E], key[B, H, S, E], value[B, H, S, Ev], ...)
std::optional<FlopCount> sdpa(const OpInputs& in) { return forward_count(in, 0, false); }
// _flash_attention_forward / _efficient_attention_forward(query[B, L, H, E], key, value, ...)
std::optional<FlopCount> sdpa_kernel(const OpInputs& in) { return forward_count(in, 0, true); }
// *_backward(grad_out, query[B, H, L, E], key, value, ...)
std::optional<FlopCount> sdpa_backward(const OpInputs& in) { return backward_count(in, false); }
// _flash_attention_backward / _efficient_attention_backward(grad_out, query[B, L, H, E], ...)
std::optional<FlopCount> sdpa_kernel_backward(const OpInputs& in) {
  return backward_count(in, true);
}

// ---- Bytes ----

// Forward: `out` = B*L*Ev elements of q's dtype; `lse`: B*L fp32 more; `weights`: B*L*S more.
BytesFn attention_forward_bytes(bool bl_layout, bool lse, bool weights) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    IntSpan q = in.shape(0), k = in.shape(1), v = in.shape(2);
    if (q.size() < 2 || k.size() < 2 || v.empty() || q.back(0) == 0) return std::nullopt;
    const uint64_t rows = count_of(q) / u(q.back(0));  // B*(H)*L
    const uint64_t s = bl_layout ? (k.size() == 4 ? u(k[1]) : 0) : u(k.back(1));
    const uint64_t es = element_bytes(in[0].dtype);
    ByteCount b{input_bytes(in), sat_mul(sat_mul(rows, u(v.back(0))), es)};
    if (lse) b.written = sat_add(b.written, sat_mul(rows, 4));
    if (weights) b.written = sat_add(b.written, sat_mul(sat_mul(rows, s), es));
    return b;
  };
}

// Backward(grad_out, q, k, v, ...): writes grad q, k, v (their shapes)
std::optional<ByteCount> attention_backward_bytes(const OpInputs& in) {
  if (!in.is_tensor(1) || !in.is_tensor(2) || !in.is_tensor(3)) return std::nullopt;
  uint64_t written = 0;
  for (size_t i = 1; i <= 3; ++i) {
    written = sat_add(written, sat_mul(count_of(in.shape(i)), element_bytes(in[i].dtype)));
  }
  return ByteCount{input_bytes(in), written};
}

}  // namespace

void register_attention_bytes() {
  add_builtin_bytes("aten::scaled_dot_product_attention",
                    attention_forward_bytes(false, false, false));
  add_builtin_bytes("aten::_scaled_dot_product_attention_math",
                    attention_forward_bytes(false, false, true));
  for (const char* op : {"aten::_scaled_dot_product_flash_attention",
                         "aten::_scaled_dot_product_flash_attention_for_cpu",
                         "aten::_scaled_dot_product_efficient_attention",
                         "aten::_scaled_dot_product_cudnn_attention"}) {
    add_builtin_bytes(op, attention_forward_bytes(false, true, false));
  }
  for (const char* op : {"aten::_flash_attention_forward", "aten::_efficient_attention_forward"}) {
    add_builtin_bytes(op, attention_forward_bytes(true, true, false));
  }
  for (const char* op :
       {"aten::_scaled_dot_product_flash_attention_backward",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
        "aten::_scaled_dot_product_efficient_attention_backward",
        "aten::_scaled_dot_product_cudnn_attention_backward", "aten::_flash_attention_backward",
        "aten::_efficient_attention_backward"}) {
    add_builtin_bytes(op, attention_backward_bytes);
  }
}

void register_attention_formulas() {
  for (const char* op :
       {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention"}) {
    add_builtin_formula(op, sdpa);
  }
  // The CUDA kernels the scaled_dot_product_* ops call (nested in them, so counted only when
  // called directly). FlopCounterMode reads their dense inputs as [B, H, L, E], which they are not.
  for (const char* op : {"aten::_flash_attention_forward", "aten::_efficient_attention_forward"}) {
    add_builtin_formula(op, sdpa_kernel);
  }
  for (const char* op : {"aten::_scaled_dot_product_flash_attention_backward",
                         "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                         "aten::_scaled_dot_product_efficient_attention_backward",
                         "aten::_scaled_dot_product_cudnn_attention_backward"}) {
    add_builtin_formula(op, sdpa_backward);
  }
  for (const char* op :
       {"aten::_flash_attention_backward", "aten::_efficient_attention_backward"}) {
    add_builtin_formula(op, sdpa_kernel_backward);
  }
}

}  // namespace flopsprof::detail
