// The profiler's own cost, measured in one process: each iteration runs the same work unprofiled,
// under flopsprof (capture = auto: the dispatcher interceptor), under flopsprof with capture =
// record_function, under flopsprof with memory tracking, under LibTorch's built-in profiler with
// FLOPs, and under a no-op RecordFunction callback that requests inputs (the machinery floor), in
// rotating order. Counters are medians over iterations of (variant time / unprofiled time):
// ratio (flopsprof), ratio_rf (flopsprof on RecordFunction), ratio_mem (flopsprof +
// track_memory), ratio_builtin (LibTorch's profiler, KINETO state, with_flops, CPU activity),
// floor_ratio; plus stop_ms, the time stop_profile() takes to compute the results (not in the
// ratios). Latency honesty: reported_ratio (reported_rf_ratio) is the root's forward latency
// flopsprof reports, corrected for its own cost, per call of the work, over the same iteration's
// unprofiled time per call (1.0: the report is the program's latency), and reported_raw_ratio the
// same before the correction. Each round starts with untimed calls of the work, so that no round
// pays for the teardown before it; plain_median_ms and ours_median_ms tell which side of a ratio
// moved. FLOPSPROF_BENCH_VARIANTS=ours,rf,mem,builtin,floor (a comma list) runs only those beside
// the unprofiled one; the counters of variants not run read 0. bench/make_results.py turns the
// JSON output (--benchmark_format=json) into bench/RESULTS.md.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <vector>

#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/bert.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/resnet.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}
double median(const std::vector<double>& v) { return quantile(v, 0.5); }

// This process's minor page faults so far.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

enum Variant { kPlain, kOurs, kOursRf, kOursMem, kBuiltin, kFloor, kVariants };

// Whether variant `v` runs: all of them, or those FLOPSPROF_BENCH_VARIANTS names (and kPlain).
bool selected(int v) {
  static const char* const kNames[kVariants] = {"plain", "ours", "rf", "mem", "builtin", "floor"};
  const char* list = std::getenv("FLOPSPROF_BENCH_VARIANTS");
  if (list == nullptr || *list == '\0' || v == kPlain) return true;
  const std::string names = std::string(",") + list + ",";
  return names.find(std::string(",") + kNames[v] + ",") != std::string::npos;
}

flopsprof::ProfilerOptions record_function() {
  flopsprof::ProfilerOptions o;
  o.capture = flopsprof::ProfilerOptions::Capture::kRecordFunction;
  return o;
}

// The three flopsprof profilers of one work: `ours` (the default), `rf` (capture =
// record_function) and `mem` (track_memory); each one's step_scope() is what a training step
// marks.
struct Profilers {
  template <class Model>
  explicit Profilers(const Model& model)
      : ours(model), rf(model, record_function()), mem(model, with_memory()) {}
  flopsprof::FlopsProfiler ours, rf, mem;
  static flopsprof::ProfilerOptions with_memory() {
    flopsprof::ProfilerOptions o;
    o.track_memory = true;
    return o;
  }
};

// `per_call`: the work's own latency per call as the report gives it (the root's forward, per
// work() call), from a stopped profiler, raw (false) or corrected (true).
using ReportedFn = std::function<double(const flopsprof::ProfileResult&, bool corrected)>;
double root_forward(const flopsprof::ProfileResult& r, bool corrected) {
  return corrected ? r.duration_s : r.duration_raw_s;
}

