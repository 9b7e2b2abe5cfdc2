// The text report's tables after the summary: regions, aggregated top modules per depth, the
// detailed module tree with its kernels, ops on the roofline, collectives, ranks.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "flopsprof/report.h"
#include "reports/schema.h"
#include "reports/terminal.h"
#include "reports/text_parts.h"

namespace flopsprof::detail::text {

namespace {

// "12.3%", or "n/a" when unknown (0: no peaks, or no time).
// A utilisation ratio, "!" after one above the peak it is measured against (aggregation's flag).
std::string utilisation(double v, bool above) {
  return v > 0 ? share(v) + (above ? "!" : "") : "n/a";
}

// The regions' table, one row each.
void region_rows(std::string& out, const ProfileResult& r) {
  fmt::format_to(std::back_inserter(out),
                 "{:<16}{:>8}{:>12}{:>12}{:>9}{:>12}{:>12}{:>13}{:>11}{:>11}{:>8}{:>8}\n", "region",
                 "windows", "time", "per window", "tokens", "tokens/s", "time/token", "FLOPs/token",
                 "fwd FLOPs", "bwd FLOPs", "MFU", "MBU");
  for (const RegionStats& g : r.regions) {
    const double per_window = g.spread.samples > 0 ? g.spread.median_s : g.duration_s;
    fmt::format_to(std::back_inserter(out),
                   "{:<16}{:>8}{:>12}{:>12}{:>9}{:>12}{:>12}{:>13}{:>11}{:>11}{:>8}{:>8}\n", g.name,
                   g.windows, time_of(r, g.duration_s), time_of(r, per_window),
                   g.tokens > 0 ? std::to_string(g.tokens) : "n/a",
                   g.tokens > 0 && r.timed ? number_to_string(g.tokens_per_s) : "n/a",
                   g.tokens > 0 ? time_of(r, g.latency_per_token_s) : "n/a",
                   g.tokens > 0 ? number_to_string(g.flops_per_token) : "n/a",
                   flops_to_string(g.flops), flops_to_string(g.bwd_flops),
                   utilisation(g.mfu, g.mfu_above_peak), utilisation(g.mbu, g.mbu_above_peak));
  }
}

// The KV cache's traffic per region (docs/report.md, "KV cache"), or why none is shown.
void region_kv(std::string& out, const ProfileResult& r) {
  if (r.kv_read_bytes + r.kv_write_bytes == 0) {
    out +=
        "KV cache: none recognised (only scaled_dot_product_attention's keys and values are; "
        "attention written by hand is counted as its ops' bytes)\n";
  }
  for (const RegionStats& g : r.regions) {
    if (g.kv_read_bytes + g.kv_write_bytes == 0) continue;
    fmt::format_to(std::back_inserter(out),
                   "KV cache in \"{}\": read {}, written {} ({} of its bytes){}\n", g.name,
                   traffic(g.kv_read_bytes), traffic(g.kv_write_bytes), percent(g.kv_bytes_share),
                   g.tokens > 0 ? fmt::format("; per token read {}, written {}",
                                              traffic(static_cast<uint64_t>(g.kv_read_per_token)),
                                              traffic(static_cast<uint64_t>(g.kv_write_per_token)))
                                : "");
  }
}

// The time to the first token, and where each region's tokens came from.
void region_tokens(std::string& out, const ProfileResult& r) {
  const RegionStats& first = r.regions.front();
  if (first.tokens > 0 && r.timed) {
    fmt::format_to(
        std::back_inserter(out),
        "time to first token: {} (the first window of \"{}\", the region opened first)\n",
        duration_to_string(first.first_s), first.name);
  }
  for (const RegionStats& g : r.regions) {
    if (g.tokens > 0 && g.tokens_source != "given")
      fmt::format_to(std::back_inserter(out), "tokens of \"{}\": {}\n", g.name,
                     g.tokens_source == "embedding indices"
                         ? "each window's largest aten::embedding indices (batch x sequence)"
                         : "given for some windows, the others' largest aten::embedding indices");
  }
}

// What MFU and MBU are measured against: the peaks of the dtypes the regions computed in, each
// as MFU uses it; and HFU where the regions recomputed.
void region_peaks(std::string& out, const ProfileResult& r) {
  const MachinePeaks& m = r.machine;
  std::string peaks;
  for (size_t d = 0; d < static_cast<size_t>(DType::kCount); ++d) {
    bool used = false;
    for (const RegionStats& g : r.regions) used = used || g.flops_by_dtype[d] > 0;
    if (!used || !is_floating(static_cast<DType>(d))) continue;
    peaks += fmt::format("{}{} {}", peaks.empty() ? "" : ", ", dtype_name(static_cast<DType>(d)),
                         flops_per_second_to_string(m.peak_flops(static_cast<DType>(d))));
  }
  if (peaks.empty())
    peaks = fmt::format("fp32 {}", flops_per_second_to_string(m.peak_flops(DType::kFloat32)));
  out += fmt::format(
      "MFU: (fwd + bwd FLOPs) / time over the peak of each op's dtype ({}); MBU: bytes moved / "
      "time over the bandwidth ({}); per-token numbers count fwd + bwd FLOPs; tokens are those "
      "fed to the model (a loop that feeds the whole prefix again counts it again: give "
      "region(name, tokens) to count generated ones)\n",
      m.flops_source.empty() ? "unknown" : fmt::format("{}, {}", peaks, m.flops_source),
      m.bandwidth_source.empty()
          ? "unknown"
          : fmt::format("{}, {}", bandwidth_to_string(m.bytes_per_s), m.bandwidth_source));
  bool recompute = false;
  for (const RegionStats& g : r.regions) recompute = recompute || g.recompute_flops > 0;
  if (recompute) {
    for (const RegionStats& g : r.regions)
      fmt::format_to(std::back_inserter(out), "HFU of \"{}\" (recompute included): {}\n", g.name,
                     utilisation(g.hfu, g.hfu_above_peak));
  }
}

// Each region's modules, in tree order, to `depth`.
void region_modules(std::string& out, const ProfileResult& r, int depth) {
  for (size_t k = 0; k < r.regions.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "\n{} (modules to depth {}):\n", r.regions[k].name,
                   depth);
    fmt::format_to(std::back_inserter(out),
                   "    {:<36}{:>8}{:>12}{:>11}{:>13}{:>9}{:>11}{:>8}{:>8}\n", "module", "calls",
                   "time", "FLOPs", "FLOPs/token", "share", "bytes", "MFU", "MBU");
    for (const ModuleStats& mod : r.modules) {
      if (mod.depth > depth || k >= mod.regions.size()) continue;
      const ModuleRegionStats& x = mod.regions[k];
      if (x.calls == 0 && x.flops == 0 && x.bytes == 0) continue;
      const std::string name =
          std::string(2 * static_cast<size_t>(mod.depth), ' ') + detail::module_label(mod.name);
      fmt::format_to(std::back_inserter(out),
                     "    {:<36}{:>8}{:>12}{:>11}{:>13}{:>9}{:>11}{:>8}{:>8}\n", name, x.calls,
                     time_of(r, x.latency_s), flops_to_string(x.flops),
                     x.flops_per_token > 0 ? number_to_string(x.flops_per_token) : "n/a",
                     percent(x.flops_share), traffic(x.bytes), utilisation(x.mfu, x.mfu_above_peak),
                     utilisation(x.mbu, x.mbu_above_peak));
    }
  }
}

}  // namespace

