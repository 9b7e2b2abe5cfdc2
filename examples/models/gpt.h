// A small GPT-style decoder in LibTorch with a KV cache: pre-LayerNorm blocks, causal attention
// (LibTorch 2.x: scaled_dot_product_attention with enable_gqa; 1.13: hand-written
// softmax(QK^T / sqrt(h) + mask) V, the only kind it has, K/V heads repeated by hand),
// grouped-query attention when kv_heads < heads, a GELU MLP, and an LM head tied to the token
// embedding. Linear layers have no bias, as in LLaMA, so that the matmul FLOPs have the closed form
// of the tests (tests/transformer_test.cpp). Random weights.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

namespace models {

struct GptConfig {
  int64_t vocab = 8192;
  int64_t d_model = 256;
  int64_t layers = 4;
  int64_t heads = 8;
  int64_t kv_heads = 2;  ///< < heads: grouped-query attention
  int64_t max_ctx = 512;
  int64_t mlp = 1024;  ///< hidden size of the MLP (4 x d_model)
};

/// Keys and values of every layer for the tokens seen so far: [B, kv_heads, len, head_dim].
struct KvCache {
  std::vector<torch::Tensor> k, v;
  int64_t len = 0;
};

struct GptAttentionImpl : torch::nn::Module {
  explicit GptAttentionImpl(const GptConfig& c)
      : heads(c.heads),
        kv_heads(c.kv_heads),
        head_dim(c.d_model / c.heads),
        q(register_module(
            "q", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, c.d_model).bias(false)))),
        k(register_module(
            "k", torch::nn::Linear(
                     torch::nn::LinearOptions(c.d_model, c.kv_heads * head_dim).bias(false)))),
        v(register_module(
            "v", torch::nn::Linear(
                     torch::nn::LinearOptions(c.d_model, c.kv_heads * head_dim).bias(false)))),
        o(register_module(
            "o", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, c.d_model).bias(false)))) {}

  // x[B, T, d]; `past` keys before these T tokens; the cache grows by T.
  torch::Tensor forward(const torch::Tensor& x, torch::Tensor& cache_k, torch::Tensor& cache_v) {
    const int64_t b = x.size(0), t = x.size(1);
    auto qh = q(x).view({b, t, heads, head_dim}).transpose(1, 2);     // [B, H, T, h]
    auto kh = k(x).view({b, t, kv_heads, head_dim}).transpose(1, 2);  // [B, KV, T, h]
    auto vh = v(x).view({b, t, kv_heads, head_dim}).transpose(1, 2);
    cache_k = cache_k.defined() ? torch::cat({cache_k, kh}, 2) : kh;
    cache_v = cache_v.defined() ? torch::cat({cache_v, vh}, 2) : vh;
    const int64_t s = cache_k.size(2);
#if TORCH_VERSION_MAJOR >= 2
    // LibTorch 2.x: scaled_dot_product_attention, the K/V heads grouped by the op (enable_gqa).
    // Causal, bottom-right aligned: SDPA's is_causal is top-left aligned, the same when the
    // queries are all the keys (a prefill); one new token sees every key (no mask); a chunk after
    // cached keys needs the mask written out.
    torch::Tensor out;
    if (t == s || t == 1) {
      out = torch::scaled_dot_product_attention(qh, cache_k, cache_v, {}, 0.0,
                                                /*is_causal=*/t == s && t > 1, {},
                                                /*enable_gqa=*/true);
    } else {
      auto keep = torch::ones({t, s}, torch::dtype(torch::kBool)).tril(s - t);
      out = torch::scaled_dot_product_attention(qh, cache_k, cache_v, keep, 0.0, false, {},
                                                /*enable_gqa=*/true);
    }
#else
    // Grouped-query attention by hand: each K/V head serves heads / kv_heads query heads.
    auto keys = cache_k.repeat_interleave(heads / kv_heads, 1);  // [B, H, S, h]
    auto values = cache_v.repeat_interleave(heads / kv_heads, 1);
    auto scores = torch::matmul(qh, keys.transpose(-2, -1)) / std::sqrt(double(head_dim));
    // Causal, bottom-right aligned: query i (position s - t + i) sees keys 0 .. s - t + i.
    auto mask = torch::ones({t, s}, torch::dtype(torch::kBool)).triu(s - t + 1);
    scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
    auto out = torch::matmul(torch::softmax(scores, -1), values);  // [B, H, T, h]
#endif
    return o(out.transpose(1, 2).reshape({b, t, heads * head_dim}));
  }

  int64_t heads, kv_heads, head_dim;
  torch::nn::Linear q, k, v, o;
};
TORCH_MODULE(GptAttention);

