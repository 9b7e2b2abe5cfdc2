// Both sides of every guess: the ops placed by a rule, the modules that may lack ops placed
// elsewhere, calls whose count is inferred (docs/attribution.md, "Both sides of every guess").
#include "attribution/thread_attributor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace flopsprof::detail::attr {

// Which forward ops were placed by evidence: the parameters they read (ownership), the observed
// call they ran in (a built-in's forward, FLOPSPROF_MODULE(), get_model_profile's window),
// or, for a module's own op, observed work of its subtree on both sides within one call of it
// (a residual add between a block's layers). Everything else a rule placed is inferred.
void ThreadAttributor::mark_inferred(ThreadAttribution& out, AlternativeSets& alternatives) const {
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
      if (evidence[q] || placed[q] != c.module || ambiguous_child(c.module, item_name(q))) continue;
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
void ThreadAttributor::mark_other_side(ThreadAttribution& out, AlternativeSets& alternatives,
                                       const std::vector<int>& placed,
                                       const std::vector<char>& evidence) const {
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
    if (items_[p].edge) {  // rule 9's ends of the root's forward: the caller, or its last or
      who.push_back(kOutsideModel);  // first quiet modules (the op's side is not kept)
      for (int end : {1, -1}) {
        for (int k : model_side(end)) who.push_back(k);
      }
    }
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
    if (items_[p].leading) {  // a built-in's leading op (an attention's `equal`): or its caller's
      int caller = tree_.nodes[m].parent;
      while (caller >= 0 && never_called(caller)) caller = tree_.nodes[caller].parent;
      if (caller >= 0) who.push_back(tree_.nodes[caller].effective);
      for (const Call& c : calls_) {  // before everything else of the root's call: the program's
        if (c.module == 0 && c.first == p) who.push_back(kOutsideModel);
      }
    }
    for (int k : quiet_children(m)) who.push_back(k);
    // A quiet module given the op (rule 8): its quiet siblings may have run it as well (a
    // detection head and the never-called route placeholder registered after it).
    const int parent = tree_.nodes[m].parent;
    if (parent >= 0 && is_quiet(m)) {
      for (int k : quiet_children(parent)) who.push_back(k);
    }
    const int eff = tree_.nodes[m].effective;
    who.erase(std::remove(who.begin(), who.end(), eff), who.end());
    out.alternative[items_[p].event] = alternatives.add(who);
  }
}

// The other side of rule 9: after the root's forward ended at an op that read data from
// outside (a gather of the caller's actions), ops that compute only from what the model's call
// computed, or from such ops (an entropy of its probabilities), are the model's code or the
// caller's: op order cannot tell. They stay outside the model, marked as inferred. So do ops
// that read outside data with the model's results (a mask applied to the output in the
// forward, or a hand-written loss's `out - y` in the caller). Ops that look like the caller's
// (a metric, a copy, `detach`), another model's layers and everything computed from them only
// are the caller's; a loss or backward()'s seed ends the search.
void ThreadAttributor::mark_outside_tail(ThreadAttribution& out,
                                         AlternativeSets& alternatives) const {
  if (scoped_[0]) return;             // FLOPSPROF_MODULE() in the root: its boundaries are exact
  if (ends_in_builtin(0, 1)) return;  // its forward ends with its last child's
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
    if (lo == INT64_MAX) {  // without grad: no data flow to follow
      mark_outside_tail_without_grad(c, out, alternatives);
      continue;
    }
    from_model.assign(1, {lo, hi});
    for (int pos = c.last + 1; pos < ni && items_[pos].forward; ++pos) {
      if (placed_module(pos) >= 0) break;  // the model's next call
      const RawEvent& e = th_.events[items_[pos].event];
      const std::string& op = item_name(pos);
      if (in_foreign_call(e) || creates_tensor(op) || op.find("loss") != std::string::npos) break;
      // An op reading outside data next to what the model computed is the forward's (a mask
      // applied to its result) or the caller's (a hand-written loss's `out - y`): marked too.
      if (e.seq_nr < 0 || e.in_seq < 0) continue;
      if (ends_forward(op)) continue;  // a metric, a copy, a detach: looks like the caller's
      // the ranges follow each other in sequence order: the last one starting at or before it
      auto r = std::upper_bound(from_model.begin(), from_model.end(), e.in_seq,
                                [](int64_t v, const auto& range) { return v < range.first; });
      if (r == from_model.begin() || e.in_seq >= std::prev(r)->second) continue;
      out.inferred[items_[pos].event] = 1;
      out.alternative[items_[pos].event] = alternatives.add(model_side(1));
      from_model.emplace_back(e.seq_nr, std::max(e.seq_nr + 1, e.seq_end));
    }
  }
}