// The regions the caller named: per region its windows, time, tokens and rates, FLOPs and
// utilisation; then each region's modules down to `module_depth` (2 when all depths are asked).
void regions(std::string& out, const ProfileResult& r, const ReportOptions& o) {
  out += "\n------------------------------- Regions -------------------------------\n";
  out += "Ops that began in each region's windows (FlopsProfiler::region()), on any thread.\n";
  region_rows(out, r);
  region_kv(out, r);
  region_tokens(out, r);
  region_peaks(out, r);
  region_modules(out, r, o.module_depth >= 0 ? o.module_depth : 2);
}

namespace {

std::string dict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ", ";
    s += fmt::format("'{}': '{}'", items[i].first, items[i].second);
  }
  return s + "}";
}

}  // namespace

void aggregated(std::string& out, const ProfileResult& r, const ReportOptions& o) {
  out += "\n----------------------------- Aggregated Profile -----------------------------\n";
  int max_depth = 0;
  for (const ModuleStats& m : r.modules) max_depth = std::max(max_depth, m.depth);
  if (o.module_depth >= 0) max_depth = std::min(max_depth, o.module_depth);
  fmt::format_to(std::back_inserter(out),
                 "Top {} modules in terms of params, MACs or fwd latency at different model "
                 "depths:\n",
                 o.top_modules);
  for (int depth = 0; depth <= max_depth; ++depth) {
    std::vector<const ModuleTypeStats*> rows;  // the depth's types, first appearance first
    for (const ModuleTypeStats& g : r.module_types) {
      if (g.depth == depth) rows.push_back(&g);
    }
    auto top = [&](auto key, auto fmt_value) {  // ties: first appearance first
      std::vector<const ModuleTypeStats*> sorted = rows;
      std::stable_sort(
          sorted.begin(), sorted.end(),
          [&](const ModuleTypeStats* a, const ModuleTypeStats* b) { return key(*a) > key(*b); });
      std::vector<std::pair<std::string, std::string>> items;
      for (size_t i = 0; i < sorted.size() && i < static_cast<size_t>(o.top_modules); ++i) {
        items.emplace_back(sorted[i]->type, fmt_value(*sorted[i]));
      }
      return dict(items);
    };
    fmt::format_to(std::back_inserter(out), "depth {}:\n", depth);
    fmt::format_to(std::back_inserter(out), "    params      - {}\n",
                   top([](const ModuleTypeStats& a) { return static_cast<double>(a.params); },
                       [](const ModuleTypeStats& a) { return params_to_string(a.params); }));
    fmt::format_to(std::back_inserter(out), "    MACs        - {}\n",
                   top([](const ModuleTypeStats& a) { return static_cast<double>(a.macs); },
                       [](const ModuleTypeStats& a) { return macs_to_string(a.macs); }));
    fmt::format_to(
        std::back_inserter(out), "    fwd latency - {}\n",
        r.timed ? top([](const ModuleTypeStats& a) { return a.latency_s; },
                      [](const ModuleTypeStats& a) { return duration_to_string(a.latency_s); })
                : std::string("n/a"));
  }
}

