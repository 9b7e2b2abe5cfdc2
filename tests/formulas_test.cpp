// Formula tests: every built-in family against arithmetic written out by hand.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>

#include "flopsprof/formulas.h"
#include "test_args.h"

namespace flopsprof {
namespace {

using testing::Args;
using testing::count;

// ---- GEMM family -------------------------------------------------------------------------

TEST(MatmulFormula, MmIsTwoMNK) {
  // a[8,16] @ b[16,4]: MACs = 8*4*16 = 512, FLOPs = 2*512 = 1024
  FlopCount c = count("aten::mm", Args().tensor({8, 16}).tensor({16, 4}));
  EXPECT_EQ(c.macs, 512u);
  EXPECT_EQ(c.flops, 1024u);
}

TEST(MatmulFormula, AddmmIsTwoMNKPlusBias) {
  // bias[4] + a[8,16] @ b[16,4]: MACs = 512, FLOPs = 2*512 + 8*4 = 1056
  FlopCount c = count("aten::addmm", Args().tensor({4}).tensor({8, 16}).tensor({16, 4}).i(1).i(1));
  EXPECT_EQ(c.macs, 512u);
  EXPECT_EQ(c.flops, 1056u);
}

TEST(MatmulFormula, AddmmWithBetaZeroHasNoBiasTerm) {
  FlopCount c =
      count("aten::addmm", Args().tensor({4}).tensor({8, 16}).tensor({16, 4}).d(0.0).i(1));
  EXPECT_EQ(c.flops, 1024u);
}

TEST(MatmulFormula, BmmIsTwoBMNK) {
  // [3,8,16] @ [3,16,4]: MACs = 3*8*4*16 = 1536
  FlopCount c = count("aten::bmm", Args().tensor({3, 8, 16}).tensor({3, 16, 4}));
  EXPECT_EQ(c.macs, 1536u);
  EXPECT_EQ(c.flops, 3072u);
}

TEST(MatmulFormula, BaddbmmAddsOnePerOutput) {
  // MACs = 1536; FLOPs = 3072 + 3*8*4 = 3168
  FlopCount c =
      count("aten::baddbmm", Args().tensor({3, 8, 4}).tensor({3, 8, 16}).tensor({3, 16, 4}));
  EXPECT_EQ(c.macs, 1536u);
  EXPECT_EQ(c.flops, 3168u);
}

TEST(MatmulFormula, MatmulBroadcastsBatchDims) {
  // [2,1,8,16] @ [5,16,4]: batch = broadcast([2,1],[5]) = 2*5 = 10; MACs = 10*8*4*16 = 5120
  FlopCount c = count("aten::matmul", Args().tensor({2, 1, 8, 16}).tensor({5, 16, 4}));
  EXPECT_EQ(c.macs, 5120u);
  EXPECT_EQ(c.flops, 10240u);
}

TEST(MatmulFormula, MatmulVectorCases) {
  // dot: [16]·[16] = 16 MACs; matrix-vector: [8,16]·[16] = 128 MACs; vector-matrix [16]·[16,4] = 64
  EXPECT_EQ(count("aten::matmul", Args().tensor({16}).tensor({16})).macs, 16u);
  EXPECT_EQ(count("aten::matmul", Args().tensor({8, 16}).tensor({16})).macs, 128u);
  EXPECT_EQ(count("aten::matmul", Args().tensor({16}).tensor({16, 4})).macs, 64u);
  // mismatched contraction: not understood, n/a
  EXPECT_FALSE(compute_flops("aten::matmul", Args().tensor({8, 16}).tensor({15, 4}).inputs()));
}

TEST(MatmulFormula, LinearCountsBiasPerOutputElement) {
  // x[2,5,16], w[4,16], b[4]: MACs = 2*5*4*16 = 640; FLOPs = 1280 + 2*5*4 = 1320
  FlopCount c = count("aten::linear", Args().tensor({2, 5, 16}).tensor({4, 16}).tensor({4}));
  EXPECT_EQ(c.macs, 640u);
  EXPECT_EQ(c.flops, 1320u);
  FlopCount no_bias = count("aten::linear", Args().tensor({2, 5, 16}).tensor({4, 16}).none());
  EXPECT_EQ(no_bias.flops, 1280u);
}

TEST(MatmulFormula, MvAddmvDot) {
  EXPECT_EQ(count("aten::mv", Args().tensor({8, 16}).tensor({16})).flops, 2u * 8 * 16);
  EXPECT_EQ(count("aten::addmv", Args().tensor({8}).tensor({8, 16}).tensor({16})).flops,
            2u * 8 * 16 + 8);
  EXPECT_EQ(count("aten::dot", Args().tensor({16}).tensor({16})).flops, 32u);
}

// ---- Convolution ---------------------------------------------------------------------------

TEST(ConvFormula, Conv2dStridedPaddedWithBias) {
  // x[2,3,32,32], w[8,3,3,3], stride 2, pad 1: out = (32 + 2 - 2 - 1)/2 + 1 = 16
  // MACs = N*Cout*Hout*Wout*(Cin/g)*kh*kw = 2*8*16*16*3*3*3 = 110592
  // FLOPs = 2*MACs + bias (2*8*16*16 = 4096) = 225280
  FlopCount c = count("aten::conv2d", Args()
                                          .tensor({2, 3, 32, 32})
                                          .tensor({8, 3, 3, 3})
                                          .tensor({8})
                                          .list({2, 2})
                                          .list({1, 1})
                                          .list({1, 1})
                                          .i(1));
  EXPECT_EQ(c.macs, 110592u);
  EXPECT_EQ(c.flops, 225280u);
}

TEST(ConvFormula, GroupedDilatedConv2d) {
  // x[1,8,20,20], w[8,2,3,3] (groups 4), dilation 2, pad 0, stride 1:
  // out = (20 - 2*2 - 1)/1 + 1 = 16; MACs = 1*8*16*16*(8/4)*3*3 = 36864; no bias
  FlopCount c = count(
      "aten::conv2d",
      Args().tensor({1, 8, 20, 20}).tensor({8, 2, 3, 3}).none().list({1}).list({0}).list({2}).i(4));
  EXPECT_EQ(c.macs, 36864u);
  EXPECT_EQ(c.flops, 73728u);
}

TEST(ConvFormula, Conv1dAndConv3d) {
  // conv1d: x[4,6,50], w[10,6,5], stride 1, pad 0: out = 46; MACs = 4*10*46*6*5 = 55200
  EXPECT_EQ(
      count("aten::conv1d",
            Args().tensor({4, 6, 50}).tensor({10, 6, 5}).none().list({1}).list({0}).list({1}).i(1))
          .macs,
      55200u);
  // conv3d: x[1,2,8,8,8], w[4,2,3,3,3], pad 1: out 8^3; MACs = 4*512*2*27 = 110592
  EXPECT_EQ(count("aten::conv3d", Args()
                                      .tensor({1, 2, 8, 8, 8})
                                      .tensor({4, 2, 3, 3, 3})
                                      .none()
                                      .list({1})
                                      .list({1})
                                      .list({1})
                                      .i(1))
                .macs,
            110592u);
}

TEST(ConvFormula, SamePaddingString) {
  // padding="same": out = in = 10x10; MACs = 1*4*100*3*9 = 10800
  EXPECT_EQ(count("aten::conv2d", Args()
                                      .tensor({1, 3, 10, 10})
                                      .tensor({4, 3, 3, 3})
                                      .none()
                                      .list({1})
                                      .str('s')
                                      .list({1})
                                      .i(1))
                .macs,
            10800u);
}

TEST(ConvFormula, TransposedCountsInputPositions) {
  // conv_transpose2d: x[1,4,5,5], w[4,2,3,3] (Cin=4, Cout/g=2), stride 2, pad 1, output_padding 1
  // MACs = N * prod(input spatial) * Cin * (Cout/g) * k*k = 1*25*4*2*9 = 1800
  // out = (5-1)*2 - 2 + 1*(3-1) + 1 + 1 = 10; bias = 1*2*10*10 = 200; FLOPs = 3600 + 200
  FlopCount c = count("aten::conv_transpose2d", Args()
                                                    .tensor({1, 4, 5, 5})
                                                    .tensor({4, 2, 3, 3})
                                                    .tensor({2})
                                                    .list({2})
                                                    .list({1})
                                                    .list({1})
                                                    .i(1)
                                                    .list({1}));
  EXPECT_EQ(c.macs, 1800u);
  EXPECT_EQ(c.flops, 3800u);
  // the same through aten::convolution(..., transposed=true, output_padding, groups)
  FlopCount g = count("aten::convolution", Args()
                                               .tensor({1, 4, 5, 5})
                                               .tensor({4, 2, 3, 3})
                                               .tensor({2})
                                               .list({2})
                                               .list({1})
                                               .list({1})
                                               .b(true)
                                               .list({1})
                                               .i(1));
  EXPECT_EQ(g.flops, 3800u);
}

TEST(ConvFormula, BackendVariantsUseTheirArgumentOrder) {
  // mkldnn_convolution(input, weight, bias, padding, stride, dilation, groups)
  // x[1,3,8,8], w[4,3,3,3], pad 1, stride 1: out 8x8; MACs = 4*64*27 = 6912
  EXPECT_EQ(count("aten::mkldnn_convolution", Args()
                                                  .tensor({1, 3, 8, 8})
                                                  .tensor({4, 3, 3, 3})
                                                  .none()
                                                  .list({1, 1})
                                                  .list({1, 1})
                                                  .list({1, 1})
                                                  .i(1))
                .macs,
            6912u);
}

// ---- Normalisation -------------------------------------------------------------------------

TEST(NormFormula, BatchNormTrainingAndEval) {
  // numel = 2*4*5*5 = 200
  Args train = Args()
                   .tensor({2, 4, 5, 5})
                   .tensor({4})
                   .tensor({4})
                   .tensor({4})
                   .tensor({4})
                   .b(true)
                   .d(0.1)
                   .d(1e-5)
                   .b(false);
  EXPECT_EQ(count("aten::batch_norm", train).flops, 5u * 200);  // training, affine
  Args eval = Args()
                  .tensor({2, 4, 5, 5})
                  .tensor({4})
                  .tensor({4})
                  .tensor({4})
                  .tensor({4})
                  .b(false)
                  .d(0.1)
                  .d(1e-5)
                  .b(false);
  EXPECT_EQ(count("aten::batch_norm", eval).flops, 2u * 200);  // eval, affine
  Args eval_plain = Args().tensor({2, 4, 5, 5}).none().none().tensor({4}).tensor({4}).b(false);
  EXPECT_EQ(count("aten::batch_norm", eval_plain).flops, 1u * 200);
  Args train_plain = Args().tensor({2, 4, 5, 5}).none().none().none().none().b(true);
  EXPECT_EQ(count("aten::batch_norm", train_plain).flops, 4u * 200);
  EXPECT_EQ(count("aten::batch_norm", eval).macs, 0u);
}

TEST(NormFormula, LayerGroupInstanceNorm) {
  // layer_norm(x[2,8,16], [16], w, b): 5 * 256 = 1280; without affine 4 * 256
  EXPECT_EQ(
      count("aten::layer_norm", Args().tensor({2, 8, 16}).list({16}).tensor({16}).tensor({16}))
          .flops,
      1280u);
  EXPECT_EQ(count("aten::layer_norm", Args().tensor({2, 8, 16}).list({16}).none().none()).flops,
            1024u);
  // group_norm(x[2,8,4,4], 2 groups, w, b): 5 * 256
  EXPECT_EQ(
      count("aten::group_norm", Args().tensor({2, 8, 4, 4}).i(2).tensor({8}).tensor({8})).flops,
      1280u);
  // instance_norm(x, w, b, ...): affine 5 * 256
  EXPECT_EQ(count("aten::instance_norm", Args().tensor({2, 8, 4, 4}).tensor({8}).tensor({8})).flops,
            1280u);
}

// ---- Pointwise, activations, softmax, reductions ----------------------------------------------

TEST(PointwiseFormula, BinaryOpsBroadcastRightAligned) {
  // [4,1,6] + [5,1]: broadcast = [4,5,6] = 120
  EXPECT_EQ(count("aten::add", Args().tensor({4, 1, 6}).tensor({5, 1}).i(1)).flops, 120u);
  EXPECT_EQ(count("aten::mul_", Args().tensor({4, 5, 6}).tensor({6})).flops, 120u);
  // tensor op scalar: numel(self)
  EXPECT_EQ(count("aten::div", Args().tensor({7, 3}).d(2.0)).flops, 21u);
  EXPECT_EQ(count("aten::sub", Args().tensor({7, 3}).tensor({7, 3}).i(1)).flops, 21u);
  // incompatible shapes: n/a rather than a wrong number
  EXPECT_FALSE(compute_flops("aten::add", Args().tensor({3, 4}).tensor({5}).inputs()));
}

TEST(PointwiseFormula, AddcmulIsTwoPerElement) {
  EXPECT_EQ(
      count("aten::addcmul_", Args().tensor({10, 10}).tensor({10, 10}).tensor({10, 10}).d(1.0))
          .flops,
      200u);
  EXPECT_EQ(count("aten::addcdiv", Args().tensor({10, 10}).tensor({10}).tensor({1}).d(1.0)).flops,
            200u);
}

TEST(PointwiseFormula, ActivationsSoftmaxReductionsAreNumelOfInput) {
  Args x = Args().tensor({3, 5, 7});  // 105 elements
  for (const char* op :
       {"aten::relu", "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh", "aten::elu",
        "aten::leaky_relu", "aten::hardswish", "aten::softmax", "aten::log_softmax", "aten::sum",
        "aten::mean", "aten::exp", "aten::sqrt", "aten::rsqrt", "aten::pow"}) {
    EXPECT_EQ(count(op, x).flops, 105u) << op;
    EXPECT_EQ(count(op, x).macs, 0u) << op;
  }
}

// ---- Pooling, upsampling, attention, zero-FLOP ----------------------------------------------

TEST(PoolFormula, PoolingIsNumelOfInput) {
  EXPECT_EQ(count("aten::max_pool2d", Args().tensor({1, 64, 112, 112}).list({3, 3})).flops,
            64u * 112 * 112);
  EXPECT_EQ(count("aten::adaptive_avg_pool2d", Args().tensor({2, 512, 7, 7}).list({1, 1})).flops,
            2u * 512 * 49);
}

TEST(PoolFormula, UpsampleIsNumelOfOutput) {
  // [2,3,8,8] -> output_size [16,16]: 2*3*16*16 = 1536
  EXPECT_EQ(count("aten::upsample_nearest2d", Args().tensor({2, 3, 8, 8}).list({16, 16})).flops,
            1536u);
  // .vec overload: output_size None, scale_factors [2.0, 3.0]: 2*3*16*24 = 2304
  EXPECT_EQ(count("aten::upsample_bilinear2d",
                  Args().tensor({2, 3, 8, 8}).none().b(false).dlist({2.0, 3.0}))
                .flops,
            2304u);
}

TEST(PoolFormula, UpsampleBackwardIsNumelOfTheGradient) {
  // upsample_nearest2d_backward(grad_output[2,3,16,16], output_size, input_size): one
  // accumulation per gradient element: 2*3*16*16 = 1536
  EXPECT_EQ(count("aten::upsample_nearest2d_backward",
                  Args().tensor({2, 3, 16, 16}).list({16, 16}).list({2, 3, 8, 8}))
                .flops,
            1536u);
  EXPECT_EQ(count("aten::upsample_bilinear2d_backward",
                  Args().tensor({1, 4, 6, 6}).list({6, 6}).list({1, 4, 3, 3}).b(false))
                .flops,
            144u);
}

// ---- Reductions and losses ------------------------------------------------------------------

TEST(ReductionFormula, VarAndStdCountTheirUnfusedOps) {
  // var(x[4,16], dim=[-1]): n = 64, r = 4: mean 64 + subtract 64 + square 64 + sum 64 + divide 4
  EXPECT_EQ(count("aten::var", Args().tensor({4, 16}).list({-1}).b(true).b(true)).flops,
            4u * 64 + 4);
  // std adds a square root per output: 4*64 + 2*4
  EXPECT_EQ(count("aten::std", Args().tensor({4, 16}).list({1}).b(true).b(false)).flops,
            4u * 64 + 2 * 4);
  // over every dimension (var(x, unbiased)): r = 1
  EXPECT_EQ(count("aten::var", Args().tensor({4, 16}).b(true)).flops, 4u * 64 + 1);
  EXPECT_EQ(count("aten::var_mean", Args().tensor({2, 3, 5}).list({0, 2})).flops, 4u * 30 + 3);
  // a dimension out of range: not understood, n/a
  EXPECT_FALSE(compute_flops("aten::var", Args().tensor({4, 16}).list({2}).inputs()));
}

TEST(ReductionFormula, LogsumexpMaxAndArgmax) {
  // logsumexp(x[8,10], dim=[1]): max 80 + subtract 80 + exp 80 + sum 80, log 8 + add 8
  EXPECT_EQ(count("aten::logsumexp", Args().tensor({8, 10}).list({1}).b(false)).flops,
            4u * 80 + 2 * 8);
  // argmax / max over a dimension: one comparison per input element
  EXPECT_EQ(count("aten::argmax", Args().tensor({8, 10}).i(1).b(false)).flops, 80u);
  EXPECT_EQ(count("aten::max", Args().tensor({8, 10}).i(1).b(false)).flops, 80u);
  EXPECT_EQ(count("aten::amax", Args().tensor({8, 10}).list({0}).b(false)).flops, 80u);
  // max(a, b) elementwise: the broadcast [8,10] = 80
  EXPECT_EQ(count("aten::max", Args().tensor({8, 10}).tensor({1, 10})).flops, 80u);
}

TEST(LossFormula, MseAndL1CountSubtractElementwiseAndReduce) {
  // mse_loss(input[4,5], target[4,5], reduction=mean): subtract 20, square 20, mean 20
  EXPECT_EQ(count("aten::mse_loss", Args().tensor({4, 5}).tensor({4, 5}).i(1)).flops, 60u);
  // reduction none: no reduction pass
  EXPECT_EQ(count("aten::mse_loss", Args().tensor({4, 5}).tensor({4, 5}).i(0)).flops, 40u);
  // l1 with a broadcast target [1,5]: n = 20
  EXPECT_EQ(count("aten::l1_loss", Args().tensor({4, 5}).tensor({1, 5}).i(2)).flops, 60u);
  // backward(grad, input, target, reduction): 3 per element
  EXPECT_EQ(
      count("aten::mse_loss_backward", Args().tensor({}).tensor({4, 5}).tensor({4, 5}).i(1)).flops,
      60u);
  EXPECT_EQ(
      count("aten::l1_loss_backward", Args().tensor({}).tensor({4, 5}).tensor({4, 5}).i(1)).flops,
      60u);
}

// Issue 45: ops met in public programs that listed as "no formula".
TEST(PointwiseFormula, ComparisonsAreOnePerElementExceptOnIntegers) {
  // x[4,8] < y[8]: broadcast 32 comparisons; in-place too
  EXPECT_EQ(count("aten::lt", Args().tensor({4, 8}).tensor({8})).flops, 32u);
  EXPECT_EQ(count("aten::ge_", Args().tensor({4, 8}).d(0.5)).flops, 32u);
  // token ids == 0 (a padding mask): integers, no floating-point operation
  EXPECT_EQ(count("aten::eq", Args().tensor({2, 16}, DType::kInt64).i(0)).flops, 0u);
  EXPECT_EQ(count("aten::ne", Args().tensor({2, 16}, DType::kBool).b(false)).flops, 0u);
}

TEST(ReductionFormula, AnyAllAndNorms) {
  // any/all of a floating x[3,5]: 15 comparisons with zero; of a boolean mask: none
  EXPECT_EQ(count("aten::any", Args().tensor({3, 5})).flops, 15u);
  EXPECT_EQ(count("aten::all", Args().tensor({3, 5}, DType::kBool).i(1).b(false)).flops, 0u);
  // norm(x[4,8]) (p = 2): square 32, sum 32, one square root: 65
  EXPECT_EQ(count("aten::norm", Args().tensor({4, 8}).d(2.0)).flops, 65u);
  EXPECT_EQ(count("aten::norm", Args().tensor({4, 8})).flops, 65u);  // p not captured: 2
  // over dim 1, keepdim: 64 + 4 square roots
  EXPECT_EQ(count("aten::norm", Args().tensor({4, 8}).d(2.0).list({1}).b(true)).flops, 68u);
  // p = 1: abs 32, sum 32; p = inf: abs 32, max 32; p = 3: abs, pow, sum 96 + pow(1/3) 1
  EXPECT_EQ(count("aten::norm", Args().tensor({4, 8}).i(1)).flops, 64u);
  EXPECT_EQ(count("aten::norm", Args().tensor({4, 8}).d(INFINITY)).flops, 64u);
  EXPECT_EQ(count("aten::norm", Args().tensor({4, 8}).d(3.0)).flops, 97u);
  // linalg_vector_norm(x, ord = 2, dim = None, keepdim, dtype) and frobenius_norm(x, [0, 1])
  EXPECT_EQ(
      count("aten::linalg_vector_norm", Args().tensor({4, 8}).d(2.0).none().b(false).none()).flops,
      65u);
  EXPECT_EQ(count("aten::frobenius_norm", Args().tensor({4, 8}).list({0, 1}).b(false)).flops, 65u);
}

TEST(LossFormula, BinaryCrossEntropyAndNllLoss) {
  // binary_cross_entropy(x[4,8], t[4,8], weight?, reduction): 8 per element (log x, 1 - x,
  // log(1 - x), 1 - t, two products, add, negate), + 1 to reduce, + 1 with a weight
  auto bce = [](Args a) { return count("aten::binary_cross_entropy", a).flops; };
  EXPECT_EQ(bce(Args().tensor({4, 8}).tensor({4, 8}).none().i(1)), 9u * 32);
  EXPECT_EQ(bce(Args().tensor({4, 8}).tensor({4, 8}).tensor({4, 8}).i(1)), 10u * 32);
  EXPECT_EQ(bce(Args().tensor({4, 8}).tensor({4, 8}).none().i(0)), 8u * 32);
  // its backward(grad, x, t, weight?, reduction) (pytorch/examples' DCGAN, n/a before): grad (x -
  // t) / max((1 - x) x, eps): 6 per element, + 1 with a weight, + 1 for the mean's division
  auto bce_bwd = [](Args a) { return count("aten::binary_cross_entropy_backward", a).flops; };
  EXPECT_EQ(bce_bwd(Args().tensor({}).tensor({4, 8}).tensor({4, 8}).none().i(1)), 7u * 32);
  EXPECT_EQ(bce_bwd(Args().tensor({4, 8}).tensor({4, 8}).tensor({4, 8}).tensor({8}).i(0)), 7u * 32);
  EXPECT_EQ(bce_bwd(Args().tensor({4, 8}).tensor({4, 8}).tensor({4, 8}).none().i(2)), 6u * 32);
  // with logits (the GAN loss of koba-jon/pytorch_cpp's pix2pix, n/a before): (1 - t) x +
  // softplus(-x): 6 per element, + 1 to reduce, + 1 with a weight, + 3 with a pos_weight
  auto logits = [](Args a) { return count("aten::binary_cross_entropy_with_logits", a).flops; };
  EXPECT_EQ(logits(Args().tensor({4, 8}).tensor({4, 8}).none().none().i(1)), 7u * 32);
  EXPECT_EQ(logits(Args().tensor({4, 8}).tensor({4, 8}).tensor({4, 8}).tensor({8}).i(0)), 10u * 32);
  // its backward(grad, x, t, weight?, pos_weight?, reduction): (sigmoid(x) - t) * grad: 3 per
  // element, + 1 for the mean's division
  EXPECT_EQ(count("aten::binary_cross_entropy_with_logits_backward",
                  Args().tensor({}).tensor({4, 8}).tensor({4, 8}).none().none().i(1))
                .flops,
            4u * 32);
  // sgn (an L1 loss's backward, n/a before): one per element
  EXPECT_EQ(count("aten::sgn", Args().tensor({4, 8})).flops, 32u);
  // nll_loss(x[4,10], target[4], weight?, reduction, ignore_index): per target the negation and
  // the reduction's add (+ the weight's product and the total weight's add); a mean divides once
  auto nll = [](const char* op, Args a) { return count(op, a).flops; };
  EXPECT_EQ(
      nll("aten::nll_loss", Args().tensor({4, 10}).tensor({4}, DType::kInt64).none().i(1).i(-100)),
      4u * 2 + 1);
  EXPECT_EQ(nll("aten::nll_loss_forward",
                Args().tensor({4, 10}).tensor({4}, DType::kInt64).tensor({10}).i(1).i(-100)),
            4u * 4 + 1);
  EXPECT_EQ(nll("aten::nll_loss_nd",
                Args().tensor({4, 10}).tensor({4}, DType::kInt64).none().i(0).i(-100)),
            4u);
  // segmentation: scores[2,5,3,3], target[2,3,3]: 18 targets, summed
  EXPECT_EQ(nll("aten::nll_loss2d",
                Args().tensor({2, 5, 3, 3}).tensor({2, 3, 3}, DType::kInt64).none().i(2).i(-100)),
            18u * 2);
  // nll_loss_backward(grad_out[], x[4,10], target[4], weight?, reduction, ignore_index,
  // total_weight): per target -grad_out (negate, multiply: 2) (* weight[t]: +1) (/ total: +1)
  EXPECT_EQ(nll("aten::nll_loss_backward", Args()
                                               .tensor({})
                                               .tensor({4, 10})
                                               .tensor({4}, DType::kInt64)
                                               .none()
                                               .i(1)
                                               .i(-100)
                                               .tensor({})),
            4u * 3);
  EXPECT_EQ(nll("aten::nll_loss_backward", Args()
                                               .tensor({4})
                                               .tensor({4, 10})
                                               .tensor({4}, DType::kInt64)
                                               .tensor({10})
                                               .i(0)
                                               .i(-100)
                                               .tensor({})),
            4u * 3);
  EXPECT_EQ(nll("aten::nll_loss2d_backward", Args()
                                                 .tensor({})
                                                 .tensor({2, 5, 3, 3})
                                                 .tensor({2, 3, 3}, DType::kInt64)
                                                 .tensor({5})
                                                 .i(1)
                                                 .i(-100)
                                                 .tensor({})),
            18u * 4);
}

TEST(AttentionFormula, SdpaIsTwoGemmsPlusSoftmax) {
  // q[2,4,16,8], k[2,4,32,8], v[2,4,32,8]: B = 8, L = 16, S = 32, E = Ev = 8
  // MACs = 8*16*32*8 + 8*16*32*8 = 65536; FLOPs = 2*65536 + 8*16*32 = 135168
  FlopCount c = count("aten::scaled_dot_product_attention",
                      Args().tensor({2, 4, 16, 8}).tensor({2, 4, 32, 8}).tensor({2, 4, 32, 8}));
  EXPECT_EQ(c.macs, 65536u);
  EXPECT_EQ(c.flops, 135168u);
}

// The numbers FlopCounterMode gives (PyTorch 2.6, tests/fcm_attention.py) for q[2,3,5,8],
// k[2,3,7,8], v[2,3,7,8]: forward 6720 for the flash and efficient kernels, causal or not;
// backward 16800. By hand: B = 6, L = 5, S = 7, E = Ev = 8, scores = 6*5*7 = 210;
// forward MACs = 210*(8 + 8) = 3360, 2*MACs = 6720; backward MACs = 210*(3*8 + 2*8) = 8400,
// 2*MACs = 16800. FLOPs add the softmax (forward) or its backward: 210.
TEST(AttentionFormula, FusedKernelsCountAsFlopCounterMode) {
  Args q_k_v = Args().tensor({2, 3, 5, 8}).tensor({2, 3, 7, 8}).tensor({2, 3, 7, 8});
  for (const char* op :
       {"aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_attention_math"}) {
    FlopCount c = count(op, q_k_v);
    EXPECT_EQ(2 * c.macs, 6720u) << op;
    EXPECT_EQ(c.flops, 6720u + 210) << op;
  }
  // grad_out, query, key, value, out, logsumexp
  Args backward = Args()
                      .tensor({2, 3, 5, 8})
                      .tensor({2, 3, 5, 8})
                      .tensor({2, 3, 7, 8})
                      .tensor({2, 3, 7, 8})
                      .tensor({2, 3, 5, 8})
                      .tensor({2, 3, 5});
  for (const char* op : {"aten::_scaled_dot_product_flash_attention_backward",
                         "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                         "aten::_scaled_dot_product_efficient_attention_backward",
                         "aten::_scaled_dot_product_cudnn_attention_backward"}) {
    FlopCount c = count(op, backward);
    EXPECT_EQ(2 * c.macs, 16800u) << op;
    EXPECT_EQ(c.flops, 16800u + 210) << op;
  }
}

// Causal masks (SDPA's is_causal: top-left aligned, query i sees keys 0..i). Per (batch, head),
// pairs kept: L(L+1)/2 when L <= S, S(S+1)/2 + (L - S)S when L > S. A masked pair costs what a
// pair costs: forward 2(E + Ev) + 1 FLOPs (two GEMMs and the softmax), backward 2(3E + 2Ev) + 1.
TEST(AttentionFormula, CausalMaskedPairsTopLeft) {
  auto sdpa = [](int64_t l, int64_t s, bool causal) {
    // scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal): B*H = 2*3 = 6, E 8
    return count("aten::scaled_dot_product_attention", Args()
                                                           .tensor({2, 3, l, 8})
                                                           .tensor({2, 3, s, 8})
                                                           .tensor({2, 3, s, 8})
                                                           .none()
                                                           .d(0.0)
                                                           .b(causal));
  };
  // L = S = 5: kept 15 of 25, masked 10 per head; 6 heads: 60 pairs of 2*16 + 1 = 33 FLOPs.
  FlopCount sq = sdpa(5, 5, true);
  EXPECT_EQ(sq.flops, 6u * 25 * 33);  // the dense count is unchanged
  EXPECT_EQ(sq.masked_macs, 60u * 16);
  EXPECT_EQ(sq.masked_flops, 60u * 33);
  EXPECT_TRUE(sq.kernel_unknown);  // the composite op: its kernel runs unobserved
  EXPECT_EQ(sq.skipped_flops, 0u);
  // L = 4 < S = 10: kept 4*5/2 = 10 of 40, masked 30.
  EXPECT_EQ(sdpa(4, 10, true).masked_flops, 6u * 30 * 33);
  // L = 10 > S = 4: kept 4*5/2 + 6*4 = 34 of 40, masked 6.
  EXPECT_EQ(sdpa(10, 4, true).masked_flops, 6u * 6 * 33);
  // Not causal: nothing masked, the kernel question does not arise.
  FlopCount dense = sdpa(5, 5, false);
  EXPECT_EQ(dense.masked_flops, 0u);
  EXPECT_FALSE(dense.kernel_unknown);
  // The math backend computes the whole square: nothing skipped, its kernel known.
  FlopCount math = count(
      "aten::_scaled_dot_product_attention_math",
      Args().tensor({2, 3, 5, 8}).tensor({2, 3, 5, 8}).tensor({2, 3, 5, 8}).none().d(0.0).b(true));
  EXPECT_EQ(math.masked_flops, 60u * 33);
  EXPECT_EQ(math.skipped_flops, 0u);
  EXPECT_FALSE(math.kernel_unknown);
}

// An explicit mask (docs/report.md, "Masks"): dense unless its values were read; read, each of
// its entries stands for B*H*L*S / (its elements) pairs. q[2, 3, 6, 8], k, v[2, 3, 6, 8]: 6 heads,
// L = S = 6, 36 pairs per head, 2*16 + 1 = 33 FLOPs a pair forward, 2*(24 + 16) + 1 = 81 backward.
TEST(AttentionFormula, MaskTensorReadOrCountedDense) {
  auto sdpa = [](std::vector<int64_t> mask, std::optional<uint64_t> kept) {
    Args a = Args()
                 .tensor({2, 3, 6, 8})
                 .tensor({2, 3, 6, 8})
                 .tensor({2, 3, 6, 8})
                 .tensor(mask, DType::kBool);
    if (kept) a.kept(*kept);
    return count("aten::scaled_dot_product_attention", a.d(0.0).b(false));
  };
  // Not read: dense, and said so.
  FlopCount unread = sdpa({6, 6}, std::nullopt);
  EXPECT_EQ(unread.flops, 6u * 36 * 33);
  EXPECT_EQ(unread.masked_flops, 0u);
  EXPECT_TRUE(unread.mask_unread);
  EXPECT_FALSE(unread.mask_read);
  // A sliding window of 2 over a causal mask, [6, 6]: query i keeps keys i-1 and i, 1 + 5*2 = 11
  // of 36 entries; each entry stands for 6 heads: 6 * (36 - 11) = 150 masked pairs.
  FlopCount window = sdpa({6, 6}, 11);
  EXPECT_TRUE(window.mask_read);
  EXPECT_FALSE(window.mask_unread);
  EXPECT_EQ(window.flops, 6u * 36 * 33);  // the dense count is unchanged
  EXPECT_EQ(window.masked_macs, 150u * 16);
  EXPECT_EQ(window.masked_flops, 150u * 33);
  EXPECT_EQ(window.skipped_flops, 0u);  // no kernel skips by a mask's values
  EXPECT_FALSE(window.kernel_unknown);
  // Padding, [2, 1, 1, 6]: batch 0 keeps 6 keys, batch 1 keeps 4 (8 of 12 entries); each entry
  // stands for 3 heads * 6 queries = 18 pairs: 4 * 18 = 72 masked.
  EXPECT_EQ(sdpa({2, 1, 1, 6}, 8).masked_flops, 72u * 33);
  // A mask that does not broadcast evenly, or a kept count above its elements: not understood,
  // counted dense.
  EXPECT_TRUE(sdpa({5, 6}, 3).mask_unread);
  EXPECT_EQ(sdpa({6, 6}, 37).masked_flops, 0u);
  // The CPU flash kernel's backward (grad_out, q, k, v, out, logsumexp, dropout_p, is_causal, *,
  // attn_mask): its mask at 8.
  FlopCount bwd = count("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                        Args()
                            .tensor({2, 3, 6, 8})
                            .tensor({2, 3, 6, 8})
                            .tensor({2, 3, 6, 8})
                            .tensor({2, 3, 6, 8})
                            .tensor({2, 3, 6, 8})
                            .tensor({2, 3, 6})
                            .d(0.0)
                            .b(false)
                            .tensor({6, 6}, DType::kBool)
                            .kept(11));
  EXPECT_EQ(bwd.masked_flops, 150u * 81);
  EXPECT_EQ(bwd.skipped_flops, 0u);
}

// PyTorch 2.6's CPU flash kernel (FlashAttentionKernel.cpp): query blocks of 256 (L >= 768), key
// blocks of 512 (S >= 512); with is_causal, query block [m, m + 256) computes whole key blocks up
// to the one holding key m + 255. L = S = 1024, one head: blocks 0 and 1 compute keys [0, 512),
// blocks 2 and 3 all 1024 keys: 256 * (512 + 512 + 1024 + 1024) = 786,432 pairs of 1,048,576;
// the causal count is 1024 * 1025 / 2 = 524,800.
TEST(AttentionFormula, CpuFlashKernelSkipsWholeKeyBlocks) {
  // _scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p, is_causal), E = 4
  Args q_k_v =
      Args().tensor({1, 1, 1024, 4}).tensor({1, 1, 1024, 4}).tensor({1, 1, 1024, 4}).d(0.0).b(true);
  FlopCount c = count("aten::_scaled_dot_product_flash_attention_for_cpu", q_k_v);
  const uint64_t per_pair = 2 * (4 + 4) + 1;
  EXPECT_EQ(c.flops, 1048576u * per_pair);
  EXPECT_EQ(c.masked_flops, (1048576u - 524800u) * per_pair);
  EXPECT_EQ(c.skipped_flops, (1048576u - 786432u) * per_pair);
  EXPECT_FALSE(c.kernel_unknown);
  // Its backward (grad_out, q, k, v, out, logsumexp, dropout_p, is_causal): the same blocks,
  // 2(3E + 2Ev) + 1 = 41 FLOPs a pair.
  Args backward = Args()
                      .tensor({1, 1, 1024, 4})
                      .tensor({1, 1, 1024, 4})
                      .tensor({1, 1, 1024, 4})
                      .tensor({1, 1, 1024, 4})
                      .tensor({1, 1, 1024, 4})
                      .tensor({1, 1, 1024})
                      .d(0.0)
                      .b(true);
  FlopCount b = count("aten::_scaled_dot_product_flash_attention_for_cpu_backward", backward);
  EXPECT_EQ(b.masked_flops, (1048576u - 524800u) * 41);
  EXPECT_EQ(b.skipped_flops, (1048576u - 786432u) * 41);
  // L = S = 100 (query blocks of 32, one key block of 100): every block computes all 100 keys,
  // nothing skipped although 4,950 pairs are masked.
  FlopCount small = count(
      "aten::_scaled_dot_product_flash_attention_for_cpu",
      Args().tensor({1, 1, 100, 4}).tensor({1, 1, 100, 4}).tensor({1, 1, 100, 4}).d(0.0).b(true));
  EXPECT_EQ(small.masked_flops, 4950u * per_pair);
  EXPECT_EQ(small.skipped_flops, 0u);
  // L = S = 600 (query blocks of 64, key blocks of 512): the 8 blocks starting at m <= 448 need
  // keys below 512 only (m + 64 <= 512) and compute 512; the block at 512 and the last, 576..599
  // (24 rows), compute all 600.
  // computed = 8*64*512 + 64*600 + 24*600 = 262,144 + 38,400 + 14,400 = 314,944 of 360,000.
  FlopCount mid = count(
      "aten::_scaled_dot_product_flash_attention_for_cpu",
      Args().tensor({1, 1, 600, 4}).tensor({1, 1, 600, 4}).tensor({1, 1, 600, 4}).d(0.0).b(true));
  EXPECT_EQ(mid.skipped_flops, (360000u - 314944u) * per_pair);
}

TEST(AttentionFormula, CudaKernelsTakeHeadsAfterLength) {
  // _flash_attention_forward(query[B, L, H, E], key[B, S, H, E], value[B, S, H, Ev]): the same
  // attention as above, laid out [2,5,3,8] / [2,7,3,8]: 2*MACs = 6720; backward 16800.
  FlopCount f = count("aten::_flash_attention_forward",
                      Args().tensor({2, 5, 3, 8}).tensor({2, 7, 3, 8}).tensor({2, 7, 3, 8}));
  EXPECT_EQ(2 * f.macs, 6720u);
  FlopCount e = count("aten::_efficient_attention_forward",
                      Args().tensor({2, 5, 3, 8}).tensor({2, 7, 3, 8}).tensor({2, 7, 3, 8}));
  EXPECT_EQ(2 * e.macs, 6720u);
  for (const char* op :
       {"aten::_flash_attention_backward", "aten::_efficient_attention_backward"}) {
    FlopCount b = count(
        op,
        Args().tensor({2, 5, 3, 8}).tensor({2, 5, 3, 8}).tensor({2, 7, 3, 8}).tensor({2, 7, 3, 8}));
    EXPECT_EQ(2 * b.macs, 16800u) << op;
  }
  // nested (jagged) inputs are packed [sum of lengths, H, E]: their lengths are not in the shapes
  EXPECT_FALSE(
      compute_flops("aten::_flash_attention_forward",
                    Args().tensor({12, 3, 8}).tensor({14, 3, 8}).tensor({14, 3, 8}).inputs())
          .has_value());
}

// Dropout in training (berndporr/mobilenet_libtorch's classifier: 0 FLOPs in the forward while its
// backward's mul counted 5,120): as ATen's _dropout_impl computes it, the noise scaled by
// 1 / (1 - p) and the input times the noise; nothing in eval or with p = 0.
TEST(PointwiseFormula, DropoutCountsWhatTrainingComputes) {
  auto flops = [](const char* op, Args a) { return compute_flops(op, a.inputs())->flops; };
  // x[4, 8]: 32 elements, the noise 32: 32 divisions + 32 products
  EXPECT_EQ(flops("aten::dropout", Args().tensor({4, 8}).d(0.2).b(true)), 32u + 32u);
  EXPECT_EQ(flops("aten::dropout_", Args().tensor({4, 8}).d(0.2).b(true)), 32u + 32u);
  EXPECT_EQ(flops("aten::dropout", Args().tensor({4, 8}).d(0.2).b(false)), 0u);  // eval
  EXPECT_EQ(flops("aten::dropout", Args().tensor({4, 8}).d(0.0).b(true)), 0u);   // p = 0
  EXPECT_EQ(flops("aten::dropout", Args().tensor({4, 8}).d(1.0).b(true)), 32u);  // x * 0
  // feature dropout on [2, 3, 4, 4]: 96 products, a noise of 2 x 3 feature maps scaled
  EXPECT_EQ(flops("aten::feature_dropout", Args().tensor({2, 3, 4, 4}).d(0.5).b(true)), 96u + 6u);
  // alpha dropout: noise - 1, x alpha a, + alpha a p, x a (4 per noise element); x and + (2 per
  // element)
  EXPECT_EQ(flops("aten::alpha_dropout", Args().tensor({4, 8}).d(0.1).b(true)), 2u * 32 + 4u * 32);
  EXPECT_EQ(flops("aten::feature_alpha_dropout", Args().tensor({2, 3, 4, 4}).d(0.1).b(true)),
            2u * 96 + 4u * 6);
  // native_dropout (the fused path): input x mask x scale; train None is training
  EXPECT_EQ(flops("aten::native_dropout", Args().tensor({4, 8}).d(0.2).b(true)), 2u * 32);
  EXPECT_EQ(flops("aten::native_dropout", Args().tensor({4, 8}).d(0.2).none()), 2u * 32);
  EXPECT_EQ(flops("aten::native_dropout", Args().tensor({4, 8}).d(0.2).b(false)), 0u);
  // its backward: grad x mask x scale
  EXPECT_EQ(flops("aten::native_dropout_backward",
                  Args().tensor({4, 8}).tensor({4, 8}, DType::kBool).d(1.25)),
            2u * 32);
}

TEST(ZeroFormula, ViewsCopiesIndexingAreAKnownZero) {
  for (const char* op :
       {"aten::view", "aten::t", "aten::transpose", "aten::contiguous", "aten::embedding",
        "aten::index_select", "aten::cat", "aten::bernoulli_", "aten::empty", "aten::copy_",
        // an LSTM's gates (unsafe_chunk > unsafe_split); backward of indexing an RNN's output
        "aten::unsafe_chunk", "aten::unsafe_split", "aten::slice_backward", "aten::select_backward",
        // padding: a TorchScript model records the pad kernels themselves, the C++ frontend the
        // aten::pad / _pad_enum around them; both count 0
        "aten::reflection_pad2d", "aten::replication_pad1d", "aten::pad",
        // the C++ frontend's mse_loss (and other losses) broadcast their operands first: views
        "aten::broadcast_tensors", "aten::broadcast_to"}) {
    std::optional<FlopCount> c = compute_flops(op, Args().tensor({4, 4}).inputs());
    ASSERT_TRUE(c.has_value()) << op;  // a known 0, not "no formula"
    EXPECT_EQ(c->flops, 0u) << op;
  }
  EXPECT_FALSE(has_formula("aten::cumsum"));  // no formula: n/a, never 0
  EXPECT_FALSE(has_formula("aten::einsum"));  // counted through its parts
}

// Scatter-like ops (a Dice loss's one-hot target.scatter_(1, index, 1), listed n/a in a
// LibtorchSegmentation training step): a copy into place is 0 FLOPs, an accumulation one add per
// element accumulated.
TEST(ZeroFormula, ScattersCopyAndScatterAddsAddPerElement) {
  // scatter_(self[2,4,8,8], dim 1, index[2,1,8,8], value 1): a known 0
  auto copy = compute_flops(
      "aten::scatter_",
      Args().tensor({2, 4, 8, 8}).i(1).tensor({2, 1, 8, 8}, DType::kInt64).d(1.0).inputs());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->flops, 0u);
  // scatter_add_(self[10,5], 0, index[3,5], src[3,5]): 15 adds
  auto add = compute_flops(
      "aten::scatter_add_",
      Args().tensor({10, 5}).i(0).tensor({3, 5}, DType::kInt64).tensor({3, 5}).inputs());
  ASSERT_TRUE(add);
  EXPECT_EQ(add->flops, 15u);
  // index_add_(self[10,5], 0, index[4], source[4,5]): 20 adds
  auto index_add =
      compute_flops("aten::index_add_",
                    Args().tensor({10, 5}).i(0).tensor({4}, DType::kInt64).tensor({4, 5}).inputs());
  ASSERT_TRUE(index_add);
  EXPECT_EQ(index_add->flops, 20u);
  // index_put_(self, indices, values[6], accumulate): 6 adds when accumulating, else 0
  for (bool accumulate : {false, true}) {
    Args put;
    put.tensor({10}).optional_tensor_list({6}, 48).tensor({6}).b(accumulate);
    EXPECT_EQ(compute_flops("aten::index_put_", put.inputs())->flops, accumulate ? 6u : 0u);
  }
}

// ---- Registry and arithmetic ----------------------------------------------------------------

TEST(FormulaRegistry, UserFormulaRegistersAndOverridesBuiltin) {
  register_formula("myops::fused_thing", [](const OpInputs& in) -> std::optional<FlopCount> {
    return FlopCount{3 * in.numel(0), in.numel(0)};
  });
  EXPECT_EQ(count("myops::fused_thing", Args().tensor({10})).flops, 30u);
  EXPECT_TRUE(unregister_formula("myops::fused_thing"));
  EXPECT_FALSE(has_formula("myops::fused_thing"));

  FormulaFn original = [](const OpInputs&) -> std::optional<FlopCount> { return std::nullopt; };
  register_formula("aten::relu", [](const OpInputs& in) -> std::optional<FlopCount> {
    return FlopCount{7 * in.numel(0), 0};
  });
  EXPECT_EQ(count("aten::relu", Args().tensor({2})).flops, 14u);
  // restore the built-in convention (numel) for the other tests
  register_formula("aten::relu", [](const OpInputs& in) -> std::optional<FlopCount> {
    return FlopCount{in.numel(0), 0};
  });
  EXPECT_THROW(register_formula("", original), Error);
  EXPECT_THROW(register_formula("x::y", FormulaFn{}), Error);
}

std::optional<FlopCount> macro_formula(const OpInputs& in) { return FlopCount{in.numel(0) + 1, 0}; }
FLOPSPROF_REGISTER_FORMULA("testops::macro_registered", macro_formula);

TEST(FormulaRegistry, MacroRegistersAtStartup) {
  EXPECT_EQ(count("testops::macro_registered", Args().tensor({4})).flops, 5u);
}

// Inputs found by fuzzing (issue 10): reachable at stop, because formulas run on the recorded
// arguments even of ops LibTorch then rejects. Each is an overflow (Error: reported as n/a with a
// problem line) or n/a, never undefined behaviour and never a wrong count.
TEST(FuzzedInputs, ConvOutputSizeOverflowIsReported) {
  const int64_t big = INT64_MAX;
  // conv1d of length INT64_MAX, padding 2^62: (L + 2p - (k-1) - 1) / s + 1 > 2^63
  EXPECT_THROW(compute_flops("aten::conv1d", Args()
                                                 .tensor({1, 1, big})
                                                 .tensor({1, 1, 1})
                                                 .none()
                                                 .list({1})
                                                 .list({int64_t{1} << 62})
                                                 .list({1})
                                                 .i(1)
                                                 .inputs()),
               Error);
  // conv_transpose1d, stride 2 on INT64_MAX: (L - 1) * 2 + ... > 2^63
  EXPECT_THROW(compute_flops("aten::conv_transpose1d", Args()
                                                           .tensor({1, 1, big})
                                                           .tensor({1, 1, 1})
                                                           .none()
                                                           .list({2})
                                                           .list({0})
                                                           .list({0})
                                                           .i(1)
                                                           .list({1})
                                                           .inputs()),
               Error);
}

TEST(FuzzedInputs, UpsampleWithAbsurdScalesIsNotZero) {
  auto up = [](double scale) {
    return compute_flops("aten::upsample_nearest2d",
                         Args().tensor({1, 1, 4, 4}).none().dlist({scale, scale}).inputs());
  };
  EXPECT_EQ(up(2.0)->flops, 1u * 1 * 8 * 8);  // N*C*H'*W'
  EXPECT_FALSE(up(std::nan("")).has_value());
  EXPECT_THROW(up(1e300), Error);
}

TEST(FuzzedInputs, LinearWithAnEmptyContractionStillAddsTheBias) {
  // [3,0] x [4,0]^T + b[4]: 0 MACs, 3*4 = 12 bias adds
  std::optional<FlopCount> c =
      compute_flops("aten::linear", Args().tensor({3, 0}).tensor({4, 0}).tensor({4}).inputs());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->macs, 0u);
  EXPECT_EQ(c->flops, 12u);
}

