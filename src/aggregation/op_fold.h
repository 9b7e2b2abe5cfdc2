// The ops of a profile as every fold over them takes them: the module totals and op table
// (aggregate_ops.cpp) and the regions (regions.cpp) walk the same ops with the same rules, here
// once: an op the attribution placed in no phase is left out; forward work outside the model is
// "outside" (is_outside_forward); its count, formula and KV bytes come from the analysis; its
// self time is its span less its nested events'. And the one map from the module tree to the
// result's modules (ignored modules folded away).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "aggregation/aggregate.h"

namespace flopsprof::detail {

/// One op as the folds take it.
struct PlacedOp {
  size_t thread = 0;  ///< index into AggregateInput::threads
  size_t index = 0;   ///< its event's index in the thread's records
  const RawEvent* event = nullptr;
  Phase phase = Phase::kForward;  ///< never kNone (those are left out)
  int module = kUnlinked;         ///< the attribution's: a tree index, kOutsideModel or kUnlinked
  bool outside = false;           ///< forward work outside the model (is_outside_forward)
  bool inferred = false;          ///< placed by inference (op order), not by evidence
  int alternative = -1;           ///< inferred: index into Attribution::alternatives (-1: none)
  const OpCount* count = nullptr;
  const FlopCount* flops = nullptr;  ///< its formula's count; nullptr: no formula
  const KvBytes* kv = nullptr;       ///< a KV cache's share of its bytes; nullptr: none known
  int64_t self_ticks = 0;            ///< its span less its nested events' spans
};

/// Calls `f(const PlacedOp&)` for each op of each thread, in record order (autograd nodes and
/// ops placed in no phase left out). Not thread-safe with writers of its inputs.
template <class F>
void for_each_placed_op(const AggregateInput& in, const Attribution& at, const OpCounts& counts,
                        const std::vector<std::vector<KvBytes>>& kv, F&& f) {
  std::vector<int64_t> child_ticks;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const std::vector<RawEvent>& ev = in.threads[t]->events;
    const ThreadAttribution& ta = at.threads[t];
    auto end_of = [&](const RawEvent& e) { return e.end_tick != 0 ? e.end_tick : in.stop_tick; };
    child_ticks.assign(ev.size(), 0);
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i].parent >= 0) child_ticks[ev[i].parent] += end_of(ev[i]) - ev[i].start_tick;
    }
    const bool has_kv = t < kv.size() && !kv[t].empty();
    for (size_t i = 0; i < ev.size(); ++i) {
      const RawEvent& e = ev[i];
      if (e.kind != EventKind::kOp || ta.phase[i] == Phase::kNone) continue;
      PlacedOp op;
      op.thread = t;
      op.index = i;
      op.event = &e;
      op.phase = ta.phase[i];
      op.module = ta.module[i];
      op.outside = is_outside_forward(op.phase, op.module);
      op.inferred = ta.inferred[i] != 0;
      op.alternative = ta.alternative[i];
      op.count = &counts.threads[t][i];
      op.flops = op.count->counted();
      op.kv = has_kv && op.count->has_bytes() ? &kv[t][i] : nullptr;
      op.self_ticks = end_of(e) - e.start_tick - child_ticks[i];
      f(static_cast<const PlacedOp&>(op));
    }
  }
}

template <class F>
void for_each_placed_op(const AggregateInput& in, const Analysis& analysis, F&& f) {
  for_each_placed_op(in, analysis.attribution, analysis.counts, analysis.kv, std::forward<F>(f));
}

/// Each tree node's index in ProfileResult::modules (tree order, ignored modules left out: -1).
inline std::vector<int> result_indices(const ModuleTree& tree) {
  std::vector<int> out(tree.nodes.size(), -1);
  int k = 0;
  for (size_t t = 0; t < tree.nodes.size(); ++t) {
    if (!tree.nodes[t].ignored) out[t] = k++;
  }
  return out;
}

}  // namespace flopsprof::detail
