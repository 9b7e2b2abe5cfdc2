// Opt-in: benchmark a module's forward (or forward + backward) with Google Benchmark, with counters
// from flopsprof's formulas. Link flopsprof::benchmark; not included by flopsprof.h.
#pragma once

#include <functional>
#include <memory>
#include <tuple>
#include <utility>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "flopsprof/profiler.h"

namespace flopsprof {

struct ModuleBenchmarkOptions {
  int warm_up = 2;           ///< unmeasured runs before the profiled one and the timed loop
  bool track_memory = true;  ///< measure bytes allocated per iteration and the peak
};

/// Google Benchmark body: `run` is one iteration (a forward, or a forward + backward) of
/// `module`. After `warm_up` runs, one run is profiled (FLOPs, MACs, memory), then the timed loop
/// runs `run` once per iteration, synchronizing CUDA after each when the module is on CUDA.
/// Counters: FLOPs and MACs per iteration (forward + measured backward), FLOP/s (a rate),
/// params, bytes_per_iter (allocated per iteration), peak_bytes (net peak within one iteration).
void benchmark_module(benchmark::State& state, const std::shared_ptr<torch::nn::Module>& module,
                      const std::function<void()>& run, const ModuleBenchmarkOptions& options = {});

namespace detail {
// `model` from the factory, `inputs` a tuple of forward arguments; with `backward`, each
// iteration also runs backward from the sum of the output.
template <class M, class Tuple>
void benchmark_module_with_inputs(benchmark::State& state, M model, Tuple inputs, bool backward) {
  auto run = [&] {
    if (backward) {
      torch::Tensor out = std::apply([&](auto&... a) { return model->forward(a...); }, inputs);
      out.sum().backward();
    } else {
      torch::NoGradGuard no_grad;
      std::apply([&](auto&... a) { return model->forward(a...); }, inputs);
    }
  };
  benchmark_module(state, as_module_ptr(model), run);
}
}  // namespace detail

}  // namespace flopsprof

/// Defines and registers a Google Benchmark `name` that benchmarks a module's forward.
/// `factory(state)` returns the module (holder or shared_ptr); `make_inputs(state)` returns a
/// std::tuple of forward arguments. Both may read `state.range(i)`, so a sweep is one line:
///   FLOPSPROF_BENCHMARK_MODULE(BM_Linear, make_linear, make_input)->RangeMultiplier(2)->Range(1,
///   64);
#define FLOPSPROF_BENCHMARK_MODULE(name, factory, make_inputs)                                   \
  static void name(::benchmark::State& state) {                                                  \
    ::flopsprof::detail::benchmark_module_with_inputs(state, factory(state), make_inputs(state), \
                                                      false);                                    \
  }                                                                                              \
  BENCHMARK(name)

/// The same, timing forward + backward (from the sum of the output) per iteration.
#define FLOPSPROF_BENCHMARK_MODULE_TRAIN(name, factory, make_inputs)                             \
  static void name(::benchmark::State& state) {                                                  \
    ::flopsprof::detail::benchmark_module_with_inputs(state, factory(state), make_inputs(state), \
                                                      true);                                     \
  }                                                                                              \
  BENCHMARK(name)
