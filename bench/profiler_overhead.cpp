// The profiler's own cost: profiled / unprofiled forward, measured interleaved in one process.
// Counters: ratio (median over iterations of profiled / unprofiled time; the order of the two
// alternates so neither always runs first), floor_ratio (the same for a no-op RecordFunction
// callback that requests inputs: the cost of the machinery itself), ratio_min (fastest / fastest), stop_ms (time
// stop_profile() spends computing the results, not in the ratio).
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/bert.h"
#include "models/mlp.h"
#include "models/resnet.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

// The floor under any RecordFunction-based profiler: a callback that does nothing but, like
// ours, asks LibTorch to box every op's inputs.
double floor_time(const std::function<void()>& forward, int inner) {
  auto handle = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end)
                                          .needsInputs(true)
                                          .scopes({at::RecordScope::FUNCTION,
                                                   at::RecordScope::BACKWARD_FUNCTION}));
  auto t0 = Clock::now();
  for (int i = 0; i < inner; ++i) forward();
  double t = seconds_since(t0);
  at::removeCallback(handle);
  return t;
}

// Each iteration runs the forward once unprofiled and once under an active profile, so both
// see the same machine state; only the forward itself is timed.
void measure(benchmark::State& state, flopsprof::FlopsProfiler& prof,
             const std::function<void()>& forward, int inner) {
  for (int i = 0; i < 3; ++i) forward();  // warm-up
  double plain = 0, profiled = 0, stop = 0;
  double plain_min = 1e30, profiled_min = 1e30;
  std::vector<double> ratios, floor_ratios;
  bool profiled_first = false;
  auto run_plain = [&] {
    auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) forward();
    return seconds_since(t0);
  };
  auto run_profiled = [&] {
    prof.start_profile();
    auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) forward();
    double t = seconds_since(t0);
    t0 = Clock::now();
    prof.stop_profile();
    stop += seconds_since(t0);
    return t;
  };
  for (auto _ : state) {
    double a, b;
    if (profiled_first) {
      b = run_profiled();
      a = run_plain();
    } else {
      a = run_plain();
      b = run_profiled();
    }
    profiled_first = !profiled_first;
    ratios.push_back(b / a);
    floor_ratios.push_back(floor_time(forward, inner) / a);
    plain += a;
    profiled += b;
    plain_min = std::min(plain_min, a);
    profiled_min = std::min(profiled_min, b);
    state.SetIterationTime(a + b);
  }
  double n = static_cast<double>(state.iterations());
  state.counters["unprofiled_ms"] = 1e3 * plain / (n * inner);
  state.counters["profiled_ms"] = 1e3 * profiled / (n * inner);
  std::sort(ratios.begin(), ratios.end());
  state.counters["ratio"] = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
  std::sort(floor_ratios.begin(), floor_ratios.end());
  state.counters["floor_ratio"] = floor_ratios.empty() ? 0.0 : floor_ratios[floor_ratios.size() / 2];
  state.counters["ratio_min"] = profiled_min / plain_min;
  state.counters["stop_ms"] = 1e3 * stop / n;
  state.counters["flops_per_fwd"] = static_cast<double>(prof.get_total_flops()) / inner;
}

void BM_TinyMlp(benchmark::State& state) {
  // 8 hidden Linear(64, 64) + ReLU layers, batch 1: many tiny ops, the worst case for overhead
  models::Mlp model(64, 64, 64, 8);
  model->eval();
  torch::Tensor x = torch::randn({1, 64});
  flopsprof::FlopsProfiler prof(model);
  measure(state, prof, [&] { torch::NoGradGuard g; model->forward(x); }, 200);
}
BENCHMARK(BM_TinyMlp)->UseManualTime()->Iterations(60)->Unit(benchmark::kMillisecond);

void BM_ResNet18(benchmark::State& state) {
  models::ResNet18 model;
  model->eval();
  torch::Tensor x = torch::randn({1, 3, 224, 224});
  flopsprof::FlopsProfiler prof(model);
  measure(state, prof, [&] { torch::NoGradGuard g; model->forward(x); }, 2);
}
BENCHMARK(BM_ResNet18)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

void BM_BertLayer(benchmark::State& state) {
  models::BertLayer model(models::BertConfig{});
  model->eval();
  torch::Tensor x = torch::randn({1, 128, 768});
  flopsprof::FlopsProfiler prof(model);
  measure(state, prof, [&] { torch::NoGradGuard g; model->forward(x); }, 4);
}
BENCHMARK(BM_BertLayer)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

// One training step of the train_bert example model (small BERT MLM, Adam, cross-entropy).
void BM_TrainStep(benchmark::State& state) {
  torch::manual_seed(0);
  models::BertConfig c;
  c.vocab_size = 2000; c.hidden = 128; c.layers = 2; c.heads = 4; c.intermediate = 512; c.max_positions = 128;
  models::BertForMaskedLM model(c);
  model->train();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::Tensor ids = torch::randint(0, c.vocab_size, {8, 64});
  torch::Tensor labels = torch::randint(0, c.vocab_size, {8 * 64});
  flopsprof::FlopsProfiler prof(model);
  auto train_step = [&] {
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(ids).view({-1, c.vocab_size}), labels);
    loss.backward();
    auto s = prof.step_scope();  // inert in the unprofiled runs
    adam.step();
    adam.zero_grad();
  };
  measure(state, prof, train_step, 2);
}
BENCHMARK(BM_TrainStep)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
