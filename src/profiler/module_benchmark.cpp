// benchmark_module: one profiled iteration for the counters, then Google Benchmark's timed loop.
#include "flopsprof/benchmark.h"

#include <torch/cuda.h>

#include <c10/util/ThreadLocalDebugInfo.h>

#include "flopsprof/profiler.h"

namespace flopsprof {

void benchmark_module(benchmark::State& state, const std::shared_ptr<torch::nn::Module>& module,
                      const std::function<void()>& run, const ModuleBenchmarkOptions& options) {
  for (int i = 0; i < options.warm_up; ++i) run();
  ProfilerOptions po;
  // The memory-reporting slot may be held by another profiler: then run without memory.
  po.track_memory = options.track_memory &&
                    c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr;
  FlopsProfiler prof(module, po);
  prof.start_profile();
  run();
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  const double flops = static_cast<double>(r.flops + r.bwd_flops + r.recompute_flops);
  const double macs = static_cast<double>(r.macs + r.bwd_macs + r.recompute_macs);
  int64_t allocated = 0, previous = 0;
  for (const MemorySample& s : r.memory.trace) {
    allocated += std::max<int64_t>(0, s.bytes - previous);
    previous = s.bytes;
  }
  const double params = static_cast<double>(r.params);
  const double peak = static_cast<double>(r.memory.peak_bytes);
  prof.end_profile();

  bool cuda = false;
  for (const auto& p : module->parameters()) cuda = cuda || p.is_cuda();
  for (auto _ : state) {
    run();
    if (cuda) torch::cuda::synchronize();
  }
  state.counters["FLOPs"] = benchmark::Counter(flops);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MACs"] = benchmark::Counter(macs);
  state.counters["params"] = benchmark::Counter(params);
  if (po.track_memory) {
    state.counters["bytes_per_iter"] = benchmark::Counter(static_cast<double>(allocated));
    state.counters["peak_bytes"] = benchmark::Counter(peak);
  }
}

}  // namespace flopsprof
