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

// Causal masks counted both ways (docs/report.md, "Causal attention"). q, k, v [1, 2, 1024, 4]:
// B = 2 heads, L = S = 1024, E = Ev = 4. Dense: 2 * 1,048,576 pairs; the causal (top-left) mask
// keeps 1024 * 1025 / 2 = 524,800 per head. Forward 2(E + Ev) + 1 = 17 FLOPs a pair, backward
// 2(3E + 2Ev) + 1 = 41. The forward's kernel runs inside the composite op, unobserved (counted as
// computed whole, and said so); the backward's CPU flash kernel is observed, and skips whole key
// blocks: 256 * (512 + 512 + 1024 + 1024) = 786,432 pairs computed per head.
TEST(Attention2x, CausalMaskCountedDenseCausalAndAsTheKernelRan) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << kNeeds2x;
#else
  const uint64_t heads = 2, dense = 1024 * 1024, causal = 1024 * 1025 / 2, ran = 786432;
  for (auto convention :
       {flopsprof::AttentionConvention::kDense, flopsprof::AttentionConvention::kCausal}) {
    Sdpa sdpa(true);
    torch::manual_seed(0);
    torch::Tensor q = torch::randn({1, 2, 1024, 4}, torch::requires_grad());
    torch::Tensor k = torch::randn({1, 2, 1024, 4}, torch::requires_grad());
    torch::Tensor v = torch::randn({1, 2, 1024, 4}, torch::requires_grad());
    flopsprof::ProfilerOptions po;
    po.attention = convention;
    FlopsProfiler prof(sdpa, po);
    prof.start_profile();
    torch::Tensor out = sdpa->forward(q, k, v);
    out.backward(torch::ones_like(out));
    prof.stop_profile();
    const flopsprof::ProfileResult& r = prof.result();
    const bool is_causal = convention == flopsprof::AttentionConvention::kCausal;
    EXPECT_EQ(r.attention, convention);
    EXPECT_EQ(r.masked_flops, heads * (dense - causal) * 17);
    EXPECT_EQ(r.bwd_masked_flops, heads * (dense - causal) * 41);
    EXPECT_EQ(r.flops, heads * (is_causal ? causal : dense) * 17);
    EXPECT_EQ(r.bwd_flops, heads * (is_causal ? causal : dense) * 41);
    EXPECT_EQ(r.dense_flops(r.flops, r.masked_flops), heads * dense * 17);
    EXPECT_EQ(r.causal_flops(r.flops, r.masked_flops), heads * causal * 17);
    // Forward: kernel unobserved, taken as whole; backward: the CPU flash kernel's blocks.
    EXPECT_EQ(r.skipped_flops, 0u);
    EXPECT_EQ(r.kernel_unknown_calls, 1u);
    EXPECT_EQ(r.kernel_flops(r.bwd_flops, r.bwd_masked_flops, r.bwd_skipped_flops),
              heads * ran * 41);
    const flopsprof::ModuleStats& root = prof.get_module("");
    EXPECT_EQ(root.masked_flops, r.masked_flops);
    const std::string text = prof.model_profile_string();
    EXPECT_NE(text.find(is_causal ? "causal: fwd flops leave out" : "dense: fwd flops include"),
              std::string::npos)
        << text.substr(0, 3000);
    const std::string json = prof.to_json();
    EXPECT_NE(json.find(std::string("\"attention_convention\": \"") +
                        (is_causal ? "causal" : "dense") + "\""),
              std::string::npos);
    EXPECT_NE(json.find("\"fwd_flops_causal\": " + std::to_string(heads * causal * 17)),
              std::string::npos);
  }
#endif
}