// Without grad, rule 9 ended the root's forward at the first op that looks like the caller's (a new
// tensor, a cast, a comparison), but a forward may run such ops itself before it returns (a
// detection head's grid: `arange(n).to(kFloat)`, then the in-place offsets and squashing of the
// model's output). Op order cannot tell: the ops after the root's call stay outside, marked, with
// the model as the module that may lack them, up to one that only a caller runs (a loss, `item`,
// random data, a new tensor from host values), a module's call, or the model's next call.
void ThreadAttributor::mark_outside_tail_without_grad(const Call& c, ThreadAttribution& out,
                                                      AlternativeSets& alternatives) const {
  const int ni = static_cast<int>(items_.size());
  int who = -1;
  for (int pos = c.last + 1; pos < ni && items_[pos].forward; ++pos) {
    if (placed_module(pos) >= 0) break;  // the model's next call
    const int ev = items_[pos].event;
    const RawEvent& e = th_.events[ev];
    if (in_foreign_call(e) || unknown_unit(e) >= 0) break;
    const std::string& op = item_name(pos);
    if (op.find("loss") != std::string::npos ||
        op_in_list("item _local_scalar_dense randn rand randint randperm normal bernoulli "
                   "multinomial tensor scalar_tensor",
                   op))
      break;
    if (out.module[ev] != kOutsideModel || out.inferred[ev]) continue;
    if (who < 0) who = alternatives.add(model_side(1));
    out.inferred[ev] = 1;
    out.alternative[ev] = who;
  }
}

