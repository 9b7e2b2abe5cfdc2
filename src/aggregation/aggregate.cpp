// The consumers of the attribution: module and op statistics, outside work, memory, GPU.
#include "aggregation/aggregate.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "aggregation/collectives.h"
#include "aggregation/regions.h"
#include "aggregation/spread.h"
#include "formulas/registry.h"

namespace flopsprof::detail {

namespace {

// Op-table phases: the attribution's, plus forward work outside the model.
constexpr int kOutsidePhase = 5;

const char* op_phase_name(int p) {
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
DType dominant(const FlopsByDtype& v) {
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

// "the model (Net)" or "'encoder.layer.3' (BertLayer)".
std::string module_who(const ModuleTree& tree, int m) {
  const ModuleNode& n = tree.nodes[m];
  return n.name.empty() ? fmt::format("the model ({})", n.type)
                        : fmt::format("'{}' ({})", n.name, n.type);
}

// One problems line per module with forward ops placed by inference (op order), naming the
// modules that may have run them instead (which may show too little) and what would make them
// exact; the most FLOPs first. Modules of one type whose guesses are the same (the layers of a
// stack: the same ops, FLOPs and bytes) share one line when there are 3 or more of them.
void placement_problems(const ModuleTree& tree, const std::vector<ModuleAcc>& acc,
                        const std::map<int, std::set<int>>& losers,
                        std::vector<std::string>& problems) {
  std::vector<int> marked;
  for (size_t m = 0; m < acc.size(); ++m) {
    if (acc[m].own_inferred_ops > 0) marked.push_back(static_cast<int>(m));
  }
  std::stable_sort(marked.begin(), marked.end(), [&](int a, int b) {
    return acc[a].own_inferred_flops > acc[b].own_inferred_flops;
  });
  // Who else may have run a module's guessed ops.
  auto other_side = [&](int m) {
    std::string could;
    bool caller = false;
    int named = 0;
    auto it = losers.find(m);
    if (it != losers.end()) {
      for (int k : it->second) {
        if (k == kOutsideModel) {
          caller = true;
        } else if (k >= 0 && named++ < 4) {
          could += fmt::format("{}'{}' ({})", could.empty() ? "" : ", ", tree.nodes[k].name,
                               tree.nodes[k].type);
        }
      }
    }
    if (named > 4) could += fmt::format(" and {} more", named - 4);
    std::string other;
    if (!could.empty()) other = "the work of " + could + " (which may show too little)";
    if (caller) other += other.empty() ? "the caller's" : ", or the caller's";
    if (other.empty())
      other = m == 0 ? "a submodule's or the caller's" : "a submodule's or its parent's";
    return other;
  };
  // The same guess: type, ops, FLOPs, bytes and their backward.
  auto key = [&](int m) {
    const ModuleAcc& a = acc[m];
    return std::make_tuple(tree.nodes[m].type, a.own_inferred_ops, a.own_inferred_flops,
                           a.own_inferred_bytes, a.own_inferred_bwd_flops,
                           a.own_inferred_bwd_bytes);
  };
  std::vector<bool> done(acc.size(), false);
  for (int m : marked) {
    if (done[m]) continue;
    std::vector<int> group;
    for (int k : marked) {
      if (!done[k] && k != 0 && m != 0 && key(k) == key(m)) group.push_back(k);
    }
    if (group.size() < 3) group = {m};
    for (int k : group) done[k] = true;
    const ModuleAcc& a = acc[m];
    const std::string backward =
        a.own_inferred_bwd_flops > 0 || a.own_inferred_bwd_bytes > 0
            ? fmt::format(" (and their backward, {} FLOPs, {} B)", a.own_inferred_bwd_flops,
                          a.own_inferred_bwd_bytes)
            : "";
    if (group.size() == 1) {
      problems.push_back(fmt::format(
          "placement inferred from op order: {} op(s), {} FLOPs, {} B{} given to {}; op order "
          "cannot tell whether they are its own or {}. FLOPSPROF_MODULE() as the first line of "
          "its forward, or of the method the program calls (and of its submodules'), makes them "
          "exact",
          a.own_inferred_ops, a.own_inferred_flops, a.own_inferred_bytes, backward,
          module_who(tree, m), other_side(m)));
      continue;
    }
    std::string names;
    for (size_t g = 0; g < group.size() && g < 4; ++g)
      names += fmt::format("{}'{}'", g ? ", " : "", tree.nodes[group[g]].name);
    if (group.size() > 4) names += fmt::format(" and {} more", group.size() - 4);
    problems.push_back(fmt::format(
        "placement inferred from op order, the same in {} modules of type {} ({}): each was "
        "given {} op(s), {} FLOPs, {} B{}; op order cannot tell whether they are its own or, for "
        "the first, {} (likewise for the others). FLOPSPROF_MODULE() as the first line of their "
        "forward, or of the method the program calls (and of their submodules'), makes them "
        "exact",
        group.size(), tree.nodes[m].type, names, a.own_inferred_ops, a.own_inferred_flops,
        a.own_inferred_bytes, backward, other_side(group[0])));
  }
}

// Adds with saturation; records that a total overflowed.
void add_saturating(uint64_t& total, uint64_t v, bool& overflow) {
  if (__builtin_add_overflow(total, v, &total)) {
    total = UINT64_MAX;
    overflow = true;
  }
}

struct KernelAcc {
  uint64_t calls = 0;
  int64_t ns = 0;
};

std::vector<KernelStats> top_kernels(const std::map<std::string, KernelAcc>& by_name, size_t n,
                                     double ns_per_tick_s) {
  std::vector<KernelStats> out;
  for (const auto& [name, a] : by_name)
    out.push_back(KernelStats{name, a.calls, static_cast<double>(a.ns) * ns_per_tick_s});
  std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.gpu_s != b.gpu_s ? a.gpu_s > b.gpu_s : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace

std::vector<MemoryPoint> memory_timeline(const AggregateInput& in, bool* saturated) {
  std::vector<MemoryPoint> points;
  *saturated = false;
  if (!in.track_memory) return points;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const std::vector<MemRecord>& mem = in.threads[t]->memory;
    for (size_t k = 0; k < mem.size(); ++k) {
      MemoryPoint p;
      p.time = mem[k].time_tick;
      p.in_use = mem[k].bytes;
      p.thread = static_cast<uint32_t>(t);
      p.record = static_cast<uint32_t>(k);
      points.push_back(p);
    }
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const MemoryPoint& a, const MemoryPoint& b) { return a.time < b.time; });
  auto record = [&](const MemoryPoint& p) -> const MemRecord& {
    return in.threads[p.thread]->memory[p.record];
  };
  // Workspace: match each free with the allocation of the same block, in time order.
  std::map<std::pair<int8_t, uint64_t>, size_t> live;  // block -> its allocation's point
  for (size_t i = 0; i < points.size(); ++i) {
    const MemRecord& m = record(points[i]);
    if (m.address == 0 || m.bytes == 0) continue;
    const std::pair<int8_t, uint64_t> block{m.device_type, m.address};
    if (m.bytes > 0) {
      live[block] = i;
      continue;
    }
    auto it = live.find(block);
    if (it == live.end()) continue;  // allocated before the profile
    MemoryPoint& alloc = points[it->second];
    const int32_t op = record(alloc).op;
    live.erase(it);
    if (alloc.thread != points[i].thread || op < 0) continue;
    const std::vector<RawEvent>& events = in.threads[alloc.thread]->events;
    for (int32_t e = m.op; e >= op && static_cast<size_t>(e) < events.size();
         e = events[e].parent) {
      if (e == op) {
        alloc.is_workspace = points[i].is_workspace = true;
        break;
      }
    }
  }
  auto add = [saturated](int64_t* total, int64_t bytes) {
    if (__builtin_add_overflow(*total, bytes, total)) {  // absurd meta shapes
      *total = bytes > 0 ? INT64_MAX : INT64_MIN;
      *saturated = true;
    }
  };
  int64_t in_use = 0, workspace = 0;
  for (MemoryPoint& p : points) {
    const int64_t bytes = p.in_use;  // the record's delta until here
    add(&in_use, bytes);
    if (p.is_workspace) add(&workspace, bytes);
    p.in_use = in_use;
    p.workspace = workspace;
  }
  return points;
}

Analysis analyze(const AggregateInput& in) {
  Analysis a{attribute(in),
             count_ops(in.threads, *in.names, in.attention, in.tf32),
             {},
             false,
             {},
             {},
             {}};
  a.kv = kv_cache_bytes(in.threads, *in.names, a.attribution, a.counts);
  a.memory = memory_timeline(in, &a.memory_saturated);
  a.collectives = collective_calls(in, a.attribution);
  if (in.gpu != nullptr) {
    a.device.reserve(in.gpu->records.size());
    for (const GpuRecord& k : in.gpu->records) {
      DevicePlacement p;
      uint32_t t = 0, i = 0;
      if (split_external_id(k.external_id, &t, &i) && t < in.threads.size() &&
          i < in.threads[t]->events.size()) {
        p.thread = static_cast<int>(t);
        p.event = i;
        std::tie(p.module, p.phase) = event_owner(a.attribution, in.threads, t, i);
      }
      a.device.push_back(p);
    }
  }
  return a;
}

ProfileResult aggregate(const AggregateInput& in) { return aggregate(in, analyze(in)); }

namespace {

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
  void count_events() {
    for (size_t t = 0; t < in.threads.size(); ++t) {
      const ThreadEvents& th = *in.threads[t];
      const std::vector<RawEvent>& ev = th.events;
      const size_t n = ev.size();
      if (n == 0 && th.scopes.empty() && th.steps.empty()) continue;
      ++r.threads;
      r.op_events += n;
      std::vector<int64_t> child_ns(n, 0);  // time in nested events, for self times
      for (size_t i = 0; i < n; ++i) {
        if (ev[i].parent >= 0) child_ns[ev[i].parent] += end_of(ev[i]) - ev[i].start_tick;
      }
      for (size_t i = 0; i < n; ++i) {
        if (ev[i].kind == EventKind::kBackwardNode) {
          count_node(t, i);
        } else {
          count_op(t, i, end_of(ev[i]) - ev[i].start_tick - child_ns[i]);
        }
      }
      count_steps(t);
    }
    // Backward latency: the attribution's backward passes that ran this model's nodes.
    // A pass shared with another profiled model's nodes counts this model's own nodes only.
    std::vector<double> passes;
    for (const PhaseSpan& p : at.phase_spans) {
      if (p.phase == Phase::kBackward && p.ours) {
        passes.push_back(static_cast<double>(p.shared ? p.own : p.end - p.start) * s_per_tick);
        r.bwd_latency_s += passes.back();
      }
    }
    r.bwd_spread = spread_of(std::move(passes));
  }

  // An autograd node's time into its module's backward (or "(autograd)", or outside).
  void count_node(size_t t, size_t i) {
    const std::vector<RawEvent>& ev = in.threads[t]->events;
    const RawEvent& e = ev[i];
    const int m = at.threads[t].module[i];
    r.has_backward = true;
    // Node time: the evaluate_function wrapper (node + output validation) when there is one.
    const bool wrapped = !(e.flags & kEngine) && e.parent >= 0 && (ev[e.parent].flags & kEngine);
    if (wrapped) return;
    const int64_t dur = end_of(e) - e.start_tick;
    if (m >= 0) {
      for (int a = m; a >= 0; a = tree.nodes[a].parent) {
        acc[a].bwd_ns += dur;
        bwd_iters.add(a, e.start_tick, dur);
      }
    } else if (m == kOutsideModel) {
      outside.bwd_latency_s += static_cast<double>(dur) * s_per_tick;
    } else {
      r.autograd_latency_s += static_cast<double>(dur) * s_per_tick;
    }
  }

  // An op into its op-table row, then its FLOPs into its phase's totals and its module's.
  void count_op(size_t t, size_t i, int64_t self_ns) {
    const RawEvent& e = in.threads[t]->events[i];
    const ThreadAttribution& ta = at.threads[t];
    const Phase ph = ta.phase[i];
    if (ph == Phase::kNone) return;
    const int m = ta.module[i];
    const bool out_fwd = is_outside_forward(ph, m);
    const int64_t dur = end_of(e) - e.start_tick;
    OpAcc& op = ops[{out_fwd ? kOutsidePhase : static_cast<int>(ph), e.name_id}];
    ++op.calls;
    op.ns += dur;
    const OpCount& c = counts.threads[t][i];
    op.has_formula = op.has_formula || c.state != OpCount::kNone;  // the count stage found one
    if (c.state == OpCount::kDeclined) ++op.declined;
    const FlopCount* fc = c.counted();
    const int level = c.has_bytes() ? in.machine.level_for(c.bytes_total()) : -1;
    if (c.has_bytes()) {
      add_saturating(op.read, c.bytes_read, overflow);
      add_saturating(op.written, c.bytes_written, overflow);
      op.levels.add(in.machine, level, c.bytes_total());
      if (c.bytes == OpCount::kWrittenUnknown) ++op.written_unknown;
      if (c.bytes == OpCount::kWrittenFromAllocations) ++op.written_from_allocations;
      if (c.bytes != OpCount::kBytesKnown) ++r.bytes_written_unknown_calls;
      add_bytes(ph, m, out_fwd, c, level);
      if (t < kv.size() && !kv[t].empty() && ph == Phase::kForward && m >= 0) add_kv(m, kv[t][i]);
    }
    if (ph == Phase::kForward && !out_fwd && m >= 0) add_module_op(m, e.name_id, dur, c, fc);
    if (fc) add_saturating(op.by_dtype[static_cast<size_t>(c.dtype)], fc->flops, overflow);
    if (c.has_bytes()) {
      add_saturating(op.bytes_by_dtype[static_cast<size_t>(c.dtype)], c.bytes_total(), overflow);
    }
    if (fc) {
      add_saturating(op.flops, fc->flops, overflow);
      add_saturating(op.macs, fc->macs, overflow);
    } else {
      op.uncovered_ns += self_ns;
      if (ph == Phase::kForward && !out_fwd)
        r.no_formula_s += static_cast<double>(self_ns) * s_per_tick;
    }
    const uint64_t op_bytes = c.has_bytes() ? c.bytes_total() : 0;
    switch (ph) {
      case Phase::kForward:
        if (out_fwd) {
          add_outside(e, dur, fc, ta.inferred[i] != 0, op_bytes);
        } else {
          add_forward(e, m, ta.inferred[i] != 0, fc, c.dtype, op_bytes);
        }
        if (ta.inferred[i] != 0) add_other_side(e, m, ta.alternative[i], fc, op_bytes);
        if (unknown_module_call(*in.threads[t], e) >= 0) {
          UnknownAcc& u = out_fwd ? unknown_outside : unknown_inside;
          const bool guess = ta.inferred[i] != 0;
          if (e.parent < 0) {
            ++u.ops;
            u.inferred_ops += guess;
          }
          if (fc) add_saturating(u.flops, fc->flops, overflow);
          if (fc && guess) add_saturating(u.inferred_flops, fc->flops, overflow);
        }
        break;
      case Phase::kBackward:
        if (fc) add_backward(m, *fc, c.dtype);
        if (ta.inferred[i] == 0) break;
        if (m == kOutsideModel) {
          if (fc) add_saturating(outside.inferred_bwd_flops, fc->flops, overflow);
          add_saturating(outside.inferred_bwd_bytes, op_bytes, overflow);
        } else if (m >= 0) {  // marked as its forward is
          const uint64_t f = fc ? fc->flops : 0;
          add_saturating(acc[m].own_inferred_bwd_flops, f, overflow);
          add_saturating(acc[m].own_inferred_bwd_bytes, op_bytes, overflow);
          for (int a = m; a >= 0; a = tree.nodes[a].parent) {
            add_saturating(acc[a].inferred_bwd_flops, f, overflow);
            add_saturating(acc[a].inferred_bwd_bytes, op_bytes, overflow);
          }
        }
        break;
      case Phase::kRecompute:
        if (fc) add_recompute(m, *fc, c.dtype);
        break;
      case Phase::kStep:
        r.has_step = true;
        if (fc) add_saturating(r.step_flops, fc->flops, overflow);
        break;
      default:
        break;
    }
  }

  // A forward op into its module's own op table (an ignored module's goes to its nearest listed
  // ancestor, as its FLOPs do).
  void add_module_op(int m, uint32_t name, int64_t dur, const OpCount& c, const FlopCount* fc) {
    while (m > 0 && tree.nodes[m].ignored) m = tree.nodes[m].parent;
    ModuleOpAcc& a = module_ops[{m, name}];
    ++a.calls;
    a.ns += dur;
    a.has_formula = a.has_formula || c.state != OpCount::kNone;
    if (fc) {
      add_saturating(a.flops, fc->flops, overflow);
      add_saturating(a.macs, fc->macs, overflow);
    }
    if (c.has_bytes()) {
      add_saturating(a.read, c.bytes_read, overflow);
      add_saturating(a.written, c.bytes_written, overflow);
    }
  }

  // Each module's own forward ops, by latency.
  std::vector<std::vector<OpStats>> own_ops() const {
    std::vector<std::vector<OpStats>> own(num_modules);
    for (const auto& [key, a] : module_ops) {
      OpStats s;
      s.name = in.names->name(key.second);
      s.has_formula = a.has_formula;
      s.calls = a.calls;
      s.flops = a.flops;
      s.macs = a.macs;
      s.latency_s = static_cast<double>(a.ns) * s_per_tick;
      s.bytes_read = a.read;
      s.bytes_written = a.written;
      s.bytes = a.read + a.written < a.read ? UINT64_MAX : a.read + a.written;
      own[key.first].push_back(std::move(s));
    }
    for (auto& v : own) {
      std::sort(v.begin(), v.end(), [](const OpStats& a, const OpStats& b) {
        return a.latency_s != b.latency_s ? a.latency_s > b.latency_s : a.name < b.name;
      });
    }
    return own;
  }

  // Forward work outside the model: top-level ops and their time, FLOPs.
  void add_outside(const RawEvent& e, int64_t dur, const FlopCount* fc, bool inferred,
                   uint64_t bytes) {
    if (e.parent < 0) {
      ++outside.ops;
      outside.latency_s += static_cast<double>(dur) * s_per_tick;
      if (inferred) ++outside.inferred_ops;
    }
    if (inferred) add_saturating(outside.inferred_bytes, bytes, overflow);
    if (fc) {
      add_saturating(outside.flops, fc->flops, overflow);
      add_saturating(outside.macs, fc->macs, overflow);
      if (inferred) add_saturating(outside.inferred_flops, fc->flops, overflow);
    }
  }

  // The other side of an inferred placement: each module (or the caller) whose forward may have
  // run the op instead. Counted per module, not up the tree: the list names every module on the
  // way that would include it.
  void add_other_side(const RawEvent& e, int receiver, int alternative, const FlopCount* fc,
                      uint64_t bytes) {
    if (alternative < 0) return;
    const uint64_t top = e.parent < 0 ? 1 : 0;
    const uint64_t f = fc ? fc->flops : 0;
    for (int m : at.alternatives[alternative]) {
      losers[receiver].insert(m);
      if (m == kOutsideModel) {
        outside.maybe_missing_ops += top;
        add_saturating(outside.maybe_missing_flops, f, overflow);
        add_saturating(outside.maybe_missing_bytes, bytes, overflow);
      } else if (m >= 0) {
        acc[m].maybe_missing_ops += top;
        add_saturating(acc[m].maybe_missing_flops, f, overflow);
        add_saturating(acc[m].maybe_missing_bytes, bytes, overflow);
      }
    }
  }

  // A forward op of module m (inclusive up the tree); inferred placements counted apart.
  void add_forward(const RawEvent& e, int m, bool inferred, const FlopCount* fc, DType dt,
                   uint64_t bytes) {
    if (fc) count_masks(*fc);
    if (fc && (fc->masked_flops > 0 || fc->skipped_flops > 0)) {
      add_saturating(r.masked_flops, fc->masked_flops, overflow);
      add_saturating(r.skipped_flops, fc->skipped_flops, overflow);
      r.kernel_unknown_calls += fc->kernel_unknown ? 1 : 0;
      for (int a = m; a >= 0; a = tree.nodes[a].parent) {
        add_saturating(acc[a].masked, fc->masked_flops, overflow);
        add_saturating(acc[a].skipped, fc->skipped_flops, overflow);
      }
    }
    if (fc) {
      add_saturating(r.flops, fc->flops, overflow);
      add_saturating(r.macs, fc->macs, overflow);
      add_saturating(r.flops_by_dtype[static_cast<size_t>(dt)], fc->flops, overflow);
      add_utilisation(m, dt, *fc, true);
    }
    if (inferred && m >= 0) {
      const uint64_t f = fc ? fc->flops : 0;
      const uint64_t top = e.parent < 0 ? 1 : 0;
      acc[m].own_inferred_ops += top;
      add_saturating(acc[m].own_inferred_flops, f, overflow);
      add_saturating(acc[m].own_inferred_bytes, bytes, overflow);
      for (int a = m; a >= 0; a = tree.nodes[a].parent) {
        acc[a].inferred_ops += top;
        add_saturating(acc[a].inferred_flops, f, overflow);
        add_saturating(acc[a].inferred_bytes, bytes, overflow);
      }
    }
    for (int a = m; a >= 0; a = tree.nodes[a].parent) {
      if (fc) {
        add_saturating(acc[a].flops, fc->flops, overflow);
        add_saturating(acc[a].macs, fc->macs, overflow);
        add_saturating(acc[a].by_dtype[static_cast<size_t>(dt)], fc->flops, overflow);
      } else {
        ++acc[a].na_ops;
      }
    }
  }

  // Attention calls with an explicit mask, read or counted dense.
  void count_masks(const FlopCount& fc) {
    r.attention_masks_read += fc.mask_read ? 1 : 0;
    r.attention_masks_unread += fc.mask_unread ? 1 : 0;
  }

  // An op's FLOPs into the utilisation's numerators, the totals' and module m's (inclusive):
  // model FLOPs when `model` (forward, backward), what the hardware ran always.
  void add_utilisation(int m, DType dt, const FlopCount& fc, bool model) {
    const size_t d = static_cast<size_t>(dt);
    const uint64_t ran = r.kernel_flops(fc.flops, fc.masked_flops, fc.skipped_flops);
    if (model) add_saturating(model_dt[d], fc.flops, overflow);
    add_saturating(hw_dt[d], ran, overflow);
    for (int a = m; a >= 0; a = tree.nodes[a].parent) {
      if (model) add_saturating(acc[a].model_dt[d], fc.flops, overflow);
      add_saturating(acc[a].hw_dt[d], ran, overflow);
    }
  }

  // A backward op: outside the model, "(autograd)" (m < 0) or module m's (inclusive).
  void add_backward(int m, const FlopCount& fc, DType dt) {
    count_masks(fc);
    if (m == kOutsideModel) {
      add_saturating(outside.bwd_flops, fc.flops, overflow);
      add_saturating(outside.bwd_macs, fc.macs, overflow);
      return;
    }
    add_utilisation(m, dt, fc, true);
    add_saturating(r.bwd_flops, fc.flops, overflow);
    add_saturating(r.bwd_macs, fc.macs, overflow);
    add_saturating(r.bwd_masked_flops, fc.masked_flops, overflow);
    add_saturating(r.bwd_skipped_flops, fc.skipped_flops, overflow);
    r.kernel_unknown_calls += fc.kernel_unknown ? 1 : 0;
    if (m < 0) add_saturating(r.autograd_flops, fc.flops, overflow);
    for (int a = m; a >= 0; a = tree.nodes[a].parent) {
      add_saturating(acc[a].bwd_flops, fc.flops, overflow);
      add_saturating(acc[a].bwd_macs, fc.macs, overflow);
    }
  }

  // A forward op run again in backward (activation checkpointing).
  void add_recompute(int m, const FlopCount& fc, DType dt) {
    add_utilisation(m, dt, fc, false);
    add_saturating(r.recompute_flops, fc.flops, overflow);
    add_saturating(r.recompute_macs, fc.macs, overflow);
    for (int a = m; a >= 0; a = tree.nodes[a].parent) {
      add_saturating(acc[a].re_flops, fc.flops, overflow);
      add_saturating(acc[a].re_macs, fc.macs, overflow);
    }
  }

  // A forward op's KV cache bytes into the totals and its module's (inclusive up the tree).
  void add_kv(int m, const KvBytes& k) {
    if (k.read == 0 && k.written == 0) return;
    add_saturating(r.kv_read_bytes, k.read, overflow);
    add_saturating(r.kv_write_bytes, k.written, overflow);
    for (int a = m; a >= 0; a = tree.nodes[a].parent) {
      add_saturating(acc[a].kv.read, k.read, overflow);
      add_saturating(acc[a].kv.written, k.written, overflow);
    }
  }

  // An op's bytes into its phase's totals and its module's (inclusive up the tree), as its
  // FLOPs go.
  void add_bytes(Phase ph, int m, bool out_fwd, const OpCount& c, int level) {
    auto add = [&](ByteAcc& a) {
      add_saturating(a.read, c.bytes_read, overflow);
      add_saturating(a.written, c.bytes_written, overflow);
      a.levels.add(in.machine, level, c.bytes_total());
    };
    auto up = [&](ByteAcc ModuleAcc::*field) {
      for (int a = m; a >= 0; a = tree.nodes[a].parent) add(acc[a].*field);
    };
    switch (ph) {
      case Phase::kForward:
        if (out_fwd) {
          add_saturating(outside.bytes, c.bytes_total(), overflow);
        } else {
          add(fwd_bytes);
          up(&ModuleAcc::bytes);
        }
        break;
      case Phase::kBackward:
        if (m == kOutsideModel) {
          add_saturating(outside.bwd_bytes, c.bytes_total(), overflow);
          break;
        }
        add(bwd_bytes);
        if (m < 0) add_saturating(r.autograd_bytes, c.bytes_total(), overflow);
        up(&ModuleAcc::bwd_bytes);
        break;
      case Phase::kRecompute:
        add_saturating(r.recompute_bytes, c.bytes_total(), overflow);
        add(re_bytes);
        up(&ModuleAcc::re_bytes);
        break;
      case Phase::kStep:
        add(step_bytes);
        break;
      default:
        break;
    }
  }

  // This profile's optimizer steps (another model's are skipped) and their time.
  void count_steps(size_t t) {
    const ThreadEvents& th = *in.threads[t];
    for (size_t k = 0; k < th.steps.size(); ++k) {
      if (!at.threads[t].step_counts[k]) continue;  // another model's optimizer
      const StepRecord& s = th.steps[k];
      r.has_step = true;
      const int64_t end = s.end_tick != 0 ? s.end_tick : in.stop_tick;
      step_samples.push_back(static_cast<double>(end - s.start_tick) * s_per_tick);
      r.step_latency_s += step_samples.back();
    }
  }

  // What the model was fed, where no caller said (a start/stop profile): the data tensor of the
  // model's first forward op that read one (its first argument no module owns: the first ops of
  // a Linear transpose its weight), "fp32[2, 16]".
  void model_input() {
    int64_t first_start = INT64_MAX;
    std::string input;
    size_t first_thread = 0;
    for (size_t t = 0; t < in.threads.size(); ++t) {
      const ThreadEvents& th = *in.threads[t];
      const ThreadAttribution& ta = at.threads[t];
      for (size_t i = 0; i < th.events.size(); ++i) {
        const RawEvent& e = th.events[i];
        if (e.start_tick >= first_start) break;  // events are in start order
        if (e.parent >= 0 || ta.phase[i] != Phase::kForward || ta.module[i] < 0) continue;
        const ArgRecord* data = nullptr;
        for (uint32_t k = e.args_begin; k < e.args_begin + e.args_count && !data; ++k) {
          const ArgRecord& a = th.args[k];
          if (a.kind == ArgKind::kTensor && (a.tensor_flags & kArgData)) data = &a;
        }
        if (data == nullptr) continue;
        std::string sizes;
        for (uint32_t d = 0; d < data->count; ++d)
          sizes += fmt::format("{}{}", d ? ", " : "", th.dims[data->offset + d]);
        input = fmt::format("{}[{}]", dtype_name(data->dtype), sizes);
        first_start = e.start_tick;
        first_thread = t;
        break;
      }
    }
    if (input.empty()) return;
    r.workload.inputs = {input};
    r.workload.inputs_source = "the model's first op";
    // Ops right before it left outside but marked (attribution rule 9): the forward may have
    // begun with them, on other inputs (a mask and a cast of the batch before an Embedding).
    const ThreadEvents& th = *in.threads[first_thread];
    const ThreadAttribution& ta = at.threads[first_thread];
    uint64_t before = 0;
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      if (e.start_tick >= first_start) break;
      before += e.parent < 0 && ta.phase[i] == Phase::kForward && ta.module[i] == kOutsideModel &&
                ta.inferred[i];
    }
    if (before > 0) {
      r.workload.inputs_source = fmt::format(
          "the model's first op ({} op(s) before it may be its forward's, which read other "
          "inputs)",
          before);
    }
  }

  // Calls and their latency per module (the attribution's call spans).
  void add_calls() {
    for (const CallSpan& c : at.calls) {
      ++acc[c.module].calls;
      acc[c.module].ns += c.end - c.start;
      fwd_iters.add(c.module, c.start, c.end - c.start);
    }
  }

  // Memory: each allocation or free belongs to the op that was open on its thread.
  void place_memory() {
    for (size_t t = 0; t < in.threads.size() && in.track_memory; ++t) {
      const ThreadEvents& th = *in.threads[t];
      mem_first.push_back(mem.size());
      for (const MemRecord& m : th.memory) {
        MemSample x;
        x.time = m.time_tick;
        x.bytes = m.bytes;
        x.reserved = m.total_reserved;
        if (m.op >= 0 && static_cast<size_t>(m.op) < th.events.size()) {
          x.name = th.events[m.op].name_id;
          std::tie(x.module, x.phase) = event_owner(at, in.threads, t, static_cast<size_t>(m.op));
        } else {
          int known = m.scope;  // foreign calls (module -1) skipped
          while (known >= 0 && th.scopes[known].module < 0) known = th.scopes[known].parent;
          const ScopeRecord* sc = known >= 0 ? &th.scopes[known] : nullptr;
          x.phase = sc && sc->backward ? Phase::kRecompute : Phase::kForward;
          x.module = sc ? tree.nodes[sc->module].effective : kOutsideModel;
        }
        if (x.phase == Phase::kForward) {
          for (int a = x.module; a >= 0; a = tree.nodes[a].parent) {
            if (x.bytes > 0 && __builtin_add_overflow(acc[a].mem_alloc, x.bytes, &acc[a].mem_alloc))
              acc[a].mem_alloc = INT64_MAX;
            if (__builtin_add_overflow(acc[a].mem_held, x.bytes, &acc[a].mem_held))
              acc[a].mem_held = x.bytes > 0 ? INT64_MAX : INT64_MIN;
          }
        }
        mem.push_back(x);
      }
    }
  }

  // Device activity: each CUPTI record belongs to the op that launched it (external correlation
  // id); each device-event span to its top-level record. Both give per-phase device time.
  void place_device_activity() {
    if (in.gpu != nullptr) {
      const GpuCollection& g = *in.gpu;
      GpuStats& gs = r.gpu;
      gs.backend = g.backend;
      gs.reason = g.reason;
      gs.device = g.device;
      gs.dropped_records = g.dropped_records;
      gs.untimed = g.untimed;
      gs.measured = !g.records.empty() || !g.spans.empty();
      // Adds `ns` of device time, owned by module m in phase ph, to that phase and the modules.
      auto place = [&](int m, Phase ph, int64_t ns) {
        const double sec = static_cast<double>(ns) * 1e-9;
        const bool bwd = ph == Phase::kBackward || ph == Phase::kRecompute;
        if (m == kOutsideModel) {
          gs.outside_s += sec;
        } else if (ph == Phase::kStep) {
          gs.step_s += sec;
        } else if (bwd) {
          gs.backward_s += sec;
        } else {
          gs.forward_s += sec;
        }
        for (int a = m; a >= 0 && ph != Phase::kStep; a = tree.nodes[a].parent) {
          (bwd ? dev_bwd : dev_fwd)[a] += ns;
        }
      };
      std::map<std::string, KernelAcc> all;
      int64_t first = INT64_MAX, last = INT64_MIN, unattributed = 0;
      for (size_t rec = 0; rec < g.records.size(); ++rec) {
        const GpuRecord& k = g.records[rec];
        const int64_t dur = k.end_ns - k.start_ns;  // device ns
        if (k.kind == GpuKind::kMemcpy) {           // apart from kernels: not "busy"
          ++gs.memcpys;
          gs.memcpy_s += static_cast<double>(dur) * 1e-9;
          continue;
        }
        if (k.kind == GpuKind::kMemset) {
          ++gs.memsets;
          gs.memset_s += static_cast<double>(dur) * 1e-9;
          continue;
        }
        ++gs.kernels;
        gs.busy_s += static_cast<double>(dur) * 1e-9;
        first = std::min(first, k.start_ns);
        last = std::max(last, k.end_ns);
        KernelAcc& ka = all[k.name];
        ++ka.calls;
        ka.ns += dur;
        const int m = device[rec].module;
        place(m, device[rec].phase, dur);
        if (m < 0) unattributed += dur;
        for (int a = m; a >= 0; a = tree.nodes[a].parent) {
          gpu_ns[a] += dur;
          gpu_first[a] = std::min(gpu_first[a], k.start_ns);
          gpu_last[a] = std::max(gpu_last[a], k.end_ns);
          KernelAcc& mk = gpu_kernels[a][k.name];
          ++mk.calls;
          mk.ns += dur;
        }
      }
      for (const DeviceSpan& sp : g.spans) {  // device events: their top-level record's owner
        int m = kUnlinked;
        Phase ph = Phase::kForward;
        if (sp.thread < in.threads.size() && sp.event < in.threads[sp.thread]->events.size()) {
          std::tie(m, ph) = event_owner(at, in.threads, sp.thread, sp.event);
        }
        place(m, ph, sp.end_ns - sp.start_ns);
      }
      if (gs.kernels > 0) gs.span_s = static_cast<double>(last - first) * 1e-9;
      gs.unattributed_s = static_cast<double>(unattributed) * 1e-9;
      gs.top_kernels = top_kernels(all, 10, 1e-9);
    }
  }

  // Modules in tree order, ignored ones folded away; the model's totals.
  void module_table() {
    remap.assign(num_modules, -1);
    std::vector<std::vector<OpStats>> own = own_ops();
    for (int t = 0; t < num_modules; ++t) {
      const ModuleNode& node = tree.nodes[t];
      if (node.ignored) continue;
      remap[t] = static_cast<int>(r.modules.size());
      ModuleStats s;
      s.name = node.name;
      s.type = node.type;
      s.depth = node.depth;
      s.parent = node.parent >= 0 ? remap[node.parent] : -1;
      s.calls = acc[t].calls;
      s.scoped = at.scoped[t];
      s.calls_inferred = (at.calls_inferred[t] != 0 || may_have_run_uncalled(t)) && !at.scoped[t];
      s.params = node.params;
      s.trainable_params = node.trainable_params;
      s.param_bytes = node.param_bytes;
      s.flops = acc[t].flops;
      s.macs = acc[t].macs;
      s.latency_s = static_cast<double>(acc[t].ns) * s_per_tick;
      s.na_ops = acc[t].na_ops;
      s.inferred_ops = acc[t].inferred_ops;
      s.inferred_flops = acc[t].inferred_flops;
      s.inferred_bwd_flops = acc[t].inferred_bwd_flops;
      s.inferred_bytes = acc[t].inferred_bytes;
      s.inferred_bwd_bytes = acc[t].inferred_bwd_bytes;
      s.maybe_missing_ops = acc[t].maybe_missing_ops;
      s.maybe_missing_flops = acc[t].maybe_missing_flops;
      s.maybe_missing_bytes = acc[t].maybe_missing_bytes;
      s.flops_by_dtype = acc[t].by_dtype;
      s.masked_flops = acc[t].masked;
      s.skipped_flops = acc[t].skipped;
      s.bwd_flops = acc[t].bwd_flops;
      s.bwd_macs = acc[t].bwd_macs;
      s.bwd_latency_s = static_cast<double>(acc[t].bwd_ns) * s_per_tick;
      s.ops = std::move(own[t]);
      s.fwd_spread = fwd_iters.spread(t, s_per_tick);
      s.bwd_spread = bwd_iters.spread(t, s_per_tick);
      s.recompute_flops = acc[t].re_flops;
      s.recompute_macs = acc[t].re_macs;
      s.fwd_alloc_bytes = acc[t].mem_alloc;
      s.fwd_held_bytes = acc[t].mem_held;
      s.gpu_busy_s = static_cast<double>(gpu_ns[t]) * 1e-9;
      s.device_fwd_s = static_cast<double>(dev_fwd[t]) * 1e-9;
      s.device_bwd_s = static_cast<double>(dev_bwd[t]) * 1e-9;
      s.gpu_span_s = gpu_ns[t] > 0 ? static_cast<double>(gpu_last[t] - gpu_first[t]) * 1e-9 : 0.0;
      s.top_kernels = top_kernels(gpu_kernels[t], 5, 1e-9);
      s.bytes_read = acc[t].bytes.read;
      s.bytes_written = acc[t].bytes.written;
      s.bytes = acc[t].bytes.total();
      s.kv_read_bytes = acc[t].kv.read;
      s.kv_write_bytes = acc[t].kv.written;
      s.bwd_bytes_read = acc[t].bwd_bytes.read;
      s.bwd_bytes_written = acc[t].bwd_bytes.written;
      s.bwd_bytes = acc[t].bwd_bytes.total();
      s.recompute_bytes = acc[t].re_bytes.total();
      module_roofline(s, acc[t]);
      module_utilisation(s, acc[t]);
      if (s.parent >= 0) r.modules[s.parent].children.push_back(remap[t]);
      r.modules.push_back(std::move(s));
    }
    r.params = tree.params;
    r.trainable_params = tree.trainable_params;
    r.param_bytes = tree.param_bytes;
    r.param_bytes_by_dtype = tree.param_bytes_by_dtype;
    r.duration_s = r.modules.empty() ? 0.0 : r.modules[0].latency_s;
    if (!r.modules.empty()) r.fwd_spread = r.modules[0].fwd_spread;
    r.step_spread = spread_of(step_samples);
    if (r.has_backward && !r.modules.empty()) {
      // The root's calls none of whose ops an autograd node of the profile links back to (two
      // forwards whose losses are summed share one backward pass: both had a backward).
      std::vector<std::vector<int64_t>> linked(in.threads.size());  // linked forward ops' starts
      for (size_t t = 0; t < at.origin.size(); ++t) {
        for (const Origin& o : at.origin[t]) {
          if (o.thread >= 0)
            linked[o.thread].push_back(in.threads[o.thread]->events[o.event].start_tick);
        }
      }
      for (std::vector<int64_t>& v : linked) std::sort(v.begin(), v.end());
      uint64_t without = 0;
      for (const CallSpan& c : at.calls) {
        if (c.module != 0) continue;
        const std::vector<int64_t>& v = linked[c.thread];
        auto it = std::lower_bound(v.begin(), v.end(), c.start);
        if (it == v.end() || *it > c.end) ++without;
      }
      r.forwards_without_backward = without;
    }
    // The model's totals and its points on the roofline.
    r.machine = in.machine;
    r.fwd_bytes_read = fwd_bytes.read;
    r.fwd_bytes_written = fwd_bytes.written;
    r.fwd_bytes = fwd_bytes.total();
    r.bwd_bytes_read = bwd_bytes.read;
    r.bwd_bytes_written = bwd_bytes.written;
    r.bwd_bytes = bwd_bytes.total();
    r.step_bytes_read = step_bytes.read;
    r.step_bytes_written = step_bytes.written;
    r.step_bytes = step_bytes.total();
    const DType dt = r.dtype = dominant(r.flops_by_dtype);
    r.fwd_flops_per_s = r.duration_s > 0 ? static_cast<double>(r.flops) / r.duration_s : 0.0;
    const bool device = r.gpu.measured;
    r.roofline = roofline_point(r.flops, true, r.fwd_bytes, device ? r.gpu.forward_s : r.duration_s,
                                in.machine, dt, fwd_bytes.levels.ceiling(in.machine));
    uint64_t bwd_flops = 0, bwd_total = 0;
    add_saturating(bwd_flops, r.bwd_flops, overflow);
    add_saturating(bwd_flops, r.recompute_flops, overflow);
    add_saturating(bwd_total, r.bwd_bytes, overflow);
    add_saturating(bwd_total, r.recompute_bytes, overflow);
    LevelAcc bwd_levels = bwd_bytes.levels;
    bwd_levels.add(re_bytes.levels);
    r.bwd_roofline =
        roofline_point(bwd_flops, true, bwd_total, device ? r.gpu.backward_s : r.bwd_latency_s,
                       in.machine, dt, bwd_levels.ceiling(in.machine));
    r.step_roofline =
        roofline_point(r.step_flops, true, r.step_bytes, device ? r.gpu.step_s : r.step_latency_s,
                       in.machine, dt, step_bytes.levels.ceiling(in.machine));
    uint64_t bytes = 0;
    for (uint64_t b : {r.fwd_bytes, r.bwd_bytes, r.recompute_bytes})
      add_saturating(bytes, b, overflow);
    utilisation(r, model_dt, hw_dt, bytes,
                device ? r.gpu.forward_s + r.gpu.backward_s : r.duration_s + r.bwd_latency_s);
  }

  // A module's forward and backward on the roofline: its FLOPs and bytes over its device time
  // when measured, else its host latency, against the peak of its dominant dtype.
  void module_roofline(ModuleStats& s, const ModuleAcc& a) const {
    const DType dt = s.dtype = dominant(s.flops_by_dtype);
    const bool device = r.gpu.measured;
    s.roofline = roofline_point(s.flops, true, s.bytes, device ? s.device_fwd_s : s.latency_s,
                                in.machine, dt, a.bytes.levels.ceiling(in.machine));
    uint64_t flops = s.bwd_flops + s.recompute_flops, bytes = s.bwd_bytes + s.recompute_bytes;
    if (flops < s.bwd_flops) flops = UINT64_MAX;
    if (bytes < s.bwd_bytes) bytes = UINT64_MAX;
    LevelAcc bwd = a.bwd_bytes.levels;
    bwd.add(a.re_bytes.levels);
    s.bwd_roofline = roofline_point(flops, true, bytes, device ? s.device_bwd_s : s.bwd_latency_s,
                                    in.machine, dt, bwd.ceiling(in.machine));
  }

  // A module's (or the model's) utilisation over its forward and backward time: the device's
  // when measured, else the host's (docs/report.md, "MFU, HFU and MBU").
  template <class S>
  void utilisation(S& s, const FlopsByDtype& model, const FlopsByDtype& hw, uint64_t bytes,
                   double seconds) const {
    s.mfu = flops_utilisation(model, seconds, in.machine);
    s.hfu = flops_utilisation(hw, seconds, in.machine);
    s.mbu = in.machine.bytes_per_s > 0 && seconds > 0
                ? static_cast<double>(bytes) / seconds / in.machine.bytes_per_s
                : 0.0;
  }
  void module_utilisation(ModuleStats& s, const ModuleAcc& a) const {
    const bool device = r.gpu.measured;
    uint64_t bytes = s.bytes;
    bytes = bytes + s.bwd_bytes < bytes ? UINT64_MAX : bytes + s.bwd_bytes;
    bytes = bytes + s.recompute_bytes < bytes ? UINT64_MAX : bytes + s.recompute_bytes;
    utilisation(s, a.model_dt, a.hw_dt, bytes,
                device ? s.device_fwd_s + s.device_bwd_s : s.latency_s + s.bwd_latency_s);
  }

  // The footprint: the bytes in use along the analysis' timeline, the peaks and who made them.
  void footprint() {
    if (!in.track_memory) return;
    MemoryStats& ms = r.memory;
    ms.tracked = true;
    const int64_t t0 = timeline.empty() ? 0 : timeline.front().time;
    ms.trace.reserve(timeline.size());
    for (const MemoryPoint& p : timeline) {
      const MemSample& x = mem[mem_first[p.thread] + p.record];
      const int64_t in_use = p.in_use;
      (x.bytes >= 0 ? ms.allocations : ms.frees) += 1;
      MemorySample sample;
      sample.time_s = static_cast<double>(x.time - t0) * s_per_tick;
      sample.bytes = in_use;
      sample.reserved = x.reserved;
      sample.op = x.name == UINT32_MAX ? "" : in.names->name(x.name);
      sample.module = module_label(tree, x.module);
      sample.phase = phase_name(x.phase);
      if (in_use > ms.peak_bytes) {
        ms.peak_bytes = in_use;
        ms.peak_workspace_bytes = p.workspace;
        ms.peak_op = sample.op;
        ms.peak_module = sample.module;
        ms.peak_phase = sample.phase;
      }
      int64_t tensors = 0;
      if (__builtin_sub_overflow(in_use, p.workspace, &tensors)) tensors = INT64_MAX;
      ms.tensor_peak_bytes = std::max(ms.tensor_peak_bytes, tensors);
      if (x.phase == Phase::kForward) ms.fwd_peak_bytes = std::max(ms.fwd_peak_bytes, in_use);
      ms.peak_reserved_bytes = std::max(ms.peak_reserved_bytes, x.reserved);
      ms.trace.push_back(std::move(sample));
    }
    ms.final_bytes = timeline.empty() ? 0 : timeline.back().in_use;
    if (timeline_saturated) {
      r.problems.push_back(
          "the bytes in use overflowed 64 bits (sizes of absurd shapes, e.g. on meta) and were "
          "saturated: the memory peak is a lower bound");
    }
  }

  // Inferred placements and inferred call counts, named: every guess, on both sides.
  void inference_problems() {
    placement_problems(tree, acc, losers, r.problems);
    std::vector<std::string> hidden;  // kCallsHidden: one line for all of them
    const std::string fix =
        !in.call_fix.empty()
            ? in.call_fix
            : "FLOPSPROF_MODULE() as the first line of its forward (or of the method the program "
              "calls) makes it exact";
    for (int m = 0; m < num_modules; ++m) {
      if (at.scoped[m] || tree.nodes[m].ignored) continue;
      const uint8_t why = at.calls_inferred[m];
      const std::string who = module_who(tree, m);
      if (why & kCallsRestart) {
        r.problems.push_back(
            m == 0 ? fmt::format("the model's call count ({}) is inferred: its first submodule ran "
                                 "again with nothing between that shows the forward returned "
                                 "(the model called twice in a row, or a block applied twice in "
                                 "one forward); {}",
                                 acc[m].calls, fix)
                   : fmt::format("the call count of {}, {}, is inferred: its first submodule ran "
                                 "again with nothing between that shows it returned (the module "
                                 "called again, or its forward applying that submodule twice); {}",
                                 who, acc[m].calls, fix));
      }
      if (why & kCallsPartial) {
        r.problems.push_back(fmt::format(
            "the call count of {}, {}, is inferred: a call of it ran only some of its layers (a "
            "method other than forward, layers skipped, or its submodules called directly); {}",
            who, acc[m].calls, fix));
      }
      if (why & kCallsNone) {
        r.problems.push_back(fmt::format(
            "{} shows no call while its submodules ran: they were called directly, or its calls "
            "could not be seen; {}",
            who, fix));
      }
      if (why & kCallsHidden) hidden.push_back(who);
      if (may_have_run_uncalled(m)) {
        r.problems.push_back(fmt::format(
            "{} shows no call, but its forward may have run {} op(s), {} FLOPs that op order "
            "gave to another module: its calls and work may be too small; {}",
            who, acc[m].maybe_missing_ops, acc[m].maybe_missing_flops, fix));
      }
    }
    if (!hidden.empty()) {
      r.problems.push_back(fmt::format(
          "{} show{} no call, nor does any of {} submodules, while the module holding {} ran: "
          "{} forward may have run without an op that shows it (one that returns its input, e.g. "
          "a switched-off block), or not at all; {}",
          fmt::join(hidden, ", "), hidden.size() == 1 ? "s" : "",
          hidden.size() == 1 ? "its" : "their", hidden.size() == 1 ? "it" : "them",
          hidden.size() == 1 ? "its" : "each one's", fix));
    }
    if (unknown_inside.ops > 0) {
      // Those between observed work of one module's call are that module's by evidence: only
      // the ones op order placed are guesses.
      const UnknownAcc& u = unknown_inside;
      std::string how;
      if (u.inferred_ops > 0) {
        how = fmt::format("{} op(s), {} FLOPs of them placed by op order (marked)", u.inferred_ops,
                          u.inferred_flops);
      }
      if (u.ops > u.inferred_ops) {
        how += fmt::format(
            "{}{} op(s), {} FLOPs between observed work of the module they are "
            "counted in (its own, by evidence)",
            how.empty() ? "" : ", ", u.ops - u.inferred_ops, u.flops - u.inferred_flops);
      }
      r.problems.push_back(fmt::format(
          "{} op(s), {} FLOPs ran in calls of modules that are in no profiled model's tree (a "
          "member never passed to register_module(), a module built in forward, or a model no "
          "profiler knows) and are counted in the model: {}; their parameters are not in its "
          "parameter count; register_module() the member, profile the other model too, or use "
          "get_model_profile, to make it exact",
          u.ops, u.flops, how));
    }
    if (unknown_outside.ops > 0) {
      r.problems.push_back(fmt::format(
          "{} op(s), {} FLOPs ran in calls of modules that are in no profiled model's tree and "
          "stayed outside the model{}; register_module() the member, profile the other model "
          "too, or use get_model_profile, to make it exact",
          unknown_outside.ops, unknown_outside.flops,
          outside.inferred_ops > 0 ? " (those next to its forward are marked: the model may lack "
                                     "them)"
                                   : ""));
    }
    if (outside.inferred_ops > 0) {
      r.problems.push_back(fmt::format(
          "placement inferred from op order: {} op(s), {} FLOPs, {} B are counted outside the "
          "model "
          "though its forward may have run them (ops that compute only from the model's results "
          "after it read data from outside, e.g. an entropy after a gather of actions; calls of "
          "modules in no profiled tree next to its forward; a dtype cast right after it; the "
          "ops right before it back to one only a caller runs, such as a mask or a cast of the "
          "input at the top of its forward or the caller's preparation of its batch), so the model "
          "may show too little; "
          "FLOPSPROF_MODULE() as the first line of the model's method the program calls (forward "
          "or another) makes them exact",
          outside.inferred_ops, outside.inferred_flops, outside.inferred_bytes));
    }
    if (outside.maybe_missing_ops > 0) {
      r.problems.push_back(fmt::format(
          "placement inferred from op order: {} op(s), {} FLOPs, {} B right before or after the "
          "model's "
          "forward were given to the model though they may be the caller's work (the outside may "
          "show too little); FLOPSPROF_MODULE() as the first line of the model's forward, or "
          "get_model_profile, makes them exact",
          outside.maybe_missing_ops, outside.maybe_missing_flops, outside.maybe_missing_bytes));
    }
  }

  // The op table, slowest first; the top ops outside the model; formulas that declined.
  void op_table() {
    for (auto& [key, a] : ops) {
      OpStats s;
      s.name = in.names->name(key.second);
      s.phase = op_phase_name(key.first);
      s.has_formula = a.has_formula;
      s.calls = a.calls;
      s.flops = a.flops;
      s.macs = a.macs;
      s.latency_s = static_cast<double>(a.ns) * s_per_tick;
      s.uncovered_s = static_cast<double>(a.uncovered_ns) * s_per_tick;
      s.bytes_read = a.read;
      s.bytes_written = a.written;
      s.bytes = a.read + a.written < a.read ? UINT64_MAX : a.read + a.written;
      s.written_unknown = a.written_unknown;
      s.written_from_allocations = a.written_from_allocations;
      s.dtype = dominant(a.by_dtype);
      if (s.dtype == DType::kUnknown) s.dtype = dominant(a.bytes_by_dtype);
      // FLOPs are known for rows with a formula whose every counted call was counted.
      s.roofline = roofline_point(s.flops, a.has_formula && a.declined == 0, s.bytes, s.latency_s,
                                  in.machine, s.dtype, a.levels.ceiling(in.machine));
      if (a.declined > 0) {
        r.problems.push_back(fmt::format(
            "{}: the formula could not count {} call(s) (arguments not understood); their FLOPs "
            "are n/a",
            s.name, a.declined));
      }
      r.ops.push_back(std::move(s));
    }
    std::sort(r.ops.begin(), r.ops.end(), [](const OpStats& a, const OpStats& b) {
      return a.latency_s != b.latency_s ? a.latency_s > b.latency_s : a.name < b.name;
    });
    for (const OpStats& s : r.ops) {
      if (s.phase == "outside" && outside.top_ops.size() < 5) outside.top_ops.push_back(s);
    }
    ceiling_problems();
  }

  // Work above its ceiling (RooflinePoint::above_ceiling: over 110% of it), op rows (forward,
  // backward, step, outside) and modules (forward and backward), each side apart: one problems
  // line for the compute side (the peak FLOP/s), one for the memory side (a level's bandwidth),
  // counting them all and naming the worst, with the causes that fit it.
  void ceiling_problems() {
    if (!in.machine.doubt.empty()) {
      r.problems.push_back(fmt::format(
          "roofline: this machine's peaks look wrong even measured twice ({}): probably measured "
          "while the machine was busy; shares against them are unreliable (delete {} on an idle "
          "machine to measure again, or give them: ProfilerOptions::roofline, --peak-flops, "
          "--peak-bandwidth L1:32K=...,DRAM=...)",
          in.machine.doubt,
          in.machine.cache_file.empty() ? "the peaks cache" : in.machine.cache_file));
    }
    struct Worst {
      size_t ops = 0, modules = 0;
      double share = 0;
      std::string what, ceiling;
      double seconds = 0;
      bool guessed = false;  // the worst is a module whose span rests on op order
    };
    Worst side[2];  // [0] compute, [1] memory
    // "L3 bandwidth (69.73 GB/s)"; a point whose bytes sat in several levels has a ceiling of
    // its own, between theirs: said so, not passed off as the level's.
    auto memory_ceiling_text = [&](const RooflinePoint& p) {
      const std::string value = bandwidth_to_string(p.ceiling_bytes_per_s);
      for (const BandwidthLevel& l : in.machine.bandwidth_by_level) {
        if (l.name != p.ceiling) continue;
        if (std::abs(l.bytes_per_s - p.ceiling_bytes_per_s) <= 0.005 * l.bytes_per_s) break;
        return fmt::format(
            "its memory ceiling ({}: its bytes at their levels' bandwidths, most "
            "in {}, {})",
            value, l.name, bandwidth_to_string(l.bytes_per_s));
      }
      return fmt::format("{} bandwidth ({})", p.ceiling.empty() ? "the" : p.ceiling, value);
    };
    auto note = [&](const RooflinePoint& p, double seconds, const std::string& what, bool guessed,
                    DType dt) -> bool {
      if (!p.above_ceiling) return false;
      Worst& w = side[p.bound == "memory" ? 1 : 0];
      if (p.share > w.share) {
        w.share = p.share;
        w.what = what;
        w.ceiling = p.bound == "memory"
                        ? memory_ceiling_text(p)
                        : fmt::format("the peak FLOP/s ({:.4g} GFLOP/s, {})",
                                      in.machine.peak_flops(dt) / 1e9, in.machine.flops_source);
        w.seconds = seconds;
        w.guessed = guessed;
      }
      return true;
    };
    for (const OpStats& s : r.ops) {
      if (note(s.roofline, s.latency_s / std::max<uint64_t>(1, s.calls),
               fmt::format("{} ({})", s.name, s.phase), false, s.dtype))
        ++side[s.roofline.bound == "memory" ? 1 : 0].ops;
    }
    for (const ModuleStats& mod : r.modules) {
      const bool guessed = mod.inferred_ops > 0 || mod.maybe_missing_ops > 0 || mod.calls_inferred;
      const std::string who = mod.name.empty() ? fmt::format("the model ({})", mod.type)
                                               : fmt::format("'{}' ({})", mod.name, mod.type);
      bool counted[2] = {false, false};
      for (const auto& [p, seconds, pass] :
           {std::tuple{&mod.roofline, mod.latency_s, "forward"},
            std::tuple{&mod.bwd_roofline, mod.bwd_latency_s, "backward"}}) {
        if (note(*p, seconds / std::max<uint64_t>(1, mod.calls),
                 fmt::format("{} in its {}", who, pass), guessed, mod.dtype))
          counted[p->bound == "memory" ? 1 : 0] = true;
      }
      for (int k = 0; k < 2; ++k) side[k].modules += counted[k];
    }
    const MachinePeaks& m = in.machine;
    const std::string file = m.cache_file.empty() ? "the cache file" : m.cache_file;
    for (int k = 0; k < 2; ++k) {
      const Worst& w = side[k];
      if (w.ops + w.modules == 0) continue;
      std::vector<std::string> causes;
      if (k == 1) {
        causes.push_back(
            "its working set sat in a faster level than its size says (data the op before left "
            "in cache, or split over the cores' caches)");
      } else if (m.flops_source.rfind("measured", 0) == 0) {
        causes.push_back(
            "that work's kernels ran faster than the kernels the peak was measured with (the "
            "machine's line above names them)");
      }
      const std::string& source = k == 1 ? m.bandwidth_source : m.flops_source;
      if (source.rfind("measured", 0) == 0) {
        causes.push_back(fmt::format(
            "the {} measured while the machine was busy (delete {} to measure again, or give "
            "{}: ProfilerOptions::roofline, {}, {})",
            k == 1 ? "levels were" : "peak was", file, k == 1 ? "them" : "it",
            k == 1 ? "--peak-bandwidth L1:32K=...,DRAM=..." : "--peak-flops",
            k == 1 ? "FLOPSPROF_PEAK_BANDWIDTH" : "FLOPSPROF_PEAK_FLOPS"));
      } else {
        causes.push_back(fmt::format("the {} given is lower than this machine reaches",
                                     k == 1 ? "bandwidth" : "peak"));
      }
      if (w.guessed)
        causes.push_back(
            "or a guess shrank its span (op order placed some of its work: see its "
            "mark)");
      if (w.seconds > 0 && w.seconds < 1e-5)
        causes.push_back("the timer's noise on a call this short");
      std::string counts;
      if (w.ops > 0) counts = fmt::format("{} op row(s)", w.ops);
      if (w.modules > 0)
        counts += fmt::format("{}{} module(s)", counts.empty() ? "" : " and ", w.modules);
      r.problems.push_back(fmt::format(
          "roofline: {} ran above {} (more than {:.0f}% over; marked above_ceiling): the worst, {} "
          "at {:.0f}% of {}; the likely causes: {}",
          counts, k == 1 ? "their memory ceiling" : "the peak FLOP/s", 100 * kCeilingTolerance,
          w.what, 100 * w.share, w.ceiling, fmt::join(causes, "; or ")));
    }
  }

  // Formula errors, overflow, and the collectives per module.
  void finish() {
    for (const auto& [msg, count] : counts.errors) {
      r.problems.push_back(fmt::format("{} ({} call(s))", msg, count));
    }
    if (overflow) r.problems.push_back("a FLOP or MAC total overflowed 64 bits and was saturated");
    r.collectives = collective_stats(collectives, in.ns_per_tick);
  }

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
  // Per module that received inferred work (kOutsideModel: the outside): the modules (and the
  // caller) whose forward may have run it.
  std::map<int, std::set<int>> losers;

  bool may_have_run_uncalled(int m) const {
    return acc[m].calls == 0 && acc[m].maybe_missing_ops > 0;
  }
};

}  // namespace

ProfileResult aggregate(const AggregateInput& in, const Analysis& analysis) {
  Aggregator a(in, analysis);
  a.count_events();
  a.add_calls();
  a.model_input();
  a.place_memory();
  a.place_device_activity();
  a.module_table();
  a.footprint();
  a.inference_problems();
  a.op_table();
  a.finish();
  split_by_region(in, analysis, a.r);
  return std::move(a.r);
}
}  // namespace flopsprof::detail
