// The aggregation's state and its steps (private to src/aggregation/): the accumulators each step
// fills and the Aggregator that aggregate() runs. Its steps live in one file per concern:
//   aggregate.cpp           the entry points, the analysis, calls, the model's input, the finish
//   aggregate_ops.cpp       the fold of each op and autograd node into its module, phase and row
//   aggregate_modules.cpp   memory, device activity, the module table, utilisation, the footprint
//   aggregate_problems.cpp  the problems: guessed placements and work above its ceiling
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/aggregate.h"
#include "aggregation/op_fold.h"
#include "aggregation/spread.h"

namespace flopsprof::detail::agg {

// Op-table phases: the attribution's, plus forward work outside the model.
constexpr int kOutsidePhase = 5;

inline const char* op_phase_name(int p) {
  return p == kOutsidePhase ? phase_label(Phase::kForward, kOutsideModel)
                            : phase_label(static_cast<Phase>(p), 0);
}

// Where bytes sit in the cache-aware roofline: each op's bytes at the memory level its working
// set (the bytes it touches) fits in, and the time they take at that level's bandwidth. The
// ceiling of the sum: its bytes over that time (docs/report.md, "The machine's roofline").
struct LevelAcc {
  static constexpr size_t kLevels = 8;
  double seconds = 0;
  std::array<uint64_t, kLevels> bytes{};
  void add(const MachinePeaks& m, int level, uint64_t b) {
    if (level < 0 || b == 0 || !(m.bandwidth_by_level[static_cast<size_t>(level)].bytes_per_s > 0))
      return;
    const size_t l = std::min(static_cast<size_t>(level), kLevels - 1);
    bytes[l] = bytes[l] + b < bytes[l] ? UINT64_MAX : bytes[l] + b;
    seconds +=
        static_cast<double>(b) / m.bandwidth_by_level[static_cast<size_t>(level)].bytes_per_s;
  }
  void add(const LevelAcc& o) {
    seconds += o.seconds;
    for (size_t l = 0; l < kLevels; ++l)
      bytes[l] = bytes[l] + o.bytes[l] < bytes[l] ? UINT64_MAX : bytes[l] + o.bytes[l];
  }
  // The level holding most of the bytes, and the bandwidth of all of them; the main memory's
  // ceiling when nothing was placed (no levels, no bytes).
  MemoryCeiling ceiling(const MachinePeaks& m) const {
    MemoryCeiling c;
    double total = 0;
    size_t most = 0;
    for (size_t l = 0; l < kLevels; ++l) {
      total += static_cast<double>(bytes[l]);
      if (bytes[l] > bytes[most]) most = l;
    }
    if (total <= 0 || seconds <= 0 || m.bandwidth_by_level.empty()) {
      c.name = m.bandwidth_by_level.empty() ? "" : m.bandwidth_by_level.back().name;
      c.bytes_per_s = m.bytes_per_s;
      return c;
    }
    c.name = m.bandwidth_by_level[std::min(most, m.bandwidth_by_level.size() - 1)].name;
    c.bytes_per_s = total / seconds;
    return c;
  }
};

// Bytes read and written, saturating, and where they sit in the roofline.
struct ByteAcc {
  uint64_t read = 0, written = 0;
  LevelAcc levels;
  uint64_t total() const { return read + written < read ? UINT64_MAX : read + written; }
};

struct OpAcc {
  uint64_t calls = 0, flops = 0, macs = 0, declined = 0;
  uint64_t read = 0, written = 0, written_unknown = 0, written_from_allocations = 0;
  LevelAcc levels;
  int64_t ns = 0, uncovered_ns = 0;
  bool has_formula = false;
  FlopsByDtype by_dtype{}, bytes_by_dtype{};  // the row's dtype: most FLOPs, else most bytes
};

// The dtype with the most of `v`, or kUnknown when all are 0.
inline DType dominant(const FlopsByDtype& v) {
  size_t best = 0;
  for (size_t d = 1; d < v.size(); ++d) {
    if (v[d] > v[best]) best = d;
  }
  return v[best] > 0 ? static_cast<DType>(best) : DType::kUnknown;
}

// A module's own forward op of one name (its submodules' apart).
struct ModuleOpAcc {
  uint64_t calls = 0, flops = 0, macs = 0, read = 0, written = 0;
  int64_t ns = 0;
  bool has_formula = false;
};

struct ModuleAcc {
  uint64_t flops = 0, macs = 0, calls = 0, na_ops = 0;
  uint64_t inferred_ops = 0, inferred_flops = 0, inferred_bytes = 0;  // placed by inference
  uint64_t inferred_bwd_flops = 0, inferred_bwd_bytes = 0;            // the backward of those
  uint64_t own_inferred_bwd_flops = 0, own_inferred_bwd_bytes = 0;    // of its own inferred ops
  uint64_t own_inferred_ops = 0, own_inferred_flops = 0, own_inferred_bytes = 0;
  // the other side of guesses
  uint64_t maybe_missing_ops = 0, maybe_missing_flops = 0, maybe_missing_bytes = 0;
  uint64_t bwd_flops = 0, bwd_macs = 0, re_flops = 0, re_macs = 0;
  uint64_t masked = 0, skipped = 0;  // causal masks (forward)
  int64_t ns = 0, bwd_ns = 0;
  int64_t mem_alloc = 0, mem_held = 0;
  FlopsByDtype by_dtype{};
  ByteAcc bytes, bwd_bytes, re_bytes;
  ByteAcc kv;  // of `bytes`, a KV cache's
  // Utilisation: model FLOPs (fwd + bwd, the convention's) and what the hardware ran (recompute
  // and masked pairs computed in, skipped blocks out), per dtype.
  FlopsByDtype model_dt{}, hw_dt{};
};

// Adds with saturation; records that a total overflowed.
inline void add_saturating(uint64_t& total, uint64_t v, bool& overflow) {
  if (__builtin_add_overflow(total, v, &total)) {
    total = UINT64_MAX;
    overflow = true;
  }
}

struct KernelAcc {
  uint64_t calls = 0;
  int64_t ns = 0;
};

// The aggregation as a sequence of named steps over one state (aggregate() runs them in order):
// the per-thread pass over the events, calls, memory, device activity, the module table, the
// footprint, the problems, the op table.
class Aggregator {
 public:
  Aggregator(const AggregateInput& input, const Analysis& analysis)
      : in(input),
        at(analysis.attribution),
        counts(analysis.counts),
        collectives(analysis.collectives),
        device(analysis.device),
        kv(analysis.kv),
        timeline(analysis.memory),
        timeline_saturated(analysis.memory_saturated),
        tree(*input.tree),
        num_modules(static_cast<int>(input.tree->nodes.size())),
        acc(num_modules),
        s_per_tick(input.ns_per_tick * 1e-9),
        outside(r.outside),
        gpu_ns(num_modules, 0),
        gpu_first(num_modules, INT64_MAX),
        gpu_last(num_modules, INT64_MIN),
        dev_fwd(num_modules, 0),
        dev_bwd(num_modules, 0),
        gpu_kernels(num_modules),
        fwd_iters(num_modules, root_calls()),
        bwd_iters(num_modules, backward_passes()) {
    r.timer = in.timer;
    r.problems = in.problems;
    r.attention = in.attention;
  }

