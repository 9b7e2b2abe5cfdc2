// The aggregation's problems (aggregator.h): every guessed placement and call count named, on
// both sides, and work above its ceiling.
#include "aggregation/aggregator.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "aggregation/collectives.h"
#include "aggregation/regions.h"
#include "formulas/registry.h"

namespace flopsprof::detail::agg {

namespace {

// "the model (Net)" or "'encoder.layer.3' (BertLayer)".
std::string module_who(const ModuleTree& tree, int m) {
  const ModuleNode& n = tree.nodes[m];
  return n.name.empty() ? fmt::format("the model ({})", n.type)
                        : fmt::format("'{}' ({})", n.name, n.type);
}

// Who else may have run module `m`'s guessed ops: the modules that lost them (at most four
// named), the caller, or by default its parent or a submodule.
std::string other_side(const ModuleTree& tree, const std::map<int, std::set<int>>& losers, int m) {
  std::string could;
  bool caller = false;
  int named = 0;
  auto it = losers.find(m);
  if (it != losers.end()) {
    for (int k : it->second) {
      if (k == kOutsideModel) {
        caller = true;
      } else if (k >= 0 && named++ < 4) {
        could += (could.empty() ? "" : ", ") + module_who(tree, k);
      }
    }
  }
  if (named > 4) could += fmt::format(" and {} more", named - 4);
  std::string other;
  if (!could.empty()) other = "the work of " + could + " (which may show too little)";
  if (caller) other += other.empty() ? "the caller's" : ", or the caller's";
  if (other.empty()) {
    const bool leaf = tree.nodes[m].children.empty();
    other = m == 0 ? (leaf ? "the caller's" : "a submodule's or the caller's")
                   : (leaf ? "its parent's" : "a submodule's or its parent's");
  }
  return other;
}

// The variable a ModuleScope around module `m`'s call takes: its attribute's name where that is
// an identifier ("rnn"; not a list's "0"), "model" for the model.
std::string scope_variable(const ModuleTree& tree, int m) {
  const std::string& name = tree.nodes[m].name;
  if (m == 0) return "model";
  std::string var = name.substr(name.rfind('.') + 1);
  if (var.empty() || std::isdigit(static_cast<unsigned char>(var[0]))) var = "module";
  return var;
}

// What a fix makes exact: the placement of the ops given to a module, or its call count.
enum class Exact { kPlacement, kCalls };

// What makes the placement of the ops given to module `m` (and to the others of its `group`), or
// its call count, exact: a user module's scope, or, for a built-in whose calls flopsprof does not
// observe (a GRU, an LSTM, a MultiheadAttention, a Sequential: its forward is LibTorch's), a
// ModuleScope around its calls.
std::string exact_fix(const ModuleTree& tree, int m, bool group, Exact what) {
  const ModuleNode& n = tree.nodes[m];
  const char* them = what == Exact::kCalls ? "it" : "them";
  if (n.builtin != nullptr && !n.calls_observed && !n.starts_observed) {
    const std::string var = scope_variable(tree, m);
    return fmt::format(
        "`flopsprof::ModuleScope scope({}.get());` right before {} call in {} "
        "(include/flopsprof/scope.h) makes {} exact",
        var, group || what == Exact::kCalls ? "each" : "its",
        m == 0 ? "the program" : "the caller's forward", them);
  }
  const char* its = group ? "their" : "its";
  return what == Exact::kCalls
             ? fmt::format(
                   "FLOPSPROF_MODULE() as the first line of {} forward (or of the method "
                   "the program calls) makes {} exact",
                   its, them)
             : fmt::format(
                   "FLOPSPROF_MODULE() as the first line of {0} forward, or of the method "
                   "the program calls (and of {0} submodules'), makes {1} exact",
                   its, them);
}

// What makes the placement of the ops given to module `m` (and likewise to the others of its
// `group`) exact, when op order could not tell them from the work of other modules (`losers`):
// the scopes of the modules involved whose boundaries op order cannot see, less one that encloses
// all the others (an op outside every inner scope is its own; unless the caller may have run it).
// A scope in the enclosing module alone changes nothing: ops after a child's last op are the
// child's or its parent's, and only the child's scope tells (found on TiTaNet: the line named the
// decoder, which received its attention pooling's ops, and FLOPSPROF_MODULE() there cleared
// nothing). When only `m` remains, exact_fix's text.
std::string placement_fix(const ModuleTree& tree, const std::vector<bool>& scoped,
                          const std::map<int, std::set<int>>& losers, int m, bool group) {
  std::vector<int> involved{m};
  bool caller = false;
  if (auto it = losers.find(m); it != losers.end()) {
    for (int k : it->second) {
      if (k >= 0) involved.push_back(k);
      caller = caller || k == kOutsideModel;
    }
  }
  auto encloses = [&](int a, int d) {
    for (int p = tree.nodes[d].parent; p >= 0; p = tree.nodes[p].parent) {
      if (p == a) return true;
    }
    return false;
  };
  std::vector<int> inner;  // unseen boundaries, less the one enclosing all
  for (int a : involved) {
    if (scoped[a] || tree.nodes[a].calls_observed) continue;
    bool encloses_all = !caller && involved.size() > 1;
    for (int d : involved) encloses_all = encloses_all && (d == a || encloses(a, d));
    if (!encloses_all) inner.push_back(a);
  }
  if (inner.empty() || (inner.size() == 1 && inner[0] == m))
    return exact_fix(tree, m, group, Exact::kPlacement);
  std::vector<std::string> users, builtins;
  for (int k : inner) {
    const ModuleNode& n = tree.nodes[k];
    const std::string who = group ? n.type : module_who(tree, k);
    if (n.builtin == nullptr) {
      if (users.size() < 4) users.push_back(who);
    } else if (builtins.size() < 4) {
      builtins.push_back(
          fmt::format("`flopsprof::ModuleScope scope({}.get());` right before each "
                      "call of {} (include/flopsprof/scope.h)",
                      scope_variable(tree, k), who));
    }
  }
  std::string fix;
  if (!users.empty()) {
    fix = fmt::format("FLOPSPROF_MODULE() as the first line of the forward of {}",
                      fmt::join(users, ", "));
  }
  if (!builtins.empty())
    fix += fmt::format("{}{}", fix.empty() ? "" : ", and ", fmt::join(builtins, ", and "));
  const bool m_inner = std::find(inner.begin(), inner.end(), m) != inner.end();
  return fix + " makes them exact" +
         (m_inner ? std::string()
                  : fmt::format(" (a scope in {} alone does not)",
                                group ? tree.nodes[m].type + "'s forward" : module_who(tree, m)));
}

// One problems line per module with forward ops placed by inference (op order), naming the
// modules that may have run them instead (which may show too little) and what would make them
// exact; the most FLOPs first. Modules of one type whose guesses are the same (the layers of a
// stack: the same ops, FLOPs and bytes) share one line when there are 3 or more of them.
void placement_problems(const ModuleTree& tree, const std::vector<ModuleAcc>& acc,
                        const std::vector<bool>& scoped, const std::map<int, std::set<int>>& losers,
                        std::vector<std::string>& problems) {
  std::vector<int> marked;
  for (size_t m = 0; m < acc.size(); ++m) {
    if (acc[m].own_inferred_ops > 0) marked.push_back(static_cast<int>(m));
  }
  std::stable_sort(marked.begin(), marked.end(), [&](int a, int b) {
    return acc[a].own_inferred_flops > acc[b].own_inferred_flops;
  });
  // The same guess: type, ops, FLOPs, bytes and their backward.
  auto key = [&](int m) {
    const ModuleAcc& a = acc[m];
    return std::make_tuple(tree.nodes[m].type, a.own_inferred_ops, a.own_inferred_flops,
                           a.own_inferred_bytes, a.own_inferred_bwd_flops,
                           a.own_inferred_bwd_bytes);
  };
  std::vector<bool> done(acc.size(), false);
  for (int m : marked) {
    if (done[m]) continue;
    std::vector<int> group;
    for (int k : marked) {
      if (!done[k] && k != 0 && m != 0 && key(k) == key(m)) group.push_back(k);
    }
    if (group.size() < 3) group = {m};
    for (int k : group) done[k] = true;
    const ModuleAcc& a = acc[m];
    const std::string backward =
        a.own_inferred_bwd_flops > 0 || a.own_inferred_bwd_bytes > 0
            ? fmt::format(" (and their backward, {} FLOPs, {} B)", a.own_inferred_bwd_flops,
                          a.own_inferred_bwd_bytes)
            : "";
    if (group.size() == 1) {
      problems.push_back(fmt::format(
          "placement inferred from op order: {} op(s), {} FLOPs, {} B{} given to {}; op order "
          "cannot tell whether they are its own or {}. {}",
          a.own_inferred_ops, a.own_inferred_flops, a.own_inferred_bytes, backward,
          module_who(tree, m), other_side(tree, losers, m),
          placement_fix(tree, scoped, losers, m, false)));
      continue;
    }
    std::string names;
    for (size_t g = 0; g < group.size() && g < 4; ++g)
      names += fmt::format("{}'{}'", g ? ", " : "", tree.nodes[group[g]].name);
    if (group.size() > 4) names += fmt::format(" and {} more", group.size() - 4);
    problems.push_back(fmt::format(
        "placement inferred from op order, the same in {} modules of type {} ({}): each was "
        "given {} op(s), {} FLOPs, {} B{}; op order cannot tell whether they are its own or, for "
        "the first, {} (likewise for the others). {}",
        group.size(), tree.nodes[m].type, names, a.own_inferred_ops, a.own_inferred_flops,
        a.own_inferred_bytes, backward, other_side(tree, losers, group[0]),
        placement_fix(tree, scoped, losers, group[0], true)));
  }
}

// Work above one of its ceilings, on one side (compute or memory): how many op rows and modules,
// and the worst of them.
struct Overshoot {
  size_t ops = 0, modules = 0;
  double share = 0;
  std::string what, ceiling;
  double seconds = 0;
  bool guessed = false;  // the worst is a module whose span rests on op order
};

// The op rows and modules (forward and backward) of `r` above their ceilings: [0] compute, [1]
// memory.
std::array<Overshoot, 2> overshoots(const ProfileResult& r, const MachinePeaks& m) {
  std::array<Overshoot, 2> side;
  auto note = [&](const RooflinePoint& p, double seconds, const std::string& what, bool guessed,
                  DType dt) -> bool {
    if (!p.above_ceiling) return false;
    Overshoot& w = side[p.bound == "memory" ? 1 : 0];
    if (p.share > w.share) {
      w.share = p.share;
      w.what = what;
      w.ceiling = p.bound == "memory" ? memory_ceiling_text(m, p)
                                      : fmt::format("the peak FLOP/s ({:.4g} GFLOP/s, {})",
                                                    m.peak_flops(dt) / 1e9, m.flops_source);
      w.seconds = seconds;
      w.guessed = guessed;
    }
    return true;
  };
  for (const OpStats& s : r.ops) {
    if (note(s.roofline, s.latency_s / std::max<uint64_t>(1, s.calls),
             fmt::format("{} ({})", s.name, s.phase), false, s.dtype))
      ++side[s.roofline.bound == "memory" ? 1 : 0].ops;
  }
  for (const ModuleStats& mod : r.modules) {
    const bool guessed = mod.inferred_ops > 0 || mod.maybe_missing_ops > 0 || mod.calls_inferred;
    const std::string who = mod.name.empty() ? fmt::format("the model ({})", mod.type)
                                             : fmt::format("'{}' ({})", mod.name, mod.type);
    bool counted[2] = {false, false};
    for (const auto& [p, seconds, pass] :
         {std::tuple{&mod.roofline, mod.latency_s, "forward"},
          std::tuple{&mod.bwd_roofline, mod.bwd_latency_s, "backward"}}) {
      if (note(*p, seconds / std::max<uint64_t>(1, mod.calls),
               fmt::format("{} in its {}", who, pass), guessed, mod.dtype))
        counted[p->bound == "memory" ? 1 : 0] = true;
    }
    for (int k = 0; k < 2; ++k) side[k].modules += counted[k];
  }
  return side;
}

// The problems line for one side's overshoots (`memory`: the memory side), with the causes that
// fit the worst.
std::string overshoot_line(const Overshoot& w, bool memory, const MachinePeaks& m) {
  const std::string file = m.cache_file.empty() ? "the cache file" : m.cache_file;
  std::vector<std::string> causes;
  if (memory) {
    causes.push_back(
        "its working set sat in a faster level than its size says (data the op before left "
        "in cache, or split over the cores' caches)");
    // A cache level no faster than main memory (a virtual machine's cache shared with other
    // tenants, or larger than this process's share of it): work placed there is held to main
    // memory's ceiling, which no new measurement raises.
    const BandwidthLevel* main = nullptr;
    for (const BandwidthLevel& l : m.bandwidth_by_level) {
      if (l.capacity_bytes == 0) main = &l;
    }
    for (const BandwidthLevel& l : m.bandwidth_by_level) {
      if (main == nullptr || l.capacity_bytes == 0 || l.bytes_per_s <= 0 ||
          l.bytes_per_s > (1 + kCeilingTolerance) * main->bytes_per_s)
        continue;
      causes.push_back(fmt::format(
          "{} measured within {:.0f}% of {} ({} against {}: a cache shared with other tenants "
          "or larger than this process's share of it), so work placed in {} is held to about "
          "{}'s ceiling, and measuring again will not raise it: read its share as one of {}",
          l.name, 100 * kCeilingTolerance, main->name, bandwidth_to_string(l.bytes_per_s),
          bandwidth_to_string(main->bytes_per_s), l.name, main->name, main->name));
      break;
    }
  } else if (m.flops_source.rfind("measured", 0) == 0) {
    causes.push_back(
        "that work's kernels ran faster than the kernels the peak was measured with (the "
        "machine's line above names them)");
  }
  const std::string& source = memory ? m.bandwidth_source : m.flops_source;
  if (source.rfind("measured", 0) == 0) {
    causes.push_back(fmt::format(
        "the {} measured while the machine was busy (delete {} to measure again, or give "
        "{}: ProfilerOptions::roofline, {}, {})",
        memory ? "levels were" : "peak was", file, memory ? "them" : "it",
        memory ? "--peak-bandwidth L1:32K=...,DRAM=..." : "--peak-flops",
        memory ? "FLOPSPROF_PEAK_BANDWIDTH" : "FLOPSPROF_PEAK_FLOPS"));
  } else {
    causes.push_back(fmt::format("the {} given is lower than this machine reaches",
                                 memory ? "bandwidth" : "peak"));
  }
  if (w.guessed)
    causes.push_back(
        "or a guess shrank its span (op order placed some of its work: see its "
        "mark)");
  if (w.seconds > 0 && w.seconds < 1e-5) causes.push_back("the timer's noise on a call this short");
  std::string counts;
  if (w.ops > 0) counts = fmt::format("{} op row(s)", w.ops);
  if (w.modules > 0)
    counts += fmt::format("{}{} module(s)", counts.empty() ? "" : " and ", w.modules);
  return fmt::format(
      "roofline: {} ran above {} (more than {:.0f}% over; marked above_ceiling): the worst, {} "
      "at {:.0f}% of {}; the likely causes: {}",
      counts, memory ? "their memory ceiling" : "the peak FLOP/s", 100 * kCeilingTolerance, w.what,
      100 * w.share, w.ceiling, fmt::join(causes, "; or "));
}

}  // namespace

// Inferred placements and inferred call counts, named: every guess, on both sides.
void Aggregator::inference_problems() {
  placement_problems(tree, acc, at.scoped, losers, r.problems);
  call_count_problems();
  outside_problems();
}

void Aggregator::call_count_problems() {
  std::vector<std::string> hidden;   // kCallsHidden: one line for all of them
  std::vector<std::string> guessed;  // kCallsGuessed: one line, the first six named
  // the lines of several modules (user modules only: a built-in's calls are never guessed or
  // hidden) share the user module's fix; a module's own line gets its own (a Sequential called
  // twice in a row: a ModuleScope around each call, its forward being LibTorch's)
  const std::string fix =
      !in.call_fix.empty()
          ? in.call_fix
          : "FLOPSPROF_MODULE() as the first line of its forward (or of the method the program "
            "calls) makes it exact";
  for (int m = 0; m < num_modules; ++m) {
    if (at.scoped[m] || tree.nodes[m].ignored) continue;
    const uint8_t why = at.calls_inferred[m];
    if (why == 0 && !may_have_run_uncalled(m)) continue;
    const std::string who = module_who(tree, m);
    const std::string own_fix =
        !in.call_fix.empty() ? in.call_fix : exact_fix(tree, m, false, Exact::kCalls);
    if (why & kCallsRestart) {
      r.problems.push_back(
          m == 0 ? fmt::format("the model's call count ({}) is inferred: its first submodule ran "
                               "again with nothing between that shows the forward returned "
                               "(the model called twice in a row, or a block applied twice in "
                               "one forward); {}",
                               acc[m].calls, own_fix)
                 : fmt::format("the call count of {}, {}, is inferred: its first submodule ran "
                               "again with nothing between that shows it returned (the module "
                               "called again, or its forward applying that submodule twice); {}",
                               who, acc[m].calls, own_fix));
    }
    if (why & kCallsPartial) {
      r.problems.push_back(fmt::format(
          "the call count of {}, {}, is inferred: a call of it ran only some of its layers (a "
          "method other than forward, layers skipped, or its submodules called directly); {}",
          who, acc[m].calls, own_fix));
    }
    if (why & kCallsNone) {
      r.problems.push_back(fmt::format(
          "{} shows no call while its submodules ran: they were called directly, or its calls "
          "could not be seen; {}",
          who, own_fix));
    }
    if (why & kCallsGuessed) guessed.push_back(fmt::format("{} ({})", who, acc[m].calls));
    if (why & kCallsHidden) hidden.push_back(who);
    if (may_have_run_uncalled(m)) {
      r.problems.push_back(fmt::format(
          "{} shows no call, but its forward may have run {} op(s), {} FLOPs that op order "
          "gave to another module: its calls and work may be too small; {}",
          who, acc[m].maybe_missing_ops, acc[m].maybe_missing_flops, own_fix));
    }
  }
  if (!guessed.empty()) {
    const size_t n = guessed.size();
    std::string names = fmt::format(
        "{}", fmt::join(guessed.begin(), guessed.begin() + std::min<size_t>(n, 6), ", "));
    if (n > 6) names += fmt::format(" and {} more", n - 6);
    r.problems.push_back(fmt::format(
        "the call count{} of {} (calls in parentheses) rest{} only on the ops op order gave {} "
        "(no parameters, no observed call): {} forward may have run more or less often, or not "
        "at all; {}",
        n == 1 ? "" : "s", names, n == 1 ? "s" : "", n == 1 ? "it" : "them",
        n == 1 ? "its" : "each one's", fix));
  }
  if (!hidden.empty()) {
    r.problems.push_back(fmt::format(
        "{} show{} no call, nor does any of {} submodules, while the module holding {} ran: "
        "{} forward may have run without an op that shows it (one that returns its input, e.g. "
        "a switched-off block), or not at all; {}",
        fmt::join(hidden, ", "), hidden.size() == 1 ? "s" : "",
        hidden.size() == 1 ? "its" : "their", hidden.size() == 1 ? "it" : "them",
        hidden.size() == 1 ? "its" : "each one's", fix));
  }
}

void Aggregator::outside_problems() {
  if (unknown_inside.ops > 0) {
    // Those between observed work of one module's call are that module's by evidence: only
    // the ones op order placed are guesses.
    const UnknownAcc& u = unknown_inside;
    std::string how;
    if (u.inferred_ops > 0) {
      how = fmt::format("{} op(s), {} FLOPs of them placed by op order (marked)", u.inferred_ops,
                        u.inferred_flops);
    }
    if (u.ops > u.inferred_ops) {
      how += fmt::format(
          "{}{} op(s), {} FLOPs between observed work of the module they are "
          "counted in (its own, by evidence)",
          how.empty() ? "" : ", ", u.ops - u.inferred_ops, u.flops - u.inferred_flops);
    }
    r.problems.push_back(fmt::format(
        "{} op(s), {} FLOPs ran in calls of modules that are in no profiled model's tree (a "
        "member never passed to register_module(), a module built in forward, or a model no "
        "profiler knows) and are counted in the model: {}; their parameters are not in its "
        "parameter count; register_module() the member, profile the other model too, or use "
        "get_model_profile, to make it exact",
        u.ops, u.flops, how));
  }
  if (nested_unknown_calls > 0 && unknown_inside.ops == 0 && unknown_outside.ops == 0) {
    r.problems.push_back(fmt::format(
        "{} call(s) of modules that are in no profiled model's tree (a member never passed to "
        "register_module(), or a module built in forward) ran inside calls of the model's "
        "modules: their ops are counted in the module that called them, but their parameters "
        "are not in the parameter count; register_module() the member to count them",
        nested_unknown_calls));
  }
  if (unknown_outside.ops > 0) {
    r.problems.push_back(fmt::format(
        "{} op(s), {} FLOPs ran in calls of modules that are in no profiled model's tree and "
        "stayed outside the model{}; register_module() the member, profile the other model "
        "too, or use get_model_profile, to make it exact",
        unknown_outside.ops, unknown_outside.flops,
        outside.inferred_ops > 0 ? " (those next to its forward are marked: the model may lack "
                                   "them)"
                                 : ""));
  }
  if (outside.inferred_ops > 0) {
    r.problems.push_back(fmt::format(
        "placement inferred from op order: {} op(s), {} FLOPs, {} B are counted outside the "
        "model "
        "though its forward may have run them (ops that compute only from the model's results "
        "after it read data from outside, e.g. an entropy after a gather of actions; calls of "
        "modules in no profiled tree next to its forward; a dtype cast right after it; the "
        "ops right before it back to one only a caller runs, such as a mask or a cast of the "
        "input at the top of its forward or the caller's preparation of its batch), so the model "
        "may show too little; "
        "FLOPSPROF_MODULE() as the first line of the model's method the program calls (forward "
        "or another) makes them exact",
        outside.inferred_ops, outside.inferred_flops, outside.inferred_bytes));
  }
  // The caller's side of the ops given to the root at its ends: said once, by the root's own line
  // (placement_problems: "given to the model ...; its own or the caller's") when that line is
  // about these ops alone (a generator's `tanh` after its last submodule).
  const ModuleAcc* root = acc.empty() ? nullptr : &acc[0];
  const bool said_by_root = root != nullptr &&
                            root->own_inferred_ops == outside.maybe_missing_ops &&
                            root->own_inferred_flops == outside.maybe_missing_flops &&
                            root->own_inferred_bytes == outside.maybe_missing_bytes;
  if (outside.maybe_missing_ops > 0 && !said_by_root) {
    r.problems.push_back(fmt::format(
        "placement inferred from op order: {} op(s), {} FLOPs, {} B right before or after the "
        "model's "
        "forward were given to the model though they may be the caller's work (the outside may "
        "show too little); FLOPSPROF_MODULE() as the first line of the model's forward, or "
        "get_model_profile, makes them exact",
        outside.maybe_missing_ops, outside.maybe_missing_flops, outside.maybe_missing_bytes));
  }
}

// Work above its ceiling (RooflinePoint::above_ceiling: over 110% of it), op rows (forward,
// backward, step, outside) and modules (forward and backward), each side apart: one problems
// line for the compute side (the peak FLOP/s), one for the memory side (a level's bandwidth),
// counting them all and naming the worst, with the causes that fit it.
void Aggregator::ceiling_problems() {
  const MachinePeaks& m = in.machine;
  if (!m.doubt.empty()) {
    r.problems.push_back(fmt::format(
        "roofline: this machine's peaks look wrong even measured twice ({}): probably measured "
        "while the machine was busy; shares against them are unreliable (delete {} on an idle "
        "machine to measure again, or give them: ProfilerOptions::roofline, --peak-flops, "
        "--peak-bandwidth L1:32K=...,DRAM=...)",
        m.doubt, m.cache_file.empty() ? "the peaks cache" : m.cache_file));
  }
  const std::array<Overshoot, 2> side = overshoots(r, m);
  for (int k = 0; k < 2; ++k) {
    if (side[k].ops + side[k].modules > 0) r.problems.push_back(overshoot_line(side[k], k == 1, m));
  }
}

}  // namespace flopsprof::detail::agg
