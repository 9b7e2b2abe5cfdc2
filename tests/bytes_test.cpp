// Bytes moved per op (the compulsory-traffic convention, docs/report.md "Bytes moved"), counted by
// hand from shapes for every op family with a FLOP formula and for the gather/scatter, in-place,
// broadcast and view cases; which ops of a profile count bytes; the roofline's arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "aggregation/aggregate.h"
#include "aggregation/device_peaks.h"
#include "flopsprof/roofline.h"
#include "formulas/common.h"
#include "test_args.h"
#include "test_names.h"

namespace flopsprof::detail {
namespace {

using flopsprof::testing::Args;

constexpr DType f32 = DType::kFloat32, i64 = DType::kInt64;

ByteCount bytes(const char* op, const Args& args) {
  BytesFn f = find_bytes_rule(op);
  if (!f) throw Error(std::string("no bytes rule for ") + op);
  std::optional<ByteCount> b = f(args.inputs());
  if (!b) throw Error(std::string("the bytes rule of ") + op + " declined");
  return *b;
}

// The bytes rule's answer (nullopt: it declined, reads only); throws when there is no rule.
std::optional<ByteCount> bytes_or_none(const char* op, const Args& args) {
  BytesFn f = find_bytes_rule(op);
  if (!f) throw Error(std::string("no bytes rule for ") + op);
  return f(args.inputs());
}

// ---- The two examples ----------------------------------------------------------------

TEST(Bytes, LinearOnABatchIsItsInputsWeightsBiasAndOutput) {
  // Linear(16, 32) on x[2,5,16] fp32: reads x 160 + W 512 + b 32 floats, writes 320 floats:
  // (704 + 320) * 4 = 4,096 bytes
  ByteCount b = bytes("aten::linear", Args().tensor({2, 5, 16}).tensor({32, 16}).tensor({32}));
  EXPECT_EQ(b.read, 704u * 4);
  EXPECT_EQ(b.written, 320u * 4);
  EXPECT_EQ(b.read + b.written, 4096u);
  // The same layer as LibTorch 1.13 runs it on [10,16]: addmm(b, x, W^T), the transpose a view
  // of W (its memory: 512 floats)
  ByteCount a = bytes("aten::addmm",
                      Args().tensor({32}).tensor({10, 16}).tensor({16, 32}).strided().i(1).i(1));
  EXPECT_EQ(a.read + a.written, 4096u);
}

TEST(Bytes, EmbeddingReadsTheRowsItTouchesNotTheTable) {
  // Embedding(1000, 16) on int64 ids [2,5]: reads the ids 10*8 = 80 and 10 rows of 16 floats
  // (640), writes 10*16 floats (640): 1,360 bytes
  ByteCount b = bytes("aten::embedding", Args().tensor({1000, 16}).tensor({2, 5}, i64).i(-1));
  EXPECT_EQ(b.read, 80u + 640u);
  EXPECT_EQ(b.written, 640u);
  EXPECT_EQ(b.read + b.written, 1360u);
  // More lookups than rows: at most the table is read (3 rows), every lookup written
  ByteCount c = bytes("aten::embedding", Args().tensor({3, 4}).tensor({10}, i64));
  EXPECT_EQ(c.read, 80u + 3u * 4 * 4);
  EXPECT_EQ(c.written, 10u * 4 * 4);
}

TEST(Bytes, EqualReadsNothingWhenTheSizesDiffer) {
  // MultiheadAttention compares query with key: a cross-attention's [23,8,512] and [24,8,512]
  // differ in size, and ATen answers false before reading (it was counted 770,048 bytes).
  EXPECT_EQ(bytes("aten::equal", Args().tensor({23, 8, 512}).tensor({24, 8, 512})).read, 0u);
  // Same sizes: both are read, 2 * 23*8*512 floats = 376,832 * 4 bytes, nothing written
  ByteCount same = bytes("aten::equal", Args().tensor({23, 8, 512}).tensor({23, 8, 512}));
  EXPECT_EQ(same.read, 2u * 23 * 8 * 512 * 4);
  EXPECT_EQ(same.written, 0u);
}

// ---- GEMM family -----------------------------------------------------------------------------

TEST(MatmulBytes, OutputsShapedByTheProduct) {
  // mm [8,16] x [16,4]: reads 128 + 64 floats, writes [8,4]
  ByteCount mm = bytes("aten::mm", Args().tensor({8, 16}).tensor({16, 4}));
  EXPECT_EQ(mm.read, (128u + 64u) * 4);
  EXPECT_EQ(mm.written, 32u * 4);
  // bmm [3,8,16] x [3,16,4]: reads 384 + 192, writes [3,8,4] = 96
  ByteCount bmm = bytes("aten::bmm", Args().tensor({3, 8, 16}).tensor({3, 16, 4}));
  EXPECT_EQ(bmm.read, (384u + 192u) * 4);
  EXPECT_EQ(bmm.written, 96u * 4);
  // baddbmm(input[3,8,4], ...) also reads the input: 96 more
  ByteCount baddbmm =
      bytes("aten::baddbmm", Args().tensor({3, 8, 4}).tensor({3, 8, 16}).tensor({3, 16, 4}));
  EXPECT_EQ(baddbmm.read, (96u + 384u + 192u) * 4);
  EXPECT_EQ(baddbmm.written, 96u * 4);
  // matmul [2,1,8,16] x [5,16,4]: output [2,5,8,4] = 320
  ByteCount mat = bytes("aten::matmul", Args().tensor({2, 1, 8, 16}).tensor({5, 16, 4}));
  EXPECT_EQ(mat.read, (256u + 320u) * 4);
  EXPECT_EQ(mat.written, 320u * 4);
  // matmul of a vector [16] and [16,4]: output [4]
  EXPECT_EQ(bytes("aten::matmul", Args().tensor({16}).tensor({16, 4})).written, 4u * 4);
  // mv [8,16] x [16]: output [8]; dot: a scalar
  EXPECT_EQ(bytes("aten::mv", Args().tensor({8, 16}).tensor({16})).written, 8u * 4);
  EXPECT_EQ(bytes("aten::dot", Args().tensor({16}).tensor({16})).written, 4u);
  // bf16: 2 bytes an element
  ByteCount h =
      bytes("aten::mm", Args().tensor({8, 16}, DType::kBFloat16).tensor({16, 4}, DType::kBFloat16));
  EXPECT_EQ(h.read + h.written, (128u + 64u + 32u) * 2);
  // addmm_ in place: reads self [8,4], a, b; writes self
  ByteCount ip = bytes("aten::addmm_", Args().tensor({8, 4}).tensor({8, 16}).tensor({16, 4}));
  EXPECT_EQ(ip.read, (32u + 128u + 64u) * 4);
  EXPECT_EQ(ip.written, 32u * 4);
}

// ---- Convolution -----------------------------------------------------------------------------

TEST(ConvBytes, OutputFromStridePaddingAndChannels) {
  // conv2d x[1,3,8,8], w[4,3,3,3], b[4], stride 1, padding 1: output [1,4,8,8] = 256
  Args same = Args()
                  .tensor({1, 3, 8, 8})
                  .tensor({4, 3, 3, 3})
                  .tensor({4})
                  .list({1, 1})
                  .list({1, 1})
                  .list({1, 1})
                  .i(1);
  ByteCount b = bytes("aten::conv2d", same);
  EXPECT_EQ(b.read, (192u + 108u + 4u) * 4);
  EXPECT_EQ(b.written, 256u * 4);
  // stride 2, no padding: (8 - 3) / 2 + 1 = 3 per side: [1,4,3,3] = 36
  Args strided = Args()
                     .tensor({1, 3, 8, 8})
                     .tensor({4, 3, 3, 3})
                     .undefined()
                     .list({2, 2})
                     .list({0, 0})
                     .list({1, 1})
                     .i(1);
  ByteCount s = bytes("aten::conv2d", strided);
  EXPECT_EQ(s.read, (192u + 108u) * 4);
  EXPECT_EQ(s.written, 36u * 4);
  // _convolution, transposed (w[3,4,3,3]: Cout = 4): (8-1)*2 - 2*1 + (3-1) + 1 + 1 = 16 per side
  Args t = Args()
               .tensor({1, 3, 8, 8})
               .tensor({3, 4, 3, 3})
               .undefined()
               .list({2, 2})
               .list({1, 1})
               .list({1, 1})
               .b(true)
               .list({1, 1})
               .i(1);
  EXPECT_EQ(bytes("aten::_convolution", t).written, 4u * 16 * 16 * 4);
}

TEST(ConvBytes, BackwardWritesTheGradientsTheMaskAsksFor) {
  // grad_out[1,4,8,8] (256), input[1,3,8,8] (192), weight[4,3,3,3] (108), bias of 4
  auto args = [](int64_t in, int64_t w, int64_t b) {
    return Args()
        .tensor({1, 4, 8, 8})
        .tensor({1, 3, 8, 8})
        .tensor({4, 3, 3, 3})
        .list({4})
        .list({1, 1})
        .list({1, 1})
        .list({1, 1})
        .b(false)
        .list({0, 0})
        .i(1)
        .list({in, w, b});
  };
  ByteCount all = bytes("aten::convolution_backward", args(1, 1, 1));
  EXPECT_EQ(all.read, (256u + 108u + 192u) * 4);  // grad_out, weight (for dx), input (for dW)
  EXPECT_EQ(all.written, (192u + 108u + 4u) * 4);
  ByteCount w = bytes("aten::convolution_backward", args(0, 1, 0));  // a first layer: dW only
  EXPECT_EQ(w.read, (256u + 192u) * 4);
  EXPECT_EQ(w.written, 108u * 4);
}

// ---- Normalisation ---------------------------------------------------------------------------

TEST(NormBytes, OutputsStatisticsAndRunningStats) {
  // layer_norm x[2,5,16], weight[16], bias[16]: reads 160 + 32, writes 160
  ByteCount ln = bytes("aten::layer_norm",
                       Args().tensor({2, 5, 16}).list({16}).tensor({16}).tensor({16}).d(1e-5));
  EXPECT_EQ(ln.read, 192u * 4);
  EXPECT_EQ(ln.written, 160u * 4);
  // native_layer_norm also writes mean and rstd: one per row (10) each
  ByteCount nln = bytes("aten::native_layer_norm",
                        Args().tensor({2, 5, 16}).list({16}).tensor({16}).tensor({16}).d(1e-5));
  EXPECT_EQ(nln.written, (160u + 2 * 10) * 4);
  // batch_norm eval, x[2,3,4,4] (96), weight, bias, running mean and var of 3: writes 96
  auto bn = [](bool training) {
    return Args()
        .tensor({2, 3, 4, 4})
        .tensor({3})
        .tensor({3})
        .tensor({3})
        .tensor({3})
        .b(training)
        .d(0.1)
        .d(1e-5)
        .b(false);
  };
  ByteCount eval = bytes("aten::batch_norm", bn(false));
  EXPECT_EQ(eval.read, (96u + 12u) * 4);
  EXPECT_EQ(eval.written, 96u * 4);
  // training: the running mean and var are updated too (6 floats)
  EXPECT_EQ(bytes("aten::batch_norm", bn(true)).written, (96u + 6u) * 4);
  // native_batch_norm in training also returns save_mean and save_invstd (3 each)
  EXPECT_EQ(bytes("aten::native_batch_norm", bn(true)).written, (96u + 6u + 6u) * 4);
  // native_layer_norm_backward(grad[2,5,16], x, [16], mean[2,5,1], rstd[2,5,1], w, b, mask)
  ByteCount back = bytes("aten::native_layer_norm_backward", Args()
                                                                 .tensor({2, 5, 16})
                                                                 .tensor({2, 5, 16})
                                                                 .list({16})
                                                                 .tensor({2, 5, 1})
                                                                 .tensor({2, 5, 1})
                                                                 .tensor({16})
                                                                 .tensor({16})
                                                                 .list({1, 1, 1}));
  EXPECT_EQ(back.read, (160u + 160u + 10u + 10u + 16u + 16u) * 4);
  EXPECT_EQ(back.written, (160u + 16u + 16u) * 4);
}

// ---- Elementwise, broadcast, in place, reductions, losses --------------------------------------

TEST(PointwiseBytes, BroadcastInPlaceRepeatedAndExpandedInputs) {
  // x[2,5,32] + b[32]: b is read at its own 32 floats, the output is [2,5,32]
  ByteCount add = bytes("aten::add", Args().tensor({2, 5, 32}).tensor({32}).i(1));
  EXPECT_EQ(add.read, (320u + 32u) * 4);
  EXPECT_EQ(add.written, 320u * 4);
  // add(x, b, alpha=1, out=o): o is written, not read (the same bytes as without out=)
  ByteCount add_out =
      bytes("aten::add", Args().tensor({2, 5, 32}).tensor({32}).i(1).tensor({2, 5, 32}));
  EXPECT_EQ(add_out.read, (320u + 32u) * 4);
  EXPECT_EQ(add_out.written, 320u * 4);
  // in place: reads self and b, writes self
  ByteCount add_ = bytes("aten::add_", Args().tensor({2, 5, 32}).tensor({32}).i(1));
  EXPECT_EQ(add_.read, (320u + 32u) * 4);
  EXPECT_EQ(add_.written, 320u * 4);
  // x * x: one tensor, read once
  ByteCount sq = bytes("aten::mul", Args().tensor({4, 8}).tensor({4, 8}).repeated());
  EXPECT_EQ(sq.read, 32u * 4);
  EXPECT_EQ(sq.written, 32u * 4);
  // x[4,8] * e where e = y[1,8].expand(4,8): e's memory is 8 floats
  ByteCount ex = bytes("aten::mul", Args().tensor({4, 8}).tensor({4, 8}).expanded(8));
  EXPECT_EQ(ex.read, (32u + 8u) * 4);
  EXPECT_EQ(ex.written, 32u * 4);
  // an int64 tensor times 0.5 is fp32
  EXPECT_EQ(bytes("aten::mul", Args().tensor({4}, i64).d(0.5)).written, 4u * 4);
  // comparisons write bool
  EXPECT_EQ(bytes("aten::eq", Args().tensor({4, 8}).tensor({8})).written, 32u);
  // addcmul(self[8], t1[8], t2[1]): reads 8 + 8 + 1, writes 8
  ByteCount acm = bytes("aten::addcmul", Args().tensor({8}).tensor({8}).tensor({1}).i(1));
  EXPECT_EQ(acm.read, 17u * 4);
  EXPECT_EQ(acm.written, 8u * 4);
  // relu: one in, one out; backward: grad_output's shape
  EXPECT_EQ(bytes("aten::relu", Args().tensor({10})).written, 40u);
  ByteCount tb = bytes("aten::threshold_backward", Args().tensor({10}).tensor({10}).i(0));
  EXPECT_EQ(tb.read, 80u);
  EXPECT_EQ(tb.written, 40u);
}

TEST(PointwiseBytes, ReductionsSoftmaxAndLosses) {
  // sum over dim 1 of [2,3,4]: [2,4]
  ByteCount s = bytes("aten::sum", Args().tensor({2, 3, 4}).list({1}).b(false).none());
  EXPECT_EQ(s.read, 24u * 4);
  EXPECT_EQ(s.written, 8u * 4);
  // sum of everything: a scalar; of an int tensor: an int64 scalar
  EXPECT_EQ(bytes("aten::sum", Args().tensor({2, 3, 4}).none()).written, 4u);
  EXPECT_EQ(bytes("aten::sum", Args().tensor({2, 3}, DType::kInt32).none()).written, 8u);
  // mean over the last dim, keepdim: [2,3,1]
  EXPECT_EQ(bytes("aten::mean", Args().tensor({2, 3, 4}).list({-1}).b(true).none()).written,
            6u * 4);
  // softmax keeps the shape; _softmax(fp16, half_to_float) writes fp32
  EXPECT_EQ(bytes("aten::softmax", Args().tensor({2, 8}).i(1).none()).written, 16u * 4);
  EXPECT_EQ(bytes("aten::_softmax", Args().tensor({2, 8}, DType::kFloat16).i(1).b(true)).written,
            16u * 4);
  // max over a dim: values [2] and int64 indices [2]
  EXPECT_EQ(bytes("aten::max", Args().tensor({2, 3}).i(1).b(false)).written, 2u * 4 + 2u * 8);
  // topk(k=3) of [4,10]: 12 values and 12 indices
  EXPECT_EQ(bytes("aten::topk", Args().tensor({4, 10}).i(3).i(-1).b(true).b(true)).written,
            12u * (4 + 8));
  // nll_loss_forward(logp[4,10], target[4], mean): reads the targets (32) and one element of
  // logp per target (16), writes the loss and the total weight
  ByteCount nll = bytes("aten::nll_loss_forward",
                        Args().tensor({4, 10}).tensor({4}, i64).undefined().i(1).i(-100));
  EXPECT_EQ(nll.read, 32u + 16u);
  EXPECT_EQ(nll.written, 8u);
  // nll_loss_backward(grad_out[], logp[4,10], target[4], weight[10], mean, -100, total[]):
  // reads grad_out 4, the targets 32, the weight 40 and the total weight 4; writes the whole
  // gradient, 4 x 10 fp32 (zeroed, then scattered into): 160
  ByteCount nb = bytes(
      "aten::nll_loss_backward",
      Args().tensor({}).tensor({4, 10}).tensor({4}, i64).tensor({10}).i(1).i(-100).tensor({}));
  EXPECT_EQ(nb.read, 4u + 32 + 40 + 4);
  EXPECT_EQ(nb.written, 160u);
  // mse_loss(none) writes the elementwise loss, mean a scalar
  EXPECT_EQ(bytes("aten::mse_loss", Args().tensor({4, 3}).tensor({4, 3}).i(0)).written, 48u);
  EXPECT_EQ(bytes("aten::mse_loss", Args().tensor({4, 3}).tensor({4, 3}).i(1)).written, 4u);
  // embedding_dense_backward(grad[2,5,16], ids[2,5], 1000 rows): the whole [1000,16] gradient
  ByteCount eb = bytes("aten::embedding_dense_backward",
                       Args().tensor({2, 5, 16}).tensor({2, 5}, i64).i(1000).i(-1).b(false));
  EXPECT_EQ(eb.read, 160u * 4 + 80u);
  EXPECT_EQ(eb.written, 16000u * 4);
}

TEST(ReductionAndLossBytes, VarLogsumexpExtremaAndLossesWithTheirBackward) {
  // The families of reduction.cpp and loss.cpp (fp32). var(x[2,3,4], dim [1], correction,
  // keepdim=false): reads 24 floats, writes [2,4] = 8; var_mean writes two such tensors
  Args v = Args().tensor({2, 3, 4}).list({1}).i(1).b(false);
  ByteCount var = bytes("aten::var", v);
  EXPECT_EQ(var.read, 24u * 4);
  EXPECT_EQ(var.written, 8u * 4);
  EXPECT_EQ(bytes("aten::std", v).written, 8u * 4);
  EXPECT_EQ(bytes("aten::var_mean", v).written, 2u * 8 * 4);
  EXPECT_EQ(bytes("aten::std_mean", v).written, 2u * 8 * 4);
  // logsumexp over dim 2: [2,3] = 6 floats; amax over dims 0 and 1: [4]
  EXPECT_EQ(bytes("aten::logsumexp", Args().tensor({2, 3, 4}).list({2}).b(false)).written, 24u);
  EXPECT_EQ(bytes("aten::amax", Args().tensor({2, 3, 4}).list({0, 1}).b(false)).written, 16u);
  EXPECT_EQ(bytes("aten::amin", Args().tensor({2, 3, 4}).list({0, 1}).b(false)).written, 16u);
  // argmax over dim 1 of [2,3]: 2 int64; of everything: one int64
  EXPECT_EQ(bytes("aten::argmax", Args().tensor({2, 3}).i(1).b(false)).written, 16u);
  EXPECT_EQ(bytes("aten::argmin", Args().tensor({2, 3}).none().b(false)).written, 8u);
  // max / min of everything: one float; elementwise max(a[2,3], b[3]): reads 6 + 3, writes 6
  EXPECT_EQ(bytes("aten::min", Args().tensor({2, 3})).written, 4u);
  ByteCount mx = bytes("aten::max", Args().tensor({2, 3}).tensor({3}));
  EXPECT_EQ(mx.read, 9u * 4);
  EXPECT_EQ(mx.written, 6u * 4);
  // l1_loss(input[4,5], target[1,5], sum): reads 20 + 5 floats, writes one
  ByteCount l1 = bytes("aten::l1_loss", Args().tensor({4, 5}).tensor({1, 5}).i(2));
  EXPECT_EQ(l1.read, 25u * 4);
  EXPECT_EQ(l1.written, 4u);
  // backward(grad[], input[4,5], target[4,5], mean): reads 1 + 20 + 20 floats, writes the
  // input's gradient, 20
  for (const char* op : {"aten::mse_loss_backward", "aten::l1_loss_backward"}) {
    ByteCount b = bytes(op, Args().tensor({}).tensor({4, 5}).tensor({4, 5}).i(1));
    EXPECT_EQ(b.read, 41u * 4) << op;
    EXPECT_EQ(b.written, 20u * 4) << op;
  }
  // upsample_nearest2d_backward(grad[2,3,16,16], output_size, input_size [2,3,8,8]): reads the
  // gradient (1,536 floats), writes the input's (2*3*8*8 = 384)
  ByteCount up = bytes("aten::upsample_nearest2d_backward",
                       Args().tensor({2, 3, 16, 16}).list({16, 16}).list({2, 3, 8, 8}));
  EXPECT_EQ(up.read, 1536u * 4);
  EXPECT_EQ(up.written, 384u * 4);
  EXPECT_EQ(bytes("aten::upsample_bilinear2d_backward",
                  Args().tensor({1, 4, 6, 6}).list({6, 6}).list({1, 4, 3, 3}).b(false))
                .written,
            36u * 4);
  // reflection_pad2d(x[1,2,4,4], (1, 1, 2, 2)): width 4+2, height 4+4: [1,2,8,6] = 96 floats;
  // replication_pad1d(x[2,3,5], (2, 0)): [2,3,7]
  ByteCount rp = bytes("aten::reflection_pad2d", Args().tensor({1, 2, 4, 4}).list({1, 1, 2, 2}));
  EXPECT_EQ(rp.read, 32u * 4);
  EXPECT_EQ(rp.written, 96u * 4);
  EXPECT_EQ(bytes("aten::replication_pad1d", Args().tensor({2, 3, 5}).list({2, 0})).written,
            42u * 4);
}

// ---- Pooling ---------------------------------------------------------------------------------

TEST(PoolBytes, OutputSizesAsPyTorchComputesThem) {
  // max_pool2d x[1,2,8,8], kernel 3, stride 2, padding 1: (8 + 2 - 2 - 1) / 2 + 1 = 4
  Args mp =
      Args().tensor({1, 2, 8, 8}).list({3, 3}).list({2, 2}).list({1, 1}).list({1, 1}).b(false);
  ByteCount b = bytes("aten::max_pool2d", mp);
  EXPECT_EQ(b.read, 128u * 4);
  EXPECT_EQ(b.written, 32u * 4);
  // with indices: 32 int64 more
  EXPECT_EQ(bytes("aten::max_pool2d_with_indices", mp).written, 32u * 4 + 32u * 8);
  // ceil_mode on 7 with kernel 2, stride 2: floor (7-2)/2+1 = 3, ceil 4
  auto seven = [](bool ceil) {
    return Args().tensor({1, 1, 7, 7}).list({2, 2}).list({2, 2}).list({0, 0}).list({1, 1}).b(ceil);
  };
  EXPECT_EQ(bytes("aten::max_pool2d", seven(false)).written, 9u * 4);
  EXPECT_EQ(bytes("aten::max_pool2d", seven(true)).written, 16u * 4);
  // ResNet's stem pool: [1,64,112,112], kernel 3, stride 2, padding 1 -> 56 x 56
  Args stem =
      Args().tensor({1, 64, 112, 112}).list({3, 3}).list({2, 2}).list({1, 1}).list({1, 1}).b(false);
  EXPECT_EQ(bytes("aten::max_pool2d", stem).written, 64u * 56 * 56 * 4);
  // avg_pool2d with the stride defaulting to the kernel: [1,2,4,4]
  EXPECT_EQ(
      bytes("aten::avg_pool2d",
            Args().tensor({1, 2, 8, 8}).list({2, 2}).list({}).list({0, 0}).b(false).b(true).none())
          .written,
      32u * 4);
  // adaptive_avg_pool2d to 1x1: one value per channel
  EXPECT_EQ(bytes("aten::adaptive_avg_pool2d", Args().tensor({1, 2, 8, 8}).list({1, 1})).written,
            8u);
  // backward: the input's gradient
  EXPECT_EQ(
      bytes("aten::avg_pool2d_backward", Args().tensor({1, 2, 4, 4}).tensor({1, 2, 8, 8})).written,
      128u * 4);
}

// ---- Attention and fused kernels -------------------------------------------------------------

TEST(AttentionBytes, OutputAndLogSumExp) {
  // sdpa q[2,4,8,16], k[2,4,10,16], v[2,4,10,32]: output [2,4,8,32] = 2048
  Args a = Args().tensor({2, 4, 8, 16}).tensor({2, 4, 10, 16}).tensor({2, 4, 10, 32});
  ByteCount b = bytes("aten::scaled_dot_product_attention", a);
  EXPECT_EQ(b.read, (1024u + 1280u + 2560u) * 4);
  EXPECT_EQ(b.written, 2048u * 4);
  // the CPU flash kernel also writes the log-sum-exp, one fp32 per query row (2*4*8)
  EXPECT_EQ(bytes("aten::_scaled_dot_product_flash_attention_for_cpu", a).written,
            2048u * 4 + 64u * 4);
  // the math backend also returns the attention weights [2,4,8,10]
  EXPECT_EQ(bytes("aten::_scaled_dot_product_attention_math", a).written, 2048u * 4 + 640u * 4);
  // backward writes dq, dk, dv
  Args g = Args()
               .tensor({2, 4, 8, 32})
               .tensor({2, 4, 8, 16})
               .tensor({2, 4, 10, 16})
               .tensor({2, 4, 10, 32});
  EXPECT_EQ(bytes("aten::_scaled_dot_product_flash_attention_for_cpu_backward", g).written,
            (1024u + 1280u + 2560u) * 4);
}

TEST(FusedBytes, RnnLayerAndFastPaths) {
  // mkldnn_rnn_layer: x[5,2,8], w_ih[16,8], w_hh[16,4], biases of 16, hx and cx [2,4], LSTM
  // (mode 2), hidden 4: writes the output [5,2,4] (40) and hy, cy (8 each)
  Args lstm = Args()
                  .tensor({5, 2, 8})
                  .tensor({16, 8})
                  .tensor({16, 4})
                  .tensor({16})
                  .tensor({16})
                  .tensor({2, 4})
                  .tensor({2, 4})
                  .b(false)
                  .list({})
                  .i(2)
                  .i(4)
                  .i(1)
                  .b(true)
                  .b(false)
                  .b(false)
                  .b(false);
  ByteCount b = bytes("aten::mkldnn_rnn_layer", lstm);
  EXPECT_EQ(b.read, (80u + 128u + 64u + 16u + 16u + 8u + 8u) * 4);
  EXPECT_EQ(b.written, (40u + 8u + 8u) * 4);
  // _cudnn_rnn: x[5,2,8], 8 weights of 1024 bytes in all, stride0 4, weight_buf[256], hx and cx
  // [2,2,4], LSTM, hidden 4, no projection, 2 layers: writes the output [5,2,4] (40), hy, cy (16)
  Args rnn;
  rnn.tensor({5, 2, 8}).tensor_list(8, 1024).i(4).tensor({256}).tensor({2, 2, 4}).tensor({2, 2, 4});
  rnn.i(2).i(4).i(0).i(2).b(false).d(0.0).b(false).b(false).list({}).undefined();
  ByteCount r = bytes("aten::_cudnn_rnn", rnn);
  EXPECT_EQ(r.read, (80u + 256u + 16u + 16u) * 4 + 1024u);
  EXPECT_EQ(r.written, (40u + 16u + 16u) * 4);
  // _cudnn_rnn_backward: the gradients of x (80), hx, cx (16 each) and the weights (1024 bytes)
  Args back;
  back.tensor({5, 2, 8}).tensor_list(8, 1024).i(4).tensor({256}).tensor({2, 2, 4});
  back.tensor({2, 2, 4}).tensor({5, 2, 4}).tensor({5, 2, 4}).undefined().undefined().i(2).i(4);
  EXPECT_EQ(bytes("aten::_cudnn_rnn_backward", back).written, (80u + 16u + 16u) * 4 + 1024u);
  // _addmm_activation(b[32], x[10,16], w[16,32]): [10,32]
  EXPECT_EQ(bytes("aten::_addmm_activation", Args().tensor({32}).tensor({10, 16}).tensor({16, 32}))
                .written,
            320u * 4);
}

// ---- Copies, gathers, scatters, factories (no FLOPs, bytes all the same) ---------------------

TEST(ZeroFlopBytes, CopiesMoveDataViewsDoNot) {
  // reshape of a contiguous tensor is a view; of a transposed one, a copy
  EXPECT_EQ(bytes("aten::reshape", Args().tensor({4, 6}).list({24})).written, 0u);
  ByteCount r = bytes("aten::reshape", Args().tensor({4, 6}).strided().list({24}));
  EXPECT_EQ(r.read, 96u);
  EXPECT_EQ(r.written, 96u);
  EXPECT_EQ(bytes("aten::contiguous", Args().tensor({4, 6}).i(0)).read, 0u);
  // clone reads and writes; copy_ reads src and writes self (fp16 into fp32)
  ByteCount cl = bytes("aten::clone", Args().tensor({10}).none());
  EXPECT_EQ(cl.read + cl.written, 80u);
  ByteCount cp = bytes("aten::copy_", Args().tensor({10}).tensor({10}, DType::kFloat16).b(false));
  EXPECT_EQ(cp.read, 20u);
  EXPECT_EQ(cp.written, 40u);
  // to(dtype=fp16) converts: reads 10 floats, writes 10 halves; to(fp32) of fp32 is self
  ByteCount to = bytes("aten::to", Args().tensor({10}).i(5).b(false).b(false).none());
  EXPECT_EQ(to.read, 40u);
  EXPECT_EQ(to.written, 20u);
  ByteCount same = bytes("aten::to", Args().tensor({10}).i(6).b(false).b(false).none());
  EXPECT_EQ(same.read + same.written, 0u);
  // cat of three tensors holding 600 bytes: reads them, writes as much
  ByteCount cat = bytes("aten::cat", Args().tensor_list(3, 600).i(0));
  EXPECT_EQ(cat.read, 600u);
  EXPECT_EQ(cat.written, 600u);
  // constant_pad_nd x[2,3,4] by (1, 2) on the last dim: [2,3,7]
  EXPECT_EQ(bytes("aten::constant_pad_nd", Args().tensor({2, 3, 4}).list({1, 2}).d(0)).written,
            42u * 4);
  // dropout in training reads and writes; in eval it returns its input (nothing moves)
  EXPECT_EQ(bytes("aten::dropout", Args().tensor({10}).d(0.1).b(true)).written, 40u);
  EXPECT_EQ(bytes("aten::dropout", Args().tensor({10}).d(0.1).b(false)).written, 0u);
  // zero_ writes self and reads nothing
  ByteCount z = bytes("aten::zero_", Args().tensor({10}));
  EXPECT_EQ(z.read, 0u);
  EXPECT_EQ(z.written, 40u);
  // factories write what they make: zeros([2,3]) fp32, arange(10) int64, arange(0., 1., .25)
  EXPECT_EQ(bytes("aten::zeros", Args().list({2, 3}).none().none().none().none()).written, 24u);
  EXPECT_EQ(bytes("aten::arange", Args().i(10).none().none().none().none()).written, 80u);
  EXPECT_EQ(bytes("aten::arange", Args().d(0).d(1).d(0.25).none().none().none().none()).written,
            16u);
}

TEST(ZeroFlopBytes, GathersReadWhatTheyTouchScattersWriteWhatTheyTouch) {
  // index_select x[100,8] along 0 with 5 indices: reads the indices and 5 rows of 8
  ByteCount is = bytes("aten::index_select", Args().tensor({100, 8}).i(0).tensor({5}, i64));
  EXPECT_EQ(is.read, 40u + 160u);
  EXPECT_EQ(is.written, 160u);
  // gather x[4,10] along 1 with index[4,3]: 12 elements
  ByteCount g = bytes("aten::gather", Args().tensor({4, 10}).i(1).tensor({4, 3}, i64).b(false));
  EXPECT_EQ(g.read, 96u + 48u);
  EXPECT_EQ(g.written, 48u);
  // scatter_add_(self[10,4], 0, index[3,4], src[3,4]): 12 elements read-modify-written
  ByteCount sa =
      bytes("aten::scatter_add_", Args().tensor({10, 4}).i(0).tensor({3, 4}, i64).tensor({3, 4}));
  EXPECT_EQ(sa.read, 96u + 48u + 48u);
  EXPECT_EQ(sa.written, 48u);
  // scatter_ writes the touched elements without reading them
  ByteCount sc =
      bytes("aten::scatter_", Args().tensor({10, 4}).i(0).tensor({3, 4}, i64).tensor({3, 4}));
  EXPECT_EQ(sc.read, 96u + 48u);
  EXPECT_EQ(sc.written, 48u);
  // index_add_(self[10,4], 0, index[3], source[3,4]): 12 elements
  ByteCount ia =
      bytes("aten::index_add_", Args().tensor({10, 4}).i(0).tensor({3}, i64).tensor({3, 4}).i(1));
  EXPECT_EQ(ia.read, 24u + 48u + 48u);
  EXPECT_EQ(ia.written, 48u);
  // slice_backward(grad[2,3], input_sizes [2,10], ...): writes the whole zero-filled gradient
  ByteCount sb =
      bytes("aten::slice_backward", Args().tensor({2, 3}).list({2, 10}).i(1).i(0).i(3).i(1));
  EXPECT_EQ(sb.read, 24u);
  EXPECT_EQ(sb.written, 80u);
  // embedding_bag(weight[100,8], indices[6], offsets[2] (2 bags), sum): 6 rows read, [2,8] out,
  // and its int64 bookkeeping (offset2bag 6, bag_size 2, max_indices 2)
  ByteCount eb = bytes("aten::embedding_bag", Args()
                                                  .tensor({100, 8})
                                                  .tensor({6}, i64)
                                                  .tensor({2}, i64)
                                                  .b(false)
                                                  .i(0)
                                                  .b(false)
                                                  .undefined()
                                                  .b(false));
  EXPECT_EQ(eb.read, 48u + 6u * 32 + 16u);
  EXPECT_EQ(eb.written, 2u * 32 + (6u + 2u + 2u) * 8);
}

// Issue 45: aten::index with integer indices and the triangles wrote no bytes.
TEST(ZeroFlopBytes, IndexWithIntegerIndicesAndTriangles) {
  // x[100,8][idx[5]]: the indices (40 B) and 5 rows of 8 fp32 read, those 5 rows written
  ByteCount a = bytes("aten::index", Args().tensor({100, 8}).optional_tensor_list({5}, 40));
  EXPECT_EQ(a.read, 40u + 5u * 32);
  EXPECT_EQ(a.written, 5u * 32);
  // x[4,10][:, idx[3]]: None over dim 0 keeps its 4; 12 elements
  ByteCount b = bytes("aten::index", Args().tensor({4, 10}).optional_tensor_list({-1, 3}, 24));
  EXPECT_EQ(b.read, 24u + 12u * 4);
  EXPECT_EQ(b.written, 12u * 4);
  // x[4,10][i[3], j[3]]: 3 elements
  ByteCount c = bytes("aten::index", Args().tensor({4, 10}).optional_tensor_list({3, 3}, 48));
  EXPECT_EQ(c.written, 3u * 4);
  // a boolean mask selects a data-dependent count: no rule (reads only)
  EXPECT_FALSE(bytes_or_none("aten::index",
                             Args().tensor({4, 10}).optional_tensor_list({40}, 40, DType::kBool)));
  // triu / tril: a copy with zeros (read and written whole); in place: self read and written
  ByteCount t = bytes("aten::triu", Args().tensor({8, 8}).i(0));
  EXPECT_EQ(t.read, 256u);
  EXPECT_EQ(t.written, 256u);
  ByteCount ti = bytes("aten::tril_", Args().tensor({8, 8}).i(-1));
  EXPECT_EQ(ti.read, 256u);
  EXPECT_EQ(ti.written, 256u);
}

// ---- Which ops of a profile count bytes --------------------------------------------------------

struct Recorder {
  testing::Names& names;
  ThreadEvents th;
  // An op with tensor arguments of `shapes` (fp32), under `parent`.
  int op(const std::string& name, std::vector<std::vector<int64_t>> shapes, int parent = -1,
         uint8_t flags = 0) {
    RawEvent e;
    e.name_id = names.id(name);
    e.flags = flags;
    e.parent = parent;
    e.args_begin = static_cast<uint32_t>(th.args.size());
    e.args_count = static_cast<uint16_t>(shapes.size());
    for (const auto& s : shapes) {
      ArgRecord r;
      r.kind = ArgKind::kTensor;
      r.dtype = DType::kFloat32;
      r.count = static_cast<uint32_t>(s.size());
      r.offset = th.dims.size();
      for (int64_t d : s) th.dims.push_back(d);
      th.args.push_back(r);
    }
    e.start_tick = static_cast<int64_t>(th.events.size()) * 10;
    e.end_tick = e.start_tick + 5;
    th.events.push_back(e);
    return static_cast<int>(th.events.size() - 1);
  }
};

constexpr uint8_t kFormula = kCounted;

TEST(BytesOfAProfile, FlopsAndBytesSitOnTheSameOpsEachOnce) {
  testing::Names names;
  Recorder r{names};
  // cross_entropy_loss (no formula) > log_softmax (counted) and nll_loss (no formula) >
  // nll_loss_nd > nll_loss_forward: bytes on log_softmax (as its FLOPs) and on nll_loss, the
  // outermost op with no FLOP-counting op inside; none on the composite nor below nll_loss.
  const int ce = r.op("aten::cross_entropy_loss", {{4, 10}, {4}});
  const int ls = r.op("aten::log_softmax", {{4, 10}}, ce, kFormula);
  const int nll = r.op("aten::nll_loss", {{4, 10}, {4}}, ce);
  const int nd = r.op("aten::nll_loss_nd", {{4, 10}, {4}}, nll);
  const int fwd = r.op("aten::nll_loss_forward", {{4, 10}, {4}}, nd);
  // its kernel resizing its output: metadata, counted (0 FLOPs) but moving nothing, which leaves
  // the bytes where they were
  const int resize = r.op("aten::resize_", {}, fwd, kFormula);
  // a view (metadata: nothing captured, nothing moved) and an op no rule knows
  const int view = r.op("aten::view", {}, -1, kFormula);
  const int odd = r.op("myops::odd", {{8}});
  // an unknown in-place op: reads its inputs, writes self
  const int ip = r.op("myops::scale_", {{8}, {1}});
  OpCounts c = count_ops({&r.th}, names);
  const auto& t = c.threads[0];
  EXPECT_FALSE(t[ce].has_bytes());
  EXPECT_EQ(t[ls].bytes, OpCount::kBytesKnown);
  EXPECT_EQ(t[ls].bytes_total(), (40u + 40u) * 4);
  EXPECT_EQ(t[nll].bytes, OpCount::kBytesKnown);
  EXPECT_FALSE(t[nd].has_bytes());
  EXPECT_FALSE(t[fwd].has_bytes());
  EXPECT_EQ(t[resize].bytes_total(), 0u);
  EXPECT_EQ(t[view].bytes, OpCount::kBytesKnown);
  EXPECT_EQ(t[view].bytes_total(), 0u);
  EXPECT_EQ(t[odd].bytes, OpCount::kWrittenUnknown);
  EXPECT_EQ(t[odd].bytes_read, 32u);
  EXPECT_EQ(t[odd].bytes_written, 0u);
  EXPECT_EQ(t[ip].bytes, OpCount::kBytesKnown);
  EXPECT_EQ(t[ip].bytes_read, 36u);
  EXPECT_EQ(t[ip].bytes_written, 32u);
}

TEST(BytesOfAProfile, UnknownWritesComeFromTheAllocationsWhenMemoryIsTracked) {
  testing::Names names;
  Recorder r{names};
  const int odd = r.op("myops::odd", {{8}});
  const int inner = r.op("myops::inner", {}, odd);  // an op inside it allocates too
  auto alloc = [&](int64_t tick, int64_t bytes, int32_t op, uint64_t address = 0) {
    MemRecord m;  // set by name; address 0: no free is matched with it
    m.time_tick = tick;
    m.bytes = bytes;
    m.op = op;
    m.address = address;
    r.th.memory.push_back(m);
  };
  alloc(1, 64, odd);
  alloc(2, 16, inner);
  alloc(3, -64, odd);  // frees are not writes
  // Kernel workspace, as the memory statistics tell it: a block freed (matched by address)
  // before the op that allocated it returns, here inside `inner`: no output, not a write
  alloc(4, 1000, odd, 0x7000);
  alloc(5, -1000, inner, 0x7000);
  // A block freed only after the op returned (by no op): its output, a write
  alloc(6, 32, odd, 0x8000);
  alloc(7, -32, -1, 0x8000);
  OpCounts c = count_ops({&r.th}, names);
  EXPECT_EQ(c.threads[0][odd].bytes, OpCount::kWrittenFromAllocations);
  EXPECT_EQ(c.threads[0][odd].bytes_written, 64u + 16u + 32u);
  EXPECT_FALSE(c.threads[0][inner].has_bytes());
}

// ---- The roofline's arithmetic ---------------------------------------------------------------

MachinePeaks peaks(double flops, double bandwidth) {
  MachinePeaks p;
  p.flops_per_s[static_cast<size_t>(DType::kFloat32)] = flops;
  p.bytes_per_s = bandwidth;
  p.flops_source = p.bandwidth_source = "given";
  return p;
}

TEST(Roofline, MemoryAndComputeSidesOfTheRidge) {
  // ridge: 100 GFLOP/s over 10 GB/s = 10 FLOP/B
  const MachinePeaks m = peaks(100e9, 10e9);
  EXPECT_DOUBLE_EQ(m.ridge(DType::kFloat32), 10.0);
  EXPECT_DOUBLE_EQ(m.ridge(DType::kBFloat16), 10.0) << "a dtype without a peak uses fp32's";
  // 1 GFLOP over 500 MB in 0.1 s: intensity 2 < 10, memory-bound; attainable 2 * 10e9 = 20e9;
  // achieved 5 GB/s = half the bandwidth
  RooflinePoint mem = roofline_point(1000000000, true, 500000000, 0.1, m, DType::kFloat32);
  EXPECT_EQ(mem.bound, "memory");
  EXPECT_DOUBLE_EQ(mem.intensity, 2.0);
  EXPECT_DOUBLE_EQ(mem.attainable_flops_per_s, 20e9);
  EXPECT_DOUBLE_EQ(mem.achieved_flops_per_s, 10e9);
  EXPECT_DOUBLE_EQ(mem.achieved_bytes_per_s, 5e9);
  EXPECT_DOUBLE_EQ(mem.share, 0.5);  // = achieved / attainable FLOP/s as well
  // 8 GFLOP over 100 MB in 0.2 s: intensity 80, compute-bound; 40 GFLOP/s of 100
  RooflinePoint cmp = roofline_point(8000000000, true, 100000000, 0.2, m, DType::kFloat32);
  EXPECT_EQ(cmp.bound, "compute");
  EXPECT_DOUBLE_EQ(cmp.attainable_flops_per_s, 100e9);
  EXPECT_DOUBLE_EQ(cmp.share, 0.4);
  // a copy (no FLOPs, 1 GB in 0.5 s): memory-bound at 20% of the bandwidth
  RooflinePoint copy = roofline_point(0, true, 1000000000, 0.5, m, DType::kFloat32);
  EXPECT_EQ(copy.bound, "memory");
  EXPECT_DOUBLE_EQ(copy.share, 0.2);
  // FLOPs n/a (no formula): bytes/s only, no bound
  RooflinePoint na = roofline_point(0, false, 1000000000, 0.5, m, DType::kFloat32);
  EXPECT_EQ(na.bound, "");
  EXPECT_DOUBLE_EQ(na.achieved_bytes_per_s, 2e9);
  // no peaks: intensity and achieved rates, no bound
  RooflinePoint none = roofline_point(100, true, 10, 1.0, MachinePeaks{}, DType::kFloat32);
  EXPECT_DOUBLE_EQ(none.intensity, 10.0);
  EXPECT_EQ(none.bound, "");
  EXPECT_DOUBLE_EQ(none.attainable_flops_per_s, 0.0);
}

// The cache-aware roofline (issue 45): each op's bytes at the level its working set fits, a sum's
// ceiling its bytes over the time they take there; every share above its ceiling flagged.
TEST(Roofline, WorkingSetsPickTheirLevelAndSumsTheirBandwidth) {
  MachinePeaks m = peaks(1e12, 10e9);
  m.bandwidth_by_level = parse_bandwidth_levels("L1:32K=400G,L2:1M=100G,DRAM=10G");
  ASSERT_EQ(m.bandwidth_by_level.size(), 3u);
  EXPECT_EQ(m.bandwidth_by_level[1].capacity_bytes, 1u << 20);
  EXPECT_EQ(m.level_for(16 << 10), 0);  // 16 KiB: L1
  EXPECT_EQ(m.level_for(32 << 10), 0);  // its capacity: still L1
  EXPECT_EQ(m.level_for(512 << 10), 1);
  EXPECT_EQ(m.level_for(64 << 20), 2);  // DRAM holds any
  // a memory-bound point against L2: 100 KB in 2 us is 50 GB/s, half of L2's 100 GB/s
  MemoryCeiling l2{"L2", 100e9};
  RooflinePoint p = roofline_point(1000, true, 100000, 2e-6, m, DType::kFloat32, l2);
  EXPECT_EQ(p.bound, "memory");
  EXPECT_EQ(p.ceiling, "L2");
  EXPECT_DOUBLE_EQ(p.ceiling_bytes_per_s, 100e9);
  EXPECT_DOUBLE_EQ(p.share, 0.5);
  EXPECT_FALSE(p.above_ceiling);
  // the same bytes in 0.8 us: 125 GB/s, 125% of L2 (over the 10% tolerance): flagged
  RooflinePoint q = roofline_point(1000, true, 100000, 0.8e-6, m, DType::kFloat32, l2);
  EXPECT_DOUBLE_EQ(q.share, 1.25);
  EXPECT_TRUE(q.above_ceiling);
  // 105%: inside the tolerance, not flagged
  EXPECT_FALSE(roofline_point(1000, true, 105000, 1e-6, m, DType::kFloat32, l2).above_ceiling);
  // Given levels: fastest first, capacities rising, main memory last and unbounded
  for (const char* bad :
       {"L1:32K=400G", "L1:32K=400G,L2:16K=100G,DRAM=10G", "DRAM=10G,L1:32K=400G",
        "L1:32K=400G,DRAM:1G=10G", "L1:0=400G,DRAM=10G", "L1:x=1G,DRAM=1G", ":32K=1G,DRAM=1G"}) {
    EXPECT_THROW(parse_bandwidth_levels(bad), Error) << bad;
  }
  EXPECT_EQ(parse_bandwidth_levels("DRAM=20G").size(), 1u);
}

// Ops of three working sets in one module against given levels (fp32, 1 TFLOP/s so every op is
// memory-bound): its ceiling is its bytes over their time at their levels, named by the level
// holding most of them; the op rows each at their own level.
TEST(Roofline, AModulesCeilingFollowsFromItsOpsLevels) {
  testing::Names names;
  ModuleTree tree;
  ModuleNode root;
  root.name = "";
  root.type = "Net";
  tree.nodes.push_back(root);
  tree.finalize();
  Recorder rec{names};
  // relu [4096] fp32: 16 KiB read + 16 KiB written = 32 KiB (L1); add [65536] x2: 768 KiB (L2);
  // relu [1048576]: 8 MiB (DRAM)
  rec.op("aten::relu", {{4096}}, -1, kFormula);
  rec.op("aten::add", {{65536}, {65536}}, -1, kFormula);
  rec.op("aten::sigmoid", {{1048576}}, -1, kFormula);
  AggregateInput in;
  in.tree = &tree;
  in.threads = {&rec.th};
  in.names = &names;
  in.stop_tick = 1000;
  in.machine = peaks(1e12, 10e9);
  in.machine.bandwidth_by_level = parse_bandwidth_levels("L1:32K=400G,L2:1M=100G,DRAM=10G");
  const ProfileResult r = aggregate(in);
  auto row = [&](const std::string& n) {
    for (const OpStats& o : r.ops)
      if (o.name == n) return o.roofline;
    return RooflinePoint{};
  };
  EXPECT_EQ(row("aten::relu").ceiling, "L1");
  EXPECT_DOUBLE_EQ(row("aten::relu").ceiling_bytes_per_s, 400e9);
  EXPECT_EQ(row("aten::add").ceiling, "L2");
  EXPECT_EQ(row("aten::sigmoid").ceiling, "DRAM");
  // the forward: 32 KiB at 400 GB/s + 768 KiB at 100 GB/s + 8 MiB at 10 GB/s
  const double bytes = 32768.0 + 786432.0 + 8388608.0;
  const double seconds = 32768.0 / 400e9 + 786432.0 / 100e9 + 8388608.0 / 10e9;
  EXPECT_EQ(r.roofline.ceiling, "DRAM");
  EXPECT_NEAR(r.roofline.ceiling_bytes_per_s, bytes / seconds, 1.0);
  EXPECT_EQ(r.fwd_bytes, static_cast<uint64_t>(bytes));
}

TEST(Roofline, GpuCeilingsFromTheTableOrTheProperties) {
  GpuDeviceProperties h100;
  std::snprintf(h100.name, sizeof h100.name, "NVIDIA H100 80GB HBM3");
  h100.sm_count = 132;
  h100.clock_khz = 1980000;
  h100.memory_clock_khz = 2619000;
  h100.memory_bus_bits = 5120;
  h100.major = 9;
  // The table: fp32 on CUDA cores (67 TFLOP/s) and tf32, fp32 work on TF32 tensor cores
  // (494.7 TFLOP/s dense), each its own ceiling
  MachinePeaks t = gpu_peaks(h100);
  EXPECT_EQ(t.flops_source, "device table");
  EXPECT_DOUBLE_EQ(t.peak_flops(DType::kFloat32), 67e12);
  EXPECT_DOUBLE_EQ(t.peak_flops(DType::kTFloat32), 494.7e12);
  EXPECT_DOUBLE_EQ(t.ridge(DType::kTFloat32), 494.7e12 / 3.35e12);
  EXPECT_EQ(device_peak_flops("NVIDIA H100 80GB HBM3", DType::kTFloat32), 494.7e12);
  GpuDeviceProperties a100 = h100;
  std::snprintf(a100.name, sizeof a100.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_DOUBLE_EQ(gpu_peaks(a100).bytes_per_s, 1.555e12);
  // Unknown: an Ampere consumer part (8.6: 128 FP32 lanes per SM), 82 SMs at 1.695 GHz, 384-bit
  // memory at 9.751 GHz: 2 x 128 x 82 x 1.695e9 FLOP/s; 2 x 9.751e9 x 384 / 8 B/s
  GpuDeviceProperties other;
  std::snprintf(other.name, sizeof other.name, "Some GPU");
  other.sm_count = 82;
  other.clock_khz = 1695000;
  other.memory_clock_khz = 9751000;
  other.memory_bus_bits = 384;
  other.major = 8;
  other.minor = 6;
  MachinePeaks p = gpu_peaks(other);
  EXPECT_EQ(p.flops_source, "device properties");
  EXPECT_DOUBLE_EQ(p.peak_flops(DType::kFloat32), 2.0 * 128 * 82 * 1.695e9);
  EXPECT_DOUBLE_EQ(p.peak_flops(DType::kBFloat16), 2.0 * 128 * 82 * 1.695e9) << "fp32's";
  EXPECT_DOUBLE_EQ(p.peak_flops(DType::kTFloat32), 2.0 * 128 * 82 * 1.695e9) << "fp32's";
  EXPECT_DOUBLE_EQ(p.bytes_per_s, 2.0 * 9.751e9 * 384 / 8);
}

TEST(Roofline, PeaksGivenAsText) {
  RateByDtype all = parse_peak_flops("1.5T");
  EXPECT_DOUBLE_EQ(all[static_cast<size_t>(DType::kFloat32)], 1.5e12);
  EXPECT_DOUBLE_EQ(all[static_cast<size_t>(DType::kBFloat16)], 1.5e12);
  RateByDtype per = parse_peak_flops("fp32=67T,bf16=989e12");
  EXPECT_DOUBLE_EQ(per[static_cast<size_t>(DType::kFloat32)], 67e12);
  EXPECT_DOUBLE_EQ(per[static_cast<size_t>(DType::kBFloat16)], 989e12);
  EXPECT_DOUBLE_EQ(per[static_cast<size_t>(DType::kFloat16)], 0.0);
  EXPECT_DOUBLE_EQ(parse_peak_bandwidth("3.35T"), 3.35e12);
  EXPECT_DOUBLE_EQ(parse_peak_bandwidth("20e9"), 20e9);
  EXPECT_DOUBLE_EQ(parse_peak_bandwidth("900 GB/s"), 900e9);
  for (const char* bad : {"fast", "-3", "0", "fp33=1T", "fp32:1T", "1.5X"}) {
    EXPECT_THROW(parse_peak_flops(bad), Error) << bad;
  }
  EXPECT_THROW(parse_peak_bandwidth("lots"), Error);
}

}  // namespace
}  // namespace flopsprof::detail