  // The iterations latency spreads are taken over: the root's forward calls, the model's
  // backward passes.
  std::vector<std::pair<int64_t, int64_t>> root_calls() const {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (const CallSpan& c : at.calls) {
      if (c.module == 0) v.emplace_back(c.start, c.end);
    }
    return v;
  }
  std::vector<std::pair<int64_t, int64_t>> backward_passes() const {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (const PhaseSpan& p : at.phase_spans) {
      if (p.phase == Phase::kBackward && p.ours) v.emplace_back(p.start, p.end);
    }
    return v;
  }

  // Per thread: each op and autograd node into its module, phase and op-table row; steps.
  void count_events();

  // An autograd node's time into its module's backward (or "(autograd)", or outside).
  void count_node(size_t t, size_t i);

  // An op into its op-table row, then its FLOPs into its phase's totals and its module's.
  void count_op(const PlacedOp& op);

  // An op's count into its op-table row: formula state, bytes and their level, FLOPs and MACs.
  void add_row(OpAcc& op, const OpCount& c, int level);

  // A backward op whose forward op order placed: into the guesses of module m (inclusive), or
  // the outside's.
  void add_inferred_backward(int m, const FlopCount* fc, uint64_t op_bytes);

  // A forward op into its module's own op table (an ignored module's goes to its nearest listed
  // ancestor, as its FLOPs do).
  void add_module_op(int m, uint32_t name, int64_t dur, const OpCount& c, const FlopCount* fc);

