// Measuring the capture's own cost per record (capture/calibration.h).
#include "capture/calibration.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/linear.h>
#include <torch/torch.h>

#include "capture/interceptor.h"
#include "capture/module_index.h"
#include "capture/names.h"
#include "capture/observer.h"
#include "capture/session.h"

namespace flopsprof::detail {
namespace {

std::mutex g_mu;
std::optional<CaptureCost> g_cost[2];  // [dispatch]
std::atomic<uint64_t> g_next_calibration_id{uint64_t{1}
                                            << 62};  // apart from the recordings' session ids

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int64_t calibration_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class F>
double per_call_ns(F&& f, int calls) {
  const int64_t t0 = calibration_clock_ns();
  for (int i = 0; i < calls; ++i) f();
  return static_cast<double>(calibration_clock_ns() - t0) / calls;
}

// Three built-in modules known to a private profile, as a model's are: an Identity (a module
// call's record alone), a Linear (its record and an op with an unboxed kernel, aten::linear, whose
// nested ops RecordFunction records and the interceptor skips), a Softplus (its record and an op
// through the boxed fallback).
struct Probe {
  at::Tensor x;
  torch::nn::Sequential model;
  ModelIndex index;
  int32_t tree[3];  // each module's index in the tree

  Probe() {
    {
      Unobserved unobserved;
      x = at::ones({1, 4});
      // The Linear's initialisation draws from the default generator: its state is put back, so
      // that the program's random numbers (initialisations, dropout masks) are those it would
      // have drawn without flopsprof.
      // (Each access under the generator's lock, which the initialisation takes too: numbers
      // another thread draws between the two are drawn again after the restore.)
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      at::Tensor state;
      {
        std::lock_guard<std::mutex> lock(gen.mutex());
        state = gen.get_state();
      }
      model = torch::nn::Sequential(torch::nn::Identity(), torch::nn::Linear(4, 4),
                                    torch::nn::Softplus());
      {
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(state);
      }
    }
    index = build_model_index(*model, {});
    for (int k = 0; k < 3; ++k) tree[k] = index.by_ptr.at(model[k].get());
  }
};

// Per-call times (ns) of the three modules, one entry per round, unobserved and observed.
struct Timings {
  std::vector<double> plain[3], observed[3];
};

// Rounds that alternate unobserved and observed calls (the machine's clock and load drift alike
// for both), observed into `session`.
Timings time_rounds(Probe& p, Session& session, bool dispatch) {
  constexpr int kRounds = 9, kCalls = 48;
  auto identity = p.model[0]->as<torch::nn::Identity>();
  auto linear = p.model[1]->as<torch::nn::Linear>();
  auto softplus = p.model[2]->as<torch::nn::Softplus>();
  torch::NoGradGuard no_grad;
  auto call = [&] { (void)identity->forward(p.x); };
  auto op = [&] { (void)linear->forward(p.x); };
  auto boxed = [&] { (void)softplus->forward(p.x); };
  start_observing(&session, /*all_threads=*/false,
                  dispatch ? CaptureRequest::kDispatch : CaptureRequest::kRecordFunction);
  if (ThreadBuffer* b = session.thread_buffer()) {
    try {
      b->prefault();  // as the profiles' starting threads' (Recording::begin)
    } catch (...) {
    }
  }
  Timings t;
  try {
    auto round = [&](bool record) {
      auto time = [&](int k, auto&& f) {
        (record ? t.observed : t.plain)[k].push_back(per_call_ns(f, kCalls));
      };
      if (record) {
        demand_scopes();  // built-in module calls open their records
        time(0, call);
        time(1, op);
        time(2, boxed);
        release_scopes();
      } else {
        Unobserved unobserved;
        time(0, call);
        time(1, op);
        time(2, boxed);
      }
    };
    round(false);  // warm-up: caches, the thread's buffer and name cache
    round(true);
    for (auto& v : t.plain) v.clear();
    for (auto& v : t.observed) v.clear();
    for (int r = 0; r < kRounds; ++r) {
      round(false);
      round(true);
    }
  } catch (...) {
    stop_observing(&session);
    throw;
  }
  stop_observing(&session);
  return t;
}

// One observed module call's record and the ops inside it: their spans summed, how many, and
// (RecordFunction path) the records LibTorch made of ops nested in them.
struct PerCall {
  double span_ns = 0, ops = 0, nested = 0;
};

// What the records say: the Identity's call spans, and each module's calls with their ops.
struct Spans {
  std::vector<double> call_spans;
  std::vector<PerCall> calls[3];
};

Spans read_spans(const Probe& p, const Session& session, bool dispatch) {
  const double ns_per_tick = session.ns_per_tick();
  Spans s;
  for (const auto& buffer : session.buffers) {
    std::vector<int> call_of(buffer->scopes.size(), -1);  // scope record -> its slot in calls[k]
    for (size_t i = 0; i < buffer->scopes.size(); ++i) {
      const ScopeRecord& r = buffer->scopes[i];
      if (r.exit_tick == 0) continue;
      for (int k = 0; k < 3; ++k) {
        if (r.module != p.tree[k]) continue;
        call_of[i] = static_cast<int>(s.calls[k].size());
        s.calls[k].push_back(PerCall{});
        if (k == 0)
          s.call_spans.push_back(static_cast<double>(r.exit_tick - r.enter_tick) * ns_per_tick);
      }
    }
    for (const RawEvent& e : buffer->events) {
      if (e.parent >= 0 || e.end_tick == 0 || e.kind != EventKind::kOp || e.scope < 0) continue;
      const ScopeRecord& r = buffer->scopes[static_cast<size_t>(e.scope)];
      const int slot = call_of[static_cast<size_t>(e.scope)];
      for (int k = 1; k < 3 && slot >= 0; ++k) {
        if (r.module != p.tree[k]) continue;
        PerCall& pc = s.calls[k][static_cast<size_t>(slot)];
        pc.span_ns += static_cast<double>(e.end_tick - e.start_tick) * ns_per_tick;
        pc.ops += 1;
        pc.nested += dispatch ? 0.0 : static_cast<double>(e.nested_records);
      }
    }
  }
  return s;
}

// The costs from the timings and the records: a module call's is the Identity's, all of it, and
// inside its span what exceeds the unobserved call; an op's is the Linear's (the Softplus's) call
// less the Identity's, per op it ran at top level, and inside the ops' spans what exceeds their
// unobserved time (the module's call less the Identity's).
CaptureCost solve(const Timings& t, const Spans& s, bool dispatch) {
  auto extra = [&](int k) {
    std::vector<double> d;
    for (size_t r = 0; r < t.plain[k].size() && r < t.observed[k].size(); ++r)
      d.push_back(t.observed[k][r] - t.plain[k][r]);
    return std::max(0.0, median(d));
  };
  auto field = [&](int k, double PerCall::*f) {
    std::vector<double> v;
    for (const PerCall& pc : s.calls[k]) v.push_back(pc.*f);
    return median(v);
  };
  CaptureCost c;
  const double call_total = extra(0);
  c.call.inner_ns = std::clamp(median(s.call_spans) - median(t.plain[0]), 0.0, call_total);
  c.call.outer_ns = call_total - c.call.inner_ns;
  double ops[2], nested[2], inner[2], total[2];
  for (int k = 0; k < 2; ++k) {
    ops[k] = std::max(1.0, field(k + 1, &PerCall::ops));
    nested[k] = field(k + 1, &PerCall::nested);
    total[k] = std::max(0.0, extra(k + 1) - call_total);
    const double alone = std::max(0.0, median(t.plain[k + 1]) - median(t.plain[0]));
    inner[k] = s.calls[k + 1].empty()
                   ? 0.0
                   : std::clamp(field(k + 1, &PerCall::span_ns) - alone, 0.0, total[k]);
  }
  if (dispatch) {
    RecordCost* costs[2] = {&c.op, &c.boxed_op};
    for (int k = 0; k < 2; ++k) {
      costs[k]->inner_ns = inner[k] / ops[k];
      costs[k]->outer_ns = (total[k] - inner[k]) / ops[k];
    }
  } else {
    // Inside the ops' spans on this path: a constant per op and RecordFunction's records of their
    // nested ops (the two modules' ops nest different numbers: solved for both).
    const double det = ops[0] * nested[1] - ops[1] * nested[0];
    double base = 0, per = 0;
    if (std::abs(det) > 1e-9) {
      base = (inner[0] * nested[1] - inner[1] * nested[0]) / det;
      per = (ops[0] * inner[1] - ops[1] * inner[0]) / det;
    }
    if (base < 0 || per < 0) {  // noise: all of it per nested record, or per op
      base = 0;
      per = nested[0] + nested[1] > 0 ? (inner[0] + inner[1]) / (nested[0] + nested[1]) : 0;
      if (per == 0) base = (inner[0] + inner[1]) / (ops[0] + ops[1]);
    }
    c.op.inner_ns = base;
    c.op.nested_ns = per;
    c.op.outer_ns = std::max(0.0, (total[0] + total[1] - inner[0] - inner[1]) / (ops[0] + ops[1]));
    c.boxed_op = c.op;  // RecordFunction boxes every op alike
  }
  c.calibrated = true;
  return c;
}

// The op and call costs of one path, measured on a Probe in a private session.
CaptureCost measure(bool dispatch) {
  Probe p;
  Session session;
  session.id = g_next_calibration_id.fetch_add(1);
  session.host_clock = true;
  session.tsc = invariant_tsc();
  session.owners.build(p.index.owner_entries);
  session.module_index = p.index.by_ptr;
  session.scope_names = p.index.scope_names;
  session.start_clock();
  const Timings t = time_rounds(p, session, dispatch);
  CaptureCost c = solve(t, read_spans(p, session, dispatch), dispatch);
  std::vector<const ThreadEvents*> threads;
  for (const auto& b : session.buffers) threads.push_back(b.get());
  c.in_place = in_place_means(threads, session.ns_per_tick());
  return c;
}

}  // namespace

CaptureCost capture_cost(bool dispatch) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::optional<CaptureCost>& cached = g_cost[dispatch ? 1 : 0];
  if (cached) return *cached;
  if (any_session_active()) return {};  // its records would take the measurement's ops
  const auto t0 = std::chrono::steady_clock::now();
  try {
    cached = measure(dispatch);
  } catch (...) {
    return {};  // the path cannot start here: its start will say why
  }
  note_setup_work(
      dispatch ? "its own cost on the dispatch path measured"
               : "its own cost on the RecordFunction path measured",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return *cached;
}

HalfCosts in_place_means(const std::vector<const ThreadEvents*>& threads, double ns_per_tick) {
  HalfCosts out{};
  for (int h = 0; h < kCostHalves; ++h) {
    double before = 0, after = 0;
    uint64_t n = 0;
    for (const ThreadEvents* t : threads) {
      before += static_cast<double>(t->cost_samples[h].before);
      after += static_cast<double>(t->cost_samples[h].after);
      n += t->cost_samples[h].n;
    }
    if (n == 0) continue;
    out[h] = HalfCost{before * ns_per_tick / static_cast<double>(n),
                      after * ns_per_tick / static_cast<double>(n),
                      static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX))};
  }
  return out;
}