namespace {

// The inline marker of a module whose numbers rest on op order: "~ +A FLOPs +B / -C FLOPs -D
// (+E FLOPs +F bwd) by op order" (A FLOPs and B bytes of its forward placed in it by inference,
// up to C FLOPs and D bytes placed elsewhere that may be its own, E FLOPs and F bytes of its
// backward the backward of the gained ops); each side only with what it moved or computed; ""
// when its placement rests on evidence only, or its guesses are of zero magnitude (no FLOPs, no
// bytes: the problems list still names them).
std::string magnitude(char sign, uint64_t flops, uint64_t bytes) {
  std::string s;
  if (flops > 0) s += fmt::format("{}{} FLOPs", sign, number_to_string(static_cast<double>(flops)));
  if (bytes > 0) s += fmt::format("{}{}{}", s.empty() ? "" : " ", sign, traffic(bytes));
  return s;
}

std::string inference_mark(const ModuleStats& m) {
  const std::string gained =
      m.inferred_ops > 0 ? magnitude('+', m.inferred_flops, m.inferred_bytes) : "";
  const std::string lost =
      m.maybe_missing_ops > 0 ? magnitude('-', m.maybe_missing_flops, m.maybe_missing_bytes) : "";
  const std::string bwd = magnitude('+', m.inferred_bwd_flops, m.inferred_bwd_bytes);
  if (gained.empty() && lost.empty() && bwd.empty()) return "";
  std::string s = "~";
  if (!gained.empty()) s += " " + gained;
  if (!gained.empty() && !lost.empty()) s += " /";
  if (!lost.empty()) s += " " + lost;
  if (!bwd.empty()) s += " (" + bwd + " bwd)";  // the backward of what it gained
  return s + " by op order";
}

void tree_node(std::string& out, const ProfileResult& r, const ReportOptions& o, int index,
               int indent) {
  const ModuleStats& m = r.modules[index];
  std::string stats =
      fmt::format("{} = {} Params, {} = {} MACs, {} = {} latency, {}", params_to_string(m.params),
                  percent(m.params_share), macs_to_string(m.macs), percent(m.macs_share),
                  time_of(r, m.latency_s), r.timed ? percent(m.latency_share) : "n/a",
                  // achieved FLOPS over its time (the device's when measured): its roofline's
                  (r.gpu.measured ? m.device_fwd_s : m.latency_s) > 0
                      ? flops_per_second_to_string(m.roofline.achieved_flops_per_s)
                      : std::string("n/a"));
  if (r.gpu.measured && r.gpu.backend != "cupti") {
    stats += fmt::format(", {} device", duration_to_string(m.device_fwd_s));
  }
  if (r.gpu.measured && r.gpu.backend == "cupti") {
    stats += fmt::format(", {} GPU", duration_to_string(m.gpu_busy_s));
    // the aggregation's (the JSON's): fwd + bwd FLOPs over their device time, each dtype's peak
    if (m.mfu > 0)
      stats += fmt::format(", {:.1f}%{} MFU", 100.0 * m.mfu, m.mfu_above_peak ? "!" : "");
  }
  if (r.has_backward) {
    stats += fmt::format(", {} bwd flops, {} bwd latency", flops_to_string(m.bwd_flops),
                         duration_to_string(m.bwd_latency_s));
    if (r.gpu.measured) stats += fmt::format(", {} bwd device", duration_to_string(m.device_bwd_s));
    if (m.recompute_flops > 0)
      stats += fmt::format(", {} recompute flops", flops_to_string(m.recompute_flops));
  }
  if (m.calls == 0 && m.latency_s == 0 && !m.calls_inferred) {
    // a container whose children ran on their own, or a module that did not run at all
    stats += m.children.empty() || (m.flops == 0 && m.bytes == 0 && m.bwd_flops == 0)
                 ? ", not called"
                 : ", not called (its work is its submodules')";
  } else if (m.calls != 1 || m.calls_inferred) {
    stats += fmt::format(", {} call{}{}", m.calls, m.calls == 1 ? "" : "s",
                         m.calls_inferred ? " (inferred)" : "");
  }
  if (const std::string mark = inference_mark(m); !mark.empty()) stats += ", " + mark;
  // A module that was never called (a container whose children ran on their own) has no time of
  // its own: no share of a ceiling is shown for it, only what it moved.
  const bool timed = m.calls > 0 || m.latency_s > 0;
  if (o.roofline) {  // after DeepSpeed's fields: bytes, intensity, bound and its share
    auto point = [&](const RooflinePoint& p, uint64_t bytes) {
      // no bytes: no intensity (0 FLOPs over 0 B is not 0.00 FLOP/B)
      std::string t =
          bytes == 0 ? std::string("n/a FLOP/B") : fmt::format("{:.2f} FLOP/B", p.intensity);
      if (!p.bound.empty() && timed) t += " " + bound_share(p, r.machine);
      return t;
    };
    stats += fmt::format(", {} moved, {}", traffic(m.bytes), point(m.roofline, m.bytes));
    if (r.has_backward) {
      const uint64_t bwd_bytes = m.bwd_bytes + m.recompute_bytes;
      stats +=
          fmt::format(", bwd {} moved, {}", traffic(bwd_bytes), point(m.bwd_roofline, bwd_bytes));
    }
  }
  std::string pad(static_cast<size_t>(indent), ' ');
  std::string head =
      m.parent < 0
          ? detail::printable(m.type)
          : fmt::format("({}): {}", detail::printable(m.name.substr(m.name.rfind('.') + 1)),
                        detail::printable(m.type));
  std::vector<int> shown;
  for (int c : m.children) {
    if (o.module_depth < 0 || r.modules[c].depth <= o.module_depth) shown.push_back(c);
  }
  if (shown.empty()) {
    fmt::format_to(std::back_inserter(out), "{}{}({})\n", pad, head, stats);
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}{}(\n{}  {}\n", pad, head, pad, stats);
  for (int c : shown) tree_node(out, r, o, c, indent + 2);
  fmt::format_to(std::back_inserter(out), "{})\n", pad);
}

}  // namespace

// Per module (down to module_depth), its kernels by GPU time.
void kernel_table(std::string& out, const ProfileResult& r, const ReportOptions& o) {
  out +=
      "\n------------------------------ GPU kernels per module -------------------------------\n";
  for (const ModuleStats& m : r.modules) {
    if (m.top_kernels.empty() || (o.module_depth >= 0 && m.depth > o.module_depth)) continue;
    fmt::format_to(std::back_inserter(out), "{} ({}): {} GPU, {} host\n",
                   detail::module_label(m.name), m.type, duration_to_string(m.gpu_busy_s),
                   duration_to_string(m.latency_s));
    for (const KernelStats& k : m.top_kernels) {
      fmt::format_to(std::back_inserter(out), "    {:>8} calls {:>12}  {}\n", k.calls,
                     duration_to_string(k.gpu_s), k.name.substr(0, 100));
    }
  }
}

void detailed(std::string& out, const ProfileResult& r, const ReportOptions& o) {
  out += "\n------------------------------ Detailed Profile ------------------------------\n";
  out +=
      "Each module profile is listed after its name in the following order:\n"
      "params, percentage of total params, MACs, percentage of total MACs, fwd latency, "
      "percentage of total fwd latency, fwd FLOPS (with backward: bwd flops, bwd latency;\n"
      "and the call count when not 1)\n";
  if (o.roofline) {
    out +=
        "then the roofline: bytes moved (read + written), arithmetic intensity (FLOP/B), the\n"
        "ceiling that bounds it (memory, with the memory level its working sets fit, or\n"
        "compute) and the share of that ceiling reached (memory: of that level's bandwidth;\n"
        "compute: of the peak FLOPS; '!': above the ceiling, see problems); with backward, also\n"
        "for bwd\n";
  }
  out +=
      "\nNote: 1. Ops outside any submodule (functional calls in a parent's forward) make up the\n"
      "difference between a parent's MACs (or latency) and the sum of its submodules'.\n"
      "2. FLOPs are counted from formulas of the ops' shapes; FLOPS computed from them can\n"
      "exceed what the hardware sustains.\n";
  bool marked = false;
  for (const ModuleStats& m : r.modules) marked = marked || !inference_mark(m).empty();
  if (marked) {
    out +=
        "3. '~ +A / -B by op order' marks a module whose numbers rest on op order, not on\n"
        "evidence: A (FLOPs, bytes) of its work was placed in it by inference, and up to B\n"
        "placed elsewhere may be its own; '(+C bwd)' after them: C of its backward is the\n"
        "backward of A's ops; '(inferred)' marks a call count likewise. The problems list below\n"
        "the summary says why, and what makes them exact.\n";
  }
  out += "\n";
  if (!r.modules.empty()) tree_node(out, r, o, 0, 0);
}

// The ops on the roofline: the slowest ones with bytes or FLOPs (at most 15), then every other
// row above its ceiling (the problems name the worst of them: it must be in the table).
void op_roofline(std::string& out, const ProfileResult& r) {
  out += "\n------------------------------ Roofline per op ------------------------------\n";
  out += "Slowest ops with their bytes moved, intensity and the ceiling that bounds them:\n";
  fmt::format_to(std::back_inserter(out),
                 "    {:<36} {:>9} {:>7} {:>11} {:>10} {:>10} {:>8} {:>14} {:>8} {:>7}\n", "op",
                 "phase", "calls", "time", "flops", "bytes", "FLOP/B", "FLOPS", "bound", "share");
  size_t shown = 0;
  bool flagged_heading = false;
  for (const OpStats& op : r.ops) {
    if (op.bytes == 0 && op.flops == 0) continue;
    const RooflinePoint& p = op.roofline;
    if (++shown > 15) {
      if (!p.above_ceiling) continue;
      if (!flagged_heading) {
        out += "  and the faster rows above their ceiling ('!'):\n";
        flagged_heading = true;
      }
    }
    fmt::format_to(
        std::back_inserter(out),
        "    {:<36} {:>9} {:>7} {:>11} {:>10} {:>10} {:>8} {:>14} {:>8} {:>7}\n",
        op.name.substr(0, 36), op.phase, op.calls, time_of(r, op.latency_s),
        op.has_formula ? flops_to_string(op.flops) : std::string("n/a"), traffic(op.bytes),
        op.has_formula ? fmt::format("{:.2f}", p.intensity) : std::string("n/a"),
        p.timed ? flops_per_second_to_string(p.achieved_flops_per_s) : std::string("n/a"),
        p.bound.empty()                  ? std::string("-")
        : level_of(p, r.machine).empty() ? p.bound
                                         : p.bound + " " + level_of(p, r.machine),
        p.bound.empty() ? std::string("-") : share(p) + (p.above_ceiling ? "!" : ""));
  }
}

// The ranks of a multi-rank job: per rank, per module across ranks (to `module_depth`), stragglers.
void ranks(std::string& out, const DistributedStats& d, const ReportOptions& o) {
  out += fmt::format("\n-------------------- Ranks ({}, world size {}) --------------------\n",
                     d.backend.empty() ? "c10d" : d.backend, d.world_size);
  out += fmt::format("{:<6}{:>14}{:>14}{:>14}{:>14}{:>12}  {}\n", "rank", "fwd latency",
                     "bwd latency", "step latency", "iteration", "fwd flops", "host (pid)");
  for (const RankStats& r : d.ranks) {
    out +=
        fmt::format("{:<6}{:>14}{:>14}{:>14}{:>14}{:>12}  {} ({})\n", r.rank,
                    duration_to_string(r.fwd_latency_s), duration_to_string(r.bwd_latency_s),
                    duration_to_string(r.step_latency_s), duration_to_string(r.iteration_latency_s),
                    flops_to_string(r.flops), r.host, r.pid);
  }
  out += "\nPer module across ranks (fwd latency min / mean / max, bwd mean, slowest rank):\n";
  for (const RankModuleStats& m : d.modules) {
    if (o.module_depth >= 0 && m.depth > o.module_depth) continue;
    out += fmt::format("{}{} ({}): {} / {} / {}, bwd {}, slowest rank {}{}\n",
                       std::string(static_cast<size_t>(2 * m.depth), ' '),
                       detail::module_label(m.name), m.type, duration_to_string(m.fwd_min_s),
                       duration_to_string(m.fwd_mean_s), duration_to_string(m.fwd_max_s),
                       duration_to_string(m.bwd_mean_s), m.slowest_rank,
                       m.same_flops ? "" : " (FLOPs differ between ranks)");
  }
  out += fmt::format("\nStragglers (latency over the median across ranks by more than {:.0f}%):\n",
                     100 * d.threshold);
  if (d.stragglers.empty()) out += "  none\n";
  for (const Straggler& s : d.stragglers) {
    out += fmt::format("  rank {}: {} {} vs median {} (+{:.0f}%)", s.rank, s.what,
                       duration_to_string(s.value_s), duration_to_string(s.median_s),
                       100 * s.over_median);
    for (size_t i = 0; i < s.modules.size(); ++i) {
      out += fmt::format("{} {} +{}", i == 0 ? "; caused by" : ",",
                         detail::module_label(s.modules[i].first),
                         duration_to_string(s.modules[i].second));
    }
    out += "\n";
  }
}

// c10d collectives, per module and phase (a module's backward waits on the all-reduce its
// gradient hooks issue).
void collectives(std::string& out, const ProfileResult& r) {
  out += "\n------------------------- Collectives (c10d) -------------------------\n";
  out += fmt::format("{:<28}{:<10}{:<20}{:>7}{:>12}{:>12}\n", "module", "phase", "collective",
                     "calls", "bytes", "time");
  for (const CollectiveStats& c : r.collectives) {
    out += fmt::format("{:<28}{:<10}{:<20}{:>7}{:>12}{:>12}{}\n", detail::module_label(c.module),
                       c.phase, c.name, c.calls, bytes_to_string(static_cast<int64_t>(c.bytes)),
                       duration_to_string(c.time_s),
                       c.incomplete > 0 ? fmt::format(" ({} not completed)", c.incomplete) : "");
  }
}

}  // namespace flopsprof::detail::text
