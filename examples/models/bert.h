// A C++ BERT masked-LM with HuggingFace's module structure and names (BertForMaskedLM, no pooler,
// decoder tied to the word embeddings). BERT-base has exactly 109,514,298 parameters.
#pragma once

#include <cmath>

#include <torch/torch.h>

#include <flopsprof/scope.h>

namespace models {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden = 768;
  int64_t layers = 12;
  int64_t heads = 12;
  int64_t intermediate = 3072;
  int64_t max_positions = 512;
  int64_t type_vocab = 2;
  double layer_norm_eps = 1e-12;
  double dropout = 0.1;
};

inline torch::nn::LayerNorm make_layer_norm(const BertConfig& c) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden}).eps(c.layer_norm_eps));
}

struct BertEmbeddingsImpl : torch::nn::Module {
  explicit BertEmbeddingsImpl(const BertConfig& c)
      : word_embeddings(
            register_module("word_embeddings", torch::nn::Embedding(c.vocab_size, c.hidden))),
        position_embeddings(register_module("position_embeddings",
                                            torch::nn::Embedding(c.max_positions, c.hidden))),
        token_type_embeddings(
            register_module("token_type_embeddings", torch::nn::Embedding(c.type_vocab, c.hidden))),
        LayerNorm(register_module("LayerNorm", make_layer_norm(c))),
        dropout(register_module("dropout", torch::nn::Dropout(c.dropout))) {}

  torch::Tensor forward(const torch::Tensor& input_ids) {
    FLOPSPROF_MODULE();
    const int64_t seq = input_ids.size(1);
    auto positions = torch::arange(seq, input_ids.options()).unsqueeze(0);
    auto types = torch::zeros_like(input_ids);
    auto x =
        word_embeddings(input_ids) + position_embeddings(positions) + token_type_embeddings(types);
    return dropout(LayerNorm(x));
  }

  torch::nn::Embedding word_embeddings, position_embeddings, token_type_embeddings;
  torch::nn::LayerNorm LayerNorm;
  torch::nn::Dropout dropout;
};
TORCH_MODULE(BertEmbeddings);

struct BertSelfAttentionImpl : torch::nn::Module {
  explicit BertSelfAttentionImpl(const BertConfig& c)
      : heads(c.heads),
        head_dim(c.hidden / c.heads),
        query(register_module("query", torch::nn::Linear(c.hidden, c.hidden))),
        key(register_module("key", torch::nn::Linear(c.hidden, c.hidden))),
        value(register_module("value", torch::nn::Linear(c.hidden, c.hidden))),
        dropout(register_module("dropout", torch::nn::Dropout(c.dropout))) {}

  torch::Tensor split_heads(const torch::Tensor& x) const {
    return x.view({x.size(0), x.size(1), heads, head_dim}).transpose(1, 2);
  }

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    auto q = split_heads(query(hidden));
    auto k = split_heads(key(hidden));
    auto v = split_heads(value(hidden));
    auto scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim));
    auto probs = dropout(torch::softmax(scores, -1));
    auto context = torch::matmul(probs, v).transpose(1, 2).contiguous();
    return context.view({hidden.size(0), hidden.size(1), heads * head_dim});
  }

  int64_t heads, head_dim;
  torch::nn::Linear query, key, value;
  torch::nn::Dropout dropout;
};
TORCH_MODULE(BertSelfAttention);

// dense -> dropout -> LayerNorm(x + residual): BertSelfOutput and BertOutput.
struct BertResidualOutputImpl : torch::nn::Module {
  BertResidualOutputImpl(const BertConfig& c, int64_t in)
      : dense(register_module("dense", torch::nn::Linear(in, c.hidden))),
        LayerNorm(register_module("LayerNorm", make_layer_norm(c))),
        dropout(register_module("dropout", torch::nn::Dropout(c.dropout))) {}

  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& residual) {
    FLOPSPROF_MODULE();
    return LayerNorm(dropout(dense(hidden)) + residual);
  }

  torch::nn::Linear dense;
  torch::nn::LayerNorm LayerNorm;
  torch::nn::Dropout dropout;
};

struct BertSelfOutputImpl : BertResidualOutputImpl {
  explicit BertSelfOutputImpl(const BertConfig& c) : BertResidualOutputImpl(c, c.hidden) {}
};
TORCH_MODULE(BertSelfOutput);

struct BertOutputImpl : BertResidualOutputImpl {
  explicit BertOutputImpl(const BertConfig& c) : BertResidualOutputImpl(c, c.intermediate) {}
};
TORCH_MODULE(BertOutput);

struct BertAttentionImpl : torch::nn::Module {
  explicit BertAttentionImpl(const BertConfig& c)
      : self(register_module("self", BertSelfAttention(c))),
        output(register_module("output", BertSelfOutput(c))) {}

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    return output(self(hidden), hidden);
  }

  BertSelfAttention self;
  BertSelfOutput output;
};
TORCH_MODULE(BertAttention);

