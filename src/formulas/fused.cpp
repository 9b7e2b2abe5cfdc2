// Fused kernels FlopCounterMode scores 0 (measured, torch 2.6 CPU): oneDNN's RNN layer (forward
// and backward), cuDNN's RNN (every layer in one op, forward and backward), the MultiheadAttention
// / TransformerEncoderLayer fast paths, and addmm fused with an activation. Each is counted as the
// unfused ops it replaces are (matmul.cpp, attention.cpp): MACs of its GEMMs; FLOPs = 2 * MACs +
// one per output element of each bias add. Bytes: every input read once (weights included: a fused
// kernel's internal traffic is not seen); the outputs written: the RNN layer's output [T, B, H] and
// final states (its workspace is not counted), its backward's gradients of the input, weights,
// biases and states; the fast paths' outputs (the attention weights when asked for).
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

// cuDNN's whole RNN (every layer and direction in one op: the CUDA path of nn.LSTM / GRU / RNN),
// from its sizes alone (the weight list's shapes are not captured): input [T,B,I] (or [B,T,I], or
// packed [sum(batch_sizes), I]), `mode` (as mkldnn's), hidden size H, projection size P (0: none;
// LSTM only), layers, bidirectional, weight_stride0 (tensors per layer and direction: w_ih, w_hh,
// then b_ih and b_hh when it has biases, then w_hr). Per layer and direction, as the unfused
// cell per step: linear_ih + linear_hh (+ the projection): T*B*(G*H*(I_l + H_out) + H*P) MACs,
// H_out = P or H, I_l = I for the first layer and dirs*H_out after it; biases 2*T*B*G*H FLOPs.
struct CudnnRnn {
  int64_t input = 0, mode = 1, hidden = 2, proj = 3, layers = 4, bidirectional = 5, stride0 = 6;
};
std::optional<RnnLayerGemms> cudnn_rnn_gemms(const OpInputs& in, const CudnnRnn& at, bool& biases) {
  IntSpan x = in.shape(static_cast<size_t>(at.input));
  auto mode = in.integer(at.mode), hidden = in.integer(at.hidden), layers = in.integer(at.layers);
  auto stride0 = in.integer(at.stride0);
  const int64_t proj = in.integer(at.proj).value_or(0);
  if (x.size() < 2 || !mode || !hidden || !layers || !stride0 || *hidden <= 0 || *layers <= 0 ||
      proj < 0 || x.back(0) <= 0)
    return std::nullopt;
  const uint64_t dirs = in.boolean(at.bidirectional).value_or(false) ? 2 : 1;
  const uint64_t input_size = u(x.back(0)), steps = numel_of(x) / input_size;
  const uint64_t h = u(*hidden), h_out = proj > 0 ? u(proj) : h;
  const uint64_t gates_h = checked_mul(rnn_gates(*mode), h);
  biases = *stride0 == 4 || *stride0 == 5;
  RnnLayerGemms g;
  for (int64_t l = 0; l < *layers; ++l) {
    const uint64_t in_l = l == 0 ? input_size : checked_mul(dirs, h_out);
    uint64_t per_step = checked_mul(gates_h, checked_add(in_l, h_out));
    if (proj > 0) per_step = checked_add(per_step, checked_mul(h, h_out));
    g.macs = checked_add(g.macs, checked_mul(checked_mul(dirs, steps), per_step));
    g.rows = checked_add(g.rows, checked_mul(checked_mul(dirs, steps), gates_h));
  }
  return g;
}

// _cudnn_rnn(input, weight[], weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size,
// num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state)
std::optional<FlopCount> cudnn_rnn(const OpInputs& in) {
  bool biases = false;
  auto g = cudnn_rnn_gemms(in, CudnnRnn{0, 6, 7, 8, 9, 13, 2}, biases);
  if (!g) return std::nullopt;
  return gemm_count(g->macs, biases ? checked_mul(2, g->rows) : 0);
}

// _cudnn_rnn_backward(input, weight[], weight_stride0, weight_buf, hx, cx, output, grad_output,
// grad_hy, grad_cy, mode, hidden_size, proj_size, num_layers, batch_first, dropout, train,
// bidirectional, batch_sizes, dropout_state, reserve, output_mask): as mkldnn's backward, each
// forward GEMM gives one for its input's gradient and one for its weight's: twice the forward;
// the bias gradients, 2*T*B*G*H sums.
std::optional<FlopCount> cudnn_rnn_backward(const OpInputs& in) {
  bool biases = false;
  auto g = cudnn_rnn_gemms(in, CudnnRnn{0, 10, 11, 12, 13, 17, 2}, biases);
  if (!g) return std::nullopt;
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

// ---- Bytes ----

uint64_t out_bytes(const OpInputs& in, size_t i) {
  return sat_mul(count_of(in.shape(i)), element_bytes(in[i].dtype));
}

// mkldnn_rnn_layer(input[T,B,I], w_ih, w_hh, b_ih, b_hh, hx, cx, ..., hidden_size at 10):
// output [T, B, H], hy and cy (hx's and cx's shapes)
std::optional<ByteCount> rnn_layer_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0);
  auto hidden = in.integer(10);
  if (x.size() < 2 || !hidden || x.back(0) == 0) return std::nullopt;
  const uint64_t steps = count_of(x) / u(x.back(0));
  uint64_t w = sat_mul(sat_mul(steps, u(*hidden)), element_bytes(in[0].dtype));
  w = sat_add(w, sat_add(out_bytes(in, 5), out_bytes(in, 6)));
  return ByteCount{input_bytes(in), w};
}