namespace {
std::mutex g_setup_mu;
SetupWork g_setup;  // guarded by g_setup_mu
}  // namespace

std::atomic<bool> g_setup_unwarmed{false};

SetupWork setup_work() {
  std::lock_guard<std::mutex> lock(g_setup_mu);
  return g_setup;
}

void note_setup_work(const char* what, double ms) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_setup_mu);
    ++g_setup.generation;
    if (g_setup_unwarmed.load(std::memory_order_relaxed)) {  // work since the program last ran
      g_setup.what += std::string(", ") + what;
      g_setup.ms += ms;
    } else {
      g_setup.what = what;
      g_setup.ms = ms;
    }
    g_setup_unwarmed.store(true, std::memory_order_relaxed);
  } catch (...) {  // a lost note: at worst a cold start goes unsaid
  }
}

void prepare_capture(CaptureRequest request, bool host_clock) noexcept {
  bool dispatch = false;
  if (request != CaptureRequest::kRecordFunction) dispatch = install_interceptor().empty();
  if (request == CaptureRequest::kDispatch && !dispatch) return;  // the start will say why
  if (host_clock) (void)capture_cost(dispatch);
}

CaptureCost cached_capture_cost(bool dispatch) {
  std::lock_guard<std::mutex> lock(g_mu);
  const std::optional<CaptureCost>& cached = g_cost[dispatch ? 1 : 0];
  return cached ? *cached : CaptureCost{};
}

}  // namespace flopsprof::detail
