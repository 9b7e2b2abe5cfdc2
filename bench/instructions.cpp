// The profiler's per-op cost in instructions (stable on a shared machine, unlike time): runs one
// workload unprofiled or profiled, with the measured loop bracketed by callgrind's client
// requests. bench/instructions.sh runs it under `valgrind --tool=callgrind` for each variant and
// prints profiled / unprofiled. Workloads (REFERENCE.md): `mlp` = 200 forwards of 8 x
// (Linear(64,64) + ReLU) at batch 1 under no_grad; `train` = 50 steps of forward + backward + SGD
// at batch 8. Variants: `plain`, `ours` (flopsprof), `floor` (no-op RecordFunction callbacks
// registered as flopsprof registers its own: ops with their inputs boxed, autograd nodes without:
// what any profiler that reads shapes through RecordFunction pays), `machinery` (the same no-op
// callbacks with no inputs boxed: RecordFunction's own cost, which a profiler that reads no
// shapes would pay; floor - machinery is the boxing), `toggle` (the floor's op callback switching
// RecordFunction off on its thread from each op's start to its end, so that LibTorch never
// creates the records of nested ops: the only way a callback has to skip them, and what it costs
// on LibTorch 1.13, which rebuilds the thread's callback cache at each switch), `minimum` (the
// least evidence a FLOP profiler that reads shapes records: each top-level op's name pointer, two
// clock reads and its tensors' sizes into reserved arrays, nested ops skipped as flopsprof skips
// them; no owner, data flow, module calls, context or failure handling: a lower bound, not a
// profiler), `pytorch` (LibTorch's own profiler, KINETO state with input shapes, CPU activity).
// With FLOPSPROF_BENCH_REPEAT=N (run outside callgrind) the loop runs N times and its median time
// per work is printed instead: the variants' time, one process each.
#include <sys/resource.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/library.h>
#include <torch/torch.h>
#include <valgrind/callgrind.h>

#include <flopsprof/flopsprof.h>

namespace {

std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

struct Switched final : at::ObserverContext {};
std::unique_ptr<at::ObserverContext> switch_off(const at::RecordFunction&) {
  at::enableRecordFunction(false);  // nested ops: no RecordFunction at all
  return std::make_unique<Switched>();
}
void switch_on(const at::RecordFunction&, at::ObserverContext* ctx) {
  if (ctx != nullptr) at::enableRecordFunction(true);
}

// `minimum`: one record per top-level op, sizes in one array, both reserved before the loop.
struct MinRecord {
  const char* name;
  uint64_t start, end;
  uint32_t dims_begin, dims_count;
};
std::vector<MinRecord> g_min_records;
std::vector<int64_t> g_min_dims;
struct MinOpen {
  const at::RecordFunction* fn;
  size_t index;
};
thread_local MinOpen tl_min_open[64];
thread_local int tl_min_depth = 0;

std::unique_ptr<at::ObserverContext> min_start(const at::RecordFunction& fn) {
  if (tl_min_depth > 0 && fn.scope() != at::RecordScope::BACKWARD_FUNCTION) return nullptr;
  if (tl_min_depth == 64) return nullptr;
  MinRecord r{fn.name(), __rdtsc(), 0, static_cast<uint32_t>(g_min_dims.size()), 0};
  if (fn.scope() != at::RecordScope::BACKWARD_FUNCTION) {
    for (const c10::IValue& v : fn.inputs()) {
      if (!v.isTensor()) continue;
      for (int64_t d : v.toTensor().sizes()) g_min_dims.push_back(d);
    }
  }
  r.dims_count = static_cast<uint32_t>(g_min_dims.size()) - r.dims_begin;
  tl_min_open[tl_min_depth++] = MinOpen{&fn, g_min_records.size()};
  g_min_records.push_back(r);
  return nullptr;
}
void min_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (tl_min_depth == 0 || tl_min_open[tl_min_depth - 1].fn != &fn) return;  // a skipped op
  g_min_records[tl_min_open[--tl_min_depth].index].end = __rdtsc();
}