TEST(CheckedArithmetic, OverflowThrows) {
  EXPECT_EQ(checked_mul(1ull << 31, 1ull << 31), 1ull << 62);
  EXPECT_THROW(checked_mul(1ull << 32, 1ull << 32), Error);
  EXPECT_THROW(checked_add(UINT64_MAX, 1), Error);
  // a GEMM whose count does not fit in 64 bits throws instead of wrapping
  EXPECT_THROW(
      compute_flops("aten::mm",
                    Args().tensor({1ll << 22, 1ll << 22}).tensor({1ll << 22, 1ll << 22}).inputs()),
      Error);
}

TEST(OpInputs, AccessorsAreTotal) {
  Args a = Args().tensor({2, 3}).i(5).b(true).d(1.5).list({1, 2});
  OpInputs in = a.inputs();
  EXPECT_EQ(in.numel(0), 6u);
  EXPECT_EQ(in.integer(1), 5);
  EXPECT_EQ(in.boolean(2), true);
  EXPECT_EQ(in.scalar(3), 1.5);
  EXPECT_EQ(in.int_list(4).size(), 2u);
  EXPECT_EQ(in.int_list(1).size(), 1u);  // a single int reads as a list of one
  EXPECT_EQ(in[99].kind, ArgKind::kNone);
  EXPECT_EQ(in.numel(99), 0u);
  EXPECT_EQ(in.shape(1).size(), 0u);
}

}  // namespace
// The one reader of dtype names (the profile reader, the peaks given as text, the peaks cache):
// every dtype's name reads back as that dtype; other text reads as none.
TEST(Formulas, EveryDtypeNameReadsBackAndNothingElseDoes) {
  for (size_t d = 0; d < static_cast<size_t>(flopsprof::DType::kCount); ++d) {
    const auto dtype = static_cast<flopsprof::DType>(d);
    EXPECT_EQ(flopsprof::dtype_from_name(flopsprof::dtype_name(dtype)), dtype)
        << flopsprof::dtype_name(dtype);
  }
  EXPECT_EQ(flopsprof::dtype_from_name("fp33"), std::nullopt);
  EXPECT_EQ(flopsprof::dtype_from_name(""), std::nullopt);
  EXPECT_EQ(flopsprof::dtype_from_name("FP32"), std::nullopt);  // names are lower case
}

}  // namespace flopsprof
