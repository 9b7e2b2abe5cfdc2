// Formulas of the fused kernels FlopCounterMode scores 0 (src/formulas/fused.cpp), by hand.
#include <gtest/gtest.h>

#include "flopsprof/formulas.h"
#include "test_args.h"

namespace flopsprof {
namespace {

using testing::Args;

TEST(FusedFormula, MkldnnLstmLayerIsBothCellLinearsPerStep) {
  // LSTM layer: input [T=5, B=2, I=8], hidden 6, 4 gates: w_ih [24, 8], w_hh [24, 6].
  Args a;
  a.tensor({5, 2, 8}).tensor({24, 8}).tensor({24, 6}).tensor({24}).tensor({24});
  a.tensor({1, 2, 6})
      .tensor({1, 2, 6})
      .b(false)
      .list({})
      .i(2)
      .i(6)
      .i(1)
      .b(true)
      .b(false)
      .b(false)
      .b(false);
  auto c = compute_flops("aten::mkldnn_rnn_layer", a.inputs());
  ASSERT_TRUE(c);
  const uint64_t macs = 5 * 2 * 24 * (8 + 6);  // per step: linear_ih + linear_hh
  EXPECT_EQ(c->macs, macs);
  EXPECT_EQ(c->flops, 2 * macs + 2 * 5 * 2 * 24);  // both biases
}

TEST(FusedFormula, MkldnnLstmLayerBackwardIsTwiceTheForwardGemms) {
  // The backward of the layer above: input [T=5, B=2, I=8], hidden 6, 4 gates.
  Args a;
  a.tensor({5, 2, 8}).tensor({24, 8}).tensor({24, 6}).tensor({24}).tensor({24});
  a.tensor({1, 2, 6}).tensor({1, 2, 6});                    // hx, cx
  a.tensor({5, 2, 6}).tensor({1, 2, 6}).tensor({1, 2, 6});  // output, hy, cy
  a.tensor({5, 2, 6}).undefined().undefined();              // grad_output, grad_hy, grad_cy
  a.b(false).i(2).i(6).i(1).b(true).b(true).b(false).list({}).b(false).tensor({4096});
  auto c = compute_flops("aten::mkldnn_rnn_layer_backward", a.inputs());
  ASSERT_TRUE(c);
  // forward GEMMs 5*2*24*(8 + 6) = 3360 MACs; each gives a gradient GEMM for its input (x, h)
  // and one for its weight: 2 * 3360 = 6720
  const uint64_t macs = 2 * (5 * 2 * 24 * (8 + 6));
  EXPECT_EQ(c->macs, macs);
  EXPECT_EQ(c->macs, 6720u);
  // bias gradients: the 24 gate gradients summed over 5*2 rows, for b_ih and b_hh
  EXPECT_EQ(c->flops, 2 * macs + 2 * 5 * 2 * 24);

  // Without biases (has_biases false): the GEMMs alone. A GRU (mode 3, 3 gates: 18 rows of w).
  Args g;
  g.tensor({2, 3, 4}).tensor({18, 4}).tensor({18, 6}).undefined().undefined();
  g.tensor({1, 3, 6}).undefined().tensor({2, 3, 6}).tensor({1, 3, 6}).undefined();
  g.tensor({2, 3, 6}).undefined().undefined();
  g.b(false).i(3).i(6).i(1).b(false).b(true).b(false).list({}).b(false).tensor({1});
  auto d = compute_flops("aten::mkldnn_rnn_layer_backward", g.inputs());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->macs, 2u * (2 * 3 * 18 * (4 + 6)));
  EXPECT_EQ(d->flops, 2 * d->macs);