void measure(benchmark::State& state, Profilers& profs, const std::function<void()>& work,
             int inner, const ReportedFn& reported = root_forward) {
  flopsprof::FlopsProfiler& prof = profs.ours;
  for (int i = 0; i < 3; ++i) work();  // warm-up
  std::vector<double> ratio[kVariants], times[kVariants], faults[kVariants], honest, honest_raw,
      honest_rf, in_place[3];
  double stop_s = 0, plain_s = 0;
  auto run = [&](int v) {
    auto repeat = [&] {
      const long f0 = minor_faults();
      auto t0 = Clock::now();
      for (int i = 0; i < inner; ++i) work();
      const double s = seconds_since(t0);
      faults[v].push_back(static_cast<double>(minor_faults() - f0) / inner);
      return s;
    };
    // Untimed calls first, after the previous variant's teardown: each variant's round then
    // starts from the same warm state, whatever ran before it (a stop_profile() or LibTorch's
    // profiler's disable evicts the caches: the unprofiled round right after a stop_profile() read
    // 3-4% slower, their median beside LibTorch's profiler 9-13%).
    for (int i = 0; i < std::max(1, inner / 10); ++i) work();
    double t = 0;
    switch (v) {
      case kPlain:
        t = repeat();
        break;
      case kOurs:
      case kOursRf:
      case kOursMem: {
        flopsprof::FlopsProfiler& p = v == kOurs ? prof : v == kOursRf ? profs.rf : profs.mem;
        p.start_profile();
        t = repeat();
        auto t0 = Clock::now();
        p.stop_profile();
        if (v == kOurs) stop_s += seconds_since(t0);
        break;
      }
      case kBuiltin: {
        using namespace torch::profiler::impl;
        // prepareProfiler first, as LibTorch's C++ API wants: 2.x's enableProfiler dereferences a
        // null Kineto activity profiler without it (a segfault on Debian 13's LibTorch 2.6)
        const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true,
                                    /*profile_memory=*/false,
                                    /*with_stack=*/false, /*with_flops=*/true);
        torch::autograd::profiler::prepareProfiler(config, {ActivityType::CPU});
        torch::autograd::profiler::enableProfiler(config, {ActivityType::CPU});
        t = repeat();
        torch::autograd::profiler::disableProfiler();
        break;
      }
      case kFloor: {
        auto handle = at::addGlobalCallback(
            at::RecordFunctionCallback(noop_start, noop_end)
                .needsInputs(true)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
        t = repeat();
        at::removeCallback(handle);
        break;
      }
    }
    return t;
  };
  int rotation = 0;
  for (auto _ : state) {
    double t[kVariants];
    for (int k = 0; k < kVariants; ++k) {
      int v = (k + rotation) % kVariants;
      t[v] = selected(v) ? run(v) : 0.0;
    }
    ++rotation;
    for (int v = 0; v < kVariants; ++v) {
      if (!selected(v)) continue;
      ratio[v].push_back(t[v] / t[kPlain]);
      times[v].push_back(t[v] / inner);
    }
    if (selected(kOurs)) {
      honest.push_back(reported(prof.result(), true) / t[kPlain]);
      honest_raw.push_back(reported(prof.result(), false) / t[kPlain]);
      const flopsprof::LatencyCorrection& c = prof.result().correction;
      in_place[0].push_back(c.op_in_place_ns);
      in_place[1].push_back(c.boxed_op_in_place_ns);
      in_place[2].push_back(c.call_in_place_ns);
    }
    if (selected(kOursRf)) honest_rf.push_back(reported(profs.rf.result(), true) / t[kPlain]);
    plain_s += t[kPlain];
    state.SetIterationTime(t[kPlain]);
  }
  double n = static_cast<double>(state.iterations());
  state.counters["unprofiled_ms"] = 1e3 * plain_s / (n * inner);
  state.counters["ratio"] = median(ratio[kOurs]);
  state.counters["ratio_rf"] = median(ratio[kOursRf]);
  state.counters["reported_ratio"] = median(honest);
  state.counters["reported_raw_ratio"] = median(honest_raw);
  state.counters["reported_rf_ratio"] = median(honest_rf);
  state.counters["ratio_mem"] = median(ratio[kOursMem]);
  state.counters["ratio_builtin"] = median(ratio[kBuiltin]);
  state.counters["floor_ratio"] = median(ratio[kFloor]);
  // interquartile ranges, to tell a difference from this machine's noise
  state.counters["ratio_p25"] = quantile(ratio[kOurs], 0.25);
  state.counters["ratio_p75"] = quantile(ratio[kOurs], 0.75);
  state.counters["ratio_builtin_p25"] = quantile(ratio[kBuiltin], 0.25);
  state.counters["ratio_builtin_p75"] = quantile(ratio[kBuiltin], 0.75);
  state.counters["stop_ms"] = 1e3 * stop_s / n;
  // each variant's median time per call of the work, to tell which side of a ratio moved
  state.counters["plain_median_ms"] = 1e3 * median(times[kPlain]);
  state.counters["ours_median_ms"] = 1e3 * median(times[kOurs]);
  // and its minor page faults per call (the heap's state, which the other variants change)
  state.counters["plain_faults"] = median(faults[kPlain]);
  state.counters["ours_faults"] = median(faults[kOurs]);
  // what the in-place timings added to the calibrated cost per record (ns), medians over rounds
  state.counters["op_in_place_ns"] = median(in_place[0]);
  state.counters["boxed_op_in_place_ns"] = median(in_place[1]);
  state.counters["call_in_place_ns"] = median(in_place[2]);
  if (selected(kOurs)) {
    state.counters["flops_per_iter"] = static_cast<double>(prof.get_total_flops()) / inner;
  }
}

