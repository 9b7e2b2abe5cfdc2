// Attention on LibTorch 2.x, profiled: scaled_dot_product_attention (the CPU kernels it runs,
// forward and backward, causal or not) and torch::nn::MultiheadAttention, against the counts
// PyTorch's FlopCounterMode gives for the same shapes (2 FLOPs per MAC, GEMMs only).
#include <gtest/gtest.h>

#include <string>

#include <torch/torch.h>
#include <torch/version.h>

#include "flopsprof/flopsprof.h"

namespace {

using flopsprof::FlopsProfiler;

// The numbers below are FlopCounterMode's, printed by tests/fcm_attention.py run with PyTorch 2.6
// in the Debian 13 root:
//   scripts/trixie_root.sh --bind "$PWD:/src" python3 /src/tests/fcm_attention.py
// (FlopCounterMode scores the CPU flash kernel 0, forward and backward: the counts for it are those
// of the CUDA flash kernel, by FlopCounterMode's formula on meta tensors, in the same script.)
constexpr char kNeeds2x[] = "scaled_dot_product_attention and its kernels are LibTorch 2.x ops";

#if TORCH_VERSION_MAJOR >= 2
struct SdpaImpl : torch::nn::Module {
  explicit SdpaImpl(bool causal) : causal(causal) {}
  torch::Tensor forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    return torch::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
  }
  bool causal;
};
TORCH_MODULE(Sdpa);

const flopsprof::OpStats* find_op(const FlopsProfiler& prof, const std::string& name,
                                  const std::string& phase) {
  for (const auto& op : prof.result().ops)
    if (op.name == name && op.phase == phase) return &op;
  return nullptr;
}
#endif

// q[2,3,5,8], k[2,3,7,8], v[2,3,7,8]: B = 6 (batch * heads), L = 5, S = 7, E = Ev = 8; the CPU runs
// _scaled_dot_product_flash_attention_for_cpu and its backward.
// FlopCounterMode: forward 6720 = 2*6*5*7*(8 + 8) (flash and efficient kernels, causal or not; the
// math backend's two bmm: the same), backward 16800 = 2*6*5*7*(3*8 + 2*8) (flash and efficient).
TEST(Attention2x, SdpaCpuFlashKernelCountsAsFlopCounterMode) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << kNeeds2x;
#else
  for (bool causal : {false, true}) {
    Sdpa sdpa(causal);
    torch::manual_seed(0);
    torch::Tensor q = torch::randn({2, 3, 5, 8}, torch::requires_grad());
    torch::Tensor k = torch::randn({2, 3, 7, 8}, torch::requires_grad());
    torch::Tensor v = torch::randn({2, 3, 7, 8}, torch::requires_grad());
    FlopsProfiler prof(sdpa);
    prof.start_profile();
    sdpa->forward(q, k, v).sum().backward();
    prof.stop_profile();
    const flopsprof::ModuleStats& root = prof.get_module("");
    EXPECT_EQ(2 * root.macs, 6720u) << "causal " << causal;
    EXPECT_EQ(2 * root.bwd_macs, 16800u) << "causal " << causal;
    // FLOPs add the softmax (forward) and its backward, 6*5*7 = 210 each; the forward's total also
    // has the loss's sum over the [2,3,5,8] output, 240
    EXPECT_EQ(root.flops, 6720u + 210 + 240);
    EXPECT_EQ(root.bwd_flops, 16800u + 210);
    const flopsprof::OpStats* fwd = find_op(prof, "aten::scaled_dot_product_attention", "forward");
    const flopsprof::OpStats* bwd =
        find_op(prof, "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "backward");
    ASSERT_NE(fwd, nullptr);
    ASSERT_NE(bwd, nullptr);
    EXPECT_EQ(fwd->flops, 6720u + 210);
    EXPECT_EQ(bwd->flops, 16800u + 210);
  }
#endif
}

// v[2,3,7,4] (Ev != E): the CPU flash kernel declines, the math backend runs; its backward is four
// bmm. FlopCounterMode (math backend): forward 5040 = 2*210*(8 + 4); backward 10080 =
// 2*210*(8 + 8 + 4 + 4) (dQ, dK, dP, dV; the math backend keeps P, nothing is recomputed).
TEST(Attention2x, SdpaMathBackendCountsAsFlopCounterMode) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << kNeeds2x;
#else
  Sdpa sdpa(false);
  torch::manual_seed(0);
  torch::Tensor q = torch::randn({2, 3, 5, 8}, torch::requires_grad());
  torch::Tensor k = torch::randn({2, 3, 7, 8}, torch::requires_grad());
  torch::Tensor v = torch::randn({2, 3, 7, 4}, torch::requires_grad());
  FlopsProfiler prof(sdpa);
  prof.start_profile();
  sdpa->forward(q, k, v).sum().backward();
  prof.stop_profile();
  const flopsprof::ModuleStats& root = prof.get_module("");
  EXPECT_EQ(2 * root.macs, 5040u);
  EXPECT_EQ(2 * root.bwd_macs, 10080u);
  EXPECT_EQ(find_op(prof, "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "backward"),
            nullptr);
#endif
}

// torch::nn::MultiheadAttention(16, 4) on x[L=5, N=2, E=16], self-attention, weights returned (the
// C++ module's only path, as Python's with need_weights=True): FlopCounterMode forward 23680 =
// in-projection 2*10*16*48 = 15360 + attention bmm 2*(8*5*5*4)*2 = 3200 + out-projection
// 2*10*16*16 = 5120; forward + backward 55680 (x needs no gradient): backward 32000 = in-projection
// weight 15360 + out-projection input and weight 2*5120 + the two bmm's two gradients 2*3200.
TEST(Attention2x, MultiheadAttentionCountsAsFlopCounterMode) {
  torch::manual_seed(0);
  torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(16, 4));
  torch::Tensor x = torch::randn({5, 2, 16});
  FlopsProfiler prof(mha);
  prof.start_profile();
  std::get<0>(mha->forward(x, x, x)).sum().backward();
  prof.stop_profile();
  const flopsprof::ModuleStats& root = prof.get_module("");
  EXPECT_EQ(2 * root.macs, 23680u);
  EXPECT_EQ(2 * (root.macs + root.bwd_macs), 55680u);
}

}  // namespace
