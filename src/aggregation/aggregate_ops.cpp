// The per-op fold of the aggregation (aggregator.h): each op and autograd node into its module,
// phase and op-table row, its FLOPs, bytes and KV bytes up the tree; steps; the op table.
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
#include "aggregation/op_fold.h"
#include "aggregation/regions.h"
#include "formulas/registry.h"

namespace flopsprof::detail::agg {

// Per thread: each autograd node into its module's backward, its steps; then each op into its
// module, phase and op-table row (op_fold.h).
void Aggregator::count_events() {
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    const std::vector<RawEvent>& ev = th.events;
    const size_t n = ev.size();
    if (n == 0 && th.scopes.empty() && th.steps.empty()) continue;
    ++r.threads;
    r.op_events += n;
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].kind == EventKind::kBackwardNode) count_node(t, i);
    }
    count_steps(t);
    count_nested_unknown_calls(th);
  }
  for_each_placed_op(in, at, counts, kv, [&](const PlacedOp& op) { count_op(op); });
  // Backward latency: the attribution's backward passes that ran this model's nodes.
  // A pass shared with another profiled model's nodes counts this model's own nodes only.
  std::vector<double> passes;
  for (const PhaseSpan& p : at.phase_spans) {
    if (p.phase == Phase::kBackward && p.ours) {
      passes.push_back(static_cast<double>(p.shared ? p.own : p.end - p.start) * s_per_tick);
      r.bwd_latency_s += passes.back();
      ++r.bwd_passes;
      r.bwd_shared_passes += p.shared;
    }
  }
  r.bwd_spread = spread_of(std::move(passes));
}

