// Example: a real C++ training loop (a small BERT masked LM, Adam, cross-entropy) with the
// profiler measuring iteration 3 only: forward, measured backward per module, optimizer step.
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/bert.h"

int main() {
  torch::manual_seed(0);
  models::BertConfig c;  // small enough to train on 2 CPU cores in seconds
  c.vocab_size = 2000;
  c.hidden = 128;
  c.layers = 2;
  c.heads = 4;
  c.intermediate = 512;
  c.max_positions = 128;
  const int64_t batch = 8, seq = 64, steps = 5;
  models::BertForMaskedLM model(c);
  model->train();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));

  flopsprof::ProfilerOptions options;
  options.profile_step = 3;  // iterations 1-2 warm up, 3 is profiled
  options.batch_size = batch;
  flopsprof::FlopsProfiler prof(model, options);

  for (int64_t step = 1; step <= steps; ++step) {
    auto iteration = prof.iteration();
    torch::Tensor ids = torch::randint(0, c.vocab_size, {batch, seq});
    torch::Tensor labels = torch::randint(0, c.vocab_size, {batch, seq});
    torch::Tensor logits = model->forward(ids);
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(logits.view({-1, c.vocab_size}), labels.view({-1}));
    loss.backward();
    {
      auto step_scope = prof.step_scope();  // the optimizer step is its own phase
      adam.step();
      adam.zero_grad();
    }
    std::cout << "step " << step << " loss " << loss.item<double>()
              << (iteration.profiling() ? " (profiled)" : "") << "\n";
  }
  prof.print_model_profile(/*header_step=*/3, /*module_depth=*/4, /*top_modules=*/2);
  return 0;
}
