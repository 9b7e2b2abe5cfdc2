// Example: the MNIST CNN training loop as the LibTorch tutorials write it (zero_grad first,
// functional relu / max_pool / log_softmax, nll_loss, SGD), profiled with zero annotation.
// Synthetic 28x28 images stand in for the data set (nothing is downloaded).
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/mnist_cnn.h"

int main() {
  torch::manual_seed(1);
  const int64_t batch = 64, steps = 4;
  models::MnistNet model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  flopsprof::ProfilerOptions options;
  options.profile_step = 3;  // iterations 1-2 warm up
  options.batch_size = batch;
  flopsprof::FlopsProfiler prof(model, options);

  model->train();
  for (int64_t step = 1; step <= steps; ++step) {
    auto iteration = prof.iteration();
    optimizer.zero_grad();
    torch::Tensor data = torch::randn({batch, 1, 28, 28});
    torch::Tensor target = torch::randint(0, 10, {batch});
    torch::Tensor output = model->forward(data);
    torch::Tensor loss = torch::nll_loss(output, target);
    loss.backward();
    optimizer.step();
    std::cout << "step " << step << " loss " << loss.item<double>()
              << (iteration.profiling() ? " (profiled)" : "") << "\n";
  }
  prof.print_model_profile(/*header_step=*/3);
  return 0;
}
