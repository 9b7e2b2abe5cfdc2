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

// The matmul family's FLOPs in a profile's op table (each op once: nested ops are not listed).
uint64_t matmul_flops(const flopsprof::ProfileResult& r) {
  static const std::set<std::string> kMatmuls = {"aten::linear", "aten::matmul", "aten::mm",
                                                 "aten::bmm",    "aten::addmm",  "aten::baddbmm"};
  uint64_t f = 0;
  for (const flopsprof::OpStats& op : r.ops) {
    if (op.phase == "forward" && kMatmuls.count(op.name)) f += op.flops;
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
  }
  EXPECT_EQ(own, 4u * t * t * d);
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

}  // namespace