  // Not understood (w_ih's columns are not the input's features): n/a, never 0.
  Args bad;
  bad.tensor({5, 2, 8}).tensor({24, 7}).tensor({24, 6});
  for (int k = 3; k < 14; ++k) bad.undefined();
  bad.i(2);
  EXPECT_FALSE(compute_flops("aten::mkldnn_rnn_layer_backward", bad.inputs()));
}

// _cudnn_rnn(input, weight[], weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size,
// num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state)
Args cudnn_rnn(std::vector<int64_t> x, int64_t stride0, int64_t mode, int64_t hidden, int64_t proj,
               int64_t layers, bool bidirectional) {
  Args a;
  a.tensor(std::move(x)).tensor_list(layers * stride0 * (bidirectional ? 2 : 1), 4096).i(stride0);
  a.tensor({4096}).tensor({layers, 2, hidden}).tensor({layers, 2, hidden});
  a.i(mode).i(hidden).i(proj).i(layers).b(false).d(0.0).b(false).b(bidirectional).list({});
  a.undefined();
  return a;
}

TEST(FusedFormula, CudnnRnnIsEveryLayersCellLinearsPerStep) {
  // 2-layer LSTM (mode 2, 4 gates), input [T=5, B=2, I=8], hidden 6, biases (4 tensors a layer):
  // layer 0: 5*2 steps * 24 gate rows * (8 + 6); layer 1 reads layer 0's output (6 features)
  auto c = compute_flops("aten::_cudnn_rnn", cudnn_rnn({5, 2, 8}, 4, 2, 6, 0, 2, false).inputs());
  ASSERT_TRUE(c);
  const uint64_t macs = 5 * 2 * 24 * (8 + 6) + 5 * 2 * 24 * (6 + 6);
  EXPECT_EQ(c->macs, macs);
  EXPECT_EQ(c->macs, 6240u);
  EXPECT_EQ(c->flops, 2 * macs + 2 * (2 * 5 * 2 * 24));  // b_ih and b_hh, both layers

  // The same as mkldnn_rnn_layer's count of each layer (the CPU path of the same module)
  Args l0, l1;
  l0.tensor({5, 2, 8}).tensor({24, 8}).tensor({24, 6}).tensor({24}).tensor({24});
  l0.tensor({1, 2, 6}).tensor({1, 2, 6}).b(false).list({}).i(2).i(6).i(1).b(true);
  l1.tensor({5, 2, 6}).tensor({24, 6}).tensor({24, 6}).tensor({24}).tensor({24});
  l1.tensor({1, 2, 6}).tensor({1, 2, 6}).b(false).list({}).i(2).i(6).i(1).b(true);
  EXPECT_EQ(c->macs, compute_flops("aten::mkldnn_rnn_layer", l0.inputs())->macs +
                         compute_flops("aten::mkldnn_rnn_layer", l1.inputs())->macs);

  // Bidirectional GRU (mode 3, 3 gates), no biases (2 tensors a layer), batch first [B=2, T=7,
  // I=4], hidden 5, 2 layers: layer 1 reads both directions (10 features)
  auto g = compute_flops("aten::_cudnn_rnn", cudnn_rnn({2, 7, 4}, 2, 3, 5, 0, 2, true).inputs());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->macs, 2u * 14 * 15 * (4 + 5) + 2u * 14 * 15 * (10 + 5));
  EXPECT_EQ(g->flops, 2 * g->macs);

  // LSTM with a projection (proj_size 3; 5 tensors a layer): h is 3 wide, plus w_hr [3, 6]
  auto p = compute_flops("aten::_cudnn_rnn", cudnn_rnn({5, 2, 8}, 5, 2, 6, 3, 1, false).inputs());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->macs, 5u * 2 * (24 * (8 + 3) + 6 * 3));

  // Packed input [sum(batch_sizes)=9, I=8]: 9 steps of one row each
  auto k = compute_flops("aten::_cudnn_rnn", cudnn_rnn({9, 8}, 4, 1, 6, 0, 1, false).inputs());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->macs, 9u * 6 * (8 + 6));  // RNN_TANH (mode 1): one gate

  // Not understood (no hidden size): n/a, never 0
  Args bad;
  bad.tensor({5, 2, 8}).tensor_list(8, 4096).i(4);
  EXPECT_FALSE(compute_flops("aten::_cudnn_rnn", bad.inputs()));
}

