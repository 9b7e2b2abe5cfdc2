// The attribution stage (see attribution.h for the rules): phases, modules, calls, autograd links.
#include "attribution/attribution.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>

#include "attribution/thread_attributor.h"
#include "records/builtin_modules.h"

namespace flopsprof::detail {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kBackward:
      return "backward";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kStep:
      return "step";
    default:
      return "forward";
  }
}

bool module_runs_op(const ModuleTree& tree, int m, const std::string& op) {
  const BuiltinSpec* spec = tree.nodes[m].builtin;
  if (spec == nullptr || spec->container || spec->wildcard) return true;
  return op_in_list(spec->ops, op);
}

namespace attr {

void ThreadAttributor::run(ThreadAttribution& out, std::vector<CallSpan>& spans,
                           std::vector<uint8_t>& calls_inferred, AlternativeSets& alternatives) {
  const size_t n = th_.events.size();
  out.phase.assign(n, Phase::kNone);
  out.module.assign(n, kUnlinked);
  out.node_of.assign(n, -1);
  out.inferred.assign(n, 0);
  out.alternative.assign(n, -1);
  phases(out);
  collect_items(out);
  apply_starts();
  rule7_user_module_calls();
  rule8_extend_calls(attr::Direction::kTowardsStart);
  rule8_extend_calls(attr::Direction::kTowardsEnd);
  rule9_root_tail();
  rule9_root_head();
  rule8_parameterless_children();
  rule8_containers_own_nothing();
  // Forward and recompute modules per event; nested events inherit their parent's.
  for (const Item& it : items_) {
    if (!it.forward) continue;
    int m = it.firm ? it.anchor : it.assigned;
    if (m == kUnset) m = kOutsideModel;
    out.module[it.event] = m >= 0 ? tree_.nodes[m].effective : m;
  }
  mark_inferred(out, alternatives);
  mark_outside_tail(out, alternatives);
  mark_unknown_outside(out, alternatives);
  mark_outside_ends(out, alternatives);
  for (size_t i = 0; i < n; ++i) {
    const RawEvent& e = th_.events[i];
    if (e.kind != EventKind::kOp) continue;
    const Phase ph = out.phase[i];
    if (ph == Phase::kRecompute) {
      out.module[i] = recompute_module(out, i);
    } else if (e.parent >= 0 && (ph == Phase::kForward || ph == Phase::kNone) &&
               !(e.flags & kBackward) && !(e.flags & kStep)) {
      out.module[i] = out.module[e.parent];
      out.inferred[i] = out.inferred[e.parent];
      out.alternative[i] = out.alternative[e.parent];
    }
  }
  for (size_t m = 0; m < restart_ambiguous_.size(); ++m) {
    if (restart_ambiguous_[m]) calls_inferred[m] |= kCallsRestart;
  }
  add_calls_of_empty_records();
  partial_calls(calls_inferred);
  for (const Call& c : calls_) {
    if (scoped_[c.module] || tree_.nodes[c.module].ignored) continue;
    if (c.first < 0) {
      spans.push_back(CallSpan{c.module, t_, c.t_lo, c.t_hi});
      continue;
    }
    const RawEvent& a = th_.events[items_[c.first].event];
    const RawEvent& b = th_.events[items_[c.last].event];
    const int64_t lo = std::min({a.start_tick, descendant_enter(a, c.module), c.t_lo});
    const int64_t hi = std::max({end_of(b), descendant_exit(b, c.module), c.t_hi});
    spans.push_back(CallSpan{c.module, t_, lo, hi});
  }
  for (const ScopeRecord& s : th_.scopes) {
    if (s.module < 0 || s.backward || s.start_only || tree_.nodes[s.module].ignored || folded(s))
      continue;
    spans.push_back(
        CallSpan{s.module, t_, s.enter_tick, s.exit_tick != 0 ? s.exit_tick : in_.stop_tick});
  }
}

}  // namespace attr

namespace {
// The engine's accumulation of a gradient (InputBuffer::add: `old + new`, or in place).
bool is_accumulation(const std::string& op) { return op == "aten::add" || op == "aten::add_"; }
}  // namespace

using attr::AlternativeSets;
using attr::is_holder;
using attr::phase_spans;
using attr::ThreadAttributor;

