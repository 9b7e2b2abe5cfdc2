// Rules 1-5 of docs/attribution.md, the evidence: observed calls of built-in modules, optimizer
// steps, scopes and call windows, parameters read, surrounding work.
#include "attribution/thread_attributor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace flopsprof::detail::attr {

// An inferred call of `m` whose first (last) op ran inside an observed call of a submodule began
// before that call entered (ended after it exited): the outermost such call around op `e` (a
// child's own time is never longer than its parent's). INT64_MAX / INT64_MIN when none.
int64_t ThreadAttributor::descendant_enter(const RawEvent& e, int m) const {
  int64_t t = INT64_MAX;
  for (int s = e.scope; s >= 0; s = th_.scopes[s].parent) {
    if (observed_descendant(th_.scopes[s], m)) t = th_.scopes[s].enter_tick;
  }
  return t;
}

int64_t ThreadAttributor::descendant_exit(const RawEvent& e, int m) const {
  int64_t t = INT64_MIN;
  for (int s = e.scope; s >= 0; s = th_.scopes[s].parent) {
    const ScopeRecord& r = th_.scopes[s];
    if (observed_descendant(r, m)) t = r.exit_tick != 0 ? r.exit_tick : in_.stop_tick;
  }
  return t;
}

bool ThreadAttributor::observed_descendant(const ScopeRecord& r, int m) const {
  return r.module >= 0 && r.module != m && !r.backward && !r.start_only &&
         tree_.is_ancestor_or_self(m, r.module);
}

// The scope record of module `m` enclosing `e`, or -1.
int ThreadAttributor::enclosing_scope(const RawEvent& e, int m) const {
  for (int s = e.scope; s >= 0; s = th_.scopes[s].parent) {
    if (th_.scopes[s].module == m) return s;
  }
  return -1;
}

// A scope record inside a call window of its own module: part of the window's call.
bool ThreadAttributor::folded(const ScopeRecord& r) const {
  for (int s = r.parent; s >= 0; s = th_.scopes[s].parent) {
    if (th_.scopes[s].module == r.module && th_.scopes[s].window) return true;
  }
  return false;
}

// An in-place op on a parameter (`add_`, `mul_`, `addcdiv_`, `zero_` on a weight) updates the
// model; no module's forward does that (Embedding's max_norm renorm excepted).
bool ThreadAttributor::is_update(const RawEvent& e, const std::string& op) const {
  if (!(e.flags & kSelfOwned) || op.empty() || op.back() != '_' || op.size() < 2 ||
      op[op.size() - 2] == '_')
    return false;
  if (static_cast<size_t>(e.owner) >= tree_.owner_set_is_parameter.size() ||
      !tree_.owner_set_is_parameter[e.owner])
    return false;
  return op != "aten::embedding_renorm_";
}

// The child of `m` on the way to its descendant `d` (calls skip ModuleLists between them).
int ThreadAttributor::child_toward(int m, int d) const {
  while (tree_.nodes[d].parent != m && tree_.nodes[d].parent >= 0) d = tree_.nodes[d].parent;
  return d;
}

// The module of the innermost observed call of this model around item `p` (-1: none).
int ThreadAttributor::innermost_scope_module(int p) const {
  const RawEvent& e = th_.events[items_[p].event];
  const int ks = known_scope(e.scope);
  return ks >= 0 && !th_.scopes[ks].backward ? th_.scopes[ks].module : -1;
}

// An observed call of a built-in that ran no op (an Identity, a Functional returning its
// input) is a call of its ancestors too: each one with no call around it gets one, or the
// call of it right next to the record (no op between) widens over it; failing that, the call
// that starts after it with only ops that no evidence placed between (a decoder whose center
// block is an Identity, then a block that begins with an upsample: one call, not two).
void ThreadAttributor::add_calls_of_empty_records() {
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
    while (next < static_cast<int>(items_.size()) && th_.events[items_[next].event].start_tick < lo)
      ++next;
    for (int a = tree_.nodes[r.module].parent; a >= 0; a = tree_.nodes[a].parent) {
      if (never_called(a)) continue;
      if (scoped_[a] || enclosing_scope_record(k, a)) break;  // its own record covers it
      Call* around = nullptr;
      Call* beside = nullptr;
      Call* after = nullptr;  // the first call starting after it with only unplaced ops between
      for (Call& c : calls_) {
        if (c.module != a) continue;
        int64_t cs = c.t_lo, ce = c.t_hi;
        if (c.first >= 0) {
          cs = std::min(cs, th_.events[items_[c.first].event].start_tick);
          ce = std::max(ce, end_of(th_.events[items_[c.last].event]));
          if (c.last == next - 1 || c.first == next) beside = &c;
          if (c.first > next && (after == nullptr || c.first < after->first)) {
            bool loose = true;
            for (int q = next; q < c.first && loose; ++q) loose = !items_[q].firm;
            if (loose) after = &c;
          }
        }
        if (cs <= lo && hi <= ce) around = &c;
      }
      if (around != nullptr) break;  // and around every ancestor of it
      if (beside == nullptr) beside = after;
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
bool ThreadAttributor::enclosing_scope_record(int k, int a) const {
  for (int s = th_.scopes[k].parent; s >= 0; s = th_.scopes[s].parent) {
    if (th_.scopes[s].module == a) return true;
  }
  return false;
}

// The innermost scope record of this model's modules at or around record `s` (foreign calls,
// module -1, skipped), or -1.
int ThreadAttributor::known_scope(int s) const {
  while (s >= 0 && th_.scopes[s].module < 0) s = th_.scopes[s].parent;
  return s;
}

// A container never called itself (ModuleList, ModuleDict) or one that runs no op of its own.
bool ThreadAttributor::is_container(int m) const {
  const BuiltinSpec* spec = tree_.nodes[m].builtin;
  return spec != nullptr && spec->container;
}

// Evidence for one op (rules 1, 3 and 4): its firm owner, or its scope, or the root when it touches
// a parameter no owner may claim for this op.
void ThreadAttributor::anchor(Item& it, bool in_scope_only_backward) const {
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

void ThreadAttributor::collect_items(const ThreadAttribution& out) {
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
void ThreadAttributor::apply_starts() {
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

}  // namespace flopsprof::detail::attr