  // Each module's own forward ops, by latency.
  std::vector<std::vector<OpStats>> own_ops() const;

  // Forward work outside the model: top-level ops and their time, FLOPs (`other_model`: it ran in
  // a call of another profiled model's module).
  void add_outside(const RawEvent& e, int64_t dur, const FlopCount* fc, bool inferred,
                   uint64_t bytes, bool other_model);

  // The other side of an inferred placement: each module (or the caller) whose forward may have
  // run the op instead. Counted per module, not up the tree: the list names every module on the
  // way that would include it.
  void add_other_side(const RawEvent& e, int receiver, int alternative, const FlopCount* fc,
                      uint64_t bytes);

  // A forward op of module m (inclusive up the tree); inferred placements counted apart.
  void add_forward(const RawEvent& e, int m, bool inferred, const FlopCount* fc, DType dt,
                   uint64_t bytes);

  // Attention calls with an explicit mask, read or counted dense.
  void count_masks(const FlopCount& fc);

  // An op's FLOPs into the utilisation's numerators, the totals' and module m's (inclusive):
  // model FLOPs when `model` (forward, backward), what the hardware ran always.
  void add_utilisation(int m, DType dt, const FlopCount& fc, bool model);

  // A backward op: outside the model, "(autograd)" (m < 0) or module m's (inclusive).
  void add_backward(int m, const FlopCount& fc, DType dt);

  // A forward op run again in backward (activation checkpointing).
  void add_recompute(int m, const FlopCount& fc, DType dt);

  // A forward op's KV cache bytes into the totals and its module's (inclusive up the tree).
  void add_kv(int m, const KvBytes& k);

  // An op's bytes into its phase's totals and its module's (inclusive up the tree), as its
  // FLOPs go.
  void add_bytes(Phase ph, int m, bool out_fwd, const OpCount& c, int level);

  // This profile's optimizer steps (another model's are skipped) and their time.
  void count_steps(size_t t);

  // The calls of modules in no profiled tree that ran inside a call of the model's (a member
  // never passed to register_module(), called in a module whose bounds are known).
  void count_nested_unknown_calls(const ThreadEvents& th);

  // What the model was fed, where no caller said (a start/stop profile): the data tensor of the
  // model's first forward op that read one (its first argument no module owns: the first ops of
  // a Linear transpose its weight), "fp32[2, 16]".
  void model_input();

  // Calls and their latency per module (the attribution's call spans).
  void add_calls();

  // Memory: each allocation or free belongs to the op that was open on its thread.
  void place_memory();

  // Device activity: each CUPTI record belongs to the op that launched it (external correlation
  // id); each device-event span to its top-level record. Both give per-phase device time.
  void place_device_activity();

  // Modules in tree order, ignored ones folded away; the model's totals.
  void module_table();

  // Module t's row (its own forward ops `own`), from its accumulator and the tree.
  ModuleStats module_stats(int t, std::vector<OpStats> own) const;

  // The root's calls none of whose ops an autograd node of the profile links back to (two
  // forwards whose losses are summed share one backward pass: both had a backward).
  uint64_t forwards_without_backward() const;

  // The model's totals and its points on the roofline (after the module table).
  void model_totals();

  // The modules summed by depth and type (ProfileResult::module_types).
  void module_types();

  // The summary's rates (FLOP/s per phase, samples/s) from its totals and latencies; `bwd_flops`
  // is the backward's work (its ops and the forward ops it re-ran), computed by model_totals().
  void summary_rates(uint64_t bwd_flops);

  // A module's forward and backward on the roofline: its FLOPs and bytes over its device time
  // when measured, else its host latency, against the peak of its dominant dtype.
  void module_roofline(ModuleStats& s, const ModuleAcc& a) const;

