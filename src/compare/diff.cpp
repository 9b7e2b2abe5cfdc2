// Two profiles matched module by module and op by op (docs/diff.md): exact deltas of the counts,
// latency deltas against the run-to-run spread, and the workloads' differences as warnings.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "aggregation/spread.h"
#include "flopsprof/diff.h"
#include "flopsprof/error.h"
#include "reports/schema.h"

namespace flopsprof {

int64_t CountDelta::delta() const {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (next >= base)
    return next - base > kMax ? std::numeric_limits<int64_t>::max()
                              : static_cast<int64_t>(next - base);
  return base - next > kMax ? std::numeric_limits<int64_t>::min()
                            : -static_cast<int64_t>(base - next);
}

namespace {
double percent_of(double base, double next) {
  if (base == next) return 0;
  if (base == 0)
    return next > 0 ? std::numeric_limits<double>::infinity()
                    : -std::numeric_limits<double>::infinity();
  return 100.0 * (next - base) / std::fabs(base);
}
}  // namespace

double CountDelta::percent() const {
  return percent_of(static_cast<double>(base), static_cast<double>(next));
}
double TimeDelta::percent() const { return percent_of(base, next); }
double RateDelta::percent() const { return percent_of(base, next); }

const TotalDiff* ProfileDiff::total(const std::string& key) const {
  for (const TotalDiff& t : totals) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

const RegionDiff* ProfileDiff::region(const std::string& name) const {
  for (const RegionDiff& g : regions) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

const ModuleDiff* ProfileDiff::module(const std::string& name) const {
  for (const ModuleDiff& m : modules) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

namespace {

bool missing(const LoadedProfile& p, const char* what) {
  return std::find(p.missing.begin(), p.missing.end(), what) != p.missing.end();
}

CountDelta counts(uint64_t base, uint64_t next, bool known = true) {
  CountDelta d;
  d.base = base;
  d.next = next;
  d.known = known;
  return d;
}

// Whether the diff compares medians per iteration (ProfileDiff::statistic): both profiles
// repeated their iterations, and neither has regions (whose root calls are prefill and decode
// steps, not iterations).
bool medians(const ProfileResult& x, const ProfileResult& y) {
  return x.fwd_spread.samples >= 2 && y.fwd_spread.samples >= 2 && x.regions.empty() &&
         y.regions.empty();
}

// A latency in the diff's one statistic: medians per iteration (`per_iteration`; a side with no
// samples of it has none: 0), noise when both sides' ranges overlap; else totals.
TimeDelta times(double base_total, const LatencySpread& bs, double next_total,
                const LatencySpread& ns, bool per_iteration, bool known = true) {
  TimeDelta d;
  d.known = known;
  if (per_iteration) {
    d.repeated = true;
    d.base = bs.samples > 0 ? bs.median_s : 0.0;
    d.next = ns.samples > 0 ? ns.median_s : 0.0;
    d.noise = bs.samples >= 2 && ns.samples >= 2 && bs.min_s <= ns.max_s && ns.min_s <= bs.max_s;
  } else {
    d.base = base_total;
    d.next = next_total;
  }
  return d;
}

// The name a base module has in the new profile, after the renames (a renamed module's
// submodules move with it).
std::string renamed(const std::string& name, const DiffOptions& o) {
  for (const auto& [from, to] : o.renames) {
    if (name == from) return to;
    if (name.size() > from.size() && name.compare(0, from.size(), from) == 0 &&
        name[from.size()] == '.')
      return to + name.substr(from.size());
  }
  return name;
}

std::vector<OpDiff> match_ops(const std::vector<OpStats>& x, const std::vector<OpStats>& y,
                              bool bytes);

void fill(ModuleDiff& d, const ModuleStats* b, const ModuleStats* n, const LoadedProfile& bp,
          const LoadedProfile& np) {
  const bool per_iteration = medians(bp.result, np.result);
  static const ModuleStats kNone;
  const ModuleStats& x = b ? *b : kNone;
  const ModuleStats& y = n ? *n : kNone;
  const bool bwd = !missing(bp, "backward") && !missing(np, "backward");
  const bool bytes = !missing(bp, "bytes") && !missing(np, "bytes");
  d.params = counts(x.params, y.params);
  d.calls = counts(x.calls, y.calls);
  d.flops = counts(x.flops, y.flops);
  d.macs = counts(x.macs, y.macs);
  d.bwd_flops = counts(x.bwd_flops, y.bwd_flops, bwd);
  d.bytes = counts(x.bytes, y.bytes, bytes);
  d.latency = times(x.latency_s, x.fwd_spread, y.latency_s, y.fwd_spread, per_iteration);
  d.bwd_latency =
      times(x.bwd_latency_s, x.bwd_spread, y.bwd_latency_s, y.bwd_spread, per_iteration, bwd);
  if (!b) {
    d.status = ModuleDiff::Status::kAdded;
  } else if (!n) {
    d.status = ModuleDiff::Status::kRemoved;
  } else if (x.type != y.type || d.params.changed() || d.calls.changed() || d.flops.changed() ||
             d.macs.changed() || d.bwd_flops.changed() || d.bytes.changed()) {
    d.status = ModuleDiff::Status::kChanged;
  }
  d.base_type = b ? x.type : "";
  d.new_type = n ? y.type : "";
  if (!missing(bp, "module_ops") && !missing(np, "module_ops"))
    d.ops = match_ops(x.ops, y.ops, bytes);
}

std::string workload_inputs(const Workload& w) {
  if (w.inputs.empty()) return "(not recorded)";
  std::string s;
  for (const std::string& i : w.inputs) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// One side's workload in a line.
std::string describe(const LoadedProfile& p) {
  const ProfileResult& r = p.result;
  const uint64_t it = r.modules.empty() ? 0 : r.modules[0].calls;
  std::string s = fmt::format("batch {}; {} iteration{}", r.batch_size, it, it == 1 ? "" : "s");
  if (missing(p, "workload"))
    return s + fmt::format("; no workload recorded (schema_version {})", p.schema_version);
  const Workload& w = r.workload;
  return fmt::format(
      "inputs {}; {}; {} run{}; {} intra-op threads; LibTorch {} {}; {}; flopsprof {}",
      workload_inputs(w), s, w.runs, w.runs == 1 ? "" : "s", w.intra_op_threads, w.libtorch_version,
      w.build_type, w.device, w.flopsprof_version);
}

// A workload field that differs between the sides, as a warning.
void differ(ProfileDiff& d, const std::string& what, const std::string& x, const std::string& y) {
  if (x != y)
    d.warnings.push_back(fmt::format("workload differs: {}: {} (base) vs {} (new)", what, x, y));
}

// What a side does not record: its workload, backward, bytes, memory.
void side_lacks(ProfileDiff& d, const LoadedProfile& b, const LoadedProfile& n) {
  for (const LoadedProfile* p : {&b, &n}) {
    const char* side = p == &b ? "base" : "new";
    if (missing(*p, "workload")) {
      d.warnings.push_back(fmt::format(
          "{} ({}) records no workload (schema_version {}): whether both ran the same inputs, "
          "threads and versions cannot be checked",
          side, p->source, p->schema_version));
    }
    if (missing(*p, "backward"))
      d.warnings.push_back(
          fmt::format("{} ({}) records no backward: its deltas are unknown", side, p->source));
    if (missing(*p, "bytes"))
      d.warnings.push_back(
          fmt::format("{} ({}) records no bytes moved: their deltas are unknown", side, p->source));
  }
  if (!missing(b, "memory") != !missing(n, "memory")) {
    d.warnings.push_back(fmt::format("memory was tracked in {} only: the peak's delta is unknown",
                                     missing(b, "memory") ? "new" : "base"));
  }
}

// Both sides' recorded workloads, field by field.
void workloads(ProfileDiff& d, const Workload& p, const Workload& q) {
  if (workload_inputs(p) != workload_inputs(q) && p.inputs_source != q.inputs_source) {
    d.warnings.push_back(fmt::format(
        "workload may differ: inputs: {} (base, {}) vs {} (new, {}); recorded in different "
        "ways, the difference may be in the recording, not in the workload",
        workload_inputs(p), p.inputs_source.empty() ? "not recorded" : p.inputs_source,
        workload_inputs(q), q.inputs_source.empty() ? "not recorded" : q.inputs_source));
  } else {
    differ(d, "inputs", workload_inputs(p), workload_inputs(q));
  }
  differ(d, "intra-op threads", std::to_string(p.intra_op_threads),
         std::to_string(q.intra_op_threads));
  differ(d, "LibTorch", p.libtorch_version, q.libtorch_version);
  differ(d, "build type", p.build_type, q.build_type);
  differ(d, "device", p.device, q.device);
  differ(d, "flopsprof", p.flopsprof_version, q.flopsprof_version);
  differ(d, "profiled step", std::to_string(p.profile_step), std::to_string(q.profile_step));
  if (!p.capture.empty() && !q.capture.empty()) {
    differ(d, "capture (each path's own cost is in the latencies)", p.capture, q.capture);
  }
}

// How latency deltas should be read: totals beside regions, or single samples.
void latency_reading(ProfileDiff& d, const ProfileResult& x, const ProfileResult& y) {
  if (!x.regions.empty() || !y.regions.empty()) {
    d.warnings.push_back(
        "a profile has regions (prefill, decode): latencies are whole-profile totals; per window "
        "and per token, see the regions table");
  } else if (!medians(x, y)) {
    d.warnings.push_back(
        "latency deltas are single samples (no repeated runs in both profiles: profile with "
        "`flopsprof MODEL --profile-runs N`, or in C++ several iterations (FlopsProfiler::"
        "iteration()) or several profiles combined (flopsprof::combine_runs)): run-to-run noise "
        "is not known");
  }
}

// Inputs unknown on a side, and every module's FLOPs scaled by one factor: a batch or a sequence
// length changed, most likely, not the model.
void scaled_work(ProfileDiff& d, const ProfileResult& x, const ProfileResult& y) {
  if (!x.workload.inputs.empty() && !y.workload.inputs.empty()) return;
  std::unordered_map<std::string, const ModuleStats*> base_by_name;
  for (const ModuleStats& m : x.modules) base_by_name.emplace(m.name, &m);
  double factor = 0;
  size_t matched = 0;
  bool same = true;
  for (const ModuleStats& m : y.modules) {
    auto it = base_by_name.find(m.name);
    if (it == base_by_name.end() || it->second->flops == 0 || m.flops == 0) continue;
    const double f = static_cast<double>(m.flops) / static_cast<double>(it->second->flops);
    if (matched++ == 0) factor = f;
    same = same && std::fabs(f - factor) <= 1e-9 * factor;
  }
  if (same && matched >= 2 && std::fabs(factor - 1) > 1e-9) {
    d.warnings.push_back(fmt::format(
        "workload probably differs: every module's FLOPs changed by the same factor (x{:.4g}), "
        "as a batch or sequence length changes them; the inputs were not recorded on a side "
        "(pass ProfilerOptions::inputs, or profile with get_model_profile)",
        factor));
  }
}

// The workloads' differences, what a side lacks, and how latency deltas should be read.
void warnings(ProfileDiff& d, const LoadedProfile& b, const LoadedProfile& n) {
  const ProfileResult& x = b.result;
  const ProfileResult& y = n.result;
  side_lacks(d, b, n);
  differ(d, "batch_size", std::to_string(x.batch_size), std::to_string(y.batch_size));
  const uint64_t xi = x.modules.empty() ? 0 : x.modules[0].calls;
  const uint64_t yi = y.modules.empty() ? 0 : y.modules[0].calls;
  differ(d, "iterations (forward calls of the root)", std::to_string(xi), std::to_string(yi));
  if (!missing(b, "workload") && !missing(n, "workload")) workloads(d, x.workload, y.workload);
  latency_reading(d, x, y);
  scaled_work(d, x, y);
}

void totals(ProfileDiff& d, const LoadedProfile& b, const LoadedProfile& n) {
  const ProfileResult& x = b.result;
  const ProfileResult& y = n.result;
  const bool bwd = !missing(b, "backward") && !missing(n, "backward");
  const bool bytes = !missing(b, "bytes") && !missing(n, "bytes");
  auto count = [&](const char* key, uint64_t p, uint64_t q, bool known = true) {
    TotalDiff t;
    t.key = key;
    t.count = counts(p, q, known);
    d.totals.push_back(std::move(t));
  };
  auto time = [&](const char* key, TimeDelta td) {
    TotalDiff t;
    t.key = key;
    t.is_time = true;
    t.time = td;
    d.totals.push_back(std::move(t));
  };
  count("params", x.params, y.params);
  count("fwd_flops", x.flops, y.flops);
  count("fwd_macs", x.macs, y.macs);
  count("bwd_flops", x.bwd_flops, y.bwd_flops, bwd);
  count("bwd_macs", x.bwd_macs, y.bwd_macs, bwd);
  count("step_flops", x.step_flops, y.step_flops, bwd);
  count("fwd_bytes", x.fwd_bytes, y.fwd_bytes, bytes);
  const bool per_iteration = medians(x, y);
  time("fwd_latency_s",
       times(x.duration_s, x.fwd_spread, y.duration_s, y.fwd_spread, per_iteration));
  time("bwd_latency_s",
       times(x.bwd_latency_s, x.bwd_spread, y.bwd_latency_s, y.bwd_spread, per_iteration, bwd));
  time("step_latency_s",
       times(x.step_latency_s, x.step_spread, y.step_latency_s, y.step_spread, per_iteration, bwd));
  // The iteration: the sum of the parts (medians when every part repeated).
  TimeDelta it;
  for (const char* k : {"fwd_latency_s", "bwd_latency_s", "step_latency_s"}) {
    const TimeDelta& p = d.total(k)->time;
    it.known = it.known && p.known;
    it.base += p.base;
    it.next += p.next;
  }
  const TimeDelta& f = d.total("fwd_latency_s")->time;
  const bool parts_repeated = f.repeated &&
                              (!x.has_backward || d.total("bwd_latency_s")->time.repeated) &&
                              (!x.has_step || d.total("step_latency_s")->time.repeated);
  it.repeated = parts_repeated;
  time("iter_latency_s", it);
  TotalDiff mem;
  mem.key = "memory.peak_bytes";
  mem.count = counts(static_cast<uint64_t>(std::max<int64_t>(0, x.memory.peak_bytes)),
                     static_cast<uint64_t>(std::max<int64_t>(0, y.memory.peak_bytes)),
                     x.memory.tracked && y.memory.tracked);
  d.totals.push_back(mem);
}

void modules(ProfileDiff& d, const LoadedProfile& b, const LoadedProfile& n, const DiffOptions& o) {
  const ProfileResult& x = b.result;
  const ProfileResult& y = n.result;
  std::map<std::string, int> base_by_name;  // by new name
  for (size_t i = 0; i < x.modules.size(); ++i) {
    const std::string name = i == 0 ? "" : renamed(x.modules[i].name, o);
    base_by_name.emplace(name, static_cast<int>(i));
  }
  std::set<int> matched;
  std::map<std::string, int> new_by_name;
  for (size_t i = 0; i < y.modules.size(); ++i)
    new_by_name.emplace(y.modules[i].name, static_cast<int>(i));
  new_by_name[""] = 0;  // the roots always match
  for (const auto& [name, i] : base_by_name) {
    if (new_by_name.count(name)) matched.insert(i);
  }
  // Each removed module goes after the new module its nearest matched base ancestor became.
  std::vector<std::vector<int>> removed_under(y.modules.size());
  for (size_t i = 1; i < x.modules.size(); ++i) {
    if (matched.count(static_cast<int>(i))) continue;
    int a = x.modules[i].parent;
    while (a > 0 && !matched.count(a)) a = x.modules[a].parent;
    const std::string an = a <= 0 ? "" : renamed(x.modules[a].name, o);
    removed_under[new_by_name.at(an)].push_back(static_cast<int>(i));
  }
  // New tree order; a matched module's removed base descendants follow its subtree.
  std::vector<int> open;  // new modules whose subtree is being listed
  auto close_until = [&](int depth) {
    while (!open.empty() && y.modules[open.back()].depth >= depth) {
      for (int r : removed_under[open.back()]) {
        ModuleDiff m;
        m.name = renamed(x.modules[r].name, o);
        m.base_name = x.modules[r].name;
        m.depth = x.modules[r].depth;
        fill(m, &x.modules[r], nullptr, b, n);
        d.modules.push_back(std::move(m));
      }
      open.pop_back();
    }
  };
  for (size_t i = 0; i < y.modules.size(); ++i) {
    const ModuleStats& s = y.modules[i];
    close_until(s.depth);
    auto it = base_by_name.find(i == 0 ? "" : s.name);
    const ModuleStats* base = it != base_by_name.end() ? &x.modules[it->second] : nullptr;
    ModuleDiff m;
    m.name = s.name;
    m.base_name = base ? base->name : "";
    m.depth = s.depth;
    fill(m, base, &s, b, n);
    d.modules.push_back(std::move(m));
    open.push_back(static_cast<int>(i));
  }
  close_until(0);
  // Shares of the root's delta only where that delta is outside the noise: not inside the
  // run-to-run spread, and with single samples at least 1% of the root's latency (a delta of
  // noise made shares of -144,779%).
  if (d.modules.empty()) return;
  const TimeDelta& r = d.modules[0].latency;
  const double root = r.delta();
  const bool outside_noise = r.known && root != 0 && !r.noise &&
                             (r.repeated || std::fabs(root) >= 0.01 * std::max(r.base, r.next));
  for (ModuleDiff& m : d.modules) {
    m.share_known = outside_noise && m.latency.known;
    m.share_of_delta = m.share_known ? m.latency.delta() / root : 0;
  }
}

// The regions matched by name: the new profile's order, then the base's others. A region in one
// profile only has nothing on the other side (0, known; its rates unknown there).
void regions(ProfileDiff& d, const ProfileResult& x, const ProfileResult& y) {
  std::vector<std::pair<const RegionStats*, const RegionStats*>> pairs;
  std::unordered_map<std::string, const RegionStats*> base_by_name, new_by_name;
  for (const RegionStats& g : x.regions) base_by_name[g.name] = &g;  // the last of a name
  for (const RegionStats& n : y.regions) {
    new_by_name.emplace(n.name, &n);
    auto it = base_by_name.find(n.name);
    pairs.emplace_back(it != base_by_name.end() ? it->second : nullptr, &n);
  }
  for (const RegionStats& g : x.regions) {
    if (!new_by_name.count(g.name)) pairs.emplace_back(&g, nullptr);
  }
  static const RegionStats kNone;
  for (const auto& [b, n] : pairs) {
    const RegionStats& p = b ? *b : kNone;
    const RegionStats& q = n ? *n : kNone;
    RegionDiff g;
    g.name = n ? q.name : p.name;
    g.windows = counts(p.windows, q.windows);
    g.tokens = counts(p.tokens, q.tokens, (!b || p.tokens > 0) && (!n || q.tokens > 0));
    g.flops = counts(p.flops, q.flops);
    g.bwd_flops = counts(p.bwd_flops, q.bwd_flops);
    g.bytes = counts(p.bytes, q.bytes);
    // Per window (medians) when both sides have 2+ windows, else totals; per token from the
    // same samples: a window's median over its tokens per window, or the total over all tokens.
    const bool per_window = p.spread.samples >= 2 && q.spread.samples >= 2;
    g.latency = times(p.duration_s, p.spread, q.duration_s, q.spread, per_window);
    auto per_token = [&](const RegionStats& s, double latency) {
      if (s.tokens == 0 || s.windows == 0) return 0.0;
      return per_window ? latency * static_cast<double>(s.windows) / static_cast<double>(s.tokens)
                        : s.duration_s / static_cast<double>(s.tokens);
    };
    g.latency_per_token.base = per_token(p, g.latency.base);
    g.latency_per_token.next = per_token(q, g.latency.next);
    g.latency_per_token.repeated = per_window;
    g.latency_per_token.known = g.latency_per_token.base > 0 && g.latency_per_token.next > 0;
    g.tokens_per_s = RateDelta{p.tokens_per_s, q.tokens_per_s};
    g.mfu = RateDelta{p.mfu, q.mfu};
    g.mbu = RateDelta{p.mbu, q.mbu};
    if (b && n && (g.windows.changed() || g.tokens.changed())) {
      d.warnings.push_back(fmt::format(
          "workload differs: region '{}': {} window(s), {} token(s) (base) vs {} window(s), {} "
          "token(s) (new): compare its per-token numbers",
          g.name, p.windows, p.tokens, q.windows, q.tokens));
    }
    g.status = !b   ? DiffStatus::kAdded
               : !n ? DiffStatus::kRemoved
               : g.windows.changed() || g.tokens.changed() || g.flops.changed() ||
                       g.bwd_flops.changed() || g.bytes.changed()
                   ? DiffStatus::kChanged
                   : DiffStatus::kSame;
    d.regions.push_back(std::move(g));
  }
}

// Ops of two tables matched by (name, phase), largest |latency delta| first.
std::vector<OpDiff> match_ops(const std::vector<OpStats>& x, const std::vector<OpStats>& y,
                              bool bytes) {
  std::map<std::pair<std::string, std::string>, std::pair<const OpStats*, const OpStats*>> by;
  for (const OpStats& o : x) by[{o.name, o.phase}].first = &o;
  for (const OpStats& o : y) by[{o.name, o.phase}].second = &o;
  static const OpStats kNone;
  std::vector<OpDiff> out;
  for (const auto& [key, sides] : by) {
    const OpStats& p = sides.first ? *sides.first : kNone;
    const OpStats& q = sides.second ? *sides.second : kNone;
    OpDiff o;
    o.name = key.first;
    o.phase = key.second;
    o.calls = counts(p.calls, q.calls);
    o.flops = counts(p.flops, q.flops);
    o.macs = counts(p.macs, q.macs);
    o.bytes = counts(p.bytes, q.bytes, bytes);
    o.latency.base = p.latency_s;
    o.latency.next = q.latency_s;
    o.status = !sides.first    ? DiffStatus::kAdded
               : !sides.second ? DiffStatus::kRemoved
               : o.calls.changed() || o.flops.changed() || o.macs.changed() || o.bytes.changed()
                   ? DiffStatus::kChanged
                   : DiffStatus::kSame;
    out.push_back(std::move(o));
  }
  std::stable_sort(out.begin(), out.end(), [](const OpDiff& a, const OpDiff& b) {
    return std::fabs(a.latency.delta()) > std::fabs(b.latency.delta());
  });
  return out;
}

}  // namespace

// A side has no time (an exported program counted from its graph): no latency is compared, and
// the warnings say so instead of how to read latency deltas.
void untimed(ProfileDiff& d, const char* which) {
  auto unknown = [](TimeDelta& t) { t = TimeDelta{0, 0, false, false, false}; };
  for (TotalDiff& t : d.totals) {
    if (t.is_time) unknown(t.time);
  }
  for (ModuleDiff& m : d.modules) {
    unknown(m.latency);
    unknown(m.bwd_latency);
    m.share_known = false;
    m.share_of_delta = 0;
    for (OpDiff& o : m.ops) unknown(o.latency);
  }
  for (OpDiff& o : d.ops) unknown(o.latency);
  for (RegionDiff& g : d.regions) {
    unknown(g.latency);
    unknown(g.latency_per_token);
  }
  const std::string single = "latency deltas are single samples";
  d.warnings.erase(std::remove_if(d.warnings.begin(), d.warnings.end(),
                                  [&](const std::string& w) { return w.rfind(single, 0) == 0; }),
                   d.warnings.end());
  d.warnings.push_back(fmt::format(
      "{} no time (an exported program counted from its graph, not run): latencies are not "
      "compared, only counts, bytes and parameters",
      which));
}

ProfileDiff diff(const LoadedProfile& base, const LoadedProfile& next, const DiffOptions& options) {
  if (base.result.modules.empty() || next.result.modules.empty())
    throw Error("diff: a profile has no modules (is it a finished profile?)");
  for (const auto& [from, to] : options.renames) {
    bool found = false;
    for (const ModuleStats& m : base.result.modules) found = found || m.name == from;
    if (!found || from.empty() || to.empty()) {
      throw Error(
          fmt::format("--rename {}={}: the base profile has no module '{}'; name a module "
                      "of the base (dotted path) and its new name",
                      from, to, from));
    }
  }
  ProfileDiff d;
  d.base_source = base.source;
  d.new_source = next.source;
  d.statistic = medians(base.result, next.result) ? "median per iteration" : "total";
  d.base_workload = describe(base);
  d.new_workload = describe(next);
  warnings(d, base, next);
  totals(d, base, next);
  modules(d, base, next, options);
  d.ops = match_ops(base.result.ops, next.result.ops,
                    !missing(base, "bytes") && !missing(next, "bytes"));
  regions(d, base.result, next.result);
  if (!base.result.timed || !next.result.timed) {
    untimed(d, !base.result.timed && !next.result.timed ? "both profiles have"
               : base.result.timed                      ? "the new profile has"
                                                        : "the base profile has");
  }
  return d;
}

ProfileDiff diff(const ProfileResult& base, const ProfileResult& next, const DiffOptions& options) {
  LoadedProfile b, n;
  b.result = base;
  b.source = "base";
  b.schema_version = detail::kProfileSchemaVersion;
  n.result = next;
  n.source = "new";
  n.schema_version = detail::kProfileSchemaVersion;
  if (!base.memory.tracked) b.missing.push_back("memory");
  if (!next.memory.tracked) n.missing.push_back("memory");
  return diff(b, n, options);
}

ProfileResult combine_runs(const std::vector<ProfileResult>& runs) {
  if (runs.empty()) throw Error("combine_runs: no runs given");
  ProfileResult r = runs.front();
  const size_t n = runs.size();
  for (const ProfileResult& x : runs) {
    if (x.modules.size() != r.modules.size())
      throw Error("combine_runs: the runs profiled different models (module counts differ)");
    for (size_t m = 0; m < r.modules.size(); ++m) {
      if (x.modules[m].name != r.modules[m].name)
        throw Error(fmt::format("combine_runs: the runs profiled different models ('{}' vs '{}')",
                                r.modules[m].name, x.modules[m].name));
    }
  }
  auto over = [&](auto get) {
    std::vector<double> v;
    v.reserve(n);
    for (const ProfileResult& x : runs) v.push_back(get(x));
    return detail::spread_of(std::move(v));
  };
  if (n < 2) return r;
  for (size_t m = 0; m < r.modules.size(); ++m) {
    r.modules[m].fwd_spread = over([&](const ProfileResult& x) { return x.modules[m].latency_s; });
    if (r.has_backward)
      r.modules[m].bwd_spread =
          over([&](const ProfileResult& x) { return x.modules[m].bwd_latency_s; });
  }
  r.fwd_spread = r.modules[0].fwd_spread;
  if (r.has_backward) r.bwd_spread = over([](const ProfileResult& x) { return x.bwd_latency_s; });
  if (r.has_step) r.step_spread = over([](const ProfileResult& x) { return x.step_latency_s; });
  r.workload.runs = n;
  return r;
}

}  // namespace flopsprof
