// The module side of the aggregation (aggregator.h): memory and device activity placed, the
// module table with its roofline and utilisation, the footprint.
#include "aggregation/aggregator.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "aggregation/collectives.h"
#include "aggregation/regions.h"
#include "formulas/registry.h"

namespace flopsprof::detail::agg {

namespace {

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

// Memory: each allocation or free belongs to the op that was open on its thread.
void Aggregator::place_memory() {
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
void Aggregator::place_device_activity() {
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
void Aggregator::module_table() {
  remap = result_indices(tree);
  std::vector<std::vector<OpStats>> own = own_ops();
  for (int t = 0; t < num_modules; ++t) {
    if (remap[t] < 0) continue;  // ignored: folded into its ancestors
    ModuleStats s = module_stats(t, std::move(own[t]));
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
  module_types();
  if (r.has_backward && !r.modules.empty())
    r.forwards_without_backward = forwards_without_backward();
  model_totals();
}

void Aggregator::module_types() {
  std::map<std::pair<int, std::string>, size_t> index;  // (depth, type) -> its group
  std::vector<ModuleTypeStats> groups;                  // in order of first appearance
  for (const ModuleStats& m : r.modules) {
    auto [it, added] = index.try_emplace({m.depth, m.type}, groups.size());
    if (added) {
      ModuleTypeStats g;
      g.depth = m.depth;
      g.type = m.type;
      groups.push_back(std::move(g));
    }
    ModuleTypeStats& g = groups[it->second];
    ++g.modules;
    add_saturating(g.params, m.params, overflow);
    add_saturating(g.macs, m.macs, overflow);
    g.latency_s += m.latency_s;
  }
  std::stable_sort(
      groups.begin(), groups.end(),
      [](const ModuleTypeStats& a, const ModuleTypeStats& b) { return a.depth < b.depth; });
  r.module_types = std::move(groups);
}

ModuleStats Aggregator::module_stats(int t, std::vector<OpStats> own) const {
  const ModuleNode& node = tree.nodes[t];
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
  s.ops = std::move(own);
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
  return s;
}

uint64_t Aggregator::forwards_without_backward() const {
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
  return without;
}

void Aggregator::summary_rates(uint64_t bwd) {
  auto rate = [](uint64_t flops, double seconds) {
    return seconds > 0 ? static_cast<double>(flops) / seconds : 0.0;
  };
  uint64_t fwd_bwd = 0;
  add_saturating(fwd_bwd, r.flops, overflow);
  add_saturating(fwd_bwd, bwd, overflow);
  r.fwd_flops_per_s = rate(r.flops, r.duration_s);
  r.bwd_flops_per_s = rate(bwd, r.bwd_latency_s);
  r.fwd_bwd_flops_per_s = rate(fwd_bwd, r.duration_s + r.bwd_latency_s);
  const double iter = r.iteration_latency_s();
  r.iter_flops_per_s = rate(fwd_bwd, iter);
  r.batch_size = in.batch_size;
  r.samples_per_s = r.batch_size > 0 && iter > 0 ? static_cast<double>(r.batch_size) / iter : 0.0;
}

void Aggregator::model_totals() {
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
  // The backward's work: its own ops and the forward ops it re-ran (activation checkpointing).
  uint64_t bwd_flops = 0, bwd_total = 0;
  add_saturating(bwd_flops, r.bwd_flops, overflow);
  add_saturating(bwd_flops, r.recompute_flops, overflow);
  summary_rates(bwd_flops);
  const bool device = r.gpu.measured;
  r.roofline = roofline_point(r.flops, true, r.fwd_bytes, device ? r.gpu.forward_s : r.duration_s,
                              in.machine, dt, fwd_bytes.levels.ceiling(in.machine));
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
void Aggregator::module_roofline(ModuleStats& s, const ModuleAcc& a) const {
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
void Aggregator::utilisation(S& s, const FlopsByDtype& model, const FlopsByDtype& hw,
                             uint64_t bytes, double seconds) const {
  s.mfu = flops_utilisation(model, seconds, in.machine);
  s.hfu = flops_utilisation(hw, seconds, in.machine);
  s.mbu = in.machine.bytes_per_s > 0 && seconds > 0
              ? static_cast<double>(bytes) / seconds / in.machine.bytes_per_s
              : 0.0;
  s.mfu_above_peak = above_peak(s.mfu);
  s.hfu_above_peak = above_peak(s.hfu);
  s.mbu_above_peak = above_peak(s.mbu);
}

void Aggregator::module_utilisation(ModuleStats& s, const ModuleAcc& a) const {
  const bool device = r.gpu.measured;
  uint64_t bytes = s.bytes;
  bytes = bytes + s.bwd_bytes < bytes ? UINT64_MAX : bytes + s.bwd_bytes;
  bytes = bytes + s.recompute_bytes < bytes ? UINT64_MAX : bytes + s.recompute_bytes;
  utilisation(s, a.model_dt, a.hw_dt, bytes,
              device ? s.device_fwd_s + s.device_bwd_s : s.latency_s + s.bwd_latency_s);
}

// The footprint: the bytes in use along the analysis' timeline, the peaks and who made them.
void Aggregator::footprint() {
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

namespace {
// `part` of `whole`, a fraction; 0 when the whole is.
double fraction(double part, double whole) { return whole > 0 ? part / whole : 0.0; }
template <class T>
double fraction_of(T part, T whole) {
  return fraction(static_cast<double>(part), static_cast<double>(whole));
}
}  // namespace

void Aggregator::shares() {
  if (!r.modules.empty()) {
    const ModuleStats& root = r.modules[0];
    for (ModuleStats& m : r.modules) {
      m.params_share = fraction_of(m.params, root.params);
      m.macs_share = fraction_of(m.macs, root.macs);
      m.latency_share = r.timed ? fraction(m.latency_s, root.latency_s) : 0.0;
    }
    r.inferred_flops_share = fraction_of(root.inferred_flops, r.flops);
    r.inferred_bytes_share = fraction_of(root.inferred_bytes, r.fwd_bytes);
    r.inferred_bwd_flops_share = fraction_of(root.inferred_bwd_flops, r.bwd_flops);
  }
  for (const OpStats& op : r.ops) {
    if (op.has_formula) continue;
    if (op.phase != "forward") {
      ++r.no_formula_ops_elsewhere;
      continue;
    }
    ++r.no_formula_ops;
    r.no_formula_calls += op.calls;
  }
  r.no_formula_share = r.timed ? fraction(r.no_formula_s, r.duration_s) : 0.0;
  const MachinePeaks& m = r.machine;
  const DType dt = r.dtype == DType::kUnknown ? DType::kFloat32 : r.dtype;
  if (m.known(dt)) {
    r.fwd_flops_of_peak = r.roofline.achieved_flops_per_s / m.peak_flops(dt);
    r.fwd_bytes_of_peak = r.roofline.achieved_bytes_per_s / m.bytes_per_s;
    r.bwd_flops_of_peak = r.bwd_roofline.achieved_flops_per_s / m.peak_flops(dt);
    r.bwd_bytes_of_peak = r.bwd_roofline.achieved_bytes_per_s / m.bytes_per_s;
  }
}

}  // namespace flopsprof::detail::agg
