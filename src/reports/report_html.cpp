// The HTML report (see report_html.h). The page is plain HTML, CSS and JavaScript, inline.
#include "reports/report_html.h"

#include "flopsprof/report.h"

namespace flopsprof::detail {
namespace {

constexpr const char* kStyle = R"CSS(
:root { --fg:#1d2430; --muted:#5b6576; --line:#d9dee7; --bg:#ffffff; --panel:#f6f8fb; --accent:#2f6fde; --na:#fff1d6; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 14px 24px; border-bottom: 1px solid var(--line); display: flex; align-items: baseline; gap: 16px; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0; }
header .sub { color: var(--muted); }
main { padding: 16px 24px 48px; max-width: 1500px; }
section { margin: 0 0 28px; }
h2 { font-size: 15px; margin: 0 0 8px; }
.note { color: var(--muted); font-size: 12px; margin: 4px 0 8px; }
#summary { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: 8px; }
.kv { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.kv .k { color: var(--muted); font-size: 12px; display: block; }
.kv .v { font-size: 17px; font-weight: 600; font-variant-numeric: tabular-nums; }
.controls { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; margin: 0 0 8px; }
.controls label { color: var(--muted); }
button.seg { border: 1px solid var(--line); background: #fff; padding: 4px 10px; border-radius: 4px; cursor: pointer; }
button.seg.on { background: var(--accent); color: #fff; border-color: var(--accent); }
#crumbs a { color: var(--accent); cursor: pointer; text-decoration: none; }
#crumbs a:hover { text-decoration: underline; }
#icicle { position: relative; width: 100%; border: 1px solid var(--line); border-radius: 6px; overflow: hidden; background: #fbfcfe; }
.cell { position: absolute; height: 22px; border-right: 1px solid #fff; border-bottom: 1px solid #fff; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; font-size: 12px; padding: 2px 5px; color: #0b1220; cursor: pointer; }
.cell:hover { outline: 2px solid var(--fg); z-index: 2; }
#legend { display: flex; align-items: center; gap: 8px; font-size: 12px; color: var(--muted); margin-top: 6px; }
#legend .bar { width: 220px; height: 10px; border-radius: 3px; }
#tip { position: fixed; pointer-events: none; background: #101623; color: #fff; font-size: 12px; padding: 6px 8px; border-radius: 4px; max-width: 420px; display: none; z-index: 10; white-space: pre-line; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th:first-child, td:first-child, th.l, td.l { text-align: left; }
th { position: sticky; top: 0; background: var(--panel); cursor: pointer; user-select: none; }
th.sorted::after { content: " \25BC"; font-size: 10px; }
th.sorted.asc::after { content: " \25B2"; }
td.name { max-width: 420px; overflow: hidden; text-overflow: ellipsis; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
tr.na td { background: var(--na); }
tr.sel td { background: #dfe9fb; }
.badge { display: inline-block; font-size: 11px; padding: 0 5px; border-radius: 3px; background: #f0a020; color: #fff; margin-left: 6px; }
svg text { font-size: 11px; fill: var(--muted); }
input[type=search] { padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px; min-width: 240px; }
select { padding: 3px 6px; }
)CSS";

}  // namespace

std::string json_for_script(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (char c : json) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

// The page's body: its sections, filled by the script from the data.
constexpr char kPageBody[] =
    "<main>\n"
    "<section><h2>Summary</h2><div id=\"summary\"></div></section>\n"
    "<section id=\"icicle-section\"><h2>Where the work goes: <span id=\"zoomed\"></span></h2>"
    "<div class=\"controls\"><label>width</label>"
    "<button class=\"seg on\" data-metric=\"flops\">FLOPs</button>"
    "<button class=\"seg\" data-metric=\"latency_s\">fwd latency</button>"
    "<button class=\"seg\" data-metric=\"bwd_latency_s\">bwd latency</button>"
    "<span id=\"crumbs\"></span></div>"
    "<div id=\"icicle\"></div>"
    "<div id=\"legend\"><span>colour: achieved FLOP/s</span><span id=\"legend-lo\"></span>"
    "<span class=\"bar\" style=\"background:linear-gradient(90deg,hsl(8,62%,72%),"
    "hsl(69,62%,66%),hsl(130,62%,60%))\"></span><span id=\"legend-hi\"></span></div>"
    "<p class=\"note\">Width: the module's inclusive value; what its children leave is its own "
    "work. Click a module to zoom in, a name above to zoom out; hover for numbers. Many FLOPs "
    "and little time is efficient (green); the reverse (red) is the one to look at.</p>"
    "</section>\n"
    "<section id=\"regions-section\" hidden><h2>Regions</h2><p class=\"note\">Ops that began "
    "in each region's windows (FlopsProfiler::region()), on any thread. MFU: fwd + bwd FLOPs "
    "per second over the peak of each op's dtype; MBU: bytes per second over the bandwidth; "
    "KV: of the bytes, a KV cache's (keys and values attention read, the cache's writes); "
    "n/a: unknown (no tokens, no peaks).</p><div class=\"scroll\"><table id=\"regions\"><thead>"
    "<tr><th class=\"l\">region</th><th>windows</th><th>time</th><th>per window</th>"
    "<th>tokens</th><th>tokens/s</th><th>time/token</th><th>FLOPs/token</th><th>fwd FLOPs</th>"
    "<th>bwd FLOPs</th><th>bytes</th><th>KV read</th><th>KV written</th><th>MFU</th>"
    "<th>MBU</th></tr></thead><tbody></tbody>"
    "</table></div><div class=\"controls\" style=\"margin-top:8px\"><label>modules in</label>"
    "<select id=\"region-pick\"></select></div><div class=\"scroll\"><table "
    "id=\"region-modules\"><thead><tr><th class=\"l\">module</th><th class=\"l\">type</th>"
    "<th>calls</th><th>time</th><th>FLOPs</th><th>share</th><th>bytes</th><th>KV read</th>"
    "<th>KV written</th><th>bwd FLOPs</th>"
    "<th>MFU</th><th>MBU</th></tr></thead><tbody></tbody></table></div></section>\n"
    "<section><h2>Modules</h2><div class=\"controls\"><input type=\"search\" id=\"filter\" "
    "placeholder=\"filter by name or type\"><select id=\"depth\"><option value=\"all\">all "
    "depths</option></select><span class=\"note\" id=\"shown\"></span></div>"
    "<div class=\"scroll\"><table id=\"modules\"><thead><tr></tr></thead><tbody></tbody>"
    "</table></div><p class=\"note\">Click a column to sort (again to reverse), a row to show "
    "it in the icicle.</p></section>\n"
    "<section><h2>Ops</h2><p class=\"note\" id=\"ops-note\"></p><div class=\"scroll\">"
    "<table id=\"ops\"><thead><tr><th class=\"l\">op</th><th class=\"l\">phase</th>"
    "<th>calls</th><th>FLOPs</th><th>time</th><th>share of phase time</th><th>bytes</th>"
    "<th>FLOP/B</th><th class=\"l\">bound</th><th>of roof</th></tr></thead>"
    "<tbody></tbody></table></div></section>\n"
    "<section id=\"roofline-section\"><h2>Roofline</h2><div class=\"controls\">"
    "<select id=\"roof-depth\"></select>"
    "<button class=\"seg roofseg on\" data-phase=\"0\">forward</button>"
    "<button class=\"seg roofseg\" id=\"roof-bwd\" data-phase=\"1\">backward</button>"
    "<span class=\"note\">selected: <span id=\"roof-selected\">none</span></span></div>"
    "<div id=\"roofline\"></div><p class=\"note\" id=\"roof-note\"></p><p class=\"note\">"
    "Each point is a module: its FLOPs per byte moved (x) and the FLOP/s it achieved (y), "
    "its area its share of the time. Under the blue line (the memory bandwidth) work is "
    "memory-bound, under the orange one (the peak FLOP/s) compute-bound; the gap to the line "
    "above a point is what is left. Bytes are compulsory traffic (docs/report.md). Click a "
    "point to select the module.</p></section>\n"
    "<section id=\"memory-section\" hidden><h2>Memory footprint</h2><div id=\"memory\"></div>"
    "</section>\n"
    "<section id=\"sweep-section\" hidden><h2>Batch-size sweep</h2><div id=\"sweep\"></div>"
    "</section>\n"
    "</main>\n<div id=\"tip\"></div>\n";

std::string html_report(const ProfileResult& result, const std::vector<BatchSweepRow>& sweep) {
  std::string out;
  out += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>flopsprof report</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  out +=
      "<header><h1>flopsprof</h1><span class=\"sub\" id=\"model-name\"></span>"
      "<span class=\"sub\">per-module FLOPs, MACs, latency and parameters</span></header>\n";
  out += kPageBody;
  out += "<script type=\"application/json\" id=\"flopsprof-page\">";
  out += json_for_script(html_page_data(result, sweep));
  out += "</script>\n<script>";
  out += html_report_script();
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace flopsprof::detail

namespace flopsprof {
std::string to_html(const ProfileResult& result, const std::vector<BatchSweepRow>& sweep) {
  return detail::html_report(result, sweep);
}
}  // namespace flopsprof
