// The diff as text for a terminal (docs/diff.md).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "flopsprof/diff.h"

namespace flopsprof {
namespace {

const char* status_name(ModuleDiff::Status s) {
  switch (s) {
    case ModuleDiff::Status::kSame:
      return "same";
    case ModuleDiff::Status::kChanged:
      return "changed";
    case ModuleDiff::Status::kAdded:
      return "added";
    case ModuleDiff::Status::kRemoved:
      return "removed";
  }
  return "?";
}

std::string pct(double p) {
  if (std::isinf(p)) return p > 0 ? "new" : "gone";
  return fmt::format("{:+.1f}%", p);
}

std::string count(uint64_t v) { return number_to_string(static_cast<double>(v)); }

std::string signed_count(const CountDelta& c) {
  if (!c.known) return "n/a";
  const int64_t d = c.delta();
  if (d == 0) return "0";
  return (d > 0 ? "+" : "-") + number_to_string(std::fabs(static_cast<double>(d)));
}

std::string signed_time(const TimeDelta& t) {
  if (!t.known) return "n/a";
  const double d = t.delta();
  return (d >= 0 ? "+" : "-") + duration_to_string(std::fabs(d)) + (t.noise ? " ~" : "");
}

bool is_time_key(const TotalDiff& t) { return t.is_time; }

// The largest relative change of a module, for --threshold.
bool under_threshold(const ModuleDiff& m, const DiffTextOptions& o) {
  if (m.status == ModuleDiff::Status::kAdded || m.status == ModuleDiff::Status::kRemoved)
    return false;
  if (o.threshold_percent <= 0 && o.threshold_s <= 0) return false;
  for (const CountDelta* c : {&m.params, &m.calls, &m.flops, &m.macs, &m.bwd_flops, &m.bytes}) {
    if (c->changed() && std::fabs(c->percent()) >= o.threshold_percent) return false;
  }
  for (const TimeDelta* t : {&m.latency, &m.bwd_latency}) {
    if (!t->known || t->noise) continue;
    const bool pct_ok = o.threshold_percent <= 0 || std::fabs(t->percent()) >= o.threshold_percent;
    const bool abs_ok = o.threshold_s <= 0 || std::fabs(t->delta()) >= o.threshold_s;
    if (pct_ok && abs_ok && t->delta() != 0) return false;
  }
  return true;
}

double magnitude(const ModuleDiff& m) {
  return std::fabs(m.latency.delta()) + (m.status != ModuleDiff::Status::kSame ? 1e9 : 0);
}

}  // namespace

std::string format_diff_text(const ProfileDiff& d, const DiffTextOptions& o) {
  std::string s =
      fmt::format("flopsprof diff: {} (base) -> {} (new)\n", d.base_source, d.new_source);
  s += fmt::format("  base: {}\n  new:  {}\n", d.base_workload, d.new_workload);
  for (const std::string& w : d.warnings) s += "warning: " + w + "\n";
  s += "\nTotals                         base            new          delta        delta %\n";
  for (const TotalDiff& t : d.totals) {
    // Backward and step lines only where a profile has them.
    const bool training = t.key.rfind("bwd_", 0) == 0 || t.key.rfind("step_", 0) == 0;
    if (training && (t.is_time ? t.time.known && t.time.base == 0 && t.time.next == 0
                               : t.count.known && t.count.base == 0 && t.count.next == 0))
      continue;
    if (is_time_key(t)) {
      const TimeDelta& x = t.time;
      if (!x.known) {
        s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}\n", t.key, "n/a", "n/a", "n/a", "");
        continue;
      }
      s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}{}\n", t.key, duration_to_string(x.base),
                       duration_to_string(x.next), signed_time(x), pct(x.percent()),
                       x.repeated ? "  (medians)" : "");
    } else {
      const CountDelta& c = t.count;
      if (!c.known) {
        s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}\n", t.key, "n/a", "n/a", "n/a", "");
        continue;
      }
      s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}\n", t.key, count(c.base), count(c.next),
                       signed_count(c), pct(c.percent()));
    }
  }
  size_t n[4] = {0, 0, 0, 0};
  for (const ModuleDiff& m : d.modules) ++n[static_cast<int>(m.status)];
  std::vector<const ModuleDiff*> shown;
  for (const ModuleDiff& m : d.modules) {
    if (o.depth >= 0 && m.depth > o.depth) continue;
    if (under_threshold(m, o)) continue;
    shown.push_back(&m);
  }
  if (o.top > 0) {
    std::stable_sort(shown.begin(), shown.end(), [](const ModuleDiff* a, const ModuleDiff* b) {
      return magnitude(*a) > magnitude(*b);
    });
    if (shown.size() > static_cast<size_t>(o.top)) shown.resize(o.top);
  }
  s += fmt::format(
      "\nModules: {} changed, {} added, {} removed, {} same{}; '~': within the run-to-run "
      "spread\n",
      n[1], n[2], n[3], n[0],
      o.top > 0 ? fmt::format(" (the {} largest deltas)", shown.size()) : "");
  s += fmt::format("{:<8} {:>11} {:>11} {:>13} {:>8} {:>7} {:>11} {:>8} {:>10} {:>9} {:>6}  {}\n",
                   "status", "latency", "new", "delta", "%", "share", "flops delta", "%",
                   "macs delta", "params", "calls", "module");
  for (const ModuleDiff* m : shown) {
    std::string name =
        std::string(o.top > 0 ? 0 : 2 * m->depth, ' ') + (m->name.empty() ? "(root)" : m->name);
    if (!m->base_name.empty() && m->base_name != m->name) name += " (was " + m->base_name + ")";
    const std::string type = m->base_type == m->new_type || m->base_type.empty() ? m->new_type
                             : m->new_type.empty()                               ? m->base_type
                                                   : m->base_type + " -> " + m->new_type;
    const bool both =
        m->status == ModuleDiff::Status::kSame || m->status == ModuleDiff::Status::kChanged;
    s += fmt::format(
        "{:<8} {:>11} {:>11} {:>13} {:>8} {:>6.1f}% {:>11} {:>8} {:>10} {:>9} {:>6}  {} ({})\n",
        status_name(m->status),
        m->status == ModuleDiff::Status::kAdded ? "-" : duration_to_string(m->latency.base),
        m->status == ModuleDiff::Status::kRemoved ? "-" : duration_to_string(m->latency.next),
        signed_time(m->latency), both ? pct(m->latency.percent()) : "", 100 * m->share_of_delta,
        signed_count(m->flops), both && m->flops.changed() ? pct(m->flops.percent()) : "",
        signed_count(m->macs), signed_count(m->params), signed_count(m->calls), name, type);
  }
  if (o.ops && !d.ops.empty()) {
    s += "\nOps (by name and phase; by latency delta)\n";
    s += fmt::format("{:<8} {:>11} {:>11} {:>13} {:>11} {:>8}  {}\n", "status", "latency", "new",
                     "delta", "flops delta", "calls", "op");
    size_t listed = 0;
    for (const OpDiff& op : d.ops) {
      if (op.status == ModuleDiff::Status::kSame && listed >= 10) continue;  // changes always
      ++listed;
      s += fmt::format("{:<8} {:>11} {:>11} {:>13} {:>11} {:>8}  {} [{}]\n", status_name(op.status),
                       duration_to_string(op.latency.base), duration_to_string(op.latency.next),
                       signed_time(op.latency), signed_count(op.flops), signed_count(op.calls),
                       op.name, op.phase);
    }
  }
  return s;
}

}  // namespace flopsprof
