// Fused kernels FlopCounterMode scores 0 (measured, torch 2.6 CPU): oneDNN's RNN layer (forward
// and backward), the MultiheadAttention / TransformerEncoderLayer fast paths, and addmm fused with
// an activation.
// Each is counted as the unfused ops it replaces are (matmul.cpp, attention.cpp): MACs of its
// GEMMs; FLOPs = 2 * MACs + one per output element of each bias add.
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// Gates per step of mkldnn_rnn_layer's `mode` (RNN_RELU 0, RNN_TANH 1, LSTM 2, GRU 3).
uint64_t rnn_gates(int64_t mode) { return mode == 2 ? 4 : (mode == 3 ? 3 : 1); }

// The GEMMs of one oneDNN RNN layer and direction, as the unfused cell runs them per step:
// linear_ih + linear_hh. input x[T,B,I] (or [B,T,I]), w_ih[G*H,I], w_hh[G*H,H]; `rows` = T*B*G*H
// (the gate pre-activations, one bias add each per bias), `macs` = rows * (I + H).
struct RnnLayerGemms {
  uint64_t rows = 0;
  uint64_t macs = 0;
};
std::optional<RnnLayerGemms> rnn_layer_gemms(IntSpan x, IntSpan w_ih, IntSpan w_hh,
                                             std::optional<int64_t> mode) {
  if (x.size() < 2 || w_ih.size() != 2 || w_hh.size() != 2 || !mode) return std::nullopt;
  const uint64_t input_size = u(x.back(0));
  if (input_size == 0 || u(w_ih[1]) != input_size) return std::nullopt;
  const uint64_t steps = numel_of(x) / input_size;  // T*B
  const uint64_t gates_h = u(w_ih[0]);              // G*H
  if (gates_h % rnn_gates(*mode) != 0) return std::nullopt;
  RnnLayerGemms g;
  g.rows = checked_mul(steps, gates_h);
  g.macs = checked_mul(g.rows, checked_add(input_size, u(w_hh[1])));
  return g;
}

// mkldnn_rnn_layer(input[T,B,I] (or [B,T,I]), w_ih[G*H,I], w_hh[G*H,H], b_ih, b_hh, hx, cx,
// reverse, batch_sizes, mode, hidden_size, num_layers, has_biases, ...): one layer and direction.
// As the unfused cell per step: linear_ih + linear_hh: MACs = T*B*G*H*(I + H);
// FLOPs = 2 * MACs + 2*T*B*G*H (both biases) when has_biases.
std::optional<FlopCount> mkldnn_rnn_layer(const OpInputs& in) {
  auto g = rnn_layer_gemms(in.shape(0), in.shape(1), in.shape(2), in.integer(9));
  if (!g) return std::nullopt;
  const bool biases = in.boolean(12).value_or(true);
  return gemm_count(g->macs, biases ? checked_mul(2, g->rows) : 0);
}

// mkldnn_rnn_layer_backward(input, w_ih, w_hh, b_ih, b_hh, hx, cx, output, hy, cy, grad_output,
// grad_hy, grad_cy, reverse, mode, hidden_size, num_layers, has_biases, train, bidirectional,
// batch_sizes, batch_first, workspace): the backward of one layer and direction. As the backward
// of the unfused cell's mm/addmm (what FlopCounterMode counts with oneDNN off): each forward GEMM
// gives one GEMM for the gradient of its input (x or h) and one for its weight:
// MACs = 2 * T*B*G*H*(I + H). The op returns every gradient (input, hx, cx, weights, bias)
// whether or not autograd needs it, so this counts both even where an unfused backward skips one
// (a first layer's input, or h0, that does not require grad: tests/fcm_models.py measures it).
// FLOPs = 2 * MACs + 2*T*B*G*H when has_biases: the bias gradients, reductions of the gate
// gradients over the T*B rows, as the unfused backward's sums (numel each, pointwise.cpp) and the
// forward's bias adds count them.
std::optional<FlopCount> mkldnn_rnn_layer_backward(const OpInputs& in) {
  auto g = rnn_layer_gemms(in.shape(0), in.shape(1), in.shape(2), in.integer(14));
  if (!g) return std::nullopt;
  const bool biases = in.boolean(17).value_or(true);
  return gemm_count(checked_mul(2, g->macs), biases ? checked_mul(2, g->rows) : 0);
}

