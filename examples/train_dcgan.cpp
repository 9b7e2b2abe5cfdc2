// Example: a DCGAN step as in the LibTorch DCGAN example (two models, two optimizers, the
// discriminator called three times), with one profiler per model running at the same time.
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/dcgan.h"

int main() {
  torch::manual_seed(1);
  const int64_t noise_size = 100, batch = 16, steps = 3;
  models::DcganGenerator generator(noise_size);
  torch::nn::Sequential discriminator = models::dcgan_discriminator();
  torch::optim::Adam g_opt(generator->parameters(),
                           torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam d_opt(discriminator->parameters(),
                           torch::optim::AdamOptions(5e-4).betas(std::make_tuple(0.5, 0.5)));

  flopsprof::ProfilerOptions options;
  options.profile_step = 2;
  options.batch_size = batch;
  flopsprof::FlopsProfiler g_prof(generator, options), d_prof(discriminator, options);

  for (int64_t step = 1; step <= steps; ++step) {
    auto g_iteration = g_prof.iteration();
    auto d_iteration = d_prof.iteration();
    torch::Tensor real_images = torch::randn({batch, 1, 28, 28}).tanh();
    // Train the discriminator on real, then on generated images.
    discriminator->zero_grad();
    torch::Tensor real_labels = torch::empty(batch).uniform_(0.8, 1.0);
    torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
    torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
    d_loss_real.backward();
    torch::Tensor noise = torch::randn({batch, noise_size, 1, 1});
    torch::Tensor fake_images = generator->forward(noise);
    torch::Tensor fake_labels = torch::zeros(batch);
    torch::Tensor fake_output =
        discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
    torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
    d_loss_fake.backward();
    d_opt.step();
    // Train the generator through the discriminator.
    generator->zero_grad();
    fake_labels.fill_(1);
    fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
    torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
    g_loss.backward();
    g_opt.step();
    std::cout << "step " << step << " d_loss " << (d_loss_real + d_loss_fake).item<double>()
              << " g_loss " << g_loss.item<double>() << "\n";
  }
  std::cout << "\n===== generator =====\n";
  g_prof.print_model_profile(/*header_step=*/2, /*module_depth=*/-1, /*top_modules=*/1,
                             /*detailed=*/true);
  std::cout << "\n===== discriminator (3 calls per step) =====\n";
  d_prof.print_model_profile(/*header_step=*/2);
  return 0;
}
