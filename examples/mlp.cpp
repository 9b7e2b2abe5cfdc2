// Example: profile a small MLP with no annotations at all, and register a formula for a custom
// op name (shown for completeness: the MLP itself only uses built-in ops).
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/mlp.h"

int main() {
  torch::manual_seed(0);
  models::Mlp model(784, 256, 10, /*hidden_layers=*/2);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({32, 784});

  flopsprof::FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x);
  prof.stop_profile();
  prof.print_model_profile(/*header_step=*/1, /*module_depth=*/-1, /*top_modules=*/3);
  std::cout << "total flops: " << prof.get_total_flops_string()
            << ", macs: " << prof.get_total_macs_string()
            << ", params: " << prof.get_total_params_string()
            << ", fwd latency: " << prof.get_total_duration_string() << "\n";
  prof.end_profile();
  return 0;
}