struct GptBlockImpl : torch::nn::Module {
  explicit GptBlockImpl(const GptConfig& c)
      : ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})))),
        attn(register_module("attn", GptAttention(c))),
        ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})))),
        fc1(register_module(
            "fc1", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, c.mlp).bias(false)))),
        act(register_module("act", torch::nn::GELU())),
        fc2(register_module(
            "fc2", torch::nn::Linear(torch::nn::LinearOptions(c.mlp, c.d_model).bias(false)))) {}

  torch::Tensor forward(const torch::Tensor& x, torch::Tensor& cache_k, torch::Tensor& cache_v) {
    auto h = x + attn(ln1(x), cache_k, cache_v);
    return h + fc2(act(fc1(ln2(h))));
  }

  torch::nn::LayerNorm ln1;
  GptAttention attn;
  torch::nn::LayerNorm ln2;
  torch::nn::Linear fc1;
  torch::nn::GELU act;
  torch::nn::Linear fc2;
};
TORCH_MODULE(GptBlock);

struct GptImpl : torch::nn::Module {
  explicit GptImpl(const GptConfig& c)
      : config(c),
        wte(register_module("wte", torch::nn::Embedding(c.vocab, c.d_model))),
        wpe(register_module("wpe", torch::nn::Embedding(c.max_ctx, c.d_model))),
        blocks(register_module("blocks", torch::nn::ModuleList())),
        ln_f(register_module("ln_f",
                             torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})))) {
    for (int64_t i = 0; i < c.layers; ++i) blocks->push_back(GptBlock(c));
  }

  // ids[B, T] after `cache.len` tokens: logits [B, T, vocab]; the cache grows by T.
  torch::Tensor forward(const torch::Tensor& ids, KvCache& cache) {
    const int64_t t = ids.size(1);
    if (cache.k.empty()) {
      cache.k.resize(config.layers);
      cache.v.resize(config.layers);
    }
    auto positions = torch::arange(cache.len, cache.len + t, ids.options()).unsqueeze(0);
    auto x = wte(ids) + wpe(positions);
    for (int64_t i = 0; i < config.layers; ++i) {
      x = blocks[i]->as<GptBlock>()->forward(x, cache.k[i], cache.v[i]);
    }
    cache.len += t;
    // The LM head tied to the token embedding: one matmul with wte's weight, no parameter of its
    // own.
    return torch::nn::functional::linear(ln_f(x), wte->weight);
  }

  // Greedy decoding: a prefill of `prompt`, then `steps` decode steps of one token each.
  torch::Tensor prefill(const torch::Tensor& prompt, KvCache& cache) {
    return forward(prompt, cache).select(1, -1).argmax(-1, /*keepdim=*/true);
  }
  torch::Tensor decode(const torch::Tensor& token, KvCache& cache) {
    return forward(token, cache).select(1, -1).argmax(-1, /*keepdim=*/true);
  }

  GptConfig config;
  torch::nn::Embedding wte, wpe;
  torch::nn::ModuleList blocks;
  torch::nn::LayerNorm ln_f;
};
TORCH_MODULE(Gpt);

}  // namespace models
