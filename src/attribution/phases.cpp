// Which top-level records are the model's forward, a backward pass, a recomputation or an optimizer
// step (the phases), and the phase spans.
#include "attribution/thread_attributor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace flopsprof::detail::attr {

// Which step records are this profile's step: all step_scope()s, and the optimizer steps that
// update a parameter or buffer of this model (another model's optimizer is outside it).
void ThreadAttributor::steps(ThreadAttribution& out) const {
  const auto& st = th_.steps;
  out.step_counts.assign(st.size(), 1);
  for (size_t k = 0; k < st.size(); ++k) {
    if (!st[k].optimizer) continue;
    const int64_t end = st[k].end_tick != 0 ? st[k].end_tick : in_.stop_tick;
    bool ours = false;
    for (const RawEvent& e : th_.events) {
      if (e.start_tick < st[k].start_tick || e.start_tick > end) continue;
      if ((e.flags & kStep) && e.owner >= 0) ours = true;
    }
    out.step_counts[k] = ours;
  }
}

// Whether op `e` (flagged kStep) ran inside a step of this profile.
bool ThreadAttributor::in_counted_step(const ThreadAttribution& out, const RawEvent& e) const {
  for (size_t k = 0; k < th_.steps.size(); ++k) {
    const StepRecord& s = th_.steps[k];
    const int64_t end = s.end_tick != 0 ? s.end_tick : in_.stop_tick;
    if (out.step_counts[k] && e.start_tick >= s.start_tick && e.start_tick <= end) return true;
  }
  return false;
}

void ThreadAttributor::phases(ThreadAttribution& out) {
  steps(out);
  const auto& ev = th_.events;
  for (size_t i = 0; i < ev.size(); ++i) {
    const RawEvent& e = ev[i];
    if (e.kind != EventKind::kOp || (e.flags & kUnderCounted)) continue;
    const ScopeRecord* scope = e.scope >= 0 ? &th_.scopes[e.scope] : nullptr;
    Phase ph = Phase::kForward;
    if ((e.flags & kStep) && !in_counted_step(out, e)) {
      ph = Phase::kForward;  // another model's optimizer step: outside this one
    } else if (e.flags & kStep) {
      ph = Phase::kStep;
    } else if (e.flags & kBackward) {
      const bool parent_re = e.parent >= 0 && out.phase[e.parent] == Phase::kRecompute;
      ph = (e.seq_nr >= 0 || parent_re || (scope && scope->backward)) ? Phase::kRecompute
                                                                      : Phase::kBackward;
    }
    out.phase[i] = ph;
  }
}

int ThreadAttributor::recompute_module(const ThreadAttribution& out, size_t i) const {
  Item it;
  it.event = static_cast<int>(i);
  anchor(it, /*in_scope_only_backward=*/true);
  int m = it.anchor;
  if (m < 0 && th_.events[i].parent >= 0) return out.module[th_.events[i].parent];
  return m >= 0 ? tree_.nodes[m].effective : kUnlinked;
}

// Phase spans of thread t: runs of consecutive top-level events of one phase, the model's forward
// (neither an optimizer step's work nor work outside the model) or one backward pass. A backward
// pass that runs no node of this model (another model's backward, in a loop with several
// profilers) is outside it entirely: its gradient accumulation is not this model's "(autograd)"
// work.
void phase_spans(const AttributionInput& in, int t, ThreadAttribution& ta,
                 const std::vector<std::vector<Origin>>& origin, std::vector<PhaseSpan>& spans) {
  const std::vector<RawEvent>& ev = in.threads[t]->events;
  PhaseSpan run;
  bool open = false;
  size_t first = 0;
  auto close = [&](size_t end) {
    if (!open) return;
    if (run.phase == Phase::kBackward && !run.ours) {
      for (size_t k = first; k < end; ++k) {
        if (ta.module[k] == kUnlinked) ta.module[k] = kOutsideModel;
      }
    }
    spans.push_back(run);
    open = false;
  };
  for (size_t i = 0; i < ev.size(); ++i) {
    const RawEvent& e = ev[i];
    const bool bwd = (e.flags & kBackward) != 0;
    if (e.parent < 0) {
      const Phase ph = bwd                                                  ? Phase::kBackward
                       : (e.flags & kStep) || ta.module[i] == kOutsideModel ? Phase::kNone
                                                                            : Phase::kForward;
      if (!open || ph != run.phase) {
        close(i);
        if (ph != Phase::kNone) {
          run = PhaseSpan{t, ph, e.start_tick, e.start_tick, ph == Phase::kForward};
          open = true;
          first = i;
        }
      }
      if (open) run.end = std::max(run.end, e.end_tick != 0 ? e.end_tick : in.stop_tick);
    }
    if (open && bwd && ta.module[i] >= 0) run.ours = true;
    if (open && run.phase == Phase::kBackward && e.kind == EventKind::kBackwardNode) {
      // A node's time is its evaluate_function wrapper's when it has one (as the aggregation
      // counts it); a node created by another profiled model's forward makes the pass shared.
      const bool wrapped = !(e.flags & kEngine) && e.parent >= 0 && (ev[e.parent].flags & kEngine);
      if (!wrapped && ta.module[i] >= 0) {
        run.own += (e.end_tick != 0 ? e.end_tick : in.stop_tick) - e.start_tick;
      }
      const Origin o = ta.node_of[i] >= 0 ? origin[t][ta.node_of[i]] : Origin{};
      if (o.thread >= 0 &&
          ran_in_foreign_call(*in.threads[o.thread], in.threads[o.thread]->events[o.event]))
        run.shared = true;
    }
  }
  close(ev.size());
}

}  // namespace flopsprof::detail::attr
