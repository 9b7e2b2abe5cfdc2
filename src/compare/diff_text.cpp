// The diff as text for a terminal (docs/diff.md).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "compare/diff_format.h"
#include "flopsprof/diff.h"
#include "reports/terminal.h"

namespace flopsprof {
namespace {

using detail::count_delta_text;
using detail::in_both;
using detail::module_label;
using detail::percent_text;
using detail::rate_percent_text;
using detail::rate_text;
using detail::status_name;
using detail::time_delta_text;
using detail::time_percent_text;
using detail::time_side_text;
using detail::type_label;

std::string count(uint64_t v) { return number_to_string(static_cast<double>(v)); }

bool is_time_key(const TotalDiff& t) { return t.is_time; }

// A module's indentation: two spaces a level, at most kMaxIndent levels (a deeper one says its
// depth), so that the text grows with the modules, not with the square of their depth.
constexpr int kMaxIndent = 32;
std::string indent(int depth) {
  if (depth <= kMaxIndent) return std::string(2 * static_cast<size_t>(depth), ' ');
  return std::string(2 * kMaxIndent, ' ') + fmt::format("[depth {}] ", depth);
}

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

// The totals: one line each, time or count.
void totals_text(const ProfileDiff& d, std::string& s) {
  s += "\nTotals                         base            new          delta        delta %\n";
  for (const TotalDiff& t : d.totals) {
    if (detail::unused_training_total(t)) continue;  // backward and step where a profile has them
    if (is_time_key(t)) {
      const TimeDelta& x = t.time;
      if (!x.known) {
        s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}\n", t.key, "n/a", "n/a", "n/a", "");
        continue;
      }
      s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}{}\n", t.key, duration_to_string(x.base),
                       duration_to_string(x.next), time_delta_text(x), percent_text(x.percent()),
                       x.repeated ? "  (medians)" : "");
    } else {
      const CountDelta& c = t.count;
      if (!c.known) {
        s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}\n", t.key, "n/a", "n/a", "n/a", "");
        continue;
      }
      s += fmt::format("{:<22} {:>14} {:>14} {:>14} {:>14}\n", t.key, count(c.base), count(c.next),
                       count_delta_text(c), percent_text(c.percent()));
    }
  }
}

// The modules: a count of each status, then one line each (with its ops under --module-ops).
void modules_text(const ProfileDiff& d, const DiffTextOptions& o, std::string& s) {
  size_t n[4] = {0, 0, 0, 0};
  size_t moved = 0, single = 0;  // of the same: latency moved by over 10% (single samples)
  for (const ModuleDiff& m : d.modules) {
    ++n[static_cast<int>(m.status)];
    const TimeDelta& t = m.latency;
    if (m.status != DiffStatus::kSame || !t.known || t.base <= 0 || t.noise) continue;
    if (std::fabs(t.next - t.base) > 0.1 * t.base) {
      ++moved;
      single += !t.repeated;
    }
  }
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
  // 'same' is about the counts (type, params, calls, FLOPs, MACs, bytes); latency apart
  const std::string same_latency =
      moved == 0 ? ""
      : single == moved
          ? fmt::format(" ({} of them moved over 10% in latency: single samples, noise unknown)",
                        moved)
          : fmt::format(" ({} of them moved over 10% in latency, outside the spread)", moved);
  s += fmt::format(
      "\nModules: {} changed, {} added, {} removed, {} same in their counts{}{}; latency: {}; '~': "
      "within the run-to-run spread\n",
      n[1], n[2], n[3], n[0], same_latency,
      o.top > 0 ? fmt::format(" (the {} largest deltas)", shown.size()) : "",
      d.statistic == "total" ? "totals over each profile" : d.statistic);
  s += fmt::format("{:<8} {:>11} {:>11} {:>13} {:>8} {:>7} {:>11} {:>8} {:>10} {:>9} {:>6}  {}\n",
                   "status", "latency", "new", "delta", "%", "share", "flops delta", "%",
                   "macs delta", "params", "calls", "module");
  for (const ModuleDiff* m : shown) {
    const std::string name = (o.top > 0 ? "" : indent(m->depth)) + module_label(*m);
    const std::string type = type_label(*m);
    const bool both = in_both(*m);
    s += fmt::format(
        "{:<8} {:>11} {:>11} {:>13} {:>8} {:>7} {:>11} {:>8} {:>10} {:>9} {:>6}  {} ({})\n",
        status_name(m->status),
        m->status == ModuleDiff::Status::kAdded ? "-" : time_side_text(m->latency, m->latency.base),
        m->status == ModuleDiff::Status::kRemoved ? "-"
                                                  : time_side_text(m->latency, m->latency.next),
        time_delta_text(m->latency), both ? time_percent_text(m->latency) : "",
        detail::share_text(*m), count_delta_text(m->flops),
        both && m->flops.changed() ? percent_text(m->flops.percent()) : "",
        count_delta_text(m->macs), count_delta_text(m->params), count_delta_text(m->calls), name,
        type);
    if (!o.module_ops) continue;
    for (const OpDiff& op : m->ops) {  // its own ops, by latency delta
      s += fmt::format(
          "  {:<6} {:>11} {:>11} {:>13} {:>8} {:>7} {:>11} {:>8} {:>10} {:>9} {:>6}  {}{}\n",
          status_name(op.status), time_side_text(op.latency, op.latency.base),
          time_side_text(op.latency, op.latency.next), time_delta_text(op.latency), "", "",
          count_delta_text(op.flops), "", count_delta_text(op.macs), "", count_delta_text(op.calls),
          o.top > 0 ? "  " : indent(m->depth) + "  ", detail::printable(op.name));
    }
  }
}

