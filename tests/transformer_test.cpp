// A GPT-style decoder with a KV cache (examples/models/gpt.h: hand-written causal attention,
// grouped K/V heads repeated by hand, an LM head tied to the token embedding), counted against the
// closed form people use, in the dense convention (every query against every key it is multiplied
// with):
//   matmul FLOPs of a forward over t new tokens after P cached ones (S = P + t keys):
//     2 * t * N  +  4 * layers * t * S * d  +  2 * t * d * V
//   N: the weights of the blocks' matmuls (q, k, v, o, fc1, fc2), the first term PaLM's 2N per
//   token; the second QK^T and PV (each 2 * t * S * d over all heads: PaLM's 4 * L * H * Q * T per
//   token with S = T); the third the tied LM head. Embedding lookups are gathers: 0 FLOPs.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include <torch/version.h>

#include "flopsprof/flopsprof.h"
#include "models/gpt.h"
#include "test_modules.h"

namespace {

using flopsprof_test::module;

models::GptConfig small() {
  models::GptConfig c;
  c.vocab = 512;
  c.d_model = 64;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.max_ctx = 128;
  c.mlp = 256;
  return c;
}

// The blocks' matmul weights: q and o d x d, k and v d x (kv_heads * head_dim), fc1 and fc2.
uint64_t matmul_weights(const models::GptConfig& c) {
  const uint64_t d = c.d_model, kv = c.kv_heads * (c.d_model / c.heads);
  return c.layers * (2 * d * d + 2 * d * kv + 2 * d * c.mlp);
}

uint64_t closed_form(const models::GptConfig& c, uint64_t t, uint64_t s) {
  return 2 * t * matmul_weights(c) + 4 * c.layers * t * s * c.d_model + 2 * t * c.d_model * c.vocab;
}

// The matmul family's FLOPs in a profile's op table (each op once: nested ops are not listed);
// scaled_dot_product_attention (the model's attention on LibTorch 2.x) by its two GEMMs, 2 x MACs
// (its FLOPs add the softmax).
uint64_t matmul_flops(const flopsprof::ProfileResult& r) {
  static const std::set<std::string> kMatmuls = {"aten::linear", "aten::matmul", "aten::mm",
                                                 "aten::bmm",    "aten::addmm",  "aten::baddbmm"};
  uint64_t f = 0;
  for (const flopsprof::OpStats& op : r.ops) {
    if (op.phase != "forward") continue;
    if (kMatmuls.count(op.name)) f += op.flops;
    if (op.name == "aten::scaled_dot_product_attention") f += 2 * op.macs;
  }
  return f;
}

TEST(Transformer, PrefillMatchesTheClosedFormAndTheTiedHeadCountsOnce) {
  const models::GptConfig c = small();
  torch::manual_seed(0);
  models::Gpt gpt(c);
  torch::NoGradGuard no_grad;
  const int64_t t = 16;
  auto prompt = torch::randint(0, c.vocab, {1, t}, torch::kLong);
  flopsprof::FlopsProfiler prof(gpt.ptr());
  models::KvCache cache;
  prof.start_profile();
  gpt->forward(prompt, cache);
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  // Dense: each of the 16 queries against all 16 keys (the math computes the full square and
  // masks).
  EXPECT_EQ(matmul_flops(r), closed_form(c, t, t));
  // Embedding lookups are gathers.
  EXPECT_EQ(module(r, "wte").flops, 0u);
  EXPECT_EQ(module(r, "wpe").flops, 0u);
  // Parameters: the tied head has none of its own, wte's weight is counted once.
  const uint64_t d = c.d_model;
  const uint64_t per_block = 2 * d /*ln1*/ + 2 * d /*ln2*/ + matmul_weights(c) / c.layers;
  EXPECT_EQ(r.params, c.vocab * d + c.max_ctx * d + c.layers * per_block + 2 * d);
  // The attention's own matmuls (QK^T, PV) in each attention module: 4 * t * t * d.
  const flopsprof::ModuleStats& attn = module(r, "blocks.0.attn");
  uint64_t own = 0;
  for (const flopsprof::OpStats& op : attn.ops) {
    if (op.name == "aten::matmul") own += op.flops;
    if (op.name == "aten::scaled_dot_product_attention") own += 2 * op.macs;  // LibTorch 2.x
  }
  EXPECT_EQ(own, 4u * t * t * d);
}

// The prefill's attention under both conventions. LibTorch 1.13 runs hand-written attention: the
// matmuls it runs, no op carries the mask, the causal convention changes nothing. LibTorch 2.x runs
// scaled_dot_product_attention with is_causal (t queries against the same t keys): dense, the
// matmul FLOPs are the closed form with t^2 pairs per head; causal, with the exact triangle,
// t(t+1)/2 pairs: 2tN + 4 * layers * d * t(t+1)/2 + 2tdV. A masked pair costs 2(h + h) + 1 FLOPs
// (two GEMMs of head size h, the softmax). The report says which convention the numbers use.
TEST(Transformer, PrefillAttentionUnderBothConventions) {
  const models::GptConfig c = small();
  torch::manual_seed(0);
  models::Gpt gpt(c);
  torch::NoGradGuard no_grad;
  const uint64_t t = 16, d = c.d_model, h = c.d_model / c.heads;
  auto prompt = torch::randint(0, c.vocab, {1, static_cast<int64_t>(t)}, torch::kLong);
  flopsprof::ProfileResult r[2];
  std::string text[2];
  for (int k = 0; k < 2; ++k) {
    flopsprof::ProfilerOptions po;
    po.attention =
        k == 0 ? flopsprof::AttentionConvention::kDense : flopsprof::AttentionConvention::kCausal;
    flopsprof::FlopsProfiler prof(gpt.ptr(), po);
    models::KvCache cache;
    prof.start_profile();
    gpt->forward(prompt, cache);
    prof.stop_profile();
    r[k] = prof.result();
    text[k] = prof.model_profile_string();
  }
  EXPECT_EQ(matmul_flops(r[0]), closed_form(c, t, t));
  EXPECT_NE(text[1].find("causal: fwd flops leave out the"), std::string::npos);
#if TORCH_VERSION_MAJOR >= 2
  const uint64_t masked_pairs = c.layers * c.heads * (t * t - t * (t + 1) / 2);
  for (int k = 0; k < 2; ++k) EXPECT_EQ(r[k].masked_flops, masked_pairs * (2 * (h + h) + 1));
  EXPECT_EQ(matmul_flops(r[1]),
            2 * t * matmul_weights(c) + 4 * c.layers * d * (t * (t + 1) / 2) + 2 * t * d * c.vocab);
  EXPECT_EQ(r[0].flops - r[1].flops, r[0].masked_flops);
  EXPECT_EQ(r[1].dense_flops(r[1].flops, r[1].masked_flops), r[0].flops);
  EXPECT_NE(text[0].find("dense: fwd flops include the"), std::string::npos);
#else
  (void)h;
  EXPECT_EQ(r[0].masked_flops, 0u);
  EXPECT_EQ(r[0].flops, r[1].flops);
  EXPECT_EQ(text[0].find("attention convention"), std::string::npos);  // nothing masked, dense
#endif
}

TEST(Transformer, DecodeStepsWithAKvCacheMatchTheClosedForm) {
  const models::GptConfig c = small();
  torch::manual_seed(0);
  models::Gpt gpt(c);
  torch::NoGradGuard no_grad;
  const int64_t t = 16, steps = 5;
  models::KvCache cache;
  auto token = gpt->prefill(torch::randint(0, c.vocab, {1, t}, torch::kLong), cache);
  flopsprof::FlopsProfiler prof(gpt.ptr());
  prof.start_profile();
  for (int64_t i = 0; i < steps; ++i) token = gpt->decode(token, cache);
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  // Step i: one new token against the t + i cached keys and itself.
  uint64_t expected = 0;
  for (int64_t i = 0; i < steps; ++i) expected += closed_form(c, 1, t + i + 1);
  EXPECT_EQ(matmul_flops(r), expected);
  EXPECT_EQ(module(r, "").calls, static_cast<uint64_t>(steps));
  EXPECT_EQ(r.fwd_spread.samples, static_cast<uint64_t>(steps));  // latency per decode step
}

// Generation profiled once, its phases named: a prefill of B x t tokens, then decode steps of B
// tokens each. Each region gets the work that began in its windows; tokens come from the token
// ids (wte's indices [B, t]; wpe's positions [1, t] are fewer).
TEST(Regions, PrefillAndDecodeSplitTheTotalsAndEveryModule) {
  const models::GptConfig c = small();
  torch::manual_seed(0);
  models::Gpt gpt(c);
  torch::NoGradGuard no_grad;
  const int64_t b = 2, t = 16, steps = 4;
  flopsprof::ProfilerOptions po;
  po.roofline.set_peak_flops(1e12);  // given: MFU and MBU follow from them by hand
  po.roofline.peak_bandwidth = 1e10;
  flopsprof::FlopsProfiler prof(gpt.ptr(), po);
  models::KvCache cache;
  prof.start_profile();
  torch::Tensor token;
  {
    auto r = prof.region("prefill");
    token = gpt->prefill(torch::randint(0, c.vocab, {b, t}, torch::kLong), cache);
  }
  for (int64_t i = 0; i < steps; ++i) {
    auto r = prof.region("decode");
    token = gpt->decode(token, cache);
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  ASSERT_EQ(r.regions.size(), 2u);
  const flopsprof::RegionStats& pre = r.regions[0];
  const flopsprof::RegionStats& dec = r.regions[1];
  EXPECT_EQ(pre.name, "prefill");
  EXPECT_EQ(dec.name, "decode");
  EXPECT_EQ(pre.windows, 1u);
  EXPECT_EQ(dec.windows, static_cast<uint64_t>(steps));
  EXPECT_EQ(dec.spread.samples, static_cast<uint64_t>(steps));
  // Every op ran in a region: the regions' FLOPs add up to the totals.
  EXPECT_EQ(pre.flops + dec.flops, r.flops);
  EXPECT_EQ(pre.macs + dec.macs, r.macs);
  EXPECT_GT(pre.outside_flops + dec.outside_flops, 0u);  // argmax after each forward
  // Tokens: B x t for the prefill, B per decode step.
  EXPECT_EQ(pre.tokens, static_cast<uint64_t>(b * t));
  EXPECT_EQ(dec.tokens, static_cast<uint64_t>(b * steps));
  EXPECT_EQ(pre.tokens_source, "embedding indices");
  EXPECT_DOUBLE_EQ(dec.tokens_per_s, static_cast<double>(b * steps) / dec.duration_s);
  EXPECT_DOUBLE_EQ(dec.latency_per_token_s, dec.duration_s / static_cast<double>(b * steps));
  EXPECT_DOUBLE_EQ(pre.flops_per_token, static_cast<double>(pre.flops) / (b * t));
  EXPECT_DOUBLE_EQ(pre.first_s, pre.duration_s);  // one window: the time to first token
  // Per module: fc1 (d -> mlp, no bias) is 2 * tokens * d * mlp FLOPs in each region, with one
  // call per window; the root's share is the region's forward.
  const uint64_t d = c.d_model;
  const flopsprof::ModuleStats& fc1 = module(r, "blocks.1.fc1");
  ASSERT_EQ(fc1.regions.size(), 2u);
  EXPECT_EQ(fc1.regions[0].flops, 2u * b * t * d * c.mlp);
  EXPECT_EQ(fc1.regions[1].flops, 2u * b * steps * d * c.mlp);
  EXPECT_EQ(fc1.regions[0].calls, 1u);
  EXPECT_EQ(fc1.regions[1].calls, static_cast<uint64_t>(steps));
  EXPECT_EQ(fc1.regions[0].flops + fc1.regions[1].flops, fc1.flops);
  const flopsprof::ModuleStats& root = module(r, "");
  EXPECT_EQ(root.regions[0].flops, pre.flops);
  EXPECT_EQ(root.regions[1].flops, dec.flops);
  EXPECT_EQ(root.regions[1].calls, static_cast<uint64_t>(steps));
  // Shares of the region's forward FLOPs: the root's all of it, fc1's its 2 * tokens * d * mlp.
  EXPECT_DOUBLE_EQ(root.regions[1].flops_share, 1.0);
  EXPECT_DOUBLE_EQ(fc1.regions[0].flops_share,
                   static_cast<double>(2u * b * t * d * c.mlp) / static_cast<double>(pre.flops));
  // The attention's QK^T and PV in decode step i: 4 * B * (t + i + 1) * d per layer, in the
  // decode region's share of the attention module (its q, k, v, o Linears: 2 * B * (2 d^2 +
  // 2 d kv) per step).
  const uint64_t kv = c.kv_heads * (d / c.heads);
  uint64_t qk_pv = 0;
  for (int64_t i = 0; i < steps; ++i) qk_pv += 4u * b * (t + i + 1) * d;
  const flopsprof::ModuleStats& attn = module(r, "blocks.0.attn");
  uint64_t projections = 0;
  for (const char* p : {"blocks.0.attn.q", "blocks.0.attn.k", "blocks.0.attn.v", "blocks.0.attn.o"})
    projections += module(r, p).regions[1].flops;
  EXPECT_EQ(projections, steps * 2u * b * (2 * d * d + 2 * d * kv));
  EXPECT_GE(attn.regions[1].flops - projections, qk_pv);  // + softmax, scale, mask (listed ops)
  // Utilisation against the given peaks: FLOP/s over 1e12, bytes/s over 1e10.
  EXPECT_NEAR(dec.mfu, static_cast<double>(dec.flops) / dec.duration_s / 1e12, 1e-12);
  EXPECT_NEAR(dec.mbu, static_cast<double>(dec.bytes) / dec.duration_s / 1e10, 1e-12);
  EXPECT_GT(dec.bytes, 0u);
  EXPECT_NEAR(fc1.regions[1].mfu,
              static_cast<double>(fc1.regions[1].flops) / fc1.regions[1].latency_s / 1e12, 1e-12);
  // The KV cache (docs/report.md, "KV cache"): per layer, K and V of [B, kv_heads, S, h] fp32,
  // 2 * B * kv * 4 = 512 bytes per token. On 2.x the attention (SDPA) reads the cache: the
  // prefill's t tokens; each decode step's cat reads the old cache (t + i tokens) and writes the
  // new one (t + i + 1), which the attention reads. By hand, 2 layers, t = 16, 4 steps:
  // prefill reads 2 * 16 * 512 = 16,384 B; decode reads 2 * 512 * ((16 + 17 + 18 + 19) +
  // (17 + 18 + 19 + 20)) = 147,456 B and writes 2 * 512 * 74 = 75,776 B. On 1.13 the attention
  // is written by hand: no cache is recognised, and the text says so.
  const std::string text = prof.model_profile_string();
  const uint64_t per_token = 2 * b * kv * 4;
#if TORCH_VERSION_MAJOR >= 2
  EXPECT_EQ(pre.kv_read_bytes, c.layers * t * per_token);
  EXPECT_EQ(pre.kv_write_bytes, 0u);
  EXPECT_EQ(dec.kv_read_bytes, c.layers * per_token * (70 + 74));
  EXPECT_EQ(dec.kv_write_bytes, c.layers * per_token * 74);
  EXPECT_EQ(attn.regions[1].kv_write_bytes, per_token * 74);  // one layer's
  EXPECT_EQ(r.kv_read_bytes, pre.kv_read_bytes + dec.kv_read_bytes);
  EXPECT_DOUBLE_EQ(dec.kv_bytes_share, static_cast<double>(dec.kv_read_bytes + dec.kv_write_bytes) /
                                           static_cast<double>(dec.bytes));
  // per token (b x steps decode tokens), computed once in aggregation
  EXPECT_DOUBLE_EQ(dec.kv_read_per_token,
                   static_cast<double>(c.layers * per_token * (70 + 74)) / (b * steps));
  EXPECT_DOUBLE_EQ(dec.kv_write_per_token,
                   static_cast<double>(c.layers * per_token * 74) / (b * steps));
#else
  EXPECT_EQ(r.kv_read_bytes + r.kv_write_bytes, 0u);
  EXPECT_NE(text.find("KV cache: none recognised"), std::string::npos);
  (void)per_token;
#endif
  // The reports carry them.
  EXPECT_NE(text.find("Regions"), std::string::npos);
  EXPECT_NE(text.find("time to first token"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(prof.to_json());
  ASSERT_EQ(j["regions"].size(), 2u);
  EXPECT_EQ(j["regions"][1]["name"], "decode");
  EXPECT_EQ(j["regions"][1]["tokens"], b * steps);
  EXPECT_EQ(j["regions"][0]["flops"], pre.flops);
  bool found = false;
  for (const auto& m : j["modules"]) {
    if (m["name"] == "blocks.1.fc1") {
      found = true;
      EXPECT_EQ(m["regions"]["decode"]["flops"], fc1.regions[1].flops);
      EXPECT_EQ(m["regions"]["prefill"]["calls"], 1);
    }
  }
  EXPECT_TRUE(found);
  const std::string page = prof.html();
  EXPECT_NE(page.find("\"regions\""), std::string::npos);
}

// A training step in one region: its backward and recompute-free FLOPs; tokens given; work
// outside every region in none.
TEST(Regions, GivenTokensBackwardAndWorkOutsideEveryRegion) {
  torch::manual_seed(0);
  auto net =
      torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  flopsprof::ProfilerOptions po;
  po.roofline.set_peak_flops(1e9);  // given: the utilisation follows by hand
  po.roofline.peak_bandwidth = 1e8;
  flopsprof::FlopsProfiler prof(net.ptr(), po);
  prof.start_profile();
  net->forward(torch::randn({3, 8}));  // outside every region
  {
    auto r = prof.region("train", 3);
    net->forward(torch::randn({3, 8})).sum().backward();
    r.add_tokens(2);  // given: 3 + 2
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  ASSERT_EQ(r.regions.size(), 1u);
  const flopsprof::RegionStats& g = r.regions[0];
  // One forward of 3 x (8 -> 16 -> 4) with biases: 2*3*8*16 + 3*16 + 3*16 (relu) + 2*3*16*4 + 3*4.
  const uint64_t fwd = 2 * 3 * 8 * 16 + 3 * 16 + 3 * 16 + 2 * 3 * 16 * 4 + 3 * 4;
  // The sum() after the last layer (3 x 4 = 12 FLOPs) is the caller's: a Sequential ending with a
  // Linear runs nothing after it (given to the model by op order, marked, before 2026-11-29).
  EXPECT_EQ(module(r, "").inferred_flops, 0u);
  EXPECT_EQ(r.outside.inferred_ops, 0u);
  EXPECT_EQ(r.flops, 2 * fwd);
  EXPECT_EQ(g.flops, fwd);
  EXPECT_EQ(g.outside_flops, 12u);
  EXPECT_EQ(g.bwd_flops, r.bwd_flops);  // the only backward ran in the region
  EXPECT_GT(g.bwd_flops, 0u);
  EXPECT_EQ(g.tokens, 5u);
  EXPECT_EQ(g.tokens_source, "given");
  EXPECT_DOUBLE_EQ(g.flops_per_token, static_cast<double>(g.flops + g.bwd_flops) / 5);
  EXPECT_EQ(module(r, "0").regions[0].calls, 1u);
  EXPECT_EQ(module(r, "0").calls, 2u);
  // The whole profile's utilisation (docs/report.md, "MFU, HFU and MBU"): fwd + bwd FLOPs (one
  // dtype, fp32) over fwd + bwd time over the peak; no recompute, no masks: HFU = MFU. Bytes:
  // fwd + bwd over the same time over the bandwidth. A module's likewise over its own time.
  const double t = r.duration_s + r.bwd_latency_s;
  EXPECT_NEAR(r.mfu, static_cast<double>(r.flops + r.bwd_flops) / t / 1e9, 1e-12 * r.mfu + 1e-15);
  EXPECT_DOUBLE_EQ(r.hfu, r.mfu);
  EXPECT_NEAR(r.mbu, static_cast<double>(r.fwd_bytes + r.bwd_bytes) / t / 1e8, 1e-9 * r.mbu);
  const flopsprof::ModuleStats& l0 = module(r, "0");
  EXPECT_NEAR(
      l0.mfu,
      static_cast<double>(l0.flops + l0.bwd_flops) / (l0.latency_s + l0.bwd_latency_s) / 1e9,
      1e-9 * l0.mfu);
  EXPECT_GT(l0.mfu, 0.0);
  EXPECT_NE(prof.to_json().find("\"hfu\": "), std::string::npos);
}

TEST(Regions, OverlapAndEmptyNamesThrowAndInertWithoutAProfile) {
  auto net = torch::nn::Linear(4, 4);
  flopsprof::FlopsProfiler prof(net.ptr());
  {
    auto r = prof.region("idle");  // no profile: inert
    net->forward(torch::randn({1, 4}));
  }
  prof.start_profile();
  {
    auto a = prof.region("prefill");
    try {
      auto b = prof.region("decode");
      ADD_FAILURE() << "overlapping regions accepted";
    } catch (const flopsprof::Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"prefill\" is still open"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(static_cast<void>(prof.region("")), flopsprof::Error);
    net->forward(torch::randn({1, 4}));
  }
  auto open = prof.region("tail");  // still open at the stop: ends there
  net->forward(torch::randn({1, 4}));
  prof.stop_profile();
  open.end();  // after the stop: nothing to close
  const flopsprof::ProfileResult& r = prof.result();
  ASSERT_EQ(r.regions.size(), 2u);
  EXPECT_EQ(r.regions[0].name, "prefill");
  EXPECT_EQ(r.regions[1].name, "tail");
  EXPECT_EQ(r.regions[0].flops, 2u * 4 * 4 + 4);
  EXPECT_EQ(r.regions[1].flops, 2u * 4 * 4 + 4);
  EXPECT_EQ(r.regions[1].tokens, 0u);  // no embedding, none given: unknown, not 0 tokens/s
  EXPECT_EQ(r.regions[1].tokens_per_s, 0.0);
  // reset_profile() drops the windows so far.
  prof.start_profile();
  {
    auto g = prof.region("x");
    net->forward(torch::randn({1, 4}));
    prof.reset_profile();
  }
  net->forward(torch::randn({1, 4}));
  prof.stop_profile();
  EXPECT_TRUE(prof.result().regions.empty());
}

}  // namespace
