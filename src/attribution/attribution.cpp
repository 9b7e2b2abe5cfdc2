// The attribution stage (see attribution.h for the rules): phases, modules, calls, autograd links.
#include "attribution/attribution.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>

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

namespace {

constexpr int kUnset = INT_MIN;

// A top-level event of one thread, in start order.
struct Item {
  int event = 0;
  bool forward = false;  // a forward op; anything else (backward, step, recompute) breaks calls
  int anchor = -1;       // module from rules 1-2 (firm), or a scope / the root (weak)
  bool firm = false;
  bool touch = false;        // reads a parameter that no owner may claim for this op (tied weight)
  bool edge = false;         // given to the root by rule 9 (its ends): the caller's, maybe
  int assigned = kUnset;     // final module (tree index), kOutsideModel, or kUnset
  int container = -1;        // the container that gave it to a child (containers_own_nothing)
  bool reads_older = false;  // and it reads data from before that child's call (no later child's)
};

// A call being derived: a run of items.
struct Call {
  int module = 0;
  int first = 0, last = 0;   // item positions
  int first_child = -1;      // the child whose op began it (restart rule)
  int last_child = -1;       // the child of its last claimed op
  int scope_rec = -1;        // the scope record it stands for (scoped modules)
  int cursor = -1;           // child_index of the child that ran last (rule 4)
  bool cursor_stay = false;  // that child may take the next op too
  bool ended = false;        // its last op ended a built-in's call (terminal)
  int depth = 0;
  std::vector<int> ran;  // children given ops out of registration order (rule 4)
  // Widened to observed calls of submodules that ran no op (an Identity); a call made only of
  // those has first == last == -1.
  int64_t t_lo = INT64_MAX, t_hi = INT64_MIN;
};

// Sets of modules that may have run an op placed elsewhere, shared by all threads' events.
class AlternativeSets {
 public:
  explicit AlternativeSets(std::vector<std::vector<int>>& sets) : sets_(sets) {}
  // The index of `who` (sorted, deduplicated), -1 when empty.
  int add(std::vector<int> who) {
    if (who.empty()) return -1;
    std::sort(who.begin(), who.end());
    who.erase(std::unique(who.begin(), who.end()), who.end());
    auto [it, inserted] = index_.emplace(who, static_cast<int>(sets_.size()));
    if (inserted) sets_.push_back(std::move(who));
    return it->second;
  }

 private:
  std::vector<std::vector<int>>& sets_;
  std::map<std::vector<int>, int> index_;
};

// How a parameterless module matches an op: 0 no, 1 its type runs it, 2 it runs anything.
int match(const ModuleTree& tree, int m, const std::string& op) {
  const ModuleNode& n = tree.nodes[m];
  // its calls (or their starts) are recorded: no rule gives it an op
  if (n.calls_observed || n.starts_observed) return 0;
  const BuiltinSpec* spec = n.builtin;
  if (spec != nullptr && spec->wildcard) return 2;
  if (spec != nullptr && !spec->container && n.children.empty()) return op_in_list(spec->ops, op);
  if (n.children.empty()) return spec == nullptr ? 2 : 0;  // a user module with no children
  int best = 0;
  for (int c : n.children) {
    const int r = match(tree, c, op);
    if (r == 1) return 1;
    best = std::max(best, r);
  }
  return best;
}

// Whether op `e` of thread `th` ran inside a call of another profiled model's module (and of
// none of this model's).
bool ran_in_foreign_call(const ThreadEvents& th, const RawEvent& e) {
  bool foreign = false;
  for (int s = e.scope; s >= 0; s = th.scopes[s].parent) {
    const int m = th.scopes[s].module;
    if (m >= 0) return false;
    foreign = foreign || m == kForeignModule;
  }
  return foreign;
}

// A holder with no forward (ModuleList, ModuleDict): its children are called by its parent.
bool is_holder(const ModuleTree& tree, int m) {
  const BuiltinSpec* spec = tree.nodes[m].builtin;
  return spec != nullptr && (spec->type == "ModuleList" || spec->type == "ModuleDict");
}

bool is_terminal(const ModuleTree& tree, int m, const std::string& op) {
  const BuiltinSpec* spec = tree.nodes[m].builtin;
  return spec != nullptr && op_in_list(spec->terminals, op);
}

class ThreadAttributor {
 public:
  ThreadAttributor(const AttributionInput& in, const std::vector<bool>& scoped, int t)
      : in_(in), tree_(*in.tree), th_(*in.threads[t]), scoped_(scoped), t_(t) {}

