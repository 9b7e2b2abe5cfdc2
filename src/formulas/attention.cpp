// Fused attention formulas (LibTorch 2.x scaled_dot_product_attention and the kernels it runs).
// Convention, as PyTorch's FlopCounterMode (torch.utils.flop_counter) counts the fused kernels,
// with FLOPs = 2 * MACs + the softmax, as flopsprof counts an unfused softmax (numel of the
// scores):
//   forward:  Q K^T and P V:                      MACs = B*L*S*E + B*L*S*Ev
//   backward: recomputed Q K^T, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q:
//                                                 MACs = B*L*S*(3*E + 2*Ev)
// (B: batch and query heads; L, S: query and key lengths; E, Ev: head sizes of q/k and v). 2 * MACs
// equals FlopCounterMode's count; it ignores causal masks (the masked half is counted), and so does
// `flops`. With is_causal, `masked_flops` is the part on the pairs the mask discards: SDPA's causal
// mask is top-left aligned (key j kept for query i when j <= i), so per (batch, head) the kept
// pairs are L(L+1)/2 for L <= S, S(S+1)/2 + (L - S)S for L > S. What the kernel computes
// (PyTorch 2.6, aten/src/ATen/native/cpu/FlashAttentionKernel.cpp): the math backend the whole
// L x S square; the CPU flash kernel, per query block [m, m + qB), the key blocks of kvSplit
// (512, or S when smaller) up to the first that reaches min(m + qB, S), each whole, the last
// masked after the product; the query blocks are 256 (L >= 768), 64 (L >= 192) or 32 wide
// (forward and backward alike). The CUDA kernels also skip masked blocks, by tiles this file
// does not model (kernel_unknown), as does the composite scaled_dot_product_attention, whose
// kernel runs inside it unobserved. FlopCounterMode scores the CPU kernels
// (_scaled_dot_product_flash_attention_for_cpu and its backward) 0; they are counted here as the
// CUDA kernels are.
// An explicit mask (attn_mask / attn_bias): its pattern is not known from shapes, so the pairs it
// discards count as computed (dense, as FlopCounterMode counts them; every kernel computes them:
// none skips by a mask's values), unless the capture read the mask
// (ProfilerOptions::read_attention_masks, `ArgView::kept`): then `masked_flops` is the part on
// the pairs it discards, as for is_causal.
// Bytes: q, k, v (and a mask) read once; the output [..., L, Ev] written, and the log-sum-exp
// [B, H, L] (fp32) where the kernel returns it for its backward; the math backend also its
// attention weights [..., L, S]. Backward: writes the gradients of q, k and v.
#include <algorithm>

#include "formulas/common.h"
#include "formulas/registry.h"