// An autograd node's time into its module's backward (or "(autograd)", or outside).
void Aggregator::count_node(size_t t, size_t i) {
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
void Aggregator::count_op(const PlacedOp& p) {
  const RawEvent& e = *p.event;
  const Phase ph = p.phase;
  const int m = p.module;
  const bool out_fwd = p.outside;
  const int64_t dur = end_of(e) - e.start_tick;
  OpAcc& op = ops[{out_fwd ? kOutsidePhase : static_cast<int>(ph), e.name_id}];
  ++op.calls;
  op.ns += dur;
  const OpCount& c = *p.count;
  const FlopCount* fc = p.flops;
  const int level = c.has_bytes() ? in.machine.level_for(c.bytes_total()) : -1;
  add_row(op, c, level);
  if (c.has_bytes()) {
    if (c.bytes != OpCount::kBytesKnown) ++r.bytes_written_unknown_calls;
    add_bytes(ph, m, out_fwd, c, level);
    if (p.kv && ph == Phase::kForward && m >= 0) add_kv(m, *p.kv);
  }
  if (ph == Phase::kForward && !out_fwd && m >= 0) add_module_op(m, e.name_id, dur, c, fc);
  if (!fc) {
    op.uncovered_ns += p.self_ticks;
    if (ph == Phase::kForward && !out_fwd)
      r.no_formula_s += static_cast<double>(p.self_ticks) * s_per_tick;
  }
  const uint64_t op_bytes = c.has_bytes() ? c.bytes_total() : 0;
  switch (ph) {
    case Phase::kForward:
      if (out_fwd) {
        add_outside(e, dur, fc, p.inferred, op_bytes,
                    ran_in_foreign_call(*in.threads[p.thread], e));
      } else {
        add_forward(e, m, p.inferred, fc, c.dtype, op_bytes);
      }
      if (p.inferred) add_other_side(e, m, p.alternative, fc, op_bytes);
      if (unknown_module_call(*in.threads[p.thread], e) >= 0) {
        UnknownAcc& u = out_fwd ? unknown_outside : unknown_inside;
        const bool guess = p.inferred;
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
      if (p.inferred) add_inferred_backward(m, fc, op_bytes);
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

void Aggregator::add_row(OpAcc& op, const OpCount& c, int level) {
  op.has_formula = op.has_formula || c.state != OpCount::kNone;  // the count stage found one
  if (c.state == OpCount::kDeclined) ++op.declined;
  if (c.has_bytes()) {
    add_saturating(op.read, c.bytes_read, overflow);
    add_saturating(op.written, c.bytes_written, overflow);
    op.levels.add(in.machine, level, c.bytes_total());
    if (c.bytes == OpCount::kWrittenUnknown) ++op.written_unknown;
    if (c.bytes == OpCount::kWrittenFromAllocations) ++op.written_from_allocations;
    add_saturating(op.bytes_by_dtype[static_cast<size_t>(c.dtype)], c.bytes_total(), overflow);
  }
  if (const FlopCount* fc = c.counted()) {
    add_saturating(op.by_dtype[static_cast<size_t>(c.dtype)], fc->flops, overflow);
    add_saturating(op.flops, fc->flops, overflow);
    add_saturating(op.macs, fc->macs, overflow);
  }
}

void Aggregator::add_inferred_backward(int m, const FlopCount* fc, uint64_t op_bytes) {
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
}

void Aggregator::count_nested_unknown_calls(const ThreadEvents& th) {
  for (const ScopeRecord& s : th.scopes) {
    if (s.module != kUnknownModule || s.backward) continue;
    for (int p = s.parent; p >= 0; p = th.scopes[p].parent) {
      if (th.scopes[p].module >= 0) {
        ++nested_unknown_calls;
        break;
      }
    }
  }
}

// A forward op into its module's own op table (an ignored module's goes to its nearest listed
// ancestor, as its FLOPs do).
void Aggregator::add_module_op(int m, uint32_t name, int64_t dur, const OpCount& c,
                               const FlopCount* fc) {
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
std::vector<std::vector<OpStats>> Aggregator::own_ops() const {
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
void Aggregator::add_outside(const RawEvent& e, int64_t dur, const FlopCount* fc, bool inferred,
                             uint64_t bytes, bool other_model) {
  if (e.parent < 0) {
    ++outside.ops;
    outside.latency_s += static_cast<double>(dur) * s_per_tick;
    if (inferred) ++outside.inferred_ops;
    if (other_model) ++outside.other_model_ops;
  }
  if (inferred) add_saturating(outside.inferred_bytes, bytes, overflow);
  if (fc) {
    add_saturating(outside.flops, fc->flops, overflow);
    add_saturating(outside.macs, fc->macs, overflow);
    if (inferred) add_saturating(outside.inferred_flops, fc->flops, overflow);
    if (other_model) add_saturating(outside.other_model_flops, fc->flops, overflow);
  }
}

// The other side of an inferred placement: each module (or the caller) whose forward may have
// run the op instead. Counted per module, not up the tree: the list names every module on the
// way that would include it.
void Aggregator::add_other_side(const RawEvent& e, int receiver, int alternative,
                                const FlopCount* fc, uint64_t bytes) {
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
void Aggregator::add_forward(const RawEvent& e, int m, bool inferred, const FlopCount* fc, DType dt,
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
void Aggregator::count_masks(const FlopCount& fc) {
  r.attention_masks_read += fc.mask_read ? 1 : 0;
  r.attention_masks_unread += fc.mask_unread ? 1 : 0;
}

// An op's FLOPs into the utilisation's numerators, the totals' and module m's (inclusive):
// model FLOPs when `model` (forward, backward), what the hardware ran always.
void Aggregator::add_utilisation(int m, DType dt, const FlopCount& fc, bool model) {
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
void Aggregator::add_backward(int m, const FlopCount& fc, DType dt) {
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
void Aggregator::add_recompute(int m, const FlopCount& fc, DType dt) {
  add_utilisation(m, dt, fc, false);
  add_saturating(r.recompute_flops, fc.flops, overflow);
  add_saturating(r.recompute_macs, fc.macs, overflow);
  for (int a = m; a >= 0; a = tree.nodes[a].parent) {
    add_saturating(acc[a].re_flops, fc.flops, overflow);
    add_saturating(acc[a].re_macs, fc.macs, overflow);
  }
}

// A forward op's KV cache bytes into the totals and its module's (inclusive up the tree).
void Aggregator::add_kv(int m, const KvBytes& k) {
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
void Aggregator::add_bytes(Phase ph, int m, bool out_fwd, const OpCount& c, int level) {
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
void Aggregator::count_steps(size_t t) {
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

// The op table, slowest first; the top ops outside the model; formulas that declined.
void Aggregator::op_table() {
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
  std::map<std::string, double> phase_s;
  for (const OpStats& s : r.ops) phase_s[s.phase] += s.latency_s;
  for (OpStats& s : r.ops) {
    const double total = phase_s[s.phase];
    s.phase_share = total > 0 ? s.latency_s / total : 0.0;
  }
  for (const OpStats& s : r.ops) {
    if (s.phase == "outside" && outside.top_ops.size() < 5) outside.top_ops.push_back(s);
  }
  ceiling_problems();
}

}  // namespace flopsprof::detail::agg