// `interceptor`: the floor of a dispatcher interceptor, what flopsprof's dispatch capture pays
// before it records anything: a boxed fallback on a mode key included on the thread, which
// passes each op on with the key excluded (so nested ops never reach it), and a no-op
// RecordFunction callback for autograd nodes only (free for ops). `unboxed`: the same with
// per-op unboxed kernels for the workloads' ops (no boxing on those).
constexpr c10::DispatchKey kModeKey = c10::DispatchKey::TESTING_ONLY_GenericMode;
const c10::DispatchKeySet kAfterMode(c10::DispatchKeySet::FULL_AFTER, kModeKey);
void passing_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                      torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_nested(kModeKey);
  op.redispatchBoxed(ks & kAfterMode, stack);
}
template <class Op, class Sig = typename Op::schema>
struct Passing;
template <class Op, class R, class... A>
struct Passing<Op, R(A...)> {
  static R call(c10::DispatchKeySet ks, A... a) {
    c10::impl::ExcludeDispatchKeyGuard no_nested(kModeKey);
    return Op::redispatch(ks & kAfterMode, a...);
  }
};
template <class Op>
void pass_unboxed(torch::Library& lib) {
  std::string name = Op::name;
  if (*Op::overload_name) name = name + "." + Op::overload_name;
  lib.impl(name.c_str(), TORCH_FN(Passing<Op>::call));
}
void install_interceptor(bool unboxed) {
  static auto* fallback =
      new torch::Library(torch::Library::IMPL, "_", kModeKey, __FILE__, __LINE__);
  fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&passing_fallback>());
  if (unboxed) {
    static auto* ops =
        new torch::Library(torch::Library::IMPL, "aten", kModeKey, __FILE__, __LINE__);
    pass_unboxed<at::_ops::linear>(*ops);
    pass_unboxed<at::_ops::relu>(*ops);
    pass_unboxed<at::_ops::sum>(*ops);
    pass_unboxed<at::_ops::mm>(*ops);
    pass_unboxed<at::_ops::t>(*ops);
    pass_unboxed<at::_ops::threshold_backward>(*ops);
    pass_unboxed<at::_ops::add__Tensor>(*ops);
    pass_unboxed<at::_ops::zero_>(*ops);
    pass_unboxed<at::_ops::sum_dim_IntList>(*ops);
    pass_unboxed<at::_ops::expand>(*ops);
    pass_unboxed<at::_ops::ones_like>(*ops);
    pass_unboxed<at::_ops::view>(*ops);
  }
  c10::impl::tls_set_dispatch_key_included(kModeKey, true);
}