namespace {

// The modules scoped on some thread in the forward (by the program or get_model_profile).
std::vector<bool> scoped_modules(const AttributionInput& in, int nm) {
  std::vector<bool> scoped(nm, false);
  for (const ThreadEvents* th : in.threads) {
    for (const ScopeRecord& s : th->scopes) {
      if (s.module >= 0 && s.module < nm && !s.backward && !s.start_only) scoped[s.module] = true;
    }
  }
  return scoped;
}

// Rule 6. A node carries the sequence number the forward op took from its thread's counter; the
// op that created it is the one whose run advanced the counter past that number ([seq_nr,
// seq_end) covers the nodes its nested ops created). Ops that create no node (zero_grad's
// zero_, clone, to, randn) leave the counter where it was and cover nothing.
void link_origins(const AttributionInput& in, Attribution& out) {
  std::unordered_map<uint64_t, std::unordered_map<int64_t, Origin>> by_seq;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    auto& map = by_seq[th.thread_id];
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      const Phase ph = out.threads[t].phase[i];
      if (e.kind != EventKind::kOp || e.seq_nr < 0) continue;
      if (ph != Phase::kForward && ph != Phase::kRecompute) continue;
      const int64_t last = e.seq_end >= 0 ? e.seq_end : e.seq_nr + 1;  // unfinished: its own
      for (int64_t q = e.seq_nr; q < last; ++q) {
        map.emplace(q, Origin{static_cast<int>(t), static_cast<int>(i)});  // outermost wins
      }
    }
  }
  out.origin.resize(in.threads.size());
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    const size_t n = th.events.size();
    out.origin[t].assign(n, Origin{});
    for (size_t i = 0; i < n; ++i) {
      const RawEvent& e = th.events[i];
      if (e.kind != EventKind::kBackwardNode || e.seq_nr < 0) continue;
      auto ft = by_seq.find(e.fwd_thread);
      if (ft == by_seq.end()) continue;
      auto o = ft->second.find(e.seq_nr);
      if (o != ft->second.end()) out.origin[t][i] = o->second;
    }
  }
}

// Backward ops belong to their innermost autograd node; ops the engine runs in a node's
// evaluate_function wrapper after the node (validate_outputs: the reduction of a gradient to a
// broadcast input's shape, a cast) belong to that node too. But the add with which the engine
// accumulates a tensor's gradients from several uses (InputBuffer, in the wrapper of the node
// that produced the later one) is gradient accumulation: "(autograd)". Fills `ta.node_of`;
// returns, per event, the node whose wrapper ran the accumulation it is in (-1: none).
std::vector<int> link_nodes(const AttributionInput& in, const ThreadEvents& th,
                            ThreadAttribution& ta) {
  const size_t n = th.events.size();
  std::vector<int>& node_of = ta.node_of;
  std::vector<int> after(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const RawEvent& e = th.events[i];
    const int p = e.parent;
    if (e.kind == EventKind::kBackwardNode && !(e.flags & kEngine)) {
      node_of[i] = static_cast<int>(i);
      if (p >= 0 && (th.events[p].flags & kEngine)) node_of[p] = static_cast<int>(i);
    } else if (p >= 0 && e.kind == EventKind::kOp && (th.events[p].flags & kEngine) &&
               is_accumulation(in.names->name(e.name_id))) {
      node_of[i] = -1;
      after[i] = node_of[p];
    } else if (p >= 0) {
      node_of[i] = node_of[p];
      after[i] = after[p];
    }
  }
  return after;
}

// Each backward event of thread `t` placed in its node's forward op's module (or outside, or
// unlinked), with the guess that placed that op; `accumulated_after` from link_nodes().
void place_backward(const Attribution& at, size_t t, const ThreadEvents& th,
                    const std::vector<int>& accumulated_after, ThreadAttribution& ta) {
  int previous_node = -1;  // the last autograd node run on this thread
  for (size_t i = 0; i < th.events.size(); ++i) {
    const RawEvent& e = th.events[i];
    const bool bwd = e.kind == EventKind::kBackwardNode || ta.phase[i] == Phase::kBackward ||
                     (ta.phase[i] == Phase::kNone && (e.flags & kBackward) && ta.node_of[i] >= 0);
    if (!bwd) continue;
    const int nd = ta.node_of[i];
    int m = kUnlinked;
    if (nd >= 0) {
      const Origin o = at.origin[t][nd];
      if (o.thread >= 0) {
        const ThreadAttribution& fa = at.threads[o.thread];
        m = fa.module[o.event];
        // the backward of a forward op placed by inference is placed by the same guess
        ta.inferred[i] = fa.inferred[o.event];
        ta.alternative[i] = fa.alternative[o.event];
      }
    }
    // The engine's work for nodes outside the model (another profiled model's, in a backward
    // pass that runs both) is outside it, not this model's "(autograd)": an accumulation in
    // the wrapper of such a node; a node linked to no forward op (AccumulateGrad) that runs
    // right after one (the engine takes it first: its sequence number is the highest), and
    // the ops inside such a node.
    // (A node placed outside by inference, the backward of a guess, may be the model's: its
    // engine work stays the model's "(autograd)".)
    auto outside = [&](int node) {
      return node >= 0 && ta.module[node] == kOutsideModel && !ta.inferred[node];
    };
    const int acc = accumulated_after[i];
    if (m == kUnlinked && outside(acc)) m = kOutsideModel;
    if (m == kUnlinked && nd == static_cast<int>(i) && outside(previous_node)) m = kOutsideModel;
    if (m == kUnlinked && nd >= 0 && nd != static_cast<int>(i) && ta.module[nd] == kOutsideModel)
      m = kOutsideModel;
    ta.module[i] = m;
    if (nd == static_cast<int>(i)) previous_node = nd;
  }
}