// A mask tensor (docs/report.md, "Masks"), read or not. q, k, v [2, 3, 6, 8]: 6 heads, L = S = 6,
// 36 pairs per head, 216 in all; a pair costs 2*(8 + 8) + 1 = 33 FLOPs forward and
// 2*(3*8 + 2*8) + 1 = 81 backward (the CPU flash kernel's backward, which gets the mask too).
// A band of width 2 ([6, 6]: query i keeps keys i-1 and i) keeps 11 entries, each standing for 6
// heads: 66 pairs kept, 150 masked. A padding mask [2, 1, 1, 6] (additive: -inf on batch 1's last
// two keys) keeps 10 of 12 entries, each standing for 3 heads * 6 queries = 18 pairs: 36 masked.
TEST(Attention2x, MaskTensorReadWhenAskedElseCountedDense) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << kNeeds2x;
#else
  struct MaskedImpl : torch::nn::Module {
    torch::Tensor forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& mask) {
      return torch::scaled_dot_product_attention(q, k, v, mask);
    }
  };
  torch::Tensor band = torch::ones({6, 6}, torch::kBool).tril().triu(-1);
  torch::Tensor padding = torch::zeros({2, 1, 1, 6});
  padding.index_put_({1, 0, 0, torch::indexing::Slice(4, 6)}, -INFINITY);
  struct Case {
    torch::Tensor mask;
    bool read;
    uint64_t masked_pairs;
  };
  for (const Case& c : {Case{band, false, 0}, Case{band, true, 150}, Case{padding, true, 36}}) {
    auto model = std::make_shared<MaskedImpl>();
    torch::manual_seed(0);
    torch::Tensor q = torch::randn({2, 3, 6, 8}, torch::requires_grad());
    torch::Tensor k = torch::randn({2, 3, 6, 8}, torch::requires_grad());
    torch::Tensor v = torch::randn({2, 3, 6, 8}, torch::requires_grad());
    flopsprof::ProfilerOptions po;
    po.attention = flopsprof::AttentionConvention::kCausal;
    po.read_attention_masks = c.read;
    FlopsProfiler prof(model, po);
    prof.start_profile();
    torch::Tensor out = model->forward(q, k, v, c.mask);
    out.backward(torch::ones_like(out));
    prof.stop_profile();
    const flopsprof::ProfileResult& r = prof.result();
    const std::string what = c.read ? "read" : "not read";
    EXPECT_EQ(r.attention_masks_read, c.read ? 2u : 0u) << what;
    EXPECT_EQ(r.attention_masks_unread, c.read ? 0u : 2u) << what;
    EXPECT_EQ(r.masked_flops, c.masked_pairs * 33) << what;
    EXPECT_EQ(r.bwd_masked_flops, c.masked_pairs * 81) << what;
    EXPECT_EQ(r.flops, (216 - c.masked_pairs) * 33) << what;  // the causal convention
    EXPECT_EQ(r.dense_flops(r.flops, r.masked_flops), 216u * 33) << what;
    EXPECT_EQ(r.skipped_flops + r.bwd_skipped_flops, 0u) << what;
    const std::string text = prof.model_profile_string();
    EXPECT_NE(text.find(c.read ? "2 call(s) with a mask tensor, 2 read"
                               : "2 call(s) with a mask tensor, 2 not read: counted dense"),
              std::string::npos)
        << text.substr(0, 3000);
    EXPECT_NE(
        prof.to_json().find(std::string("\"attention_masks_read_calls\": ") + (c.read ? "2" : "0")),
        std::string::npos);
  }
  // The model's numerics are unchanged by reading.
  auto model = std::make_shared<MaskedImpl>();
  torch::Tensor q = torch::randn({2, 3, 6, 8});
  torch::Tensor plain = model->forward(q, q, q, band);
  flopsprof::ProfilerOptions po;
  po.read_attention_masks = true;
  FlopsProfiler prof(model, po);
  prof.start_profile();
  torch::Tensor profiled = model->forward(q, q, q, band);
  prof.stop_profile();
  EXPECT_TRUE(torch::equal(plain, profiled));
#endif
}

