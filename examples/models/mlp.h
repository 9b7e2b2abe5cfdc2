// A small MLP: Linear/ReLU layers of equal width, then a classifier (no FLOPSPROF_MODULE: its
// attribution comes from parameter ownership and the neighbour rule alone).
#pragma once

#include <torch/torch.h>

namespace models {

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out, int64_t hidden_layers = 1) {
    layers = register_module("layers", torch::nn::Sequential());
    int64_t width = in;
    for (int64_t i = 0; i < hidden_layers; ++i) {
      layers->push_back(torch::nn::Linear(width, hidden));
      layers->push_back(torch::nn::ReLU());
      width = hidden;
    }
    head = register_module("head", torch::nn::Linear(width, out));
  }

  /// x: [batch, in] -> log-probabilities [batch, out]
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::log_softmax(head(layers->forward(x)), /*dim=*/1);
  }

  torch::nn::Sequential layers{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace models