// Modules whose calls op order cannot establish: marked in `out.calls_inferred`.
void mark_call_gaps(const AttributionInput& in, Attribution& out) {
  const ModuleTree& tree = *in.tree;
  const int nm = static_cast<int>(tree.nodes.size());
  // A module with no call while a submodule ran: its children were called directly (or its
  // calls could not be seen): marked.
  std::vector<char> called(nm, 0), below(nm, 0);  // below: a strict descendant has a call
  for (const CallSpan& c : out.calls) called[c.module] = 1;
  for (int m = nm - 1; m >= 1; --m) {  // pre-order: descendants after their ancestors
    const int p = tree.nodes[m].parent;
    if (p >= 0 && (called[m] || below[m])) below[p] = 1;
  }
  for (int m = 0; m < nm; ++m) {
    const bool holder = is_holder(tree, m);
    if (!called[m] && below[m] && !holder && !out.scoped[m] && !tree.nodes[m].ignored)
      out.calls_inferred[m] |= kCallsNone;
  }
  for (int m = 1; m < nm; ++m) {
    const ModuleNode& n = tree.nodes[m];
    if (called[m] && !below[m] && n.tensors == 0 && n.builtin == nullptr && !n.calls_observed &&
        !out.scoped[m] && !n.ignored)
      out.calls_inferred[m] |= kCallsGuessed;
  }
  // A user module with no call in a subtree with none, held by a module that ran: its forward
  // may have returned its input (a switched-off attention block) or never run; op order cannot
  // tell. Unless the program scopes every user module that ran (FLOPSPROF_MODULE() in each
  // forward): then a module with no record did not run.
  std::vector<char> annotated(nm, 0);  // scoped by the program (not get_model_profile's window)
  for (const ThreadEvents* th : in.threads) {
    for (const ScopeRecord& s : th->scopes) {
      if (s.module >= 0 && s.module < nm && !s.backward && !s.start_only && !s.window)
        annotated[s.module] = 1;
    }
  }
  bool unscoped_user_ran = false;
  for (int m = 0; m < nm; ++m) {
    if (called[m] && tree.nodes[m].builtin == nullptr && !annotated[m]) unscoped_user_ran = true;
  }
  for (int m = 1; m < nm && unscoped_user_ran; ++m) {
    const ModuleNode& n = tree.nodes[m];
    if (called[m] || below[m] || n.builtin != nullptr || n.ignored || out.scoped[m]) continue;
    int holder = n.parent;  // the module whose forward calls it (ModuleLists skipped)
    while (holder > 0 && is_holder(tree, holder)) holder = tree.nodes[holder].parent;
    if (holder >= 0 && called[holder]) out.calls_inferred[m] |= kCallsHidden;
  }
}

}  // namespace

Attribution attribute(const AttributionInput& in) {
  const int nm = static_cast<int>(in.tree->nodes.size());
  Attribution out;
  out.scoped = scoped_modules(in, nm);
  out.calls_inferred.assign(nm, 0);
  AlternativeSets alternatives(out.alternatives);
  out.threads.resize(in.threads.size());
  for (size_t t = 0; t < in.threads.size(); ++t) {
    ThreadAttributor(in, out.scoped, static_cast<int>(t))
        .run(out.threads[t], out.calls, out.calls_inferred, alternatives);
  }
  link_origins(in, out);
  std::vector<std::vector<int>> accumulated_after(in.threads.size());
  for (size_t t = 0; t < in.threads.size(); ++t)
    accumulated_after[t] = link_nodes(in, *in.threads[t], out.threads[t]);
  for (size_t t = 0; t < in.threads.size(); ++t) {
    place_backward(out, t, *in.threads[t], accumulated_after[t], out.threads[t]);
    phase_spans(in, static_cast<int>(t), out.threads[t], out.origin, out.phase_spans);
  }
  mark_call_gaps(in, out);
  return out;
}

std::pair<int, Phase> event_owner(const Attribution& at,
                                  const std::vector<const ThreadEvents*>& threads, size_t t,
                                  size_t i) {
  const RawEvent& e = threads[t]->events[i];
  const ThreadAttribution& ta = at.threads[t];
  if (e.kind == EventKind::kBackwardNode) return {ta.module[i], Phase::kBackward};
  return {ta.module[i], ta.phase[i] == Phase::kNone ? Phase::kForward : ta.phase[i]};
}

int unknown_module_call(const ThreadEvents& th, const RawEvent& e) {
  int unit = -1;
  for (int s = e.scope; s >= 0; s = th.scopes[s].parent) {
    if (th.scopes[s].module != kUnknownModule) return -1;
    unit = s;
  }
  return unit;
}

std::string module_label(const ModuleTree& tree, int m) {
  if (m >= 0) return tree.nodes[m].name;
  return m == kOutsideModel ? "(outside the model)" : "(autograd)";
}

}  // namespace flopsprof::detail