namespace flopsprof::detail {
namespace {

struct AttentionDims {
  uint64_t scores = 0;  // B*L*S
  uint64_t e = 0, ev = 0;
  uint64_t batch = 0, l = 0, s = 0;  // B (batch and query heads), L, S
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
  d.batch = batch;
  d.l = l;
  d.s = s;
  return d;
}

// (query, key) pairs per (batch, head) a top-left causal mask keeps: query i sees keys 0..i.
uint64_t causal_pairs(uint64_t l, uint64_t s) {
  if (l <= s) return checked_mul(l, l + 1) / 2;
  return checked_add(checked_mul(s, s + 1) / 2, checked_mul(l - s, s));
}

// Pairs per (batch, head) the CPU flash kernel computes with is_causal (PyTorch 2.6).
uint64_t cpu_flash_causal_pairs(uint64_t l, uint64_t s) {
  const uint64_t q_split = std::min<uint64_t>(l >= 768 ? 256 : l >= 192 ? 64 : 32, l);
  const uint64_t kv_split = std::min<uint64_t>(512, s);
  if (q_split == 0 || kv_split == 0) return 0;
  uint64_t pairs = 0;
  for (uint64_t m = 0; m < l; m += q_split) {
    const uint64_t qb = std::min(q_split, l - m);
    const uint64_t num_keys = std::min(m + qb, s);
    const uint64_t keys = std::min((num_keys + kv_split - 1) / kv_split * kv_split, s);
    pairs = checked_add(pairs, checked_mul(qb, keys));
  }
  return pairs;
}

// How an attention op's kernel treats a causal mask.
enum class Kernel : uint8_t {
  kDense,     // computes every pair (the math backend)
  kCpuFlash,  // PyTorch's CPU flash kernel: skips whole key blocks past the diagonal
  kUnknown,   // a composite op or a CUDA kernel: not modelled
};

// Sets the masked and skipped parts of `fc` (counted at `per_pair` MACs and `extra` FLOPs per
// (batch-head, query, key) pair) when `causal`.
void causal_parts(FlopCount& fc, const AttentionDims& d, uint64_t per_pair, bool causal,
                  Kernel kernel) {
  if (!causal || d.batch == 0) return;
  fc.kernel_unknown = kernel == Kernel::kUnknown;
  const uint64_t all = checked_mul(d.l, d.s);
  const uint64_t masked = checked_mul(d.batch, all - causal_pairs(d.l, d.s));
  fc.masked_macs = checked_mul(masked, per_pair);
  fc.masked_flops = checked_add(checked_mul(2, fc.masked_macs), masked);
  if (kernel == Kernel::kCpuFlash) {
    const uint64_t skipped = checked_mul(d.batch, all - cpu_flash_causal_pairs(d.l, d.s));
    fc.skipped_flops = checked_add(checked_mul(2, checked_mul(skipped, per_pair)), skipped);
  }
}

// Sets the masked part of `fc` from an explicit mask at `mask_arg` (-1: the op takes none): the
// mask broadcasts to [B, L, S] (B: batch and heads), so each of its entries stands for
// B*L*S / (its elements) pairs, and the pairs it discards are B*L*S - kept * that.
void mask_parts(FlopCount& fc, const OpInputs& in, const AttentionDims& d, uint64_t per_pair,
                int mask_arg) {
  if (mask_arg < 0 || !in.is_tensor(static_cast<size_t>(mask_arg))) return;
  const ArgView& mask = in[static_cast<size_t>(mask_arg)];
  const uint64_t entries = count_of(mask.shape);
  if (!mask.kept || entries == 0 || d.scores % entries != 0 || *mask.kept > entries) {
    fc.mask_unread = true;  // counted dense
    return;
  }
  fc.mask_read = true;
  const uint64_t masked = checked_mul(entries - *mask.kept, d.scores / entries);
  fc.masked_macs = checked_mul(masked, per_pair);
  fc.masked_flops = checked_add(checked_mul(2, fc.masked_macs), masked);
}

// Forward: MACs = B*L*S*(E + Ev); FLOPs = 2 * MACs + B*L*S (softmax). `causal_arg`, `mask_arg`:
// the indices of its is_causal and mask arguments (-1: none read).
std::optional<FlopCount> forward_count(const OpInputs& in, size_t first, bool bl_layout,
                                       int causal_arg = -1, Kernel kernel = Kernel::kDense,
                                       int mask_arg = -1) {
  std::optional<AttentionDims> d = attention_dims(in, first, bl_layout);
  if (!d) return std::nullopt;
  const uint64_t per_pair = checked_add(d->e, d->ev);
  FlopCount fc = gemm_count(checked_mul(d->scores, per_pair), d->scores);
  const bool causal = causal_arg >= 0 && in.boolean(causal_arg).value_or(false);
  causal_parts(fc, *d, per_pair, causal, kernel);
  if (!causal) mask_parts(fc, in, *d, per_pair, mask_arg);  // SDPA takes one or the other
  return fc;
}

// Backward: MACs = B*L*S*(3*E + 2*Ev); FLOPs = 2 * MACs + B*L*S (softmax backward).
std::optional<FlopCount> backward_count(const OpInputs& in, bool bl_layout, int causal_arg = -1,
                                        Kernel kernel = Kernel::kDense, int mask_arg = -1) {
  std::optional<AttentionDims> d = attention_dims(in, 1, bl_layout);  // after grad_out
  if (!d) return std::nullopt;
  uint64_t per_score = checked_add(checked_mul(3, d->e), checked_mul(2, d->ev));
  FlopCount fc = gemm_count(checked_mul(d->scores, per_score), d->scores);
  const bool causal = causal_arg >= 0 && in.boolean(causal_arg).value_or(false);
  causal_parts(fc, *d, per_score, causal, kernel);
  if (!causal) mask_parts(fc, in, *d, per_score, mask_arg);
  return fc;
}

// sdpa(query[B, H, L, E], key[B, H, S, E], value[B, H, S, Ev], ...), is_causal at `causal_arg`
FormulaFn sdpa(int causal_arg, int mask_arg, Kernel kernel) {
  return
      [=](const OpInputs& in) { return forward_count(in, 0, false, causal_arg, kernel, mask_arg); };
}
// _flash_attention_forward / _efficient_attention_forward(query[B, L, H, E], key, value, ...)
std::optional<FlopCount> sdpa_kernel(const OpInputs& in) { return forward_count(in, 0, true); }
// *_backward(grad_out, query[B, H, L, E], key, value, ...), is_causal at `causal_arg`
FormulaFn sdpa_backward(int causal_arg, int mask_arg, Kernel kernel) {
  return
      [=](const OpInputs& in) { return backward_count(in, false, causal_arg, kernel, mask_arg); };
}
// _flash_attention_backward / _efficient_attention_backward(grad_out, query[B, L, H, E], ...)
std::optional<FlopCount> sdpa_kernel_backward(const OpInputs& in) {
  return backward_count(in, true);
}

// The scaled_dot_product_* ops: where is_causal and the mask (attn_mask / attn_bias) are in each
// schema (PyTorch 2.6's native_functions.yaml), and how its kernel treats a causal mask.
struct SdpaOp {
  const char* name;
  int causal_arg, mask_arg;  // -1: none
  Kernel kernel;
  bool backward;
};
constexpr SdpaOp kSdpaOps[] = {
    {"aten::scaled_dot_product_attention", 5, 3, Kernel::kUnknown, false},
    {"aten::_scaled_dot_product_attention_math", 5, 3, Kernel::kDense, false},
    {"aten::_scaled_dot_product_flash_attention", 4, -1, Kernel::kUnknown, false},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", 4, 5, Kernel::kCpuFlash, false},
    {"aten::_scaled_dot_product_efficient_attention", 6, 3, Kernel::kUnknown, false},
    {"aten::_scaled_dot_product_cudnn_attention", 6, 3, Kernel::kUnknown, false},
    {"aten::_scaled_dot_product_flash_attention_backward", 11, -1, Kernel::kUnknown, true},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", 7, 8, Kernel::kCpuFlash, true},
    {"aten::_scaled_dot_product_efficient_attention_backward", 11, 4, Kernel::kUnknown, true},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 14, 8, Kernel::kUnknown, true},
};

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
  for (const SdpaOp& op : kSdpaOps) {
    add_builtin_formula(op.name, op.backward ? sdpa_backward(op.causal_arg, op.mask_arg, op.kernel)
                                             : sdpa(op.causal_arg, op.mask_arg, op.kernel));
  }
  // The CUDA kernels the scaled_dot_product_* ops call (nested in them, so counted only when
  // called directly). FlopCounterMode reads their dense inputs as [B, H, L, E], which they are not.
  for (const char* op : {"aten::_flash_attention_forward", "aten::_efficient_attention_forward"}) {
    add_builtin_formula(op, sdpa_kernel);
  }
  for (const char* op :
       {"aten::_flash_attention_backward", "aten::_efficient_attention_backward"}) {
    add_builtin_formula(op, sdpa_kernel_backward);
  }
}

int attention_mask_arg(std::string_view op_name) {
  for (const SdpaOp& op : kSdpaOps) {
    if (op_name == op.name) return op.mask_arg;
  }
  return -1;
}

KvRole kv_cache_role(std::string_view op_name) {
  for (const SdpaOp& op : kSdpaOps) {
    if (op_name == op.name) return op.backward ? KvRole::kNone : KvRole::kAttention;
  }
  if (op_name == "aten::_flash_attention_forward" ||
      op_name == "aten::_efficient_attention_forward") {
    return KvRole::kAttention;
  }
  if (op_name == "aten::copy_" || op_name == "aten::index_copy_" || op_name == "aten::index_put_" ||
      op_name == "aten::_index_put_impl_") {
    return KvRole::kWritesSelf;
  }
  if (op_name == "aten::cat" || op_name == "aten::_cat") return KvRole::kAppends;
  return KvRole::kNone;
}

}  // namespace flopsprof::detail