// mkldnn_rnn_layer_backward: the gradients of input, w_ih, w_hh, b_ih, b_hh, hx and cx
std::optional<ByteCount> rnn_layer_backward_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  uint64_t w = 0;
  for (size_t i = 0; i <= 6; ++i) w = sat_add(w, out_bytes(in, i));
  return ByteCount{input_bytes(in), w};
}

// _cudnn_rnn(input[T,B,I], weight[], stride0, weight_buf, hx, cx, mode, hidden_size, proj_size,
// num_layers, batch_first, dropout, train, bidirectional, ...): the output [T, B, dirs*H_out], hy
// and cy (hx's and cx's shapes; its reserve and workspace are not counted)
std::optional<ByteCount> cudnn_rnn_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0);
  auto hidden = in.integer(7);
  if (x.size() < 2 || !hidden || x.back(0) <= 0 || *hidden <= 0) return std::nullopt;
  const int64_t proj = in.integer(8).value_or(0);
  const uint64_t h_out = proj > 0 ? u(proj) : u(*hidden);
  const uint64_t dirs = in.boolean(13).value_or(false) ? 2 : 1;
  const uint64_t steps = count_of(x) / u(x.back(0));
  uint64_t w = sat_mul(sat_mul(steps, sat_mul(dirs, h_out)), element_bytes(in[0].dtype));
  w = sat_add(w, sat_add(out_bytes(in, 4), out_bytes(in, 5)));
  return ByteCount{input_bytes(in), w};
}

// _cudnn_rnn_backward: the gradients of the input, hx, cx and every weight (the list's bytes)
std::optional<ByteCount> cudnn_rnn_backward_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  uint64_t w = sat_add(out_bytes(in, 0), sat_add(out_bytes(in, 4), out_bytes(in, 5)));
  if (in[1].kind == ArgKind::kTensorList) w = sat_add(w, in[1].extent);
  return ByteCount{input_bytes(in), w};
}

// _addmm_activation(input, a[M,K], b[K,N], ...): [M, N]
std::optional<ByteCount> addmm_activation_bytes(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  return reads_inputs_writes(in, sat_mul(u(a[0]), u(b[1])), in[1].dtype);
}

// _native_multi_head_attention(query[B,L,D], key[B,S,D], ..., need_weights at 10,
// average_attn_weights at 11): the output [B, L, D], and the weights [B, (H,) L, S] if asked for
std::optional<ByteCount> native_mha_bytes(const OpInputs& in) {
  uint64_t b = 0, l = 0, b2 = 0, s = 0;
  auto heads = in.integer(4);
  if (!heads || !batch_length(in.shape(0), b, l) || !batch_length(in.shape(1), b2, s))
    return std::nullopt;
  const uint64_t es = element_bytes(in[0].dtype);
  ByteCount c{input_bytes(in), out_bytes(in, 0)};
  if (in.boolean(10).value_or(true)) {
    const uint64_t h = in.boolean(11).value_or(true) ? 1 : u(*heads);
    c.written = sat_add(c.written, sat_mul(sat_mul(sat_mul(b, h), sat_mul(l, s)), es));
  }
  return c;
}

}  // namespace

void register_fused_bytes() {
  add_builtin_bytes("aten::mkldnn_rnn_layer", rnn_layer_bytes);
  add_builtin_bytes("aten::mkldnn_rnn_layer_backward", rnn_layer_backward_bytes);
  add_builtin_bytes("aten::_cudnn_rnn", cudnn_rnn_bytes);
  add_builtin_bytes("aten::_cudnn_rnn_backward", cudnn_rnn_backward_bytes);
  add_builtin_bytes("aten::_addmm_activation", addmm_activation_bytes);
  add_builtin_bytes("aten::_native_multi_head_attention", native_mha_bytes);
  add_builtin_bytes("aten::_transformer_encoder_layer_fwd", same_as(0));
}

void register_fused_formulas() {
  add_builtin_formula("aten::mkldnn_rnn_layer", mkldnn_rnn_layer);
  add_builtin_formula("aten::mkldnn_rnn_layer_backward", mkldnn_rnn_layer_backward);
  add_builtin_formula("aten::_cudnn_rnn", cudnn_rnn);
  add_builtin_formula("aten::_cudnn_rnn_backward", cudnn_rnn_backward);
  add_builtin_formula("aten::_addmm_activation", addmm_activation);
  add_builtin_formula("aten::_native_multi_head_attention", native_mha);
  add_builtin_formula("aten::_transformer_encoder_layer_fwd", encoder_layer);
}

}  // namespace flopsprof::detail