// _addmm_activation(input, a[M,K], b[K,N], beta, alpha, use_gelu): addmm then relu/gelu:
// MACs = M*N*K; FLOPs = 2*M*N*K + M*N (beta*input) + M*N (the activation).
std::optional<FlopCount> addmm_activation(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  const uint64_t out = checked_mul(u(a[0]), u(b[1]));
  return gemm_count(checked_mul(out, u(a[1])), checked_mul(2, out));
}

// Batch and length of a [B, L, D] (or unbatched [L, D]) tensor.
bool batch_length(IntSpan t, uint64_t& batch, uint64_t& length) {
  if (t.size() == 3) {
    batch = u(t[0]);
    length = u(t[1]);
    return true;
  }
  if (t.size() == 2) {
    batch = 1;
    length = u(t[0]);
    return true;
  }
  return false;
}

// Attention block of D = embed_dim over query length L and key length S, batch B, as the unfused
// MultiheadAttention: q/k/v in-projections B*(L + 2*S)*D*D, Q K^T and P V 2*B*L*S*D, the output
// projection B*L*D*D. Bias adds: B*(2*L + 2*S)*D. Softmax: B*H*L*S (as attention.cpp).
FlopCount attention_block(uint64_t b, uint64_t l, uint64_t s, uint64_t d, uint64_t heads) {
  const uint64_t dd = checked_mul(d, d);
  uint64_t macs =
      checked_mul(checked_mul(b, checked_add(checked_mul(2, l), checked_mul(2, s))), dd);
  macs = checked_add(macs, checked_mul(checked_mul(2, b), checked_mul(checked_mul(l, s), d)));
  uint64_t extra =
      checked_mul(checked_mul(b, checked_add(checked_mul(2, l), checked_mul(2, s))), d);
  extra = checked_add(extra, checked_mul(checked_mul(b, heads), checked_mul(l, s)));
  return gemm_count(macs, extra);
}

// _native_multi_head_attention(query[B,L,D], key[B,S,D], value, embed_dim, num_head,
// qkv_weight, qkv_bias, proj_weight, proj_bias, mask, ...): MultiheadAttention's fast path.
std::optional<FlopCount> native_mha(const OpInputs& in) {
  uint64_t b = 0, l = 0, b2 = 0, s = 0;
  auto d = in.integer(3), heads = in.integer(4);
  if (!d || !heads || !batch_length(in.shape(0), b, l) || !batch_length(in.shape(1), b2, s))
    return std::nullopt;
  return attention_block(b, l, s, u(*d), u(*heads));
}

// _transformer_encoder_layer_fwd(src[B,L,D], embed_dim, num_heads, qkv_weight, qkv_bias,
// proj_weight, proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2,
// norm_bias_2, ffn_weight_1[F,D], ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type):
// self-attention (above) + the feed-forward linears 2*B*L*D*F MACs, biases B*L*(F + D).
// Norms, activation and residual adds are not in the count (FLOPs = GEMMs + biases + softmax).
std::optional<FlopCount> encoder_layer(const OpInputs& in) {
  uint64_t b = 0, l = 0;
  auto d = in.integer(1), heads = in.integer(2);
  IntSpan w1 = in.shape(14);
  if (!d || !heads || w1.size() != 2 || !batch_length(in.shape(0), b, l)) return std::nullopt;
  FlopCount c = attention_block(b, l, l, u(*d), u(*heads));
  const uint64_t tokens = checked_mul(b, l);
  const uint64_t ffn_macs = checked_mul(checked_mul(2, tokens), checked_mul(u(*d), u(w1[0])));
  const FlopCount ffn = gemm_count(ffn_macs, checked_mul(tokens, checked_add(u(w1[0]), u(*d))));
  return FlopCount{checked_add(c.flops, ffn.flops), checked_add(c.macs, ffn.macs)};
}

}  // namespace

void register_fused_formulas() {
  add_builtin_formula("aten::mkldnn_rnn_layer", mkldnn_rnn_layer);
  add_builtin_formula("aten::mkldnn_rnn_layer_backward", mkldnn_rnn_layer_backward);
  add_builtin_formula("aten::_addmm_activation", addmm_activation);
  add_builtin_formula("aten::_native_multi_head_attention", native_mha);
  add_builtin_formula("aten::_transformer_encoder_layer_fwd", encoder_layer);
}

}  // namespace flopsprof::detail