// Calls of modules in no profiled tree whose ops stayed outside the model although they ran
// in the same stretch of forward work as a call of the model (no backward pass, optimizer
// step or loss between them): the model's unregistered member, or a model no profiler knows.
// Op order cannot tell; they are marked, with the model as the module that may lack them.
void ThreadAttributor::mark_unknown_outside(ThreadAttribution& out,
                                            AlternativeSets& alternatives) const {
  if (scoped_[0]) return;  // the root's calls are observed: outside them is outside
  // A Sequential of LibTorch modules at both ends runs its registered children only
  if (ends_in_builtin(0, -1) && ends_in_builtin(0, 1)) return;
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
  const int root = alternatives.add(model_side(0));
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

// The ops right at the ends of the root's call that rule 9 left outside by their names alone,
// though models run them as often as callers: a dtype cast right after its last op (a language
// model's `return logits.to(kFloat32)`, or the caller's cast of the logits) and a position range
// right before its first (`arange` for position ids, in the model's forward or the caller's).
// Op order cannot tell: marked, with the model as the module that may lack them. (Data made for
// the model, `randn`, a device copy of the batch, and losses and metrics stay the caller's.)
void ThreadAttributor::mark_outside_ends(ThreadAttribution& out,
                                         AlternativeSets& alternatives) const {
  if (scoped_[0]) return;  // the root's calls are observed: outside them is outside
  const int ni = static_cast<int>(items_.size());
  auto mark = [&](int p, std::string_view ops, int end) {
    if (p < 0 || p >= ni || !items_[p].forward) return;
    const int ev = items_[p].event;
    if (out.module[ev] != kOutsideModel || out.inferred[ev]) return;
    if (in_foreign_call(th_.events[ev]) || !op_in_list(ops, item_name(p))) return;
    out.inferred[ev] = 1;
    out.alternative[ev] = alternatives.add(model_side(end));
  };
  const bool closed_head = ends_in_builtin(0, -1), closed_tail = ends_in_builtin(0, 1);
  for (const Call& c : calls_) {
    if (c.module != 0) continue;
    if (!closed_tail) mark(c.last + 1, "to _to_copy type_as", 1);
    if (closed_head) continue;
    // Before: a position range, and the casts and reshapes of it between it and the model's
    // first op (`arange(t).unsqueeze(0).to(dtype)`); casts alone before the forward are the
    // caller's copies of its data.
    int p = c.first - 1;
    for (int k = 0; k < 4 && p >= 0 && items_[p].forward &&
                    op_in_list("to _to_copy type_as unsqueeze view reshape expand", item_name(p));
         ++k)
      --p;
    if (p >= 0 && items_[p].forward && op_in_list("arange linspace", item_name(p))) {
      for (int q = p; q < c.first; ++q)
        mark(q,
             "arange linspace to _to_copy type_as unsqueeze "
             "view reshape expand",
             -1);
    }
    mark_leading(c, out, alternatives);
  }
}

// Rule 9 stopped the start of the root's call at an op that looks like the caller's (a cast, a
// comparison, a new tensor), but a forward may begin with such ops itself: a mask from the input
// (`x.sum(-1) != 0`) and a cast of ids (`x.select(-1, 0).to(kLong)`) before its first module.
// Op order cannot tell them from the caller's preparation of its batch: the ops right before
// the call, back to one that only a caller runs (a loss, `item`, an in-place op such as
// zero_grad's or an optimizer's, random data, backward, another model's call, the model's
// previous call), stay outside, marked, with the model as the module that may lack them.
void ThreadAttributor::mark_leading(const Call& c, ThreadAttribution& out,
                                    AlternativeSets& alternatives) const {
  int root = -1;
  for (int p = c.first - 1; p >= 0 && items_[p].forward; --p) {
    const int ev = items_[p].event;
    if (out.module[ev] != kOutsideModel) break;  // the model's previous call
    const RawEvent& e = th_.events[ev];
    if (in_foreign_call(e) || unknown_unit(e) >= 0) break;  // a module's call: rule 9 decided
    const std::string& op = item_name(p);
    if (op.find("loss") != std::string::npos || (op.size() > 1 && op.back() == '_') ||
        op_in_list("item _local_scalar_dense randn rand randint randperm normal bernoulli "
                   "multinomial tensor scalar_tensor",
                   op))
      break;
    if (out.inferred[ev]) continue;  // marked already (a position range)
    if (root < 0) root = alternatives.add(model_side(-1));
    out.inferred[ev] = 1;
    out.alternative[ev] = root;
  }
}

// Whether the forward of module `m` provably runs no op of its own before its first child's
// (`end` -1) or after its last child's (`end` 1): a Sequential (it runs its children in
// registration order and nothing else) whose first (last) child is a LibTorch module of fixed
// ops, or such a Sequential. Then the ops next to the root's call are never its own (a GAN's
// discriminator, Sequential(Conv2d, ..., Sigmoid), called right after the generator's tanh):
// rule 9 does not extend the call, and nothing next to it is marked as possibly the model's.
// (The ops such an end child runs before or after its parameters, a Conv2d's pad or a
// Sequential's trailing Sigmoid, are the child's: rule 8 extends its call to them.)
bool ThreadAttributor::ends_in_builtin(int m, int end) const {
  const ModuleNode& n = tree_.nodes[m];
  const BuiltinSpec* spec = n.builtin;
  if (spec == nullptr || spec->wildcard || n.ignored) return false;
  if (!spec->container) return true;
  if (spec->type != "Sequential" || n.children.empty()) return false;
  return ends_in_builtin(end < 0 ? n.children.front() : n.children.back(), end);
}

// A user module with no parameters, buffers or observed call: op order alone places its work.
bool ThreadAttributor::is_quiet(int m) const {
  const ModuleNode& n = tree_.nodes[m];
  return n.tensors == 0 && n.builtin == nullptr && !scoped_[m] && !n.calls_observed;
}

// The quiet children of `m` (is_quiet), as the modules that may show their work (effective ids).
std::vector<int> ThreadAttributor::quiet_children(int m) const {
  std::vector<int> out;
  for (int k : tree_.nodes[m].children) {
    if (is_quiet(k)) out.push_back(tree_.nodes[k].effective);
  }
  return out;
}

// The modules that may lack ops rule 9 left outside: the root, its quiet children, and (`end`:
// 1 after the forward, -1 before it) the quiet modules the root's forward would run last (first)
// in registration order, up to the nearest module with parameters or an observed call, through
// parameterless containers (a detection head in a Sequential at the end of a ModuleList, whose
// ops after its grid's `arange` look like the caller's).
const std::vector<int>& ThreadAttributor::model_side(int end) const {
  std::optional<std::vector<int>>& cached = model_side_[end + 1];  // one fact, computed once
  if (cached) return *cached;
  std::vector<int> who = quiet_children(0);
  who.insert(who.begin(), 0);
  const int nm = static_cast<int>(tree_.nodes.size());
  // In pre-order, a module's subtree follows it: from the end, a parent after its children.
  for (int k = end > 0 ? nm - 1 : 1; end != 0 && k >= 1 && k<nm; k += end> 0 ? -1 : 1) {
    const ModuleNode& n = tree_.nodes[k];
    if (n.ignored) continue;
    if (n.calls_observed || scoped_[k]) break;
    if (n.tensors > 0) {
      if (n.subtree_end == k + 1 || end > 0) break;  // a module with parameters, or its holder
      continue;                                      // going forward: its first child comes next
    }
    if (!is_quiet(k)) continue;
    // it, and the containers holding it, would include the op: each may show too little
    for (int a = k; a > 0; a = tree_.nodes[a].parent) who.push_back(tree_.nodes[a].effective);
  }
  std::sort(who.begin(), who.end());
  who.erase(std::unique(who.begin(), who.end()), who.end());
  cached = std::move(who);
  return *cached;
}

// The called children of `m` whose runs a call of it can be seen to include: children with
// parameters or with observed calls (a ModuleList's elements in its place). Those that run
// nothing visible (a user's parameterless module) are not expected.
std::vector<int> ThreadAttributor::visible_children(int m) const {
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
void ThreadAttributor::partial_calls(std::vector<uint8_t>& calls_inferred) const {
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
  for (int d = 0; d < static_cast<int>(calls_.size()); ++d) calls_of[calls_[d].module].push_back(d);
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

}  // namespace flopsprof::detail::attr