// Per window (medians) where both sides repeated it, else totals; rates per side.
void regions_text(const ProfileDiff& d, std::string& s) {
  if (d.regions.empty()) return;
  s += "\nRegions (latency per window where both repeated, '~': within the spread)\n";
  s += fmt::format(
      "{:<8} {:<12} {:>9} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8} {:>10} {:>10} {:>8} {:>6} "
      "{:>6} {:>6} {:>6} {:>11}\n",
      "status", "region", "windows", "latency", "new", "%", "per token", "new", "%", "tokens/s",
      "new", "%", "MFU", "new", "MBU", "new", "flops delta");
  for (const RegionDiff& g : d.regions) {
    const bool both = g.status == DiffStatus::kSame || g.status == DiffStatus::kChanged;
    const TimeDelta& t = g.latency_per_token;
    s += fmt::format(
        "{:<8} {:<12} {:>9} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8} {:>10} {:>10} {:>8} {:>6} "
        "{:>6} {:>6} {:>6} {:>11}\n",
        status_name(g.status), detail::printable(g.name),
        fmt::format("{}->{}", g.windows.base, g.windows.next),
        g.status == DiffStatus::kAdded ? "-" : time_side_text(g.latency, g.latency.base),
        g.status == DiffStatus::kRemoved
            ? "-"
            : time_side_text(g.latency, g.latency.next) + (g.latency.noise ? " ~" : ""),
        both ? time_percent_text(g.latency) : "", t.base > 0 ? duration_to_string(t.base) : "n/a",
        t.next > 0 ? duration_to_string(t.next) : "n/a", t.known ? percent_text(t.percent()) : "",
        rate_text(g.tokens_per_s.base, false), rate_text(g.tokens_per_s.next, false),
        rate_percent_text(g.tokens_per_s), rate_text(g.mfu.base, true), rate_text(g.mfu.next, true),
        rate_text(g.mbu.base, true), rate_text(g.mbu.next, true), count_delta_text(g.flops));
  }
}

// The ops by name and phase, changes always, at most ten same.
void ops_text(const ProfileDiff& d, std::string& s) {
  if (d.ops.empty()) return;
  s += "\nOps (by name and phase; by latency delta)\n";
  s += fmt::format("{:<8} {:>11} {:>11} {:>13} {:>11} {:>8}  {}\n", "status", "latency", "new",
                   "delta", "flops delta", "calls", "op");
  size_t listed = 0;
  for (const OpDiff& op : d.ops) {
    if (op.status == ModuleDiff::Status::kSame && listed >= 10) continue;  // changes always
    ++listed;
    s += fmt::format("{:<8} {:>11} {:>11} {:>13} {:>11} {:>8}  {} [{}]\n", status_name(op.status),
                     time_side_text(op.latency, op.latency.base),
                     time_side_text(op.latency, op.latency.next), time_delta_text(op.latency),
                     count_delta_text(op.flops), count_delta_text(op.calls),
                     detail::printable(op.name), detail::printable(op.phase));
  }
}

}  // namespace

std::string format_diff_text(const ProfileDiff& d, const DiffTextOptions& o) {
  std::string s = fmt::format("flopsprof diff: {} (base) -> {} (new)\n",
                              detail::printable(d.base_source), detail::printable(d.new_source));
  // Workloads and warnings quote strings from the files: one line each, whatever they hold.
  s += fmt::format("  base: {}\n  new:  {}\n", detail::printable(d.base_workload),
                   detail::printable(d.new_workload));
  for (const std::string& w : d.warnings) s += "warning: " + detail::printable(w) + "\n";
  totals_text(d, s);
  modules_text(d, o, s);
  regions_text(d, s);
  if (o.ops) ops_text(d, s);
  return detail::terminal_safe(s);
}

}  // namespace flopsprof
