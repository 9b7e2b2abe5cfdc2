// The attribution of one thread's records, inside the attribution stage (attribution.h is its
// interface). One class, ThreadAttributor, whose work is split by what it decides, each file
// named after the rules of docs/attribution.md it applies:
//   phases.cpp                       which records are forward, backward, recompute, step
//   evidence.cpp                     rules 1-5: observed calls, steps, scopes, parameters read,
//                                    surrounding work
//   rule7_user_module_calls.cpp      rule 7: calls of user modules
//   rule8_parameterless_children.cpp rule 8: parameterless children whose calls are not observed
//   rule9_root_ends.cpp              rule 9: the ends of the root's forward
//   marks.cpp                        both sides of every guess (the marks)
//   attribution.cpp                  the order the rules run in, and the cross-thread results
//                                    (rule 6, autograd)
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "attribution/attribution.h"
#include "records/builtin_modules.h"

namespace flopsprof::detail::attr {

constexpr int kUnset = INT_MIN;

// A top-level event of one thread, in start order.
struct Item {
  int event = 0;
  bool forward = false;  // a forward op; anything else (backward, step, recompute) breaks calls
  int anchor = -1;       // module from evidence (rules 1, 3, 4: firm), or a scope / the root (weak)
  bool firm = false;
  bool touch = false;     // reads a parameter that no owner may claim for this op (tied weight)
  bool edge = false;      // given to the root by rule 9 (its ends): the caller's, maybe
  int assigned = kUnset;  // final module (tree index), kOutsideModel, or kUnset
  int container = -1;     // the call's module that gave it to a child (rule 8): its bound in marks
  bool reads_older = false;  // and it reads data from before that child's call (no later child's)
  bool leading = false;      // one of a built-in's leading ops (rule 8): or its caller's
};

// A call being derived: a run of items.
struct Call {
  int module = 0;
  int first = 0, last = 0;   // item positions
  int first_child = -1;      // the child whose op began it (restart rule)
  int last_child = -1;       // the child of its last claimed op
  int scope_rec = -1;        // the scope record it stands for (scoped modules)
  int cursor = -1;           // child_index of the child that ran last (rule 8)
  bool cursor_stay = false;  // that child may take the next op too
  bool ended = false;        // its last op ended a built-in's call (terminal)
  int depth = 0;
  std::vector<int> ran;  // children given ops out of registration order (rule 8)
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
inline int match(const ModuleTree& tree, int m, const std::string& op) {
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

// A holder with no forward (ModuleList, ModuleDict): its children are called by its parent.
inline bool is_holder(const ModuleTree& tree, int m) {
  const BuiltinSpec* spec = tree.nodes[m].builtin;
  return spec != nullptr && (spec->type == "ModuleList" || spec->type == "ModuleDict");
}

inline bool is_terminal(const ModuleTree& tree, int m, const std::string& op) {
  const BuiltinSpec* spec = tree.nodes[m].builtin;
  return spec != nullptr && op_in_list(spec->terminals, op);
}

// Phase spans of thread t: runs of consecutive top-level events of one phase, the model's forward
// (neither an optimizer step's work nor work outside the model) or one backward pass. A backward
// pass that runs no node of this model (another model's backward, in a loop with several
// profilers) is outside it entirely: its gradient accumulation is not this model's "(autograd)"
// work.
void phase_spans(const AttributionInput& in, int t, ThreadAttribution& ta,
                 const std::vector<std::vector<Origin>>& origin, std::vector<PhaseSpan>& spans);

// Which way a call extends over the ops next to it (rule8_extend_calls).
enum class Direction { kTowardsStart, kTowardsEnd };

class ThreadAttributor {
 public:
  ThreadAttributor(const AttributionInput& in, const std::vector<bool>& scoped, int t)
      : in_(in), tree_(*in.tree), th_(*in.threads[t]), scoped_(scoped), t_(t) {}

  // Places every top-level record of the thread (attribution.cpp: the order the rules run in).
  void run(ThreadAttribution& out, std::vector<CallSpan>& spans,
           std::vector<uint8_t>& calls_inferred, AlternativeSets& alternatives);

 private:
  int64_t end_of(const RawEvent& e) const { return e.end_tick != 0 ? e.end_tick : in_.stop_tick; }
  const std::string& name(int event) const { return in_.names->name(th_.events[event].name_id); }
  const std::string& item_name(int pos) const { return name(items_[pos].event); }
  // Whether op `e` ran inside a call of another profiled model's module (and of none of this
  // model's).
  bool in_foreign_call(const RawEvent& e) const { return ran_in_foreign_call(th_, e); }
  // The unit op `e` is placed with: the outermost call of a module in no profiled tree around it
  // (unknown_module_call). -1: none.
  int unknown_unit(const RawEvent& e) const { return unknown_module_call(th_, e); }
  int unknown_unit_at(int pos) const { return unknown_unit(th_.events[items_[pos].event]); }
  bool never_called(int m) const { return is_holder(tree_, m); }

  // phases.cpp (each definition says what it decides)
  void steps(ThreadAttribution& out) const;
  bool in_counted_step(const ThreadAttribution& out, const RawEvent& e) const;
  void phases(ThreadAttribution& out);
  int recompute_module(const ThreadAttribution& out, size_t i) const;

  // evidence.cpp: rules 1-5 (each definition says what it decides)
  int64_t descendant_enter(const RawEvent& e, int m) const;
  int64_t descendant_exit(const RawEvent& e, int m) const;
  bool observed_descendant(const ScopeRecord& r, int m) const;
  int enclosing_scope(const RawEvent& e, int m) const;
  bool folded(const ScopeRecord& r) const;
  bool is_update(const RawEvent& e, const std::string& op) const;
  int child_toward(int m, int d) const;
  int innermost_scope_module(int p) const;
  void add_calls_of_empty_records();
  bool enclosing_scope_record(int k, int a) const;
  int known_scope(int s) const;
  bool is_container(int m) const;
  void anchor(Item& it, bool in_scope_only_backward) const;
  void collect_items(const ThreadAttribution& out);
  void apply_starts();

  // rule7_user_module_calls.cpp (each definition says what it decides)
  void rule7_user_module_calls();
  // Rule 7's state while it walks the items: per module its open call and whether its last op
  // ended it; the open calls; per level of the current op's path, a new call or not and the
  // scope record it starts at.
  struct Rule7State {
    std::vector<int> cur, open, path, recs;
    std::vector<char> ended, fresh;
    bool returned = false;  // an op since the last anchored one shows the forward returned
    std::vector<int> root_kids;
  };
  void rule7_fresh_calls(const RawEvent& e, const std::string& op, Rule7State& s);
  void rule7_open_calls(int p, Rule7State& s);
  bool ran_all(int call, const std::vector<int>& kids) const;

  // rule8_parameterless_children.cpp (each definition says what it decides)
  bool ambiguous_child(int m, const std::string& op) const;
  bool claimable(int pos, int m = 0) const;
  void give(int m, int pos);
  int pick(Call& c, const std::string& op, int hi, bool fallback);
  int pick_out_of_order(Call& c, const std::string& op);
  std::vector<std::vector<int>> groups(bool by_first) const;
  bool builtin_leaf(int m) const;
  bool builtin_fixed_ops(int m) const;
  void rule8_extend_calls(Direction d);
  int next_child(int ci, const std::string& op, Direction d, int& cursor, bool& wild);
  bool owned_builtin(int a, bool start) const;
  bool end_exact(int a) const;
  bool start_exact(int a) const;
  int placed_module(int q) const;
  int called_child(int m, int d) const;
  void rule8_containers_own_nothing();
  void rule8_parameterless_children();
  void rule8_next_anchored(std::vector<int>& next, std::vector<int>& next_firm) const;
  void rule8_place_in(int p, int host, const std::vector<int>& next,
                      const std::vector<int>& next_firm);

  // rule9_root_ends.cpp (each definition says what it decides)
  void rule9_root_tail();
  bool continues_tail(int pos, int64_t first_seq) const;
  bool unit_continues_tail(int begin, int end, int64_t first_seq) const;
  void rule9_root_head();
  bool looks_outside(int pos) const;
  static bool creates_tensor(const std::string& op);
  static bool ends_forward(const std::string& op);

  // marks.cpp (each definition says what it decides)
  void mark_inferred(ThreadAttribution& out, AlternativeSets& alternatives) const;
  void mark_other_side(ThreadAttribution& out, AlternativeSets& alternatives,
                       const std::vector<int>& placed, const std::vector<char>& evidence) const;
  void mark_outside_tail(ThreadAttribution& out, AlternativeSets& alternatives) const;
  void mark_unknown_outside(ThreadAttribution& out, AlternativeSets& alternatives) const;
  void mark_outside_ends(ThreadAttribution& out, AlternativeSets& alternatives) const;
  void mark_leading(const Call& c, ThreadAttribution& out, AlternativeSets& alternatives) const;
  std::vector<int> visible_children(int m) const;
  bool is_quiet(int m) const;
  bool ends_in_builtin(int m, int end) const;
  std::vector<int> quiet_children(int m) const;
  const std::vector<int>& model_side(int end) const;
  void mark_outside_tail_without_grad(const Call& c, ThreadAttribution& out,
                                      AlternativeSets& alternatives) const;
  void partial_calls(std::vector<uint8_t>& calls_inferred) const;

  const AttributionInput& in_;
  const ModuleTree& tree_;
  const ThreadEvents& th_;
  const std::vector<bool>& scoped_;
  const int t_;
  std::vector<Item> items_;
  std::vector<Call> calls_;
  std::unordered_map<int, int> pl_call_;  // parameterless module -> its latest call
  std::vector<char> restart_ambiguous_;   // per module: see Attribution::calls_inferred
  std::vector<int>
      seen_in_call_;  // per module: the latest call that saw it (rule7_user_module_calls)
  // (parent, child index that ran last + 1) -> the parameterless child chosen out of
  // registration order there (pick_out_of_order)
  std::unordered_map<int64_t, int> after_;
  // model_side(end) for end -1, 0, 1: computed on first use (the tree does not change)
  mutable std::optional<std::vector<int>> model_side_[3];
};

}  // namespace flopsprof::detail::attr
