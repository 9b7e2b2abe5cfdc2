// A DCGAN for 28x28 images, shaped like the LibTorch DCGAN example: a generator of
// ConvTranspose2d + BatchNorm2d with functional relu / tanh, and a discriminator built as a
// Sequential. `width` 64 gives the usual sizes; tests use a narrower one.
#pragma once

#include <torch/torch.h>

namespace models {

struct DcganGeneratorImpl : torch::nn::Module {
  DcganGeneratorImpl(int64_t noise_size, int64_t width = 64)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, 4 * width, 4).bias(false)),
        batch_norm1(4 * width),
        conv2(torch::nn::ConvTranspose2dOptions(4 * width, 2 * width, 3)
                  .stride(2)
                  .padding(1)
                  .bias(false)),
        batch_norm2(2 * width),
        conv3(torch::nn::ConvTranspose2dOptions(2 * width, width, 4)
                  .stride(2)
                  .padding(1)
                  .bias(false)),
        batch_norm3(width),
        conv4(torch::nn::ConvTranspose2dOptions(width, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  /// noise: [batch, noise_size, 1, 1] -> images [batch, 1, 28, 28] in [-1, 1]
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));
    x = torch::relu(batch_norm2(conv2(x)));
    x = torch::relu(batch_norm3(conv3(x)));
    x = torch::tanh(conv4(x));
    return x;
  }

  torch::nn::ConvTranspose2d conv1;
  torch::nn::BatchNorm2d batch_norm1;
  torch::nn::ConvTranspose2d conv2;
  torch::nn::BatchNorm2d batch_norm2;
  torch::nn::ConvTranspose2d conv3;
  torch::nn::BatchNorm2d batch_norm3;
  torch::nn::ConvTranspose2d conv4;
};
TORCH_MODULE(DcganGenerator);

/// images [batch, 1, 28, 28] -> probability of "real" [batch, 1, 1, 1]
inline torch::nn::Sequential dcgan_discriminator(int64_t width = 64) {
  namespace nn = torch::nn;
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, width, 4).stride(2).padding(1).bias(false)),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(width, 2 * width, 4).stride(2).padding(1).bias(false)),
      nn::BatchNorm2d(2 * width), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(2 * width, 4 * width, 4).stride(2).padding(1).bias(false)),
      nn::BatchNorm2d(4 * width), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(4 * width, 1, 3).stride(1).padding(0).bias(false)),
      nn::Sigmoid());
}

}  // namespace models
