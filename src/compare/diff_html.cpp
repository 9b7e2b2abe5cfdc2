// The diff as one self-contained HTML page: totals, warnings, the module tree coloured by delta.
// Rendered here as markup (every name escaped); the page runs no script and loads nothing.
#include <cmath>

#include <fmt/format.h>

#include "compare/diff_format.h"
#include "flopsprof/diff.h"

namespace flopsprof {
namespace {

using detail::count_delta_text;
using detail::html_escape;
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

// A row's classes: its status, then "slower"/"faster" for a latency change outside the noise,
// "more-work"/"less-work" for a FLOPs change.
std::string row_classes(const ModuleDiff& m) {
  std::string c = status_name(m.status);
  const bool both = in_both(m);
  if (both && m.latency.known && !m.latency.noise && m.latency.delta() != 0)
    c += m.latency.delta() > 0 ? " slower" : " faster";
  if (both && m.flops.changed()) c += m.flops.delta() > 0 ? " more-work" : " less-work";
  return c;
}

constexpr const char* kDiffStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;white-space:nowrap}
th{border-bottom:1px solid #999}td.name,td.type{text-align:left}
tr.slower td{background:#fde2e1}tr.faster td{background:#e2f5e4}
tr.more-work td.flops{background:#fbd9a9;font-weight:600}tr.less-work td.flops{background:#cfe8fb;font-weight:600}
tr.changed td.status{font-weight:700;color:#b45309}
tr.added td{background:#dbeafe}tr.removed td{background:#eee;color:#777;text-decoration:line-through}
.warn{color:#92400e}.legend span{padding:2px 8px;margin-right:6px}
)";

// The warnings and the totals' table.
void html_totals(std::string& h, const ProfileDiff& d) {
  h += "<ul id=\"warnings\">";
  for (const std::string& w : d.warnings) h += "<li class=\"warn\">" + html_escape(w) + "</li>";
  h += "</ul>\n<h2>Totals</h2>\n<table id=\"totals\"><tr><th>total</th><th>base</th><th>new</th>"
       "<th>delta</th><th>%</th></tr>\n";
  for (const TotalDiff& t : d.totals) {
    if (detail::unused_training_total(t)) continue;
    std::string b = "n/a", n = "n/a", dl = "n/a", p;
    if (t.is_time && t.time.known) {
      b = duration_to_string(t.time.base);
      n = duration_to_string(t.time.next);
      dl = time_delta_text(t.time);
      p = percent_text(t.time.percent());
    } else if (!t.is_time && t.count.known) {
      b = number_to_string(static_cast<double>(t.count.base));
      n = number_to_string(static_cast<double>(t.count.next));
      dl = count_delta_text(t.count);
      p = percent_text(t.count.percent());
    }
    h += fmt::format(
        "<tr data-key=\"{}\"><td "
        "class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        html_escape(t.key), html_escape(t.key), b, n, dl, p);
  }
}

// The modules' table (closing the one before), with its legend.
void html_modules(std::string& h, const ProfileDiff& d) {
  h += "</table>\n<h2>Modules</h2>\n<p class=\"legend\"><span "
       "style=\"background:#fde2e1\">slower</span>"
       "<span style=\"background:#e2f5e4\">faster</span><span style=\"background:#fbd9a9\">more "
       "FLOPs</span>"
       "<span style=\"background:#cfe8fb\">fewer FLOPs</span><span "
       "style=\"background:#dbeafe\">added</span>"
       "<span style=\"background:#eee\">removed</span> &nbsp; '~': within the run-to-run "
       "spread</p>\n";
  h += "<table id=\"modules\"><tr><th>status</th><th "
       "style=\"text-align:left\">module</th><th>type</th>"
       "<th>latency</th><th>new</th><th>delta</th><th>%</th><th>share</th><th>FLOPs delta</th>"
       "<th>%</th><th>params delta</th><th>calls delta</th></tr>\n";
  for (const ModuleDiff& m : d.modules) {
    const bool both = in_both(m);
    const std::string type = type_label(m);
    const std::string name = module_label(m);
    h += fmt::format(
        "<tr class=\"{}\" data-name=\"{}\" data-status=\"{}\"><td class=\"status\">{}</td>"
        "<td class=\"name\" style=\"padding-left:{}px\">{}</td><td "
        "class=\"type\">{}</td><td>{}</td><td>{}</td>"
        "<td class=\"latency\">{}</td><td>{}</td><td>{}</td><td "
        "class=\"flops\">{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        row_classes(m), html_escape(m.name), status_name(m.status), status_name(m.status),
        10 + 16 * m.depth, html_escape(name), html_escape(type),
        m.status == ModuleDiff::Status::kAdded ? "-" : time_side_text(m.latency, m.latency.base),
        m.status == ModuleDiff::Status::kRemoved ? "-" : time_side_text(m.latency, m.latency.next),
        time_delta_text(m.latency), both ? time_percent_text(m.latency) : "", detail::share_text(m),
        count_delta_text(m.flops), both && m.flops.changed() ? percent_text(m.flops.percent()) : "",
        count_delta_text(m.params), count_delta_text(m.calls));
  }
}

// The regions' table (closing the one before), when there are regions.
void html_regions(std::string& h, const ProfileDiff& d) {
  if (!d.regions.empty()) {
    h += "</table>\n<h2>Regions</h2>\n<table id=\"regions\"><tr><th>status</th><th "
         "style=\"text-align:left\">region</th><th>windows</th><th>latency</th><th>new</th>"
         "<th>delta</th><th>per token</th><th>new</th><th>tokens/s</th><th>new</th><th>%</th>"
         "<th>MFU</th><th>new</th><th>MBU</th><th>new</th><th>FLOPs delta</th></tr>\n";
    for (const RegionDiff& g : d.regions) {
      const TimeDelta& t = g.latency_per_token;
      h += fmt::format(
          "<tr class=\"{}\"><td>{}</td><td class=\"name\">{}</td><td>{} &rarr; {}</td>"
          "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          status_name(g.status), status_name(g.status), html_escape(g.name), g.windows.base,
          g.windows.next, time_side_text(g.latency, g.latency.base),
          time_side_text(g.latency, g.latency.next), time_delta_text(g.latency),
          t.base > 0 ? duration_to_string(t.base) : "n/a",
          t.next > 0 ? duration_to_string(t.next) : "n/a", rate_text(g.tokens_per_s.base, false),
          rate_text(g.tokens_per_s.next, false), rate_percent_text(g.tokens_per_s),
          rate_text(g.mfu.base, true), rate_text(g.mfu.next, true), rate_text(g.mbu.base, true),
          rate_text(g.mbu.next, true), count_delta_text(g.flops));
    }
  }
}

// The ops' table (closing the one before).
void html_ops(std::string& h, const ProfileDiff& d) {
  h += "</table>\n<h2>Ops</h2>\n<table id=\"ops\"><tr><th>status</th><th "
       "style=\"text-align:left\">op</th>"
       "<th>phase</th><th>latency</th><th>new</th><th>delta</th><th>FLOPs delta</th><th>calls "
       "delta</th></tr>\n";
  for (const OpDiff& o : d.ops) {
    h += fmt::format(
        "<tr class=\"{}\"><td>{}</td><td "
        "class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        status_name(o.status), status_name(o.status), html_escape(o.name), html_escape(o.phase),
        time_side_text(o.latency, o.latency.base), time_side_text(o.latency, o.latency.next),
        time_delta_text(o.latency), count_delta_text(o.flops), count_delta_text(o.calls));
  }
}

}  // namespace

std::string diff_to_html(const ProfileDiff& d) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += "<title>flopsprof diff</title><style>";
  h += kDiffStyle;
  h += "</style></head><body data-ready=\"1\">\n";
  h += fmt::format("<h1>flopsprof diff: <code>{}</code> (base) &rarr; <code>{}</code> (new)</h1>\n",
                   html_escape(d.base_source), html_escape(d.new_source));
  h += fmt::format("<p>base: {}<br>new: {}</p>\n", html_escape(d.base_workload),
                   html_escape(d.new_workload));
  html_totals(h, d);
  html_modules(h, d);
  html_regions(h, d);
  html_ops(h, d);
  h += "</table>\n</body></html>\n";
  return h;
}

}  // namespace flopsprof