struct BertIntermediateImpl : torch::nn::Module {
  explicit BertIntermediateImpl(const BertConfig& c)
      : dense(register_module("dense", torch::nn::Linear(c.hidden, c.intermediate))) {}

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    return torch::gelu(dense(hidden));
  }

  torch::nn::Linear dense;
};
TORCH_MODULE(BertIntermediate);

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertConfig& c)
      : attention(register_module("attention", BertAttention(c))),
        intermediate(register_module("intermediate", BertIntermediate(c))),
        output(register_module("output", BertOutput(c))) {}

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    auto attended = attention(hidden);
    return output(intermediate(attended), attended);
  }

  BertAttention attention;
  BertIntermediate intermediate;
  BertOutput output;
};
TORCH_MODULE(BertLayer);

struct BertEncoderImpl : torch::nn::Module {
  explicit BertEncoderImpl(const BertConfig& c)
      : layer(register_module("layer", torch::nn::ModuleList())) {
    for (int64_t i = 0; i < c.layers; ++i) layer->push_back(BertLayer(c));
  }

  torch::Tensor forward(torch::Tensor hidden) {
    FLOPSPROF_MODULE();
    for (const auto& l : *layer) hidden = l->as<BertLayer>()->forward(hidden);
    return hidden;
  }

  torch::nn::ModuleList layer;
};
TORCH_MODULE(BertEncoder);

struct BertModelImpl : torch::nn::Module {
  explicit BertModelImpl(const BertConfig& c)
      : embeddings(register_module("embeddings", BertEmbeddings(c))),
        encoder(register_module("encoder", BertEncoder(c))) {}

  torch::Tensor forward(const torch::Tensor& input_ids) {
    FLOPSPROF_MODULE();
    return encoder(embeddings(input_ids));
  }

  BertEmbeddings embeddings;
  BertEncoder encoder;
};
TORCH_MODULE(BertModel);

struct BertPredictionHeadTransformImpl : torch::nn::Module {
  explicit BertPredictionHeadTransformImpl(const BertConfig& c)
      : dense(register_module("dense", torch::nn::Linear(c.hidden, c.hidden))),
        LayerNorm(register_module("LayerNorm", make_layer_norm(c))) {}

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    return LayerNorm(torch::gelu(dense(hidden)));
  }

  torch::nn::Linear dense;
  torch::nn::LayerNorm LayerNorm;
};
TORCH_MODULE(BertPredictionHeadTransform);

// A Linear whose weight is another module's parameter (the tied word embeddings) and whose bias
// is its own. Shown as "Linear", as in HuggingFace.
struct TiedLinearImpl : torch::nn::Module {
  TiedLinearImpl(torch::Tensor tied_weight, int64_t out_features)
      : weight(register_parameter("weight", tied_weight)),
        bias(register_parameter("bias", torch::zeros({out_features}))) {}

  torch::Tensor forward(const torch::Tensor& x) { return torch::linear(x, weight, bias); }

  torch::Tensor weight, bias;
};
TORCH_MODULE(TiedLinear);

struct BertLMPredictionHeadImpl : torch::nn::Module {
  BertLMPredictionHeadImpl(const BertConfig& c, const torch::Tensor& word_embeddings)
      : transform(register_module("transform", BertPredictionHeadTransform(c))),
        decoder(register_module("decoder", TiedLinear(word_embeddings, c.vocab_size))) {}

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    return decoder(transform(hidden));
  }

  BertPredictionHeadTransform transform;
  TiedLinear decoder;
};
TORCH_MODULE(BertLMPredictionHead);

struct BertOnlyMLMHeadImpl : torch::nn::Module {
  BertOnlyMLMHeadImpl(const BertConfig& c, const torch::Tensor& word_embeddings)
      : predictions(register_module("predictions", BertLMPredictionHead(c, word_embeddings))) {}

  torch::Tensor forward(const torch::Tensor& hidden) {
    FLOPSPROF_MODULE();
    return predictions(hidden);
  }

  BertLMPredictionHead predictions;
};
TORCH_MODULE(BertOnlyMLMHead);

struct BertForMaskedLMImpl : torch::nn::Module {
  explicit BertForMaskedLMImpl(const BertConfig& c = {})
      : bert(register_module("bert", BertModel(c))),
        cls(register_module("cls", BertOnlyMLMHead(c, bert->embeddings->word_embeddings->weight))) {
  }

  /// input_ids: [batch, seq] int64 -> logits [batch, seq, vocab]
  torch::Tensor forward(const torch::Tensor& input_ids) {
    FLOPSPROF_MODULE();
    return cls(bert(input_ids));
  }

  BertModel bert;
  BertOnlyMLMHead cls;
};
TORCH_MODULE(BertForMaskedLM);

}  // namespace models
