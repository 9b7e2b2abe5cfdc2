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
// on LibTorch 1.13, which rebuilds the thread's callback cache at each switch).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ATen/record_function.h>
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
    std::fprintf(stderr, "usage: %s mlp|train plain|ours|floor|machinery|toggle [PAD]\n", argv[0]);
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
  flopsprof::FlopsProfiler prof(model, options);
  at::CallbackHandle floor_ops = 0, floor_nodes = 0;
  if (variant == "ours") {
    prof.start_profile();
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
  } else if (variant != "plain") {
    std::fprintf(stderr, "unknown variant '%s'\n", variant.c_str());
    return 2;
  }
  CALLGRIND_START_INSTRUMENTATION;
  for (int i = 0; i < iterations; ++i) work();
  CALLGRIND_STOP_INSTRUMENTATION;
  if (variant == "ours") prof.stop_profile();
  if (floor_ops != 0) {
    at::removeCallback(floor_ops);
    at::removeCallback(floor_nodes);
  }
  return 0;
}
