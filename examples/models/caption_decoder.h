// An attention decoder for image captioning, shaped like the usual C++ ports of "show, attend and
// tell": each step attends over the encoder's feature map, gates the context, runs an LSTMCell
// and projects to the vocabulary. Two Dropout modules of one type, one used once before the
// loop and one in every step; greedy sampling in a method other than forward.
#pragma once

#include <tuple>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace models {

/// Additive attention: features [B, P, E], hidden [B, H] -> context [B, E], weights [B, P].
struct AttentionImpl : torch::nn::Module {
  AttentionImpl(int64_t features, int64_t hidden, int64_t attention)
      : linear_encoder(features, attention),
        linear_decoder(hidden, attention),
        linear_attention(attention, 1) {
    register_module("linear_encoder", linear_encoder);
    register_module("linear_decoder", linear_decoder);
    register_module("linear_attention", linear_attention);
  }

  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& features,
                                                  const torch::Tensor& hidden) {
    torch::Tensor scores =
        torch::tanh(linear_encoder(features) + linear_decoder(hidden).unsqueeze(1));
    torch::Tensor alpha = torch::softmax(linear_attention(scores).squeeze(2), 1);
    return {(features * alpha.unsqueeze(2)).sum(1), alpha};
  }

  torch::nn::Linear linear_encoder, linear_decoder, linear_attention;
};
TORCH_MODULE(Attention);

struct CaptionDecoderImpl : torch::nn::Module {
  CaptionDecoderImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t features,
                     int64_t attention_size, double dropout = 0.5)
      : embedding(vocab, embed),
        lstm_cell(features + embed, hidden),
        linear(hidden, vocab),
        init_h(features, hidden),
        init_c(features, hidden),
        attention(features, hidden, attention_size),
        f_beta(hidden, features),
        embedding_dropout(dropout),
        output_dropout(dropout) {
    register_module("embedding", embedding);
    register_module("lstm_cell", lstm_cell);
    register_module("linear", linear);
    register_module("init_h", init_h);
    register_module("init_c", init_c);
    register_module("attention", attention);
    register_module("f_beta", f_beta);
    register_module("embedding_dropout", embedding_dropout);
    register_module("output_dropout", output_dropout);
  }

  /// Teacher forcing. features [B, E, h, w], captions [B, T] -> logits [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& features, const torch::Tensor& captions) {
    torch::Tensor embedded = embedding_dropout(embedding(captions));
    torch::Tensor f = features.flatten(2).transpose(1, 2);  // [B, P, E]
    torch::Tensor mean = f.mean(1);
    torch::Tensor h = torch::tanh(init_h(mean)), c = torch::tanh(init_c(mean));
    std::vector<torch::Tensor> logits;
    for (int64_t t = 0; t < captions.size(1); ++t) {
      auto [context, alpha] = attention(f, h);
      context = context * torch::sigmoid(f_beta(h));
      std::tie(h, c) =
          lstm_cell(torch::cat({embedded.select(1, t), context}, 1), std::make_tuple(h, c));
      logits.push_back(linear(output_dropout(h)));
    }
    return torch::stack(logits, 1);
  }

  /// Greedy decoding from token 1 for `steps` steps -> ids [B, steps].
  torch::Tensor sample(const torch::Tensor& features, int64_t steps) {
    torch::Tensor start = torch::ones({features.size(0)}, torch::kLong);
    torch::Tensor input = embedding_dropout(embedding(start));
    torch::Tensor f = features.flatten(2).transpose(1, 2);
    torch::Tensor mean = f.mean(1);
    torch::Tensor h = torch::tanh(init_h(mean)), c = torch::tanh(init_c(mean));
    std::vector<torch::Tensor> ids;
    for (int64_t t = 0; t < steps; ++t) {
      auto [context, alpha] = attention(f, h);
      context = context * torch::sigmoid(f_beta(h));
      std::tie(h, c) = lstm_cell(torch::cat({input, context}, 1), std::make_tuple(h, c));
      torch::Tensor predicted = linear(output_dropout(h)).argmax(1);
      ids.push_back(predicted);
      input = embedding(predicted);
    }
    return torch::stack(ids, 1);
  }

  torch::nn::Embedding embedding;
  torch::nn::LSTMCell lstm_cell;
  torch::nn::Linear linear, init_h, init_c;
  Attention attention;
  torch::nn::Linear f_beta;
  torch::nn::Dropout embedding_dropout, output_dropout;
};
TORCH_MODULE(CaptionDecoder);

}  // namespace models