  void run(ThreadAttribution& out, std::vector<CallSpan>& spans,
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
    segment();
    extend_leading();
    extend_trailing();
    extend_root_tail();
    extend_root_head();
    sweep();
    containers_own_nothing();
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

 private:
  int64_t end_of(const RawEvent& e) const { return e.end_tick != 0 ? e.end_tick : in_.stop_tick; }

  // An inferred call of `m` whose first (last) op ran inside an observed call of a submodule began
  // before that call entered (ended after it exited): the outermost such call around op `e` (a
  // child's own time is never longer than its parent's). INT64_MAX / INT64_MIN when none.
  int64_t descendant_enter(const RawEvent& e, int m) const {
    int64_t t = INT64_MAX;
    for (int s = e.scope; s >= 0; s = th_.scopes[s].parent) {
      if (observed_descendant(th_.scopes[s], m)) t = th_.scopes[s].enter_tick;
    }
    return t;
  }
  int64_t descendant_exit(const RawEvent& e, int m) const {
    int64_t t = INT64_MIN;
    for (int s = e.scope; s >= 0; s = th_.scopes[s].parent) {
      const ScopeRecord& r = th_.scopes[s];
      if (observed_descendant(r, m)) t = r.exit_tick != 0 ? r.exit_tick : in_.stop_tick;
    }
    return t;
  }
  bool observed_descendant(const ScopeRecord& r, int m) const {
    return r.module >= 0 && r.module != m && !r.backward && !r.start_only &&
           tree_.is_ancestor_or_self(m, r.module);
  }
  const std::string& name(int event) const { return in_.names->name(th_.events[event].name_id); }
  const std::string& item_name(int pos) const { return name(items_[pos].event); }

  // Which step records are this profile's step: all step_scope()s, and the optimizer steps that
  // update a parameter or buffer of this model (another model's optimizer is outside it).
  void steps(ThreadAttribution& out) const {
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
  bool in_counted_step(const ThreadAttribution& out, const RawEvent& e) const {
    for (size_t k = 0; k < th_.steps.size(); ++k) {
      const StepRecord& s = th_.steps[k];
      const int64_t end = s.end_tick != 0 ? s.end_tick : in_.stop_tick;
      if (out.step_counts[k] && e.start_tick >= s.start_tick && e.start_tick <= end) return true;
    }
    return false;
  }

  void phases(ThreadAttribution& out) {
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

  // The scope record of module `m` enclosing `e`, or -1.
  int enclosing_scope(const RawEvent& e, int m) const {
    for (int s = e.scope; s >= 0; s = th_.scopes[s].parent) {
      if (th_.scopes[s].module == m) return s;
    }
    return -1;
  }

  // A scope record inside a call window of its own module: part of the window's call.
  bool folded(const ScopeRecord& r) const {
    for (int s = r.parent; s >= 0; s = th_.scopes[s].parent) {
      if (th_.scopes[s].module == r.module && th_.scopes[s].window) return true;
    }
    return false;
  }

  // An in-place op on a parameter (`add_`, `mul_`, `addcdiv_`, `zero_` on a weight) updates the
  // model; no module's forward does that (Embedding's max_norm renorm excepted).
  bool is_update(const RawEvent& e, const std::string& op) const {
    if (!(e.flags & kSelfOwned) || op.empty() || op.back() != '_' || op.size() < 2 ||
        op[op.size() - 2] == '_')
      return false;
    if (static_cast<size_t>(e.owner) >= tree_.owner_set_is_parameter.size() ||
        !tree_.owner_set_is_parameter[e.owner])
      return false;
    return op != "aten::embedding_renorm_";
  }

  // The child of `m` on the way to its descendant `d` (calls skip ModuleLists between them).
  int child_toward(int m, int d) const {
    while (tree_.nodes[d].parent != m && tree_.nodes[d].parent >= 0) d = tree_.nodes[d].parent;
    return d;
  }

  // Whether a parameterless child of `m` whose calls are not observed could have run `op` (then
  // an op in m's call is m's own or that child's: op order decides, which is inference).
  bool ambiguous_child(int m, const std::string& op) const {
    for (int c : tree_.nodes[m].children) {
      const ModuleNode& n = tree_.nodes[c];
      if (n.tensors == 0 && !n.calls_observed && !n.starts_observed && match(tree_, c, op) != 0)
        return true;
    }
    return false;
  }

  // The module of the innermost observed call of this model around item `p` (-1: none).
  int innermost_scope_module(int p) const {
    const RawEvent& e = th_.events[items_[p].event];
    const int ks = known_scope(e.scope);
    return ks >= 0 && !th_.scopes[ks].backward ? th_.scopes[ks].module : -1;
  }

  // Which forward ops were placed by evidence: the parameters they read (ownership), the observed
  // call they ran in (a built-in's forward, FLOPSPROF_MODULE(), get_model_profile's window),
  // or, for a module's own op, observed work of its subtree on both sides within one call of it
  // (a residual add between a block's layers). Everything else a rule placed is inferred.
  void mark_inferred(ThreadAttribution& out, AlternativeSets& alternatives) const {
    const int ni = static_cast<int>(items_.size());
    std::vector<int> placed(ni, kUnset);
    std::vector<char> evidence(ni, 0);
    for (int p = 0; p < ni; ++p) {
      const Item& it = items_[p];
      if (!it.forward) continue;
      const int m = it.firm ? it.anchor : it.assigned;
      placed[p] = m;
      if (m < 0 || it.firm) {  // outside the model is no module placement
        evidence[p] = 1;
        continue;
      }
      // inside an observed call of a module with no children: its own op
      if (tree_.nodes[m].children.empty() && innermost_scope_module(p) == m) evidence[p] = 1;
    }
    for (const Call& c : calls_) {
      // an observed call's bounds are exact: its own ops at its edges are its own
      const bool exact = scoped_[c.module];
      int lo = exact ? c.first : -1, hi = exact ? c.last : -1;
      for (int q = c.first; q <= c.last && !exact; ++q) {
        if (evidence[q] && placed[q] >= 0 && tree_.is_ancestor_or_self(c.module, placed[q])) {
          if (lo < 0) lo = q;
          hi = q;
        }
      }
      // Between them, an op of the module's own is its own only if the calls of its children
      // next to it are observed at that end (else it may be a child block's `return x + f(x)`).
      int prev_child = -1;  // the called child of the nearest evidence before q (-1: own)
      for (int q = lo; q >= 0 && q <= hi; ++q) {
        if (evidence[q] && placed[q] >= 0 && tree_.is_ancestor_or_self(c.module, placed[q])) {
          prev_child = placed[q] == c.module ? -1 : called_child(c.module, placed[q]);
          continue;
        }
        if (evidence[q] || placed[q] != c.module || ambiguous_child(c.module, item_name(q)))
          continue;
        if (exact && innermost_scope_module(q) != c.module) continue;
        if (prev_child >= 0 && !end_exact(prev_child)) continue;
        int next_child = -1;
        for (int r = q + 1; r <= hi; ++r) {
          if (evidence[r] && placed[r] >= 0 && tree_.is_ancestor_or_self(c.module, placed[r])) {
            next_child = placed[r] == c.module ? -1 : called_child(c.module, placed[r]);
            break;
          }
        }
        if (next_child >= 0 && !start_exact(next_child)) continue;
        evidence[q] = 1;
      }
    }
    for (int p = 0; p < ni; ++p) {
      if (items_[p].forward && placed[p] >= 0 && !evidence[p]) out.inferred[items_[p].event] = 1;
    }
    mark_other_side(out, alternatives, placed, evidence);
  }

  // The other side of each placement a rule made inside the model: the modules whose forward
  // may have run the op instead, and so may show too little. Those are the modules around the
  // nearest placed-by-evidence ops before and after it (within the receiving module's call) whose
  // call end (start) is not observed, the receiving module's parameterless user children with no
  // observed call, and the caller for ops a rule added at the ends of the root's forward.
  void mark_other_side(ThreadAttribution& out, AlternativeSets& alternatives,
                       const std::vector<int>& placed, const std::vector<char>& evidence) const {
    const int ni = static_cast<int>(items_.size());
    auto placed_by_evidence = [&](int q) { return evidence[q] && placed[q] >= 0; };
    std::vector<int> prev_ev(ni, -1), next_ev(ni, -1);
    for (int p = 0, last = -1; p < ni; ++p) {
      if (!items_[p].forward) last = -1;
      prev_ev[p] = last;
      if (items_[p].forward && placed_by_evidence(p)) last = p;
    }
    for (int p = ni - 1, next = -1; p >= 0; --p) {
      if (!items_[p].forward) next = -1;
      next_ev[p] = next;
      if (items_[p].forward && placed_by_evidence(p)) next = p;
    }
    std::vector<int> who;
    for (int p = 0; p < ni; ++p) {
      const int m = placed[p];
      if (!items_[p].forward || m < 0 || evidence[p]) continue;
      who.clear();
      if (items_[p].edge) who.push_back(kOutsideModel);
      // The call of m around p bounds how far its neighbours' calls reach; for an op a container
      // gave to one child, the container's call (the child after it may have run it too: a
      // block's hand-written norm before its first parameter read, in a Sequential of blocks).
      const int bound = items_[p].container >= 0 ? items_[p].container : m;
      int lo = p, hi = p;
      for (const Call& c : calls_) {
        if (c.module == bound && c.first >= 0 && c.first <= p && p <= c.last) {
          lo = c.first;
          hi = c.last;
          break;
        }
      }
      auto neighbours = [&](int q, bool before) {
        if (q < 0 || q < lo || q > hi) return;
        for (int a = placed[q]; a >= 0 && !tree_.is_ancestor_or_self(a, m);
             a = tree_.nodes[a].parent) {
          if (never_called(a) || (before ? end_exact(a) : start_exact(a))) continue;
          who.push_back(tree_.nodes[a].effective);
        }
      };
      neighbours(prev_ev[p], true);
      if (!items_[p].reads_older) neighbours(next_ev[p], false);
      for (int k : tree_.nodes[m].children) {
        const ModuleNode& n = tree_.nodes[k];
        if (n.tensors == 0 && n.builtin == nullptr && !scoped_[k] && !n.calls_observed)
          who.push_back(n.effective);
      }
      const int eff = tree_.nodes[m].effective;
      who.erase(std::remove(who.begin(), who.end(), eff), who.end());
      out.alternative[items_[p].event] = alternatives.add(who);
    }
  }

  // The other side of rule 9: after the root's forward ended at an op that read data from
  // outside (a gather of the caller's actions), ops that compute only from what the model's call
  // computed, or from such ops (an entropy of its probabilities), are the model's code or the
  // caller's: op order cannot tell. They stay outside the model, marked as inferred. Ops that
  // read outside data themselves (a hand-written loss's `out - y`, another model's layer), ops
  // that look like the caller's (a metric, a copy, `detach`) and everything computed from them
  // are the caller's; a loss or backward()'s seed ends the search.
  void mark_outside_tail(ThreadAttribution& out, AlternativeSets& alternatives) const {
    if (scoped_[0]) return;  // FLOPSPROF_MODULE() in the root: its boundaries are exact
    const int ni = static_cast<int>(items_.size());
    std::vector<std::pair<int64_t, int64_t>> from_model;  // sequence ranges of the model's results
    for (const Call& c : calls_) {
      if (c.module != 0) continue;
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (int p = c.first; p <= c.last; ++p) {
        const RawEvent& e = th_.events[items_[p].event];
        if (e.seq_nr < 0) continue;
        lo = std::min(lo, e.seq_nr);
        hi = std::max(hi, std::max(e.seq_nr + 1, e.seq_end));
      }
      if (lo == INT64_MAX) continue;  // without grad: no data flow to follow
      from_model.assign(1, {lo, hi});
      for (int pos = c.last + 1; pos < ni && items_[pos].forward; ++pos) {
        if (placed_module(pos) >= 0) break;  // the model's next call
        const RawEvent& e = th_.events[items_[pos].event];
        const std::string& op = item_name(pos);
        if (in_foreign_call(e) || creates_tensor(op) || op.find("loss") != std::string::npos) break;
        if (e.seq_nr < 0 || e.in_seq < 0 || (e.flags & kExternalInput)) continue;
        if (ends_forward(op)) continue;  // a metric, a copy, a detach: looks like the caller's
        // the ranges follow each other in sequence order: the last one starting at or before it
        auto r = std::upper_bound(from_model.begin(), from_model.end(), e.in_seq,
                                  [](int64_t v, const auto& range) { return v < range.first; });
        if (r == from_model.begin() || e.in_seq >= std::prev(r)->second) continue;
        out.inferred[items_[pos].event] = 1;
        out.alternative[items_[pos].event] = alternatives.add({0});
        from_model.emplace_back(e.seq_nr, std::max(e.seq_nr + 1, e.seq_end));
      }
    }
  }

  // Calls of modules in no profiled tree whose ops stayed outside the model although they ran
  // in the same stretch of forward work as a call of the model (no backward pass, optimizer
  // step or loss between them): the model's unregistered member, or a model no profiler knows.
  // Op order cannot tell; they are marked, with the model as the module that may lack them.
  void mark_unknown_outside(ThreadAttribution& out, AlternativeSets& alternatives) const {
    if (scoped_[0]) return;  // the root's calls are observed: outside them is outside
    const int ni = static_cast<int>(items_.size());
    auto in_model = [&](int p) { return out.module[items_[p].event] >= 0; };
    auto barrier = [&](int p) {
      return !items_[p].forward || item_name(p).find("loss") != std::string::npos;
    };
    std::vector<char> near_model(ni, 0);
    for (int p = 0, seen = 0; p < ni; ++p) {  // a model op before it, no barrier between
      if (barrier(p)) seen = 0;
      if (items_[p].forward && in_model(p)) seen = 1;
      near_model[p] = static_cast<char>(seen);
    }
    for (int p = ni - 1, seen = 0; p >= 0; --p) {  // or after it
      if (barrier(p)) seen = 0;
      if (items_[p].forward && in_model(p)) seen = 1;
      near_model[p] = static_cast<char>(near_model[p] | seen);
    }
    const int root = alternatives.add({0});
    std::vector<char> unknown(ni, 0);  // an op of such a call, marked
    for (int p = 0; p < ni; ++p) {
      const int ev = items_[p].event;
      if (!items_[p].forward || out.module[ev] != kOutsideModel || !near_model[p]) continue;
      if (unknown_unit(th_.events[ev]) < 0) continue;
      unknown[p] = 1;
      out.inferred[ev] = 1;
      out.alternative[ev] = root;
    }
    // The free ops between such a call and the model's work, or between two such calls (a
    // member's own relu, max-pool, `zeros` between its layers' calls; PointNet's input transform)
    // are that member's code as much as the calls are: marked too. Each stretch of outside ops
    // with such a call at one end and such a call or the model at the other, no barrier between.
    enum End : char { kNothing, kModel, kUnknown };
    std::vector<char> before(ni, kNothing);
    for (int p = 0, seen = kNothing; p < ni; ++p) {
      before[p] = static_cast<char>(seen);
      if (barrier(p)) seen = kNothing;
      if (!items_[p].forward) continue;
      if (in_model(p)) seen = kModel;
      if (unknown[p]) seen = kUnknown;
    }
    for (int p = ni - 1, seen = kNothing; p >= 0; --p) {
      const int after = seen;
      if (barrier(p)) seen = kNothing;
      if (!items_[p].forward) continue;
      if (in_model(p)) seen = kModel;
      if (unknown[p]) seen = kUnknown;
      const int ev = items_[p].event;
      if (unknown[p] || barrier(p) || out.module[ev] != kOutsideModel) continue;
      if (before[p] == kNothing || after == kNothing) continue;
      if (before[p] != kUnknown && after != kUnknown) continue;
      if (in_foreign_call(th_.events[ev])) continue;
      out.inferred[ev] = 1;
      out.alternative[ev] = root;
    }
  }

  // The called children of `m` whose runs a call of it can be seen to include: children with
  // parameters or with observed calls (a ModuleList's elements in its place). Those that run
  // nothing visible (a user's parameterless module) are not expected.
  std::vector<int> visible_children(int m) const {
    std::vector<int> out;
    for (int c : tree_.nodes[m].children) {
      if (never_called(c)) {
        for (int g : visible_children(c)) out.push_back(g);
        continue;
      }
      const ModuleNode& n = tree_.nodes[c];
      if (n.ignored) continue;
      if (n.tensors > 0 || n.calls_observed || n.starts_observed) out.push_back(c);
    }
    return out;
  }

  // A derived call of a module that ran only some of its visible children (a method other than
  // forward: an encoder's features(); children called directly) says nothing sure about how often
  // its forward ran: its count is marked. So does a call of a LibTorch composite that runs each
  // child once (Sequential, the Transformer stacks) in which a child ran twice (a Transformer's
  // decoder called step by step by hand). User modules and such composites only: other built-ins
  // run what their type runs.
  void partial_calls(std::vector<uint8_t>& calls_inferred) const {
    const int nm = static_cast<int>(tree_.nodes.size());
    std::vector<std::vector<int>> expected(nm);
    std::vector<char> eligible(nm, 0);
    for (int m = 0; m < nm; ++m) {
      const ModuleNode& n = tree_.nodes[m];
      if (scoped_[m] || n.ignored || n.children.empty() || never_called(m)) continue;
      if (n.builtin != nullptr && !n.builtin->container) continue;
      expected[m] = visible_children(m);
      eligible[m] = !expected[m].empty();
    }
    // Each module's forward scope records and derived calls, indexed once: a Sequential of 10,000
    // layers must not scan every record per layer.
    std::vector<std::vector<int>> records_of(nm), calls_of(nm);
    for (int r = 0; r < static_cast<int>(th_.scopes.size()); ++r) {
      const ScopeRecord& rec = th_.scopes[r];
      if (rec.module >= 0 && rec.module < nm && !rec.backward) records_of[rec.module].push_back(r);
    }
    for (int d = 0; d < static_cast<int>(calls_.size()); ++d)
      calls_of[calls_[d].module].push_back(d);
    for (const Call& c : calls_) {
      const int m = c.module;
      if (!eligible[m] || (calls_inferred[m] & kCallsPartial)) continue;
      int64_t lo = c.t_lo, hi = c.t_hi;  // its time, widened over empty observed calls
      if (c.first >= 0) {
        lo = std::min(lo, th_.events[items_[c.first].event].start_tick);
        hi = std::max(hi, end_of(th_.events[items_[c.last].event]));
      }
      const bool once = tree_.nodes[m].once_each || is_container(m);
      for (int k : expected[m]) {
        const ModuleNode& kn = tree_.nodes[k];
        int runs = 0;
        if (kn.calls_observed || kn.starts_observed || scoped_[k]) {
          // its observed calls that overlap this call's ops (a record opens before its first op)
          for (int ri : records_of[k]) {
            const ScopeRecord& r = th_.scopes[ri];
            const int64_t exit = r.exit_tick != 0 ? r.exit_tick : in_.stop_tick;
            runs += r.enter_tick <= hi && exit >= lo;
          }
        } else if (c.first >= 0) {
          for (int di : calls_of[k]) {
            const Call& d = calls_[di];
            runs += d.first >= c.first && d.last <= c.last && d.first >= 0;
          }
        }
        if (runs == 0 || (once && runs > 1)) {
          calls_inferred[m] |= kCallsPartial;
          break;
        }
      }
    }
  }

  // An observed call of a built-in that ran no op (an Identity, a Functional returning its
  // input) is a call of its ancestors too: each one with no call around it gets one, or the
  // call of it right next to the record (no op between) widens over it.
  void add_calls_of_empty_records() {
    const int ns = static_cast<int>(th_.scopes.size());
    std::vector<char> has_op(ns, 0);
    for (const RawEvent& e : th_.events) {
      if (e.scope >= 0) has_op[e.scope] = 1;
    }
    for (int k = ns - 1; k >= 0; --k) {  // records open after their parents
      if (has_op[k] && th_.scopes[k].parent >= 0) has_op[th_.scopes[k].parent] = 1;
    }
    for (int k = 0; k < ns; ++k) {
      const ScopeRecord& r = th_.scopes[k];
      if (has_op[k] || r.module < 0 || !r.builtin || r.backward || r.start_only) continue;
      const int64_t lo = r.enter_tick, hi = r.exit_tick != 0 ? r.exit_tick : in_.stop_tick;
      int next = 0;  // the first item after the record
      while (next < static_cast<int>(items_.size()) &&
             th_.events[items_[next].event].start_tick < lo)
        ++next;
      for (int a = tree_.nodes[r.module].parent; a >= 0; a = tree_.nodes[a].parent) {
        if (never_called(a)) continue;
        if (scoped_[a] || enclosing_scope_record(k, a)) break;  // its own record covers it
        Call* around = nullptr;
        Call* beside = nullptr;
        for (Call& c : calls_) {
          if (c.module != a) continue;
          int64_t cs = c.t_lo, ce = c.t_hi;
          if (c.first >= 0) {
            cs = std::min(cs, th_.events[items_[c.first].event].start_tick);
            ce = std::max(ce, end_of(th_.events[items_[c.last].event]));
            if (c.last == next - 1 || c.first == next) beside = &c;
          }
          if (cs <= lo && hi <= ce) around = &c;
        }
        if (around != nullptr) break;  // and around every ancestor of it
        if (beside != nullptr) {
          beside->t_lo = std::min(beside->t_lo, lo);
          beside->t_hi = std::max(beside->t_hi, hi);
          continue;
        }
        Call c;
        c.module = a;
        c.first = c.last = -1;
        c.depth = tree_.nodes[a].depth;
        c.t_lo = lo;
        c.t_hi = hi;
        calls_.push_back(c);
      }
    }
  }

  // Whether scope record `k` runs inside a record of module `a` (its observed call).
  bool enclosing_scope_record(int k, int a) const {
    for (int s = th_.scopes[k].parent; s >= 0; s = th_.scopes[s].parent) {
      if (th_.scopes[s].module == a) return true;
    }
    return false;
  }

  // The innermost scope record of this model's modules at or around record `s` (foreign calls,
  // module -1, skipped), or -1.
  int known_scope(int s) const {
    while (s >= 0 && th_.scopes[s].module < 0) s = th_.scopes[s].parent;
    return s;
  }

  // Whether op `e` ran inside a call of another profiled model's module (and of none of this
  // model's).
  bool in_foreign_call(const RawEvent& e) const { return ran_in_foreign_call(th_, e); }

  // The unit op `e` is placed with: the outermost call of a module in no profiled tree around it
  // (unknown_module_call). -1: none.
  int unknown_unit(const RawEvent& e) const { return unknown_module_call(th_, e); }
  int unknown_unit_at(int pos) const { return unknown_unit(th_.events[items_[pos].event]); }

  bool never_called(int m) const { return is_holder(tree_, m); }

  // A container never called itself (ModuleList, ModuleDict) or one that runs no op of its own.
  bool is_container(int m) const {
    const BuiltinSpec* spec = tree_.nodes[m].builtin;
    return spec != nullptr && spec->container;
  }

  // Rules 1-2 for one op: its firm owner, or its scope, or the root when it touches a
  // parameter no owner may claim for this op.
  void anchor(Item& it, bool in_scope_only_backward) const {
    const RawEvent& e = th_.events[it.event];
    int s = -1;
    const int ks = known_scope(e.scope);
    if (ks >= 0 && th_.scopes[ks].backward == in_scope_only_backward) s = th_.scopes[ks].module;
    if (s >= 0 && th_.scopes[ks].exact) {  // the interpreter said which module ran it
      it.anchor = s;
      it.firm = true;
      return;
    }
    bool touch = false;
    if (e.owner >= 0 && static_cast<size_t>(e.owner) < tree_.owner_sets.size()) {
      const std::string& op = name(it.event);
      if (is_update(e, op)) {  // an optimizer step or init outside a step scope: not forward
        it.anchor = -1;
        it.assigned = kOutsideModel;
        return;
      }
      for (int o : tree_.owner_sets[e.owner]) {
        if (s >= 0 && !tree_.is_ancestor_or_self(s, o)) continue;
        if (tree_.nodes[o].calls_observed && enclosing_scope(e, o) < 0) {
          // Its forward was not running (every call of it is recorded): the module holding it
          // ran the op with its weight (MultiheadAttention's `linear` on out_proj's weight, a
          // checkpoint wrapper reading a Linear's weight). A tied weight read by an op its type
          // never runs (a decoder's matmul on an Embedding's weight) is left to the rules.
          if (module_runs_op(tree_, o, op)) {
            int holder = tree_.nodes[o].parent;
            while (holder > 0 && is_container(holder)) holder = tree_.nodes[holder].parent;
            if (holder >= 0 && (s < 0 || tree_.is_ancestor_or_self(s, holder))) {
              it.anchor = holder;
              it.firm = true;
              return;
            }
          }
          touch = true;
          continue;
        }
        if (module_runs_op(tree_, o, op)) {
          it.anchor = o;
          it.firm = true;
          return;
        }
        touch = true;
      }
    }
    it.touch = s < 0 && touch;
    it.anchor = s >= 0 ? s : (touch ? 0 : -1);
  }

  void collect_items(const ThreadAttribution& out) {
    const auto& ev = th_.events;
    for (size_t i = 0; i < ev.size(); ++i) {
      const RawEvent& e = ev[i];
      if (e.parent >= 0) continue;
      Item it;
      it.event = static_cast<int>(i);
      it.forward = e.kind == EventKind::kOp && out.phase[i] == Phase::kForward;
      if (it.forward) {
        anchor(it, /*in_scope_only_backward=*/false);
        // A model with no parameter or buffer at all leaves nothing to anchor on: every forward
        // op in the profile is its own (docs/attribution.md, "Limits").
        if (it.anchor < 0 && tree_.nodes[0].tensors == 0 && !scoped_[0]) it.anchor = 0;
      }
      items_.push_back(it);
    }
  }

  // Start-only records (BatchNorm, InstanceNorm): the first op after the start that the module's
  // type runs is that call's, by evidence (an InstanceNorm without parameters reads nothing that
  // would place it).
  void apply_starts() {
    size_t p = 0;
    for (const ScopeRecord& r : th_.scopes) {
      if (!r.start_only || r.module < 0 || r.backward) continue;
      while (p < items_.size() && th_.events[items_[p].event].start_tick < r.enter_tick) ++p;
      for (size_t q = p; q < items_.size(); ++q) {
        Item& it = items_[q];
        if (!it.forward) break;
        if (!module_runs_op(tree_, r.module, item_name(static_cast<int>(q)))) continue;
        if (!it.firm) {
          it.anchor = r.module;
          it.firm = true;
        }
        break;
      }
    }
  }

  int recompute_module(const ThreadAttribution& out, size_t i) const {
    Item it;
    it.event = static_cast<int>(i);
    anchor(it, /*in_scope_only_backward=*/true);
    int m = it.anchor;
    if (m < 0 && th_.events[i].parent >= 0) return out.module[th_.events[i].parent];
    return m >= 0 ? tree_.nodes[m].effective : kUnlinked;
  }

  // Rule 3: calls from the anchored items.
  void segment() {
    const int nm = static_cast<int>(tree_.nodes.size());
    std::vector<int> cur(nm, -1);
    std::vector<char> ended(nm, 0);
    std::vector<int> open, path, recs;
    std::vector<char> fresh;
    bool returned = false;  // an op since the last anchored one shows the forward returned
    restart_ambiguous_.assign(nm, 0);
    seen_in_call_.assign(nm, -1);
    const std::vector<int> root_kids = visible_children(0);
    for (int p = 0; p < static_cast<int>(items_.size()); ++p) {
      const Item& it = items_[p];
      if (!it.forward) {
        for (int x : open) cur[x] = -1;
        open.clear();
        continue;
      }
      if (it.touch && (cur[0] < 0 || returned)) {
        // A tied weight read outside a running forward (an optimizer's zeros_like(weight), a
        // norm for logging): not the model's forward.
        items_[p].anchor = -1;
        items_[p].touch = false;
      }
      const int m = it.anchor;
      if (m < 0) {
        returned = returned || (it.assigned == kUnset && looks_outside(p));
        continue;
      }
      const RawEvent& e = th_.events[it.event];
      const std::string& op = name(it.event);
      path.clear();
      for (int a = m; a >= 0; a = tree_.nodes[a].parent) {
        if (a == 0 || a == m || !never_called(a)) path.push_back(a);
      }
      std::reverse(path.begin(), path.end());
      size_t keep = 0;
      for (int x : open) {
        // A scope's op (weak) is somewhere in its module's subtree: the calls of that module's
        // descendants go on (an attention module's tanh between its Linears, in a scoped root).
        if (tree_.is_ancestor_or_self(x, m) || (!it.firm && tree_.is_ancestor_or_self(m, x))) {
          open[keep++] = x;
        } else {
          cur[x] = -1;
        }
      }
      open.resize(keep);
      const int k = static_cast<int>(path.size()) - 1;
      fresh.assign(path.size(), 0);
      recs.assign(path.size(), -1);
      for (int j = k; j >= 0; --j) {
        const int a = path[j];
        if (scoped_[a]) {
          recs[j] = enclosing_scope(e, a);
          fresh[j] = cur[a] < 0 || calls_[cur[a]].scope_rec != recs[j];
        } else if (j == k) {
          const BuiltinSpec* spec = tree_.nodes[a].builtin;
          if (spec != nullptr && (!spec->starts.empty() || !spec->terminals.empty())) {
            fresh[j] = cur[a] < 0 || op_in_list(spec->starts, op) || ended[a];
          } else {
            fresh[j] = cur[a] < 0;
          }
        } else {
          // A new call when its first child starts again; for the root only when an op between
          // shows that the previous forward returned (a loss, data for the next one), so a
          // module applied twice inside one forward is not taken for two forwards.
          const bool again =
              cur[a] >= 0 && fresh[j + 1] && calls_[cur[a]].first_child == path[j + 1];
          // The root also restarts when its call already ran every one of its children it can be
          // seen to run, two or more (back-to-back forwards of a benchmark loop); a loop over its
          // first child before the others ran (an RNN over time, a shared block), or over its
          // only child, stays one call.
          fresh[j] = cur[a] < 0 ||
                     (again &&
                      (j > 0 || returned || (root_kids.size() > 1 && ran_all(cur[a], root_kids))));
          // Its first child ran again with nothing between that shows a return: one call or two
          // (net(net(x)); Attend's f(A), f(B)) cannot be told apart. The root counts one call,
          // a submodule two; either is inferred.
          // (A submodule's call is open only while no op placed outside its subtree ran since.
          // LibTorch's modules run each child once per call, in a known order: not ambiguous.)
          if (again && (j > 0 ? tree_.nodes[a].builtin == nullptr : !returned))
            restart_ambiguous_[a] = 1;
        }
      }
      returned = false;
      bool forced = false;
      for (int j = 0; j <= k; ++j) {
        const int a = path[j];
        if (forced || fresh[j]) {
          forced = true;
          Call c;
          c.module = a;
          c.first = c.last = p;
          c.first_child = j < k ? path[j + 1] : -1;
          c.scope_rec = recs[j];
          c.depth = tree_.nodes[a].depth;
          if (cur[a] < 0) open.push_back(a);
          cur[a] = static_cast<int>(calls_.size());
          calls_.push_back(c);
        }
        Call& c = calls_[cur[a]];
        c.last = p;
        if (j < k) {
          c.last_child = path[j + 1];
          seen_in_call_[path[j + 1]] = cur[a];  // constant time (a Sequential of 10,000 layers)
        }
      }
      ended[m] = is_terminal(tree_, m, op);
      calls_[cur[m]].ended = ended[m];
    }
  }

  // Whether call `call` ran every one of `kids` (children of its module) with anchored ops.
  // (A module's children are seen only in calls of one ancestor, its nearest called one, and that
  // module has one open call at a time: the latest call that saw each child is enough.)
  bool ran_all(int call, const std::vector<int>& kids) const {
    for (int k : kids) {
      if (seen_in_call_[k] != call) return false;
    }
    return true;
  }

  // Whether a rule may give item `pos` to a call of module `m`: a forward op no evidence placed,
  // or one that ran inside an observed call of an ancestor of `m` (get_model_profile's window, a
  // FLOPSPROF_MODULE() scope), which says only that it belongs somewhere in that subtree.
  bool claimable(int pos, int m = 0) const {
    if (pos < 0 || pos >= static_cast<int>(items_.size())) return false;
    const Item& it = items_[pos];
    if (!it.forward || it.firm || it.assigned != kUnset) return false;
    return it.anchor < 0 || (!it.touch && tree_.is_ancestor_or_self(it.anchor, m) &&
                             !tree_.nodes[it.anchor].calls_observed);
  }

  // A parameterless module `m` (and the descendants that match) takes item `pos`: extends its
  // adjacent call or opens one.
  void give(int m, int pos) {
    const std::string& op = item_name(pos);
    for (;;) {
      const bool terminal = is_terminal(tree_, m, op);
      int ci = -1;
      auto found = pl_call_.find(m);
      if (found != pl_call_.end()) {
        Call& c = calls_[found->second];
        if ((pos == c.last + 1 && !c.ended) || (pos == c.first - 1 && !terminal))
          ci = found->second;
      }
      if (ci < 0) {
        Call c;
        c.module = m;
        c.first = c.last = pos;
        c.depth = tree_.nodes[m].depth;
        ci = static_cast<int>(calls_.size());
        calls_.push_back(c);
        pl_call_[m] = ci;
      }
      Call& c = calls_[ci];
      if (pos > c.last) {
        c.last = pos;
        c.ended = terminal;
      }
      c.first = std::min(c.first, pos);
      items_[pos].assigned = m;
      const ModuleNode& node = tree_.nodes[m];
      if (node.children.empty()) return;
      const int next = pick(c, op, static_cast<int>(node.children.size()), /*fallback=*/true);
      if (next < 0) return;
      m = next;
    }
  }

  // Rule 4: the parameterless child of call `c` that takes an op named `op`, searching children
  // from the cursor up to (not including) `hi`; moves the cursor. -1: none.
  int pick(Call& c, const std::string& op, int hi, bool fallback) {
    const ModuleNode& node = tree_.nodes[c.module];
    const int lo = c.cursor_stay ? std::max(c.cursor, 0) : c.cursor + 1;
    hi = std::min(hi, static_cast<int>(node.children.size()));
    auto candidate = [&](int ci) { return tree_.nodes[node.children[ci]].tensors == 0; };
    for (int pass = 1; pass <= 2; ++pass) {
      for (int ci = lo; ci < hi; ++ci) {
        if (!candidate(ci)) continue;
        const int child = node.children[ci];
        if (match(tree_, child, op) != pass) continue;
        c.cursor = ci;
        if (pass == 1) {
          c.cursor_stay = !is_terminal(tree_, child, op) || !tree_.nodes[child].children.empty();
        } else {  // a wildcard takes one op, or all that remain when no candidate follows
          c.cursor_stay = true;
          for (int cj = ci + 1; cj < hi; ++cj) {
            if (candidate(cj) && match(tree_, node.children[cj], op) != 0) c.cursor_stay = false;
          }
        }
        return child;
      }
    }
    if (!fallback) return -1;
    return pick_out_of_order(c, op);
  }

  // A parameterless child of the type that runs `op`, where registration order says nothing: a
  // module reused (one ReLU called twice), or one of several of a type used in another order
  // (embedding_dropout once before a loop, lstm_output_dropout in it). Several: the one taken
  // after the same sibling before, else one this call has not run yet, else the first.
  int pick_out_of_order(Call& c, const std::string& op) {
    const ModuleNode& node = tree_.nodes[c.module];
    int first = -1, unused = -1, count = 0;
    for (int child : node.children) {
      if (tree_.nodes[child].tensors != 0 || match(tree_, child, op) != 1) continue;
      ++count;
      if (first < 0) first = child;
      if (unused < 0 && std::find(c.ran.begin(), c.ran.end(), child) == c.ran.end()) {
        unused = child;
      }
    }
    if (count <= 1) return first;
    const int64_t key = static_cast<int64_t>(c.module) * (int64_t{1} << 32) + (c.cursor + 1);
    auto it = after_.find(key);
    int child = -1;
    if (it != after_.end() && match(tree_, it->second, op) == 1) {
      child = it->second;
    } else {
      child = unused >= 0 ? unused : first;
      after_[key] = child;
    }
    c.ran.push_back(child);
    return child;
  }

  // Calls grouped by the item where they begin (or end), deepest first.
  std::vector<std::vector<int>> groups(bool by_first) const {
    std::unordered_map<int, std::vector<int>> by;
    for (int i = 0; i < static_cast<int>(calls_.size()); ++i)
      by[by_first ? calls_[i].first : calls_[i].last].push_back(i);
    std::vector<std::pair<int, std::vector<int>>> sorted(by.begin(), by.end());
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::vector<int>> out;
    for (auto& [pos, list] : sorted) {
      std::sort(list.begin(), list.end(),
                [&](int a, int b) { return calls_[a].depth > calls_[b].depth; });
      out.push_back(std::move(list));
    }
    return out;
  }

  bool builtin_leaf(int m) const {
    const BuiltinSpec* spec = tree_.nodes[m].builtin;
    return spec != nullptr && !spec->container && !spec->wildcard &&
           tree_.nodes[m].children.empty();
  }

  // A call extends backwards over unclaimed ops its type runs (LSTM's `zeros`), or that its
  // parameterless children before its first child run (Sequential(Flatten, Linear)).
  void extend_leading() {
    for (const std::vector<int>& group : groups(/*by_first=*/true)) {
      int reach = INT_MAX;
      for (int ci : group) {
        calls_[ci].first = std::min(calls_[ci].first, reach);
        const int m = calls_[ci].module;
        const int fc = calls_[ci].first_child;
        int cursor = fc >= 0 ? tree_.nodes[child_toward(m, fc)].child_index : 0;
        bool wild = false;
        for (int pos = calls_[ci].first - 1; claimable(pos, m); --pos) {
          const std::string& op = item_name(pos);
          if (builtin_leaf(m)) {
            if (!op_in_list(tree_.nodes[m].builtin->leading, op)) break;
            items_[pos].assigned = m;
            calls_[ci].first = pos;
            continue;
          }
          const ModuleNode& node = tree_.nodes[m];
          const bool ordered = node.builtin != nullptr && node.builtin->container;
          int take = -1;
          for (int k = cursor - 1; k >= 0 && take < 0; --k) {
            const int child = node.children[k];
            if (tree_.nodes[child].tensors != 0) break;
            const int r = match(tree_, child, op);
            if (r == 1 || (r == 2 && !wild && ordered)) {
              take = child;
              cursor = k;
              wild = r == 2;
            }
          }
          if (take < 0) break;
          give(take, pos);
          calls_[ci].first = pos;
        }
        reach = calls_[ci].first;
      }
    }
  }

  // A call extends forwards over unclaimed ops of its parameterless children after its last
  // child (Sequential(..., Linear, Sigmoid)) or that its own type runs.
  void extend_trailing() {
    for (const std::vector<int>& group : groups(/*by_first=*/false)) {
      int reach = INT_MIN;
      for (int ci : group) {
        calls_[ci].last = std::max(calls_[ci].last, reach);
        const int m = calls_[ci].module;
        const int lc = calls_[ci].last_child;
        int cursor = lc >= 0 ? tree_.nodes[child_toward(m, lc)].child_index : -1;
        bool wild = false;
        for (int pos = calls_[ci].last + 1; claimable(pos, m); ++pos) {
          const std::string& op = item_name(pos);
          if (builtin_leaf(m)) break;  // its own ops read its parameters: they are anchored
          const ModuleNode& node = tree_.nodes[m];
          // A wildcard (Functional) runs where it stands only in a container, whose children
          // run in registration order; in a user module that order says nothing.
          const bool ordered = node.builtin != nullptr && node.builtin->container;
          int take = -1;
          for (int k = std::max(cursor, 0); k < static_cast<int>(node.children.size()); ++k) {
            if (k == cursor && !calls_[ci].cursor_stay) continue;
            const int child = node.children[k];
            if (tree_.nodes[child].tensors != 0) break;
            const int r = match(tree_, child, op);
            if (r == 1 || (r == 2 && !wild && ordered)) {
              take = child;
              calls_[ci].cursor_stay = r == 1 && !is_terminal(tree_, child, op);
              cursor = k;
              wild = r == 2;
              break;
            }
          }
          if (take < 0) break;
          give(take, pos);
          calls_[ci].last = pos;
        }
        calls_[ci].cursor = cursor;
        reach = calls_[ci].last;
      }
    }
  }

  // The end of the model's forward (rule 5). Without a hook, the ops between the model's last
  // claimed op and its `return` (a final `log_softmax`, `view`) look like the caller's. In grad
  // mode data flow decides: an op whose tensor inputs were all computed inside this call of the
  // model (their grad_fn came after its first op) continues it; one that reads a tensor from
  // outside (targets, data) or from before the call ends it. Without grad, the call continues
  // up to the first op that looks like a loss, a metric, a new tensor or a device copy.
  void extend_root_tail() {
    if (scoped_[0]) return;  // FLOPSPROF_MODULE() in the root: its boundaries are exact
    for (Call& c : calls_) {
      if (c.module != 0) continue;
      int64_t first_seq = INT64_MAX;
      for (int p = c.first; p <= c.last; ++p) {
        const RawEvent& e = th_.events[items_[p].event];
        if (e.seq_nr >= 0) first_seq = std::min(first_seq, e.seq_nr);
      }
      int pos = c.last + 1;
      while (claimable(pos)) {
        if (in_foreign_call(th_.events[items_[pos].event])) break;  // another model's module
        int end = pos + 1;
        const int unit = unknown_unit_at(pos);
        if (unit >= 0) {  // a call of a module in no profiled tree goes whole, by data flow
          while (claimable(end) && unknown_unit_at(end) == unit) ++end;
          if (!unit_continues_tail(pos, end, first_seq)) break;
        } else if (!continues_tail(pos, first_seq)) {
          break;
        }
        for (int q = pos; q < end; ++q) {
          items_[q].assigned = 0;
          items_[q].edge = true;
        }
        c.last = end - 1;
        pos = end;
      }
    }
  }

  // Whether unclaimed item `pos`, right after the root's call, continues it (rule 9): in grad
  // mode an op whose tensor inputs were all computed inside the call (first_seq: its first
  // sequence number; unknown when the call ran without grad); without grad, an op that does not
  // look like the caller's.
  bool continues_tail(int pos, int64_t first_seq) const {
    const RawEvent& e = th_.events[items_[pos].event];
    if (e.seq_nr < 0) return !ends_forward(item_name(pos));
    if ((e.flags & kExternalInput) || e.in_seq < 0) return false;
    if (creates_tensor(item_name(pos))) return false;  // backward()'s ones_like(loss)
    return first_seq == INT64_MAX || e.in_seq >= first_seq;
  }

  // Whether the call of a module in no profiled tree made of items [begin, end) continues the
  // root's call: in grad mode when it reads what the call computed and no data from outside (its
  // own parameters are not data); without grad, by op order alone (a module call never looks
  // like the caller's loss or metric).
  bool unit_continues_tail(int begin, int end, int64_t first_seq) const {
    bool grad = false, reads_call = false;
    for (int q = begin; q < end; ++q) {
      const RawEvent& e = th_.events[items_[q].event];
      if (e.seq_nr < 0) continue;
      grad = true;
      if (e.flags & kExternalInput) return false;
      if (e.in_seq >= 0 && (first_seq == INT64_MAX || e.in_seq >= first_seq)) reads_call = true;
    }
    return !grad || reads_call;
  }

  // The start of the model's forward: ops right before its first claimed op (a resize or a
  // reshape of the input at the top of the root's forward) are its own, as get_model_profile's
  // call window sees them, back to the first op that looks like the caller's (a new tensor, a
  // device copy, a loss, a metric) or an in-place op (zero_grad). The caller's own preparation
  // written just before `model->forward(x)` looks the same: these ops are marked as inferred.
  void extend_root_head() {
    if (scoped_[0]) return;
    for (Call& c : calls_) {
      if (c.module != 0) continue;
      uint64_t model_data = 0;  // the data the model's first op that reads data reads
      for (int p = c.first; p <= c.last && model_data == 0; ++p) {
        model_data = th_.events[items_[p].event].data_in;
      }
      int pos = c.first - 1;
      while (claimable(pos)) {
        const RawEvent& e = th_.events[items_[pos].event];
        if (in_foreign_call(e)) break;  // another model's forward
        int begin = pos;
        const int unit = unknown_unit_at(pos);
        if (unit >= 0) {  // a call of a module in no profiled tree goes whole
          while (claimable(begin - 1) && unknown_unit_at(begin - 1) == unit) --begin;
          bool same_data = false;
          for (int q = begin; q <= pos; ++q) {
            const uint64_t d = th_.events[items_[q].event].data_in;
            same_data = same_data || (d != 0 && d == model_data);
          }
          if (same_data) break;  // it reads what the model reads: the caller's side work
        } else {
          const std::string& op = item_name(pos);
          if (ends_forward(op) || (op.size() > 1 && op.back() == '_')) break;
          // It read what the model reads: the caller's work on the model's input (targets
          // computed from the batch), not a step producing that input.
          if (e.data_in != 0 && e.data_in == model_data) break;
        }
        for (int q = begin; q <= pos; ++q) {
          items_[q].assigned = 0;
          items_[q].edge = true;
        }
        c.first = begin;
        pos = begin - 1;
      }
    }
  }

  // Whether unclaimed item `pos` is work of the caller rather than of the model's forward: in
  // grad mode it reads data from outside (or no tensor with history); without grad, its name is
  // one of the caller's (a loss, a metric, a new tensor, a device copy).
  bool looks_outside(int pos) const {
    const RawEvent& e = th_.events[items_[pos].event];
    if (unknown_unit(e) >= 0) return false;  // a module's call, not the caller's loss or data
    if (e.seq_nr >= 0) return (e.flags & kExternalInput) || e.in_seq < 0;
    return ends_forward(item_name(pos));
  }

  // A new tensor shaped like another (the implicit gradient of `loss.backward()`).
  static bool creates_tensor(const std::string& op) {
    return op_in_list("zeros_like ones_like empty_like full_like randn_like rand_like", op);
  }

  static bool ends_forward(const std::string& op) {
    static constexpr std::string_view kStops =
        "nll_loss nll_loss_nd nll_loss2d cross_entropy_loss cross_entropy binary_cross_entropy "
        "binary_cross_entropy_with_logits kl_div mse_loss l1_loss smooth_l1_loss huber_loss "
        "cosine_embedding_loss margin_ranking_loss hinge_embedding_loss soft_margin_loss "
        "multilabel_margin_loss multi_margin_loss ctc_loss poisson_nll_loss triplet_margin_loss "
        "item _local_scalar_dense eq ne argmax argmin topk to _to_copy copy_ clone detach "
        "randn rand randint randperm normal normal_ uniform_ bernoulli zeros ones empty full "
        "arange linspace tensor scalar_tensor zeros_like ones_like empty_like full_like "
        "randn_like rand_like";
    return op.find("loss") != std::string::npos || op_in_list(kStops, op);
  }

  // Whether the end (start) of every call of `a` is observed: a built-in whose calls are
  // recorded, a built-in with parameters whose forward runs only ops that read them (Linear,
  // BatchNorm, LSTM), or a Sequential whose last (first) child's is (it runs nothing after
  // (before) it).
  bool owned_builtin(int a, bool start) const {
    const ModuleNode& n = tree_.nodes[a];
    return builtin_leaf(a) && n.tensors > 0 && (!start || n.builtin->leading.empty());
  }
  bool end_exact(int a) const {
    const ModuleNode& n = tree_.nodes[a];
    if (n.calls_observed || n.starts_observed || owned_builtin(a, false)) return true;
    return is_container(a) && !never_called(a) && !n.children.empty() &&
           end_exact(n.children.back());
  }
  bool start_exact(int a) const {
    const ModuleNode& n = tree_.nodes[a];
    if (n.calls_observed || n.starts_observed || owned_builtin(a, true)) return true;
    return is_container(a) && !never_called(a) && !n.children.empty() &&
           start_exact(n.children.front());
  }

  // The module an item was placed in so far (kUnset / kOutsideModel when none).
  int placed_module(int q) const {
    const Item& it = items_[q];
    if (it.firm) return it.anchor;
    return it.assigned != kUnset ? it.assigned : it.anchor;
  }

  // The outermost module below `m` on the way to its descendant `d` that is ever called (a
  // ModuleList between them is skipped).
  int called_child(int m, int d) const {
    int child = -1;
    for (int a = d; a >= 0 && a != m; a = tree_.nodes[a].parent) {
      if (!never_called(a)) child = a;
    }
    return child;
  }

  // A Sequential runs its children and nothing else: an op the rules left to it (a block's
  // trailing `return x + f(x)` seen after the block's last placed op, or a leading one) is the
  // child's before it whose call end is not observed, else the child's after it whose start is
  // not; that child's call extends over it. Inferred (marked).
  void containers_own_nothing() {
    const int n = static_cast<int>(items_.size());
    for (int p = 0; p < n; ++p) {
      Item& it = items_[p];
      const int m = it.forward && !it.firm ? it.assigned : kUnset;
      if (m < 0 || !is_container(m) || never_called(m)) continue;
      int before = -1, after = -1;
      for (int q = p - 1; q >= 0 && items_[q].forward && before < 0; --q) {
        const int pm = placed_module(q);
        if (pm > m && tree_.is_ancestor_or_self(m, pm)) before = called_child(m, pm);
      }
      for (int q = p + 1; q < n && items_[q].forward && after < 0; ++q) {
        const int pm = placed_module(q);
        if (pm > m && tree_.is_ancestor_or_self(m, pm)) after = called_child(m, pm);
      }
      int child = -1;
      bool extend_last = true;
      if (before >= 0 && !end_exact(before)) {
        child = before;
      } else if (after >= 0 && !start_exact(after)) {
        child = after;
        extend_last = false;
      }
      if (child < 0) continue;
      it.assigned = child;
      it.container = m;
      int best = -1;  // the child's call just before (after) the op
      for (int ci = 0; ci < static_cast<int>(calls_.size()); ++ci) {
        const Call& c = calls_[ci];
        if (c.module != child) continue;
        if (extend_last && c.last < p && (best < 0 || c.last > calls_[best].last)) best = ci;
        if (!extend_last && c.first > p && (best < 0 || c.first < calls_[best].first)) best = ci;
      }
      if (best >= 0) {
        if (extend_last) {
          // A container passes each child only the one before's result: an op that reads a
          // tensor computed before that child's call began (a block's `x + f(x)` reading its
          // input x) is not the next child's. Data flow says so only in grad mode.
          int64_t call_seq = INT64_MAX;
          for (int q = calls_[best].first; q <= calls_[best].last; ++q) {
            const int64_t s = th_.events[items_[q].event].seq_nr;
            if (s >= 0) call_seq = std::min(call_seq, s);
          }
          const int64_t in_seq = th_.events[it.event].in_seq;
          it.reads_older = in_seq >= 0 && call_seq != INT64_MAX && in_seq < call_seq;
          calls_[best].last = p;
        } else {
          calls_[best].first = p;
        }
      }
    }
  }

  // Rule 4 inside calls, rule 5 outside them: one pass over the items with the stack of calls
  // open at each position.
  void sweep() {
    const int n = static_cast<int>(items_.size());
    // Next anchored item (same forward run) after each position, and next firm one.
    std::vector<int> next(n + 1, -1), next_firm(n + 1, -1);
    for (int p = n - 1; p >= 0; --p) {
      if (!items_[p].forward) {
        next[p] = next_firm[p] = -1;
      } else {
        const bool fwd = p + 1 < n && items_[p + 1].forward;
        next[p] = (fwd && items_[p + 1].anchor >= 0) ? p + 1 : next[p + 1];
        next_firm[p] = (fwd && items_[p + 1].firm) ? p + 1 : next_firm[p + 1];
      }
    }
    const int derived = static_cast<int>(calls_.size());
    std::vector<int> order(derived);
    for (int i = 0; i < derived; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return calls_[a].first != calls_[b].first ? calls_[a].first < calls_[b].first
                                                : calls_[a].depth < calls_[b].depth;
    });
    for (Call& c : calls_) {  // cursors restart for the sweep
      c.cursor = -1;
      c.cursor_stay = false;
    }
    std::vector<int> stack;
    size_t o = 0;
    for (int p = 0; p < n; ++p) {
      while (!stack.empty() && calls_[stack.back()].last < p) stack.pop_back();
      while (o < order.size() && calls_[order[o]].first <= p) {
        const int ci = order[o++];
        if (calls_[ci].last >= p) stack.push_back(ci);
      }
      Item& it = items_[p];
      if (!it.forward) {
        stack.clear();
        continue;
      }
      if (it.firm) {  // the children on its path ran: move their parents' cursors
        for (int a = it.anchor; a >= 0 && tree_.nodes[a].parent >= 0; a = tree_.nodes[a].parent) {
          const int parent = tree_.nodes[a].parent;
          for (int s : stack) {
            if (calls_[s].module == parent) {
              calls_[s].cursor = tree_.nodes[a].child_index;
              calls_[s].cursor_stay = false;
            }
          }
        }
        continue;
      }
      if (it.assigned != kUnset) continue;  // taken by an extension
      // The deepest call open here (within the op's scope, if it has one).
      int host = -1;
      for (int s = static_cast<int>(stack.size()) - 1; s >= 0 && host < 0; --s) {
        const int m = calls_[stack[s]].module;
        if (it.anchor <= 0 || tree_.is_ancestor_or_self(it.anchor, m)) host = stack[s];
      }
      if (host < 0) {
        it.assigned = it.anchor >= 0 ? it.anchor : kOutsideModel;
        continue;
      }
      Call& c = calls_[host];
      int hi = INT_MAX;  // children up to the next anchored one are candidates
      int q = next[p];
      if (q >= 0 && !items_[q].firm && tree_.is_ancestor_or_self(items_[q].anchor, c.module)) {
        q = next_firm[p];  // a scope's op at or above the host says nothing about the order
      }
      if (q >= 0) {
        const int m2 = items_[q].anchor;
        if (m2 != c.module && tree_.is_ancestor_or_self(c.module, m2)) {
          int a = m2;
          while (tree_.nodes[a].parent != c.module) a = tree_.nodes[a].parent;
          hi = tree_.nodes[a].child_index;
        }
      }
      const int child = pick(c, item_name(p), hi, /*fallback=*/true);
      if (child < 0) {
        it.assigned = c.module;
      } else {
        give(child, p);
      }
    }
  }

  const AttributionInput& in_;
  const ModuleTree& tree_;
  const ThreadEvents& th_;
  const std::vector<bool>& scoped_;
  const int t_;
  std::vector<Item> items_;
  std::vector<Call> calls_;
  std::unordered_map<int, int> pl_call_;  // parameterless module -> its latest call
  std::vector<char> restart_ambiguous_;   // per module: see Attribution::calls_inferred
  std::vector<int> seen_in_call_;         // per module: the latest call that saw it (segment)
  // (parent, child index that ran last + 1) -> the parameterless child chosen out of
  // registration order there (pick_out_of_order)
  std::unordered_map<int64_t, int> after_;
};

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

}  // namespace

Attribution attribute(const AttributionInput& in) {
  const ModuleTree& tree = *in.tree;
  const int nm = static_cast<int>(tree.nodes.size());
  Attribution out;
  out.scoped.assign(nm, false);
  out.calls_inferred.assign(nm, 0);
  AlternativeSets alternatives(out.alternatives);
  for (const ThreadEvents* th : in.threads) {
    for (const ScopeRecord& s : th->scopes) {
      if (s.module >= 0 && s.module < nm && !s.backward && !s.start_only)
        out.scoped[s.module] = true;
    }
  }
  out.threads.resize(in.threads.size());
  for (size_t t = 0; t < in.threads.size(); ++t) {
    ThreadAttributor(in, out.scoped, static_cast<int>(t))
        .run(out.threads[t], out.calls, out.calls_inferred, alternatives);
  }

  // Rule 6. A node carries the sequence number the forward op took from its thread's counter; the
  // op that created it is the one whose run advanced the counter past that number ([seq_nr,
  // seq_end) covers the nodes its nested ops created). Ops that create no node (zero_grad's
  // zero_, clone, to, randn) leave the counter where it was and cover nothing.
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
    ThreadAttribution& ta = out.threads[t];
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
    // Backward ops belong to their innermost autograd node; ops the engine runs in a node's
    // evaluate_function wrapper after the node (validate_outputs) belong to that node too.
    std::vector<int>& node_of = ta.node_of;
    for (size_t i = 0; i < n; ++i) {
      const RawEvent& e = th.events[i];
      const int p = e.parent;
      if (e.kind == EventKind::kBackwardNode && !(e.flags & kEngine)) {
        node_of[i] = static_cast<int>(i);
        if (p >= 0 && (th.events[p].flags & kEngine)) node_of[p] = static_cast<int>(i);
      } else if (p >= 0) {
        node_of[i] = node_of[p];
      }
    }
  }
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    ThreadAttribution& ta = out.threads[t];
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      const bool bwd = e.kind == EventKind::kBackwardNode || ta.phase[i] == Phase::kBackward ||
                       (ta.phase[i] == Phase::kNone && (e.flags & kBackward) && ta.node_of[i] >= 0);
      if (!bwd) continue;
      const int nd = ta.node_of[i];
      int m = kUnlinked;
      if (nd >= 0) {
        const Origin o = out.origin[t][nd];
        if (o.thread >= 0) {
          const ThreadAttribution& fa = out.threads[o.thread];
          m = fa.module[o.event];
          // the backward of a forward op placed by inference is placed by the same guess
          ta.inferred[i] = fa.inferred[o.event];
          ta.alternative[i] = fa.alternative[o.event];
        }
      }
      ta.module[i] = m;
    }
    phase_spans(in, static_cast<int>(t), ta, out.origin, out.phase_spans);
  }
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
