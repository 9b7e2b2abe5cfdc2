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
