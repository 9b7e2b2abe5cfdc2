// Package test: profiles a Linear through the installed flopsprof and checks the count.
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

int main() {
  torch::nn::Linear fc(16, 8);
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({4, 16});
  flopsprof::ModelProfileOptions options;
  options.print_profile = false;
  flopsprof::ModelProfile p = flopsprof::get_model_profile(fc, std::make_tuple(x), options);
  // addmm: 2 * 4*8*16 + 4*8 = 1056
  std::cout << "flopsprof " << FLOPSPROF_VERSION << ": " << p.flops << " FLOPs\n";
  return p.flops == 1056 ? 0 : 1;
}