// A KV cache's reads and writes (docs/report.md, "KV cache"), for the two ways a decoder keeps
// one: grown by cat, and preallocated and written in place. fp32 keys and values [1, 2, S, 8]:
// 64 bytes per token for each of K and V. A prefill of 4 tokens, then 3 decode steps of one.
// Grown by cat: the prefill's attention reads K and V of 4 tokens (2 * 256 B); each step's cat
// reads the old cache (256, 320, 384 B, for K and for V) and writes the new one (320, 384, 448 B),
// and its attention reads the new one. Reads: 2 * (256 + 320 + 384 + 448) + 2 * (256 + 320 + 384)
// = 2816 + 1920 = 4736 B; writes: 2 * (320 + 384 + 448) = 2304 B.
// Preallocated [1, 2, 8, 8] buffers: copy_ writes 4 tokens, then 1 per step (2 * (256 + 3 * 64)
// = 896 B), the attention reads a narrow view of 4 to 7 tokens (2816 B). Other cats (of the
// attention's output) are no cache's.
TEST(Attention2x, KvCacheReadsAndWritesGrownByCatOrPreallocated) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << kNeeds2x;
#else
  struct CachedImpl : torch::nn::Module {
    explicit CachedImpl(bool by_cat) : by_cat(by_cat) {
      proj = register_module("proj", torch::nn::Linear(8, 8));
      k_cache = register_buffer("k_cache", torch::zeros({1, 2, 8, 8}));
      v_cache = register_buffer("v_cache", torch::zeros({1, 2, 8, 8}));
    }
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& k, const torch::Tensor& v) {
      torch::Tensor q = proj(x);
      const int64_t t = k.size(2);
      torch::Tensor keys, values;
      if (by_cat) {
        ck = ck.defined() ? torch::cat({ck, k}, 2) : k;
        cv = cv.defined() ? torch::cat({cv, v}, 2) : v;
        keys = ck;
        values = cv;
      } else {
        k_cache.narrow(2, len, t).copy_(k);
        v_cache.narrow(2, len, t).copy_(v);
        keys = k_cache.narrow(2, 0, len + t);
        values = v_cache.narrow(2, 0, len + t);
      }
      len += t;
      torch::Tensor out = torch::scaled_dot_product_attention(q, keys, values);
      return torch::cat({out, out}, 3);  // not a cache
    }
    bool by_cat;
    int64_t len = 0;
    torch::Tensor ck, cv;
    torch::nn::Linear proj{nullptr};
    torch::Tensor k_cache, v_cache;
  };
  for (bool by_cat : {true, false}) {
    auto model = std::make_shared<CachedImpl>(by_cat);
    torch::NoGradGuard no_grad;
    torch::manual_seed(0);
    FlopsProfiler prof(model);
    prof.start_profile();
    {
      auto prefill = prof.region("prefill");
      model->forward(torch::randn({1, 2, 4, 8}), torch::randn({1, 2, 4, 8}),
                     torch::randn({1, 2, 4, 8}));
    }
    for (int step = 0; step < 3; ++step) {
      auto decode = prof.region("decode");
      model->forward(torch::randn({1, 2, 1, 8}), torch::randn({1, 2, 1, 8}),
                     torch::randn({1, 2, 1, 8}));
    }
    prof.stop_profile();
    const flopsprof::ProfileResult& r = prof.result();
    const std::string how = by_cat ? "grown by cat" : "preallocated";
    const uint64_t attention_reads = 2 * (256 + 320 + 384 + 448);
    EXPECT_EQ(r.kv_read_bytes, attention_reads + (by_cat ? 2 * (256 + 320 + 384) : 0)) << how;
    EXPECT_EQ(r.kv_write_bytes, by_cat ? 2u * (320 + 384 + 448) : 2u * (256 + 3 * 64)) << how;
    EXPECT_EQ(prof.get_module("").kv_read_bytes, r.kv_read_bytes) << how;
    ASSERT_EQ(r.regions.size(), 2u);
    EXPECT_EQ(r.regions[0].kv_read_bytes, 512u) << how;
    EXPECT_EQ(r.regions[0].kv_write_bytes, by_cat ? 0u : 512u) << how;
    EXPECT_EQ(r.regions[1].kv_read_bytes, r.kv_read_bytes - 512) << how;
    EXPECT_LE(r.kv_read_bytes + r.kv_write_bytes, r.fwd_bytes) << how;
    const std::string text = prof.model_profile_string();
    EXPECT_NE(text.find("of which a KV cache's"), std::string::npos) << text.substr(0, 3000);
    EXPECT_NE(text.find("KV cache in \"decode\""), std::string::npos);
    EXPECT_NE(prof.to_json().find("\"kv_write_bytes\": " + std::to_string(r.kv_write_bytes)),
              std::string::npos);
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
