// GPU: the profiler's cost on a BERT-base training step (batch 32, seq 128) on CUDA, measured in
// one process: unprofiled, flopsprof with CUPTI (no synchronization during the step), and
// DeepSpeed-style timing that synchronizes the device at every module boundary (emulated with
// flopsprof's forward pre/post hooks on the scoped modules). Exits with a message without a GPU.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/bert.h"

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::cout << "flopsprof_bench_gpu: no CUDA device; nothing to measure\n";
    return 0;
  }
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 10;
  torch::manual_seed(0);
  models::BertForMaskedLM model;
  model->to(torch::kCUDA);
  model->train();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-4));
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA);
  torch::Tensor ids = torch::randint(0, 30522, {32, 128}, opts);
  torch::Tensor labels = torch::randint(0, 30522, {32 * 128}, opts);
  flopsprof::FlopsProfiler prof(model);
  auto step = [&] {
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(ids).view({-1, 30522}), labels);
    loss.backward();
    auto s = prof.step_scope();
    adam.step();
    adam.zero_grad();
    torch::cuda::synchronize();  // end of the iteration
  };
  auto timed = [&](auto&& body) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up

  // DeepSpeed-style: synchronize before and after every scoped module's forward.
  std::vector<flopsprof::HookHandle> hooks;
  auto add_sync_hooks = [&] {
    for (const auto& m : model->modules()) {
      hooks.push_back(flopsprof::register_forward_pre_hook(
          m, [](torch::nn::Module&) { torch::cuda::synchronize(); }));
      hooks.push_back(flopsprof::register_forward_hook(
          m, [](torch::nn::Module&) { torch::cuda::synchronize(); }));
    }
  };
  std::vector<double> plain, profiled, synced;
  for (int i = 0; i < iterations; ++i) {
    plain.push_back(timed(step));
    prof.start_profile();
    profiled.push_back(timed(step));
    prof.stop_profile();
    add_sync_hooks();
    synced.push_back(timed(step));
    for (auto& h : hooks) h.remove();
    hooks.clear();
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const flopsprof::ProfileResult& r = prof.result();
  std::cout << "device: " << r.gpu.device << ", GPU backend: " << r.gpu.backend << " "
            << r.gpu.reason << "\n"
            << "unprofiled step: " << median(plain) * 1e3 << " ms\n"
            << "flopsprof (CUPTI) / unprofiled: " << median(profiled) / median(plain) << "\n"
            << "per-module synchronization (DeepSpeed-style) / unprofiled: "
            << median(synced) / median(plain) << "\n"
            << "kernels: " << r.gpu.kernels << ", GPU busy " << r.gpu.busy_s * 1e3
            << " ms, unattributed " << r.gpu.unattributed_s * 1e3 << " ms, root module GPU time "
            << r.modules[0].gpu_busy_s * 1e3 << " ms\n";
  prof.print_model_profile(1, 3, 3, true);
  return 0;
}
