// Fused attention formulas (LibTorch 2.x scaled_dot_product_attention and its kernels).
// Convention: the two GEMMs (Q K^T and P V) at 2 FLOPs per MAC, plus the softmax at 1 FLOP per
// score element: MACs = B*L*S*E + B*L*S*Ev; FLOPs = 2 * MACs + B*L*S.
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// sdpa(query[..., L, E], key[..., S, E], value[..., S, Ev], ...)
std::optional<FlopCount> sdpa(const OpInputs& in) {
  IntSpan q = in.shape(0), k = in.shape(1), v = in.shape(2);
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) return std::nullopt;
  uint64_t l = u(q.back(1)), e = u(q.back(0)), s = u(k.back(1)), ev = u(v.back(0));
  uint64_t le = checked_mul(l, e);
  uint64_t batch = le == 0 ? 0 : numel_of(q) / le;
  uint64_t scores = checked_mul(checked_mul(batch, l), s);
  uint64_t macs = checked_add(checked_mul(scores, e), checked_mul(scores, ev));
  return gemm_count(macs, scores);
}

}  // namespace

void register_attention_formulas() {
  for (const char* op :
       {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention"}) {
    add_builtin_formula(op, sdpa);
  }
}

}  // namespace flopsprof::detail