torch::nn::Sequential tiny_mlp() {
  torch::nn::Sequential m;
  for (int i = 0; i < 8; ++i) {
    m->push_back(torch::nn::Linear(64, 64));
    m->push_back(torch::nn::ReLU());
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr,
                 "usage: %s mlp|train "
                 "plain|ours|ours_rf|floor|machinery|toggle|minimum|pytorch|interceptor|unboxed "
                 "[PAD]\n",
                 argv[0]);
    return 2;
  }
  // PAD: bytes allocated (and kept) before the model is built. It moves every later heap block,
  // which changes how much glibc's aligned allocation of tensor data costs in the loop (whether
  // the block it finds is already 64-byte aligned): the counts' sensitivity to heap layout, which
  // no profiler controls (bench/RESULTS.md, "Where the instructions above the floor go").
  if (argc == 4) {
    static volatile char* pad = nullptr;
    pad = static_cast<char*>(std::malloc(std::strtoul(argv[3], nullptr, 10) + 1));
    pad[0] = 1;
  }
  const std::string workload = argv[1], variant = argv[2];
  torch::set_num_threads(1);
  torch::manual_seed(0);
  torch::nn::Sequential model = tiny_mlp();
  torch::optim::SGD sgd(model->parameters(), 0.01);
  const bool train = workload == "train";
  torch::Tensor x = torch::randn({train ? 8 : 1, 64});
  auto work = [&] {
    if (train) {
      sgd.zero_grad();
      model->forward(x).sum().backward();
      sgd.step();
    } else {
      torch::NoGradGuard no_grad;
      model->forward(x);
    }
  };
  const int iterations = train ? 50 : 200;
  for (int i = 0; i < 5; ++i) work();  // warm-up (allocator, name caches)

  // No machine peaks: their measurement runs at stop_profile(), outside the counted loop, and
  // under callgrind would keep peaks measured at valgrind's speed in the user's cache.
  flopsprof::ProfilerOptions options;
  options.roofline.enabled = false;
  // `ours`: the default capture (the dispatcher interceptor where it can be installed);
  // `ours_rf`: flopsprof on RecordFunction callbacks, the path before issue 46
  if (variant == "ours_rf") options.capture = flopsprof::ProfilerOptions::Capture::kRecordFunction;
  const bool ours = variant == "ours" || variant == "ours_rf";
  // made only for flopsprof's variants: its first profiler installs the interceptor's kernels,
  // which `interceptor` and `unboxed` register themselves
  std::optional<flopsprof::FlopsProfiler> prof;
  if (ours) prof.emplace(model, options);
  at::CallbackHandle floor_ops = 0, floor_nodes = 0;
  if (ours) {
    prof->start_profile();
    work();  // the profiler's thread buffer and name cache, as in a long profile
  } else if (variant == "floor") {
    floor_ops = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end)
                                          .needsInputs(true)
                                          .scopes({at::RecordScope::FUNCTION}));
    floor_nodes = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end)
                                            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  } else if (variant == "machinery") {
    floor_ops = at::addGlobalCallback(
        at::RecordFunctionCallback(noop_start, noop_end).scopes({at::RecordScope::FUNCTION}));
    floor_nodes = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end)
                                            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  } else if (variant == "toggle") {
    floor_ops = at::addGlobalCallback(at::RecordFunctionCallback(switch_off, switch_on)
                                          .needsInputs(true)
                                          .scopes({at::RecordScope::FUNCTION}));
    floor_nodes = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end)
                                            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  } else if (variant == "minimum") {
    g_min_records.reserve(1 << 20);
    g_min_dims.reserve(1 << 22);
    floor_ops = at::addGlobalCallback(at::RecordFunctionCallback(min_start, min_end)
                                          .needsInputs(true)
                                          .scopes({at::RecordScope::FUNCTION}));
    floor_nodes = at::addGlobalCallback(at::RecordFunctionCallback(min_start, min_end)
                                            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
    work();  // as for `ours`: the first profiled iteration outside the count
  } else if (variant == "interceptor" || variant == "unboxed") {
    install_interceptor(variant == "unboxed");
    floor_nodes = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end)
                                            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  } else if (variant == "pytorch") {
    using namespace torch::profiler::impl;
    const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true,
                                /*profile_memory=*/false, /*with_stack=*/false,
                                /*with_flops=*/false);
    torch::autograd::profiler::prepareProfiler(config, {ActivityType::CPU});
    torch::autograd::profiler::enableProfiler(config, {ActivityType::CPU});
    work();
  } else if (variant != "plain") {
    std::fprintf(stderr, "unknown variant '%s'\n", variant.c_str());
    return 2;
  }
  if (const char* repeat = std::getenv("FLOPSPROF_BENCH_REPEAT")) {
    // Time instead of count (outside callgrind): the counted loop `repeat` times, its median
    // per work on stdout, to compare variants (the interceptor's floor) in time.
    std::vector<double> ns;
    rusage u0{}, u1{};
    getrusage(RUSAGE_SELF, &u0);
    const int n = std::atoi(repeat);
    for (int r = 0; r < n; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) work();
      ns.push_back(
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
          iterations);
    }
    getrusage(RUSAGE_SELF, &u1);
    std::sort(ns.begin(), ns.end());
    if (!ns.empty()) {
      std::printf("%s %s %.1f ns per work, %.2f minor faults per work, slowest %.1f ns\n", argv[1],
                  argv[2], ns[ns.size() / 2],
                  static_cast<double>(u1.ru_minflt - u0.ru_minflt) / (n * iterations), ns.back());
    }
  } else {
    CALLGRIND_START_INSTRUMENTATION;
    for (int i = 0; i < iterations; ++i) work();
    CALLGRIND_STOP_INSTRUMENTATION;
  }
  if (ours) prof->stop_profile();
  if (variant == "pytorch") torch::autograd::profiler::disableProfiler();
  if (floor_ops != 0) at::removeCallback(floor_ops);
  if (floor_nodes != 0) at::removeCallback(floor_nodes);
  return 0;
}
