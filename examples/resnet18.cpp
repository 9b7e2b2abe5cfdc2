// Example: profile a C++ ResNet-18 (torchvision's structure) at 1x3x224x224 with
// get_model_profile, printing modules down to depth 2. Usage: flopsprof_example_resnet18
// [--html report.html]
#include <iostream>
#include <string>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/resnet.h"

int main(int argc, char** argv) {
  torch::manual_seed(0);
  models::ResNet18 model;
  model->eval();
  torch::NoGradGuard no_grad;

  flopsprof::ModelProfileOptions options;
  options.module_depth = 2;
  options.top_modules = 3;
  options.as_string = true;
  if (argc == 3 && std::string(argv[1]) == "--html") options.html_file = argv[2];
  flopsprof::ModelProfile p =
      flopsprof::get_model_profile(model, std::vector<int64_t>{1, 3, 224, 224}, options);
  std::cout << "flops: " << p.flops_string << ", macs: " << p.macs_string
            << ", params: " << p.params_string << "\n";
  return 0;
}