void BM_TinyMlp(benchmark::State& state) {
  // 8 hidden Linear(64, 64) + ReLU layers, batch 1: many tiny ops, the worst case for overhead
  models::Mlp model(64, 64, 64, 8);
  model->eval();
  torch::Tensor x = torch::randn({1, 64});
  Profilers profs(model);
  measure(
      state, profs,
      [&] {
        torch::NoGradGuard g;
        model->forward(x);
      },
      200);
  // A module's reported latency: the first Linear's, per call, corrected, over the same Linear
  // timed alone where it runs (the unprofiled model run layer by layer, two clock reads around
  // that Linear), in rounds that alternate. Each timing starts warm (untimed forwards after the
  // previous round's stop_profile(), as measure()'s rounds: timed right after it, the Linear read
  // 1.3 x its warm time on one run and moved the ratio from 1.14 to 0.85).
  torch::NoGradGuard g;
  std::vector<double> ratios, raw_ratios, alone_ns;
  for (int round = 0; round < 15; ++round) {
    for (int i = 0; i < 20; ++i) model->forward(x);
    double alone = 0;
    for (int i = 0; i < 200; ++i) {
      torch::Tensor h = x;
      for (size_t k = 0; k < model->layers->size(); ++k) {
        const std::shared_ptr<torch::nn::Module> layer = model->layers->ptr(k);
        const auto t0 = Clock::now();
        if (auto* linear = layer->as<torch::nn::Linear>()) {
          h = linear->forward(h);
        } else {
          h = layer->as<torch::nn::ReLU>()->forward(h);
        }
        if (k == 0) alone += seconds_since(t0);
      }
      torch::log_softmax(model->head(h), 1);
    }
    alone /= 200;
    profs.ours.start_profile();
    for (int i = 0; i < 200; ++i) model->forward(x);
    profs.ours.stop_profile();
    const flopsprof::ModuleStats& m = profs.ours.get_module("layers.0");
    ratios.push_back(m.latency_s / static_cast<double>(m.calls) / alone);
    raw_ratios.push_back(m.latency_raw_s / static_cast<double>(m.calls) / alone);
    alone_ns.push_back(alone * 1e9);
  }
  state.counters["linear_reported_ratio"] = median(ratios);
  state.counters["linear_raw_ratio"] = median(raw_ratios);
  state.counters["linear_alone_ns"] = median(alone_ns);
}
BENCHMARK(BM_TinyMlp)->UseManualTime()->Iterations(40)->Unit(benchmark::kMillisecond);

// Decode steps of the gpt_decode example's model (examples/models/gpt.h) after a 32-token prompt:
// each work is 8 forwards of one token over the cached context (the cache copied from the
// prompt's, so that every work starts alike).
void BM_GptDecode(benchmark::State& state) {
  torch::manual_seed(0);
  models::GptConfig c;
  models::Gpt gpt(c);
  gpt->eval();
  torch::NoGradGuard no_grad;
  models::KvCache prompt_cache;
  torch::Tensor token =
      gpt->prefill(torch::randint(0, c.vocab, {1, 32}, torch::kLong), prompt_cache);
  Profilers profs(gpt);
  measure(
      state, profs,
      [&] {
        models::KvCache cache = prompt_cache;
        for (int i = 0; i < 8; ++i) gpt->forward(token, cache);
      },
      4);
}
BENCHMARK(BM_GptDecode)->UseManualTime()->Iterations(40)->Unit(benchmark::kMillisecond);

