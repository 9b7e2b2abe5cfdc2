// Example: a word-level LSTM language model step (Embedding, LSTM, one Dropout used twice, Linear
// decoder), nll_loss, gradient clipping and SGD, profiled with zero annotation. Random tokens
// stand in for the corpus.
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/lstm_lm.h"

int main() {
  torch::manual_seed(1);
  const int64_t vocab = 10000, embed = 200, hidden = 200, layers = 2, seq = 35, batch = 20;
  models::LstmLm model(vocab, embed, hidden, layers);
  torch::optim::SGD sgd(model->parameters(), 20.0);

  flopsprof::ProfilerOptions options;
  options.profile_step = 2;
  options.batch_size = batch;
  flopsprof::FlopsProfiler prof(model, options);

  model->train();
  for (int64_t step = 1; step <= 3; ++step) {
    auto iteration = prof.iteration();
    torch::Tensor tokens = torch::randint(0, vocab, {seq, batch});
    torch::Tensor targets = torch::randint(0, vocab, {seq * batch});
    model->zero_grad();
    torch::Tensor loss = torch::nll_loss(model->forward(tokens), targets);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.25);
    sgd.step();
    std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
  }
  prof.print_model_profile(/*header_step=*/2);
  return 0;
}