  // A module's (or the model's) utilisation over its forward and backward time: the device's
  // when measured, else the host's (docs/report.md, "MFU, HFU and MBU").
  template <class S>
  void utilisation(S& s, const FlopsByDtype& model, const FlopsByDtype& hw, uint64_t bytes,
                   double seconds) const;
  void module_utilisation(ModuleStats& s, const ModuleAcc& a) const;

  // The footprint: the bytes in use along the analysis' timeline, the peaks and who made them.
  void footprint();

  // Inferred placements and inferred call counts, named: every guess, on both sides.
  void inference_problems();

  // Inferred call counts, one line per module (modules with no call at all share one).
  void call_count_problems();

  // Work in calls of modules in no profiled tree, and guesses on the model's edge (outside).
  void outside_problems();

  // The op table, slowest first; the top ops outside the model; formulas that declined.
  void op_table();

  // Work above its ceiling (RooflinePoint::above_ceiling: over 110% of it), op rows (forward,
  // backward, step, outside) and modules (forward and backward), each side apart: one problems
  // line for the compute side (the peak FLOP/s), one for the memory side (a level's bandwidth),
  // counting them all and naming the worst, with the causes that fit it.
  void ceiling_problems();

  // Formula errors, overflow, and the collectives per module.
  void finish();

  // The shares the reports show, as fractions: each module's of the root's params, MACs and
  // latency; the coverage (ops without a formula, placements by inference); the forward's and
  // backward's achieved rates over the peaks. After the module and op tables.
  void shares();

  ProfileResult r;

 private:
  struct MemSample {
    int64_t time = 0, bytes = 0, reserved = 0;
    uint32_t name = UINT32_MAX;  // op name id; UINT32_MAX: between ops
    int module = kOutsideModel;
    Phase phase = Phase::kForward;
  };
  int64_t end_of(const RawEvent& e) const { return e.end_tick != 0 ? e.end_tick : in.stop_tick; }

  const AggregateInput& in;
  const Attribution& at;
  const OpCounts& counts;
  const std::vector<CollectiveCall>& collectives;
  const std::vector<DevicePlacement>& device;
  const std::vector<std::vector<KvBytes>>& kv;
  const std::vector<MemoryPoint>& timeline;
  const bool timeline_saturated;
  const ModuleTree& tree;
  const int num_modules;
  std::vector<ModuleAcc> acc;
  ByteAcc fwd_bytes, bwd_bytes, step_bytes, re_bytes;
  FlopsByDtype model_dt{}, hw_dt{};  // the utilisation's numerators (ModuleAcc's, for the model)
  std::map<std::pair<int, uint32_t>, OpAcc> ops;               // (op-table phase, name id)
  std::map<std::pair<int, uint32_t>, ModuleOpAcc> module_ops;  // (module, name id): own forward
  const double s_per_tick;
  bool overflow = false;
  OutsideStats& outside;
  std::vector<MemSample> mem;     // per memory record, thread by thread
  std::vector<size_t> mem_first;  // per thread: its first record's index in `mem`
  std::vector<int64_t> gpu_ns, gpu_first, gpu_last, dev_fwd, dev_bwd;
  std::vector<std::map<std::string, KernelAcc>> gpu_kernels;
  IterationSums fwd_iters, bwd_iters;  // per module: latency per root call, per backward pass
  std::vector<double> step_samples;    // each optimizer step's latency, seconds
  std::vector<int> remap;
  struct UnknownAcc {
    uint64_t ops = 0, flops = 0;
    uint64_t inferred_ops = 0, inferred_flops = 0;  // of those, placed by op order
  };
  // Forward work in calls of modules in no profiled tree, placed in the model or outside it.
  UnknownAcc unknown_inside, unknown_outside;
  // Calls of modules in no profiled tree inside a call of one of the model's modules: their ops
  // are that module's by evidence, their parameters in no count.
  uint64_t nested_unknown_calls = 0;
  // Per module that received inferred work (kOutsideModel: the outside): the modules (and the
  // caller) whose forward may have run it.
  std::map<int, std::set<int>> losers;

  bool may_have_run_uncalled(int m) const {
    return acc[m].calls == 0 && acc[m].maybe_missing_ops > 0;
  }
};

}  // namespace flopsprof::detail::agg
