// Rule 8 of docs/attribution.md: parameterless children whose calls are not observed take the ops
// their type runs, in registration order, else out of order; containers own nothing (inferred,
// marked).
#include "attribution/thread_attributor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace flopsprof::detail::attr {

// Whether a parameterless child of `m` whose calls are not observed could have run `op` (then
// an op in m's call is m's own or that child's: op order decides, which is inference).
bool ThreadAttributor::ambiguous_child(int m, const std::string& op) const {
  for (int c : tree_.nodes[m].children) {
    const ModuleNode& n = tree_.nodes[c];
    if (n.tensors == 0 && !n.calls_observed && !n.starts_observed && match(tree_, c, op) != 0)
      return true;
  }
  return false;
}

// Whether a rule may give item `pos` to a call of module `m`: a forward op no evidence placed,
// or one that ran inside an observed call of an ancestor of `m` (get_model_profile's window, a
// FLOPSPROF_MODULE() scope), which says only that it belongs somewhere in that subtree.
bool ThreadAttributor::claimable(int pos, int m) const {
  if (pos < 0 || pos >= static_cast<int>(items_.size())) return false;
  const Item& it = items_[pos];
  if (!it.forward || it.firm || it.assigned != kUnset) return false;
  return it.anchor < 0 || (!it.touch && tree_.is_ancestor_or_self(it.anchor, m) &&
                           !tree_.nodes[it.anchor].calls_observed);
}

