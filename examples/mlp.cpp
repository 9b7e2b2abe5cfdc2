// Example: profile a small MLP's forward with FlopsProfiler and print the report.
#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        fc3(register_module("fc3", torch::nn::Linear(hidden, out))) {}

  torch::Tensor forward(torch::Tensor x) {
    FLOPSPROF_MODULE();  // exact boundaries for this module (optional)
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return torch::log_softmax(fc3(x), /*dim=*/1);
  }

  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Mlp);

int main() {
  torch::manual_seed(0);
  Mlp model(784, 256, 10);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({32, 784});

  flopsprof::FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x);
  prof.stop_profile();
  prof.print_model_profile(/*profile_step=*/1, /*module_depth=*/-1, /*top_modules=*/3);
  std::cout << "total flops: " << prof.get_total_flops_string() << ", macs: "
            << prof.get_total_macs_string() << ", params: " << prof.get_total_params_string()
            << ", latency: " << prof.get_total_duration_string() << "\n";
  prof.end_profile();
  return 0;
}
