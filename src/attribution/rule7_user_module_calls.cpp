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
        const bool again = cur[a] >= 0 && fresh[j + 1] && calls_[cur[a]].first_child == path[j + 1];
        // The root also restarts when its call already ran every one of its children it can be
        // seen to run, two or more (back-to-back forwards of a benchmark loop); a loop over its
        // first child before the others ran (an RNN over time, a shared block), or over its
        // only child, stays one call.
        fresh[j] =
            cur[a] < 0 ||
            (again && (j > 0 || returned || (root_kids.size() > 1 && ran_all(cur[a], root_kids))));
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
bool ThreadAttributor::ran_all(int call, const std::vector<int>& kids) const {
  for (int k : kids) {
    if (seen_in_call_[k] != call) return false;
  }
  return true;
}

}  // namespace flopsprof::detail::attr