// A parameterless module `m` (and the descendants that match) takes item `pos`: extends its
// adjacent call or opens one.
void ThreadAttributor::give(int m, int pos) {
  const std::string& op = item_name(pos);
  for (;;) {
    const bool terminal = is_terminal(tree_, m, op);
    int ci = -1;
    auto found = pl_call_.find(m);
    if (found != pl_call_.end()) {
      Call& c = calls_[found->second];
      if ((pos == c.last + 1 && !c.ended) || (pos == c.first - 1 && !terminal)) ci = found->second;
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

// Rule 8: the parameterless child of call `c` that takes an op named `op`, searching children
// from the cursor up to (not including) `hi`; moves the cursor. -1: none.
int ThreadAttributor::pick(Call& c, const std::string& op, int hi, bool fallback) {
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
int ThreadAttributor::pick_out_of_order(Call& c, const std::string& op) {
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
std::vector<std::vector<int>> ThreadAttributor::groups(bool by_first) const {
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

bool ThreadAttributor::builtin_leaf(int m) const {
  return builtin_fixed_ops(m) && tree_.nodes[m].children.empty();
}

// A LibTorch module whose forward runs its own fixed ops (not a container, not Functional). Its
// children, if any, are never called by it: MultiheadAttention reads out_proj's weight itself.
bool ThreadAttributor::builtin_fixed_ops(int m) const {
  const BuiltinSpec* spec = tree_.nodes[m].builtin;
  return spec != nullptr && !spec->container && !spec->wildcard;
}

// A call extends over the unclaimed ops next to it, towards its start or its end: ops of its
// parameterless children before its first child (Sequential(Flatten, Linear)) or after its last
// (Sequential(..., Linear, Sigmoid)); towards the start also the ops its own built-in type runs
// before it reads its parameters, at most as many as it runs (LSTM's `zeros`, MultiheadAttention's
// `equal`s; marked: the caller's may stand there too). Towards the end nothing joins a built-in's
// call: its own ops read its parameters and are anchored, but for MultiheadAttention's average of
// the weights, which stays with its caller. Calls that begin (end) at the same item extend deepest
// first, and an enclosing call starts where the call inside it reached.
void ThreadAttributor::rule8_extend_calls(Direction d) {
  const bool back = d == Direction::kTowardsStart;
  const int step = back ? -1 : 1;
  for (const std::vector<int>& group : groups(/*by_first=*/back)) {
    int reach = back ? INT_MAX : INT_MIN;
    for (int ci : group) {
      // calls_ may grow in give(): index it each time
      auto edge = [&]() -> int& { return back ? calls_[ci].first : calls_[ci].last; };
      edge() = back ? std::min(edge(), reach) : std::max(edge(), reach);
      const int m = calls_[ci].module;
      const int end_child = back ? calls_[ci].first_child : calls_[ci].last_child;
      int cursor =
          end_child >= 0 ? tree_.nodes[child_toward(m, end_child)].child_index : (back ? 0 : -1);
      bool wild = false;
      int leading = 0;
      for (int pos = edge() + step; claimable(pos, m); pos += step) {
        const std::string& op = item_name(pos);
        if (builtin_fixed_ops(m)) {  // MultiheadAttention's leading `equal`s too
          const BuiltinSpec& spec = *tree_.nodes[m].builtin;
          if (!back || leading == spec.leading_max || !op_in_list(spec.leading, op)) break;
          items_[pos].assigned = m;
          items_[pos].leading = true;
          ++leading;
          edge() = pos;
          continue;
        }
        const int take = next_child(ci, op, d, cursor, wild);
        if (take < 0) break;
        give(take, pos);
        if (items_[pos].container < 0) items_[pos].container = m;  // the call that gave it
        edge() = pos;
      }
      if (!back) calls_[ci].cursor = cursor;
      reach = edge();
    }
  }
}

// The parameterless child of call `ci`'s module next to child `cursor` (towards its first or
// its last child) that runs `op`; it moves `cursor` there. Children with parameters stop the
// search. A wildcard (Functional) runs where it stands only in a container, whose children run
// in registration order; in a user module that order says nothing. -1: none.
int ThreadAttributor::next_child(int ci, const std::string& op, Direction d, int& cursor,
                                 bool& wild) {
  const ModuleNode& node = tree_.nodes[calls_[ci].module];
  const bool ordered = node.builtin != nullptr && node.builtin->container;
  const bool back = d == Direction::kTowardsStart;
  const int n = static_cast<int>(node.children.size());
  // towards the end, the child that ran last takes the next op too when it may run more
  int k = back ? cursor - 1 : (calls_[ci].cursor_stay ? std::max(cursor, 0) : cursor + 1);
  for (; k >= 0 && k < n; k += back ? -1 : 1) {
    const int child = node.children[k];
    if (tree_.nodes[child].tensors != 0) return -1;
    const int r = match(tree_, child, op);
    if (r == 1 || (r == 2 && !wild && ordered)) {
      cursor = k;
      wild = r == 2;
      if (!back) calls_[ci].cursor_stay = r == 1 && !is_terminal(tree_, child, op);
      return child;
    }
  }
  return -1;
}

// Whether the end (start) of every call of `a` is observed: a module with FLOPSPROF_MODULE()
// (its scope records bound each call), a built-in whose calls are recorded, a built-in with
// parameters whose forward runs only ops that read them (Linear,
// BatchNorm, LSTM), or a Sequential whose last (first) child's is (it runs nothing after
// (before) it).
bool ThreadAttributor::owned_builtin(int a, bool start) const {
  const ModuleNode& n = tree_.nodes[a];
  return builtin_leaf(a) && n.tensors > 0 && (!start || n.builtin->leading.empty());
}

bool ThreadAttributor::end_exact(int a) const {
  const ModuleNode& n = tree_.nodes[a];
  if (scoped_[a] || n.calls_observed || n.starts_observed || owned_builtin(a, false)) return true;
  return is_container(a) && !never_called(a) && !n.children.empty() && end_exact(n.children.back());
}

bool ThreadAttributor::start_exact(int a) const {
  const ModuleNode& n = tree_.nodes[a];
  if (scoped_[a] || n.calls_observed || n.starts_observed || owned_builtin(a, true)) return true;
  return is_container(a) && !never_called(a) && !n.children.empty() &&
         start_exact(n.children.front());
}

// The module an item was placed in so far (kUnset / kOutsideModel when none).
int ThreadAttributor::placed_module(int q) const {
  const Item& it = items_[q];
  if (it.firm) return it.anchor;
  return it.assigned != kUnset ? it.assigned : it.anchor;
}

// The outermost module below `m` on the way to its descendant `d` that is ever called (a
// ModuleList between them is skipped).
int ThreadAttributor::called_child(int m, int d) const {
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
void ThreadAttributor::rule8_containers_own_nothing() {
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

// Rule 8 inside calls (what no child takes stays with the call around it, as rule 5 says of
// surrounding work); outside every call an op keeps its evidence's module, else it is outside the
// model. One pass over the items with the stack of calls
// open at each position.
void ThreadAttributor::rule8_parameterless_children() {
  const int n = static_cast<int>(items_.size());
  std::vector<int> next, next_firm;
  rule8_next_anchored(next, next_firm);
  const int derived = static_cast<int>(calls_.size());
  std::vector<int> order(derived);
  for (int i = 0; i < derived; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return calls_[a].first != calls_[b].first ? calls_[a].first < calls_[b].first
                                              : calls_[a].depth < calls_[b].depth;
  });
  for (Call& c : calls_) {  // cursors restart for this pass
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
    rule8_place_in(p, host, next, next_firm);
  }
}

// The next anchored item (same forward run) after each position, and the next firm one; -1:
// none.
void ThreadAttributor::rule8_next_anchored(std::vector<int>& next,
                                           std::vector<int>& next_firm) const {
  const int n = static_cast<int>(items_.size());
  next.assign(n + 1, -1);
  next_firm.assign(n + 1, -1);
  for (int p = n - 1; p >= 0; --p) {
    if (!items_[p].forward) {
      next[p] = next_firm[p] = -1;
    } else {
      const bool fwd = p + 1 < n && items_[p + 1].forward;
      next[p] = (fwd && items_[p + 1].anchor >= 0) ? p + 1 : next[p + 1];
      next_firm[p] = (fwd && items_[p + 1].firm) ? p + 1 : next_firm[p + 1];
    }
  }
}

// Item `p`, unplaced, inside call `host`: to the child of the host's module that may have run
// it (the candidates up to the next anchored one's), else to the host's module.
void ThreadAttributor::rule8_place_in(int p, int host, const std::vector<int>& next,
                                      const std::vector<int>& next_firm) {
  Item& it = items_[p];
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
    const int giver = c.module;  // give() may grow calls_
    give(child, p);
    // the call that gave it: its other children may have run it (a wrapper's leading flip)
    if (it.container < 0) it.container = giver;
  }
}

}  // namespace flopsprof::detail::attr
