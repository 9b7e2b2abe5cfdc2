// Rule 7 of docs/attribution.md: calls of user modules, derived from the ops their subtree's
// evidence places (inferred, marked).
#include "attribution/thread_attributor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace flopsprof::detail::attr {

// Rule 7: calls of user modules from the anchored items.
void ThreadAttributor::rule7_user_module_calls() {
  const int nm = static_cast<int>(tree_.nodes.size());
  Rule7State s;
  s.cur.assign(nm, -1);
  s.ended.assign(nm, 0);
  restart_ambiguous_.assign(nm, 0);
  seen_in_call_.assign(nm, -1);
  s.root_kids = visible_children(0);
  for (int p = 0; p < static_cast<int>(items_.size()); ++p) {
    const Item& it = items_[p];
    if (!it.forward) {
      for (int x : s.open) s.cur[x] = -1;
      s.open.clear();
      continue;
    }
    if (it.touch && (s.cur[0] < 0 || s.returned)) {
      // A tied weight read outside a running forward (an optimizer's zeros_like(weight), a
      // norm for logging): not the model's forward.
      items_[p].anchor = -1;
      items_[p].touch = false;
    }
    const int m = it.anchor;
    if (m < 0) {
      s.returned = s.returned || (it.assigned == kUnset && looks_outside(p));
      continue;
    }
    const std::string& op = name(it.event);
    s.path.clear();
    for (int a = m; a >= 0; a = tree_.nodes[a].parent) {
      if (a == 0 || a == m || !never_called(a)) s.path.push_back(a);
    }
    std::reverse(s.path.begin(), s.path.end());
    size_t keep = 0;
    for (int x : s.open) {
      // A scope's op (weak) is somewhere in its module's subtree: the calls of that module's
      // descendants go on (an attention module's tanh between its Linears, in a scoped root).
      if (tree_.is_ancestor_or_self(x, m) || (!it.firm && tree_.is_ancestor_or_self(m, x))) {
        s.open[keep++] = x;
      } else {
        s.cur[x] = -1;
      }
    }
    s.open.resize(keep);
    rule7_fresh_calls(th_.events[it.event], op, s);
    s.returned = false;
    rule7_open_calls(p, s);
    s.ended[m] = is_terminal(tree_, m, op);
    calls_[s.cur[m]].ended = s.ended[m];
  }
}

// Which modules on the path of an anchored op (`s.path`, root first) start a new call with it
// (`s.fresh`), and the scope record each scoped one's call starts at (`s.recs`).
void ThreadAttributor::rule7_fresh_calls(const RawEvent& e, const std::string& op, Rule7State& s) {
  const int k = static_cast<int>(s.path.size()) - 1;
  s.fresh.assign(s.path.size(), 0);
  s.recs.assign(s.path.size(), -1);
  for (int j = k; j >= 0; --j) {
    const int a = s.path[j];
    const int cur = s.cur[a];
    if (scoped_[a]) {
      s.recs[j] = enclosing_scope(e, a);
      s.fresh[j] = cur < 0 || calls_[cur].scope_rec != s.recs[j];
    } else if (j == k) {
      const BuiltinSpec* spec = tree_.nodes[a].builtin;
      if (spec != nullptr && (!spec->starts.empty() || !spec->terminals.empty())) {
        s.fresh[j] = cur < 0 || op_in_list(spec->starts, op) || s.ended[a];
      } else {
        s.fresh[j] = cur < 0;
      }
    } else {
      // A new call when its first child starts again; for the root only when an op between
      // shows that the previous forward returned (a loss, data for the next one), so a
      // module applied twice inside one forward is not taken for two forwards.
      const bool again = cur >= 0 && s.fresh[j + 1] && calls_[cur].first_child == s.path[j + 1];
      // The root also restarts when its call already ran every one of its children it can be
      // seen to run, two or more (back-to-back forwards of a benchmark loop); a loop over its
      // first child before the others ran (an RNN over time, a shared block), or over its
      // only child, stays one call.
      s.fresh[j] =
          cur < 0 ||
          (again && (j > 0 || s.returned || (s.root_kids.size() > 1 && ran_all(cur, s.root_kids))));
      // Its first child ran again with nothing between that shows a return: one call or two
      // (net(net(x)); Attend's f(A), f(B)) cannot be told apart. The root counts one call,
      // a submodule two; either is inferred.
      // (A submodule's call is open only while no op placed outside its subtree ran since.
      // LibTorch's modules run each child once per call, in a known order: not ambiguous.)
      if (again && (j > 0 ? tree_.nodes[a].builtin == nullptr : !s.returned))
        restart_ambiguous_[a] = 1;
    }
  }
}

// Item `p` into the calls of the modules on its path: from the first fresh level down, new
// calls; above it, the open ones go on.
void ThreadAttributor::rule7_open_calls(int p, Rule7State& s) {
  const int k = static_cast<int>(s.path.size()) - 1;
  bool forced = false;
  for (int j = 0; j <= k; ++j) {
    const int a = s.path[j];
    if (forced || s.fresh[j]) {
      forced = true;
      Call c;
      c.module = a;
      c.first = c.last = p;
      c.first_child = j < k ? s.path[j + 1] : -1;
      c.scope_rec = s.recs[j];
      c.depth = tree_.nodes[a].depth;
      if (s.cur[a] < 0) s.open.push_back(a);
      s.cur[a] = static_cast<int>(calls_.size());
      calls_.push_back(c);
    }
    Call& c = calls_[s.cur[a]];
    c.last = p;
    if (j < k) {
      c.last_child = s.path[j + 1];
      seen_in_call_[s.path[j + 1]] = s.cur[a];  // constant time (a Sequential of 10,000 layers)
    }
  }
}

// Whether call `call` ran every one of `kids` (children of its module) with anchored ops.
// (A module's children are seen only in calls of one ancestor, its nearest called one, and that
// module has one open call at a time: the latest call that saw each child is enough.)
bool ThreadAttributor::ran_all(int call, const std::vector<int>& kids) const {
  for (int k : kids) {
    if (seen_in_call_[k] != call) return false;
  }
  return true;
}

}  // namespace flopsprof::detail::attr