TEST(FusedFormula, CudnnRnnBackwardIsTwiceTheForwardGemms) {
  // _cudnn_rnn_backward(input, weight[], stride0, weight_buf, hx, cx, output, grad_output,
  // grad_hy, grad_cy, mode, hidden_size, proj_size, num_layers, batch_first, dropout, train,
  // bidirectional, batch_sizes, dropout_state, reserve, output_mask): the 2-layer LSTM above
  Args a;
  a.tensor({5, 2, 8}).tensor_list(8, 4096).i(4).tensor({4096});
  a.tensor({2, 2, 6}).tensor({2, 2, 6}).tensor({5, 2, 6}).tensor({5, 2, 6}).undefined().undefined();
  a.i(2).i(6).i(0).i(2).b(false).d(0.0).b(true).b(false).list({}).undefined().tensor({64});
  auto c = compute_flops("aten::_cudnn_rnn_backward", a.inputs());
  ASSERT_TRUE(c);
  const uint64_t fwd = 5 * 2 * 24 * (8 + 6) + 5 * 2 * 24 * (6 + 6);
  EXPECT_EQ(c->macs, 2 * fwd);
  EXPECT_EQ(c->flops, 2 * c->macs + 2 * (2 * 5 * 2 * 24));
}

TEST(FusedFormula, NativeMultiHeadAttentionIsProjectionsAndScores) {
  // query [B=2, L=3, D=8], key/value [2, S=5, 8], 2 heads
  Args a;
  a.tensor({2, 3, 8}).tensor({2, 5, 8}).tensor({2, 5, 8}).i(8).i(2);
  a.tensor({24, 8}).tensor({24}).tensor({8, 8}).tensor({8});
  auto c = compute_flops("aten::_native_multi_head_attention", a.inputs());
  ASSERT_TRUE(c);
  // q: 2*3*8*8, k and v: 2*(2*5*8*8), out: 2*3*8*8, Q K^T and P V: 2*(2*3*5*8)
  const uint64_t macs = 2 * 3 * 64 + 2 * 2 * 5 * 64 + 2 * 3 * 64 + 2 * 2 * 3 * 5 * 8;
  EXPECT_EQ(c->macs, macs);
  // biases: (2*3 + 2*5)*8 per batch; softmax: B*H*L*S
  EXPECT_EQ(c->flops, 2 * macs + 2 * (2 * 3 + 2 * 5) * 8 + 2 * 2 * 3 * 5);
}

TEST(FusedFormula, TransformerEncoderLayerAddsTheFeedForward) {
  // src [B=1, L=4, D=8], 2 heads, feed-forward 16
  Args a;
  a.tensor({1, 4, 8}).i(8).i(2).tensor({24, 8}).tensor({24}).tensor({8, 8}).tensor({8});
  a.b(false).b(false).d(1e-5).tensor({8}).tensor({8}).tensor({8}).tensor({8});
  a.tensor({16, 8}).tensor({16}).tensor({8, 16}).tensor({8});
  auto c = compute_flops("aten::_transformer_encoder_layer_fwd", a.inputs());
  ASSERT_TRUE(c);
  const uint64_t attn = 4 * 4 * 64 + 2 * 4 * 4 * 8;  // projections + scores
  const uint64_t ffn = 2 * 4 * 8 * 16;
  EXPECT_EQ(c->macs, attn + ffn);
  EXPECT_EQ(c->flops, 2 * (attn + ffn) + 4 * 4 * 8 + 2 * 4 * 4 + 4 * (16 + 8));
}

TEST(FusedFormula, AddmmActivationIsAddmmPlusTheActivation) {
  Args a;
  a.tensor({6}).tensor({3, 5}).tensor({5, 6}).d(1).d(1).b(false);
  auto c = compute_flops("aten::_addmm_activation", a.inputs());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->macs, 3u * 5 * 6);
  EXPECT_EQ(c->flops, 2u * 3 * 5 * 6 + 2 * 3 * 6);
}

}  // namespace
}  // namespace flopsprof
