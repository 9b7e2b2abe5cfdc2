// A word-level LSTM language model as in the usual C++ ports of the word_language_model example:
// Embedding -> Dropout -> LSTM -> Dropout -> Linear decoder, one Dropout module used twice.
#pragma once

#include <tuple>

#include <torch/torch.h>

namespace models {

struct LstmLmImpl : torch::nn::Module {
  LstmLmImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers, double dropout = 0.2)
      : encoder(vocab, embed),
        rnn(torch::nn::LSTMOptions(embed, hidden).num_layers(layers).dropout(dropout)),
        drop(dropout),
        decoder(hidden, vocab),
        hidden_size(hidden) {
    register_module("encoder", encoder);
    register_module("rnn", rnn);
    register_module("drop", drop);
    register_module("decoder", decoder);
  }

  /// tokens: [seq, batch] -> log-probabilities [seq * batch, vocab]
  torch::Tensor forward(const torch::Tensor& tokens) {
    torch::Tensor emb = drop(encoder(tokens));
    torch::Tensor output = std::get<0>(rnn(emb));
    output = drop(output);
    torch::Tensor decoded = decoder(output.view({-1, hidden_size}));
    return torch::log_softmax(decoded, /*dim=*/1);
  }

  torch::nn::Embedding encoder;
  torch::nn::LSTM rnn;
  torch::nn::Dropout drop;
  torch::nn::Linear decoder;
  int64_t hidden_size;
};
TORCH_MODULE(LstmLm);

}  // namespace models