void BM_ResNet18(benchmark::State& state) {
  models::ResNet18 model;
  model->eval();
  torch::Tensor x = torch::randn({1, 3, 224, 224});
  Profilers profs(model);
  measure(
      state, profs,
      [&] {
        torch::NoGradGuard g;
        model->forward(x);
      },
      2);
}
BENCHMARK(BM_ResNet18)->UseManualTime()->Iterations(24)->Unit(benchmark::kMillisecond);

void BM_BertLayer(benchmark::State& state) {
  models::BertLayer model(models::BertConfig{});
  model->eval();
  torch::Tensor x = torch::randn({1, 128, 768});
  Profilers profs(model);
  measure(
      state, profs,
      [&] {
        torch::NoGradGuard g;
        model->forward(x);
      },
      4);
}
BENCHMARK(BM_BertLayer)->UseManualTime()->Iterations(24)->Unit(benchmark::kMillisecond);

// One training step of the train_bert example model (small BERT MLM, Adam, cross-entropy).
void BM_TrainStep(benchmark::State& state) {
  torch::manual_seed(0);
  models::BertConfig c;
  c.vocab_size = 2000;
  c.hidden = 128;
  c.layers = 2;
  c.heads = 4;
  c.intermediate = 512;
  c.max_positions = 128;
  models::BertForMaskedLM model(c);
  model->train();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::Tensor ids = torch::randint(0, c.vocab_size, {8, 64});
  torch::Tensor labels = torch::randint(0, c.vocab_size, {8 * 64});
  Profilers profs(model);
  auto train_step = [&] {
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(ids).view({-1, c.vocab_size}), labels);
    loss.backward();
    auto s1 = profs.ours.step_scope();  // only the running profiler's scope is active
    auto s2 = profs.rf.step_scope();
    auto s3 = profs.mem.step_scope();
    adam.step();
    adam.zero_grad();
  };
  // The step's latency is more than its phases' (the loss, the gaps between them): no honest
  // comparison here (reported ratios 0).
  measure(state, profs, train_step, 2, [](const flopsprof::ProfileResult&, bool) { return 0.0; });
}
BENCHMARK(BM_TrainStep)->UseManualTime()->Iterations(30)->Unit(benchmark::kMillisecond);

// Report generation for a model of 10,000 modules (a deep Sequential of tiny layers): building the
// module tree (start_profile), computing the results (stop_profile), printing the detailed
// profile, and writing JSON. Each is reported in ms; target < 100 ms each.
void BM_Report10kModules(benchmark::State& state) {
  torch::nn::Sequential model;
  for (int i = 0; i < 10000; ++i) model->push_back(torch::nn::Linear(4, 4));
  torch::Tensor x = torch::randn({1, 4});
  flopsprof::FlopsProfiler prof(model.ptr());
  double build = 0, stop = 0, print = 0, json = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    prof.start_profile();
    build += seconds_since(t0);
    {
      torch::NoGradGuard g;
      model->forward(x);
    }
    t0 = Clock::now();
    prof.stop_profile();
    stop += seconds_since(t0);
    t0 = Clock::now();
    std::string text = prof.model_profile_string(1, -1, 3, true);
    print += seconds_since(t0);
    t0 = Clock::now();
    std::string j = prof.to_json();
    json += seconds_since(t0);
    benchmark::DoNotOptimize(text.data());
    benchmark::DoNotOptimize(j.data());
    state.SetIterationTime(build + stop + print + json);
  }
  double n = static_cast<double>(state.iterations());
  state.counters["modules"] = static_cast<double>(prof.result().modules.size());
  state.counters["build_tree_ms"] = 1e3 * build / n;
  state.counters["stop_ms"] = 1e3 * stop / n;
  state.counters["print_detailed_ms"] = 1e3 * print / n;
  state.counters["json_ms"] = 1e3 * json / n;
}
BENCHMARK(BM_Report10kModules)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
