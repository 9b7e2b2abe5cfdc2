// The HTML page's data (report_html.h): every number the page shows, formatted here with the
// reports' formatters (flopsprof/format.h and the text report's parts), each with the value it
// stands for. The page's script lays them out (icicle widths, sorting, chart geometry) and
// formats only its charts' axis ticks.
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "flopsprof/format.h"
#include "reports/field_keys.h"
#include "reports/json_writer.h"
#include "reports/report_html.h"
#include "reports/text_parts.h"

namespace flopsprof::detail {
namespace {

using text::share;
using text::time_of;

// A count with DeepSpeed's scale and an optional unit, as the page's `num` writes it:
// "1.23 GFLOPs", "12 FLOPs", "12".
std::string counted(double x, std::string_view unit = "") {
  if (!std::isfinite(x)) return "n/a";
  return number_to_string(x, unit);
}
std::string fixed2(double x) { return fmt::format("{:.2f}", x); }
std::string mark(bool above) { return above ? "!" : ""; }
// A share, or n/a when unknown (0: no peaks, or no time).
std::string known_share(double x, bool above) { return x > 0 ? share(x) + mark(above) : "n/a"; }
std::string label(const ModuleStats& m) { return m.name.empty() ? "(root)" : m.name; }

// The peak FLOP/s the model's roofline is drawn against: its dtype's, else fp32's.
DType roofline_dtype(const ProfileResult& r) {
  // its own peak, not peak_flops()'s fp32 fallback: the JSON lists the dtypes that have one
  return r.dtype != DType::kUnknown && r.machine.flops_per_s[static_cast<size_t>(r.dtype)] > 0
             ? r.dtype
             : DType::kFloat32;
}

class PageData {
 public:
  PageData(const ProfileResult& r, const std::vector<BatchSweepRow>& sweep)
      : r_(r), sweep_(sweep), w_(-1) {}

  std::string write() {
    w_.begin_object();
    w_.member("title", r_.modules.empty() ? std::string() : r_.modules[0].type);
    summary();
    modules();
    ops();
    roofline();
    regions();
    memory();
    batch_sweep();
    w_.end_object();
    return w_.take();
  }

 private:
  // A summary box: its label, the JSON key of its value ("" when it has none of its own), the
  // value as the JSON holds it (null: unknown) and its text.
  template <class T>
  void item(std::string_view name, const std::string& key, const T& value, bool known,
            const std::string& shown, const std::string& note = "") {
    w_.begin_object();
    w_.member("label", name);
    w_.member("key", key);
    w_.key("value");
    if (known) {
      w_.value(value);
    } else {
      w_.null();
    }
    w_.member("text", shown);
    if (!note.empty()) w_.member("note", note);
    w_.end_object();
  }
  template <class M>
  std::string key(const M& member) {
    return fields::key_of(r_, r_, member, [](auto& v, auto& x) { fields::summary(v, x); });
  }
  void summary();
  void summary_bytes();
  void summary_context();
  void module_columns();
  void modules();
  void module_cells(const ModuleStats& m);
  std::string module_tip(const ModuleStats& m) const;
  void ops();
  void roofline();
  void roofline_points(bool bwd);
  void regions();
  void memory();
  void batch_sweep();

  const ProfileResult& r_;
  const std::vector<BatchSweepRow>& sweep_;
  JsonWriter w_;
  bool training_ = false, has_bwd_ = false, has_mem_ = false;
};

void PageData::summary() {
  const ProfileResult& r = r_;
  training_ = r.bwd_latency_s > 0 || r.step_latency_s > 0;
  w_.key("summary");
  w_.begin_array();
  item("params", key(r.params), r.params, true, counted(double(r.params)));
  item("fwd MACs", key(r.macs), r.macs, true, counted(double(r.macs), "MACs"));
  item("fwd FLOPs", key(r.flops), r.flops, true, counted(double(r.flops), "FLOPs"));
  item("fwd latency", key(r.duration_s), r.duration_s, r.timed, time_of(r, r.duration_s));
  item("fwd FLOP/s", key(r.fwd_flops_per_s), r.fwd_flops_per_s, r.timed,
       r.timed ? counted(r.fwd_flops_per_s, "FLOPS") : "n/a");
  if (training_) {
    item("bwd FLOPs (measured)", key(r.bwd_flops), r.bwd_flops, true,
         counted(double(r.bwd_flops), "FLOPs"));
    item("bwd latency", key(r.bwd_latency_s), r.bwd_latency_s, true,
         duration_to_string(r.bwd_latency_s));
    if (r.step_latency_s > 0)
      item("step latency", key(r.step_latency_s), r.step_latency_s, true,
           duration_to_string(r.step_latency_s));
    item("iteration latency", "", r.iteration_latency_s(), true,
         duration_to_string(r.iteration_latency_s()));
  }
  if (r.no_formula_s > 0)
    item("time in ops without a formula", key(r.no_formula_s), r.no_formula_s, r.timed,
         time_of(r, r.no_formula_s));
  if (r.batch_size > 0)
    item("batch size", key(r.batch_size), r.batch_size, true, counted(double(r.batch_size)));
  if (r.world_size > 1)
    item("world size", key(r.world_size), r.world_size, true, counted(double(r.world_size)));
  summary_bytes();
  summary_context();
  w_.end_array();
}

// Bytes, the KV cache and the utilisation.
void PageData::summary_bytes() {
  const ProfileResult& r = r_;
  item("fwd bytes moved", key(r.fwd_bytes), r.fwd_bytes, true, counted(double(r.fwd_bytes), "B"));
  item("fwd intensity", key(r.roofline.intensity), r.roofline.intensity, true,
       intensity_to_string(r.roofline.intensity));
  if (r.kv_read_bytes > 0)
    item("KV cache read", key(r.kv_read_bytes), r.kv_read_bytes, true,
         counted(double(r.kv_read_bytes), "B"));
  if (r.kv_write_bytes > 0)
    item("KV cache written", key(r.kv_write_bytes), r.kv_write_bytes, true,
         counted(double(r.kv_write_bytes), "B"));
  if (r.mfu > 0)
    item("MFU (fwd + bwd)", key(r.mfu), r.mfu, true, known_share(r.mfu, r.mfu_above_peak));
  if (r.hfu > 0)
    item("HFU (as run)", key(r.hfu), r.hfu, true, known_share(r.hfu, r.hfu_above_peak));
  if (r.mbu > 0)
    item("MBU (fwd + bwd)", key(r.mbu), r.mbu, true, known_share(r.mbu, r.mbu_above_peak));
}

// Work outside the model, the attention convention, the machine's peaks, the GPU's timing.
void PageData::summary_context() {
  const ProfileResult& r = r_;
  if (r.outside.ops > 0) {
    const std::string k = fields::key_of(r, r.outside, r.outside.flops,
                                         [](auto& v, auto& x) { fields::outside(v, x); });
    item("outside the model", std::string(fields::kOutside) + "." + k, r.outside.flops, true,
         counted(double(r.outside.flops), "FLOPs") + ", " + time_of(r, r.outside.latency_s));
  }
  const uint64_t dense = r.dense_flops(r.flops, r.masked_flops);
  const uint64_t causal = r.causal_flops(r.flops, r.masked_flops);
  if (r.attention == AttentionConvention::kCausal || dense != causal) {
    item("attention convention (causal masks)", key(r.attention),
         std::string(convention_name(r.attention)), true, convention_name(r.attention),
         "fwd dense " + counted(double(dense), "FLOPs") + ", causal " +
             counted(double(causal), "FLOPs") + ", as the kernels ran " +
             counted(double(r.kernel_flops(r.flops, r.masked_flops, r.skipped_flops)), "FLOPs"));
  }
  const MachinePeaks& m = r.machine;
  auto machine_key = [&](const auto& member) {
    return std::string(fields::kMachine) + "." +
           fields::key_of(r, m, member, [](auto& v, auto& x) { fields::machine(v, x); });
  };
  const DType dt = roofline_dtype(r);
  if (m.peak_flops(dt) > 0)
    item("peak FLOP/s (" + m.flops_source + ")", machine_key(m.flops_per_s) + "." + dtype_name(dt),
         m.peak_flops(dt), true, flops_per_second_to_string(m.peak_flops(dt)));
  if (m.bytes_per_s > 0)
    item("peak bandwidth (" + m.bandwidth_source + ")", machine_key(m.bytes_per_s), m.bytes_per_s,
         true, counted(m.bytes_per_s, "B/s"));
  if (!r.gpu.backend.empty()) item("GPU timing", "", r.gpu.backend, true, r.gpu.backend);
}

// The module table's columns: an id (what the page sorts by), a title, left-aligned or not.
void PageData::module_columns() {
  struct Column {
    const char* id;
    const char* title;
    bool left;
  };
  std::vector<Column> cols = {{"name", "module", true},    {"type", "type", true},
                              {"depth", "depth", false},   {"calls", "calls", false},
                              {"params", "params", false}, {"macs", "MACs", false},
                              {"flops", "FLOPs", false},   {"latency_s", "fwd latency", false}};
  if (has_bwd_) {
    cols.push_back({"bwd_latency_s", "bwd latency", false});
    cols.push_back({"bwd_flops", "bwd FLOPs", false});
  }
  cols.push_back({"rate", "FLOP/s", false});
  if (r_.gpu.measured) cols.push_back({"device_fwd_s", "device fwd", false});
  cols.insert(cols.end(), {{"bytes", "bytes", false},
                           {"intensity", "FLOP/B", false},
                           {"bound", "bound", true},
                           {"roofline_share", "of roof", false}});
  if (has_mem_) {
    cols.push_back({"fwd_alloc_bytes", "fwd alloc", false});
    cols.push_back({"fwd_held_bytes", "fwd held", false});
  }
  w_.key("columns");
  w_.begin_array();
  for (const Column& c : cols) {
    w_.begin_object();
    w_.member("id", c.id);
    w_.member("title", c.title);
    w_.member("left", c.left);
    w_.end_object();
  }
  w_.end_array();
}

void PageData::modules() {
  for (const ModuleStats& m : r_.modules) {
    has_bwd_ = has_bwd_ || m.bwd_latency_s > 0;
    has_mem_ = has_mem_ || m.fwd_alloc_bytes != 0;
  }
  w_.member("has_bwd", has_bwd_);
  module_columns();
  w_.key("modules");
  w_.begin_array();
  for (const ModuleStats& m : r_.modules) {
    w_.begin_object();
    w_.member("name", m.name);
    w_.member("label", label(m));
    w_.member("type", m.type);
    w_.member("depth", m.depth);
    w_.member("parent", m.parent);
    w_.key("size");  // the icicle's widths, by its buttons' metrics
    w_.begin_object();
    w_.member("flops", m.flops);
    w_.member("latency_s", r_.timed ? m.latency_s : 0.0);
    w_.member("bwd_latency_s", m.bwd_latency_s);
    w_.end_object();
    w_.member("rate", r_.timed ? m.roofline.achieved_flops_per_s : 0.0);
    w_.member("tip", module_tip(m));
    module_cells(m);
    w_.end_object();
  }
  w_.end_array();
}

// One row of the module table, in module_columns' order: [value to sort by, text].
void PageData::module_cells(const ModuleStats& m) {
  auto cell = [&](const auto& value, const std::string& shown) {
    w_.begin_array();
    w_.value(value);
    w_.value(shown);
    w_.end_array();
  };
  auto timed = [&](double s) {
    w_.begin_array();
    if (r_.timed) {
      w_.value(s);
    } else {
      w_.null();
    }
    w_.value(time_of(r_, s));
    w_.end_array();
  };
  w_.key("cells");
  w_.begin_array();
  cell(label(m), label(m));
  cell(m.type, m.type);
  cell(m.depth, std::to_string(m.depth));
  cell(m.calls, std::to_string(m.calls));
  cell(m.params, counted(double(m.params)));
  cell(m.macs, counted(double(m.macs)));
  cell(m.flops, counted(double(m.flops)));
  timed(m.latency_s);
  if (has_bwd_) {
    cell(m.bwd_latency_s, duration_to_string(m.bwd_latency_s));
    cell(m.bwd_flops, counted(double(m.bwd_flops)));
  }
  const double rate = r_.timed ? m.roofline.achieved_flops_per_s : 0.0;
  cell(rate, r_.timed ? counted(rate) : "n/a");
  if (r_.gpu.measured) cell(m.device_fwd_s, duration_to_string(m.device_fwd_s));
  cell(m.bytes, counted(double(m.bytes), "B"));
  cell(m.roofline.intensity, fixed2(m.roofline.intensity));
  cell(m.roofline.bound, m.roofline.bound);
  const bool shared = !m.roofline.bound.empty() && m.roofline.timed;
  cell(shared ? m.roofline.share : 0.0, shared ? share(m.roofline.share) : "n/a");
  if (has_mem_) {
    cell(m.fwd_alloc_bytes, bytes_to_string(m.fwd_alloc_bytes));
    cell(m.fwd_held_bytes, bytes_to_string(m.fwd_held_bytes));
  }
  w_.end_array();
}

std::string PageData::module_tip(const ModuleStats& m) const {
  return fmt::format("{} ({})\ncalls {}, params {}\nMACs {}, FLOPs {}\nfwd {}, bwd {}\nachieved {}",
                     label(m), m.type, m.calls, counted(double(m.params)), counted(double(m.macs)),
                     counted(double(m.flops)), time_of(r_, m.latency_s),
                     duration_to_string(m.bwd_latency_s),
                     r_.timed ? counted(m.roofline.achieved_flops_per_s, "FLOP/s") : "n/a");
}

void PageData::ops() {
  uint64_t without = 0;
  w_.key("ops");
  w_.begin_array();
  for (const OpStats& o : r_.ops) {
    without += o.has_formula ? 0 : 1;
    w_.begin_object();
    w_.member("na", !o.has_formula);
    w_.key("cells");
    w_.begin_array();
    w_.value(o.name);
    w_.value(o.phase);
    w_.value(std::to_string(o.calls));
    w_.value(o.has_formula ? counted(double(o.flops)) : "n/a");
    w_.value(time_of(r_, o.latency_s));
    w_.value(r_.timed ? share(o.phase_share) : "n/a");
    w_.value(counted(double(o.bytes), "B") + (o.written_unknown > 0 ? " (writes unknown)" : ""));
    w_.value(o.has_formula ? fixed2(o.roofline.intensity) : "n/a");
    w_.value(o.roofline.bound);
    w_.value(o.roofline.bound.empty() ? "" : text::share(o.roofline));
    w_.end_array();
    w_.end_object();
  }
  w_.end_array();
  w_.member("ops_note", without > 0
                            ? fmt::format("{} op(s) without a formula (highlighted): their time is "
                                          "measured, their FLOPs are n/a, never counted as 0.",
                                          without)
                            : std::string("Every op has a formula."));
}

// The roofline chart: its ceilings and one point per module with FLOPs and bytes, per phase.
void PageData::roofline() {
  const MachinePeaks& m = r_.machine;
  const DType dt = roofline_dtype(r_);
  const bool known = m.known(dt);
  w_.key("roofline");
  w_.begin_object();
  w_.member("peak", known ? m.peak_flops(dt) : 0.0);
  w_.member("bandwidth", known ? m.bytes_per_s : 0.0);
  w_.member("ridge", known ? m.ridge(dt) : 0.0);
  w_.key("levels");  // the faster memory levels' ceilings (the last is the bandwidth's)
  w_.begin_array();
  for (size_t i = 0; known && i + 1 < m.bandwidth_by_level.size(); ++i) {
    w_.begin_object();
    w_.member("name", m.bandwidth_by_level[i].name);
    w_.member("bytes_per_s", m.bandwidth_by_level[i].bytes_per_s);
    w_.member("ridge", m.ridge(dt, m.bandwidth_by_level[i]));
    w_.end_object();
  }
  w_.end_array();
  w_.member("ceilings", known ? fmt::format("Ceilings: {} ({}), {} ({}); ridge point {}.",
                                            flops_per_second_to_string(m.peak_flops(dt)),
                                            m.flops_source, counted(m.bytes_per_s, "B/s"),
                                            m.bandwidth_source, intensity_to_string(m.ridge(dt)))
                              : std::string("The machine's peaks are unknown: no ceilings."));
  w_.key("phases");
  w_.begin_array();
  roofline_points(false);
  roofline_points(true);
  w_.end_array();
  w_.end_object();
}

void PageData::roofline_points(bool bwd) {
  w_.begin_array();
  for (size_t i = 0; i < r_.modules.size(); ++i) {
    const ModuleStats& m = r_.modules[i];
    const RooflinePoint& p = bwd ? m.bwd_roofline : m.roofline;
    if (!(p.intensity > 0 && p.achieved_flops_per_s > 0)) continue;
    const double t = bwd ? m.bwd_latency_s : m.latency_s;
    std::string where = fmt::format("intensity {}", intensity_to_string(p.intensity));
    if (!p.bound.empty()) {
      where += fmt::format(", {}-bound{} at {} of its ceiling{}", p.bound,
                           p.ceiling.empty() ? "" : " (" + p.ceiling + ")", text::share(p),
                           p.above_ceiling ? " (above it: see the problems)" : "");
    }
    w_.begin_object();
    w_.member("m", static_cast<int64_t>(i));
    w_.member("x", p.intensity);
    w_.member("y", p.achieved_flops_per_s);
    w_.member("t", t);
    w_.member("compute", p.bound == "compute");
    w_.member("above", p.above_ceiling);
    w_.member("tip",
              fmt::format("{} ({})\n{} {}, {}, {}\n{}", label(m), m.type, bwd ? "bwd" : "fwd",
                          duration_to_string(t), counted(p.achieved_flops_per_s, "FLOP/s"),
                          counted(p.achieved_bytes_per_s, "B/s"), where));
    w_.end_object();
  }
  w_.end_array();
}

// The regions' table and, per region, its modules' rows.
void PageData::regions() {
  auto or_na = [](bool known, const std::string& s) { return known ? s : std::string("n/a"); };
  w_.key("regions");
  w_.begin_array();
  for (size_t g = 0; g < r_.regions.size(); ++g) {
    const RegionStats& x = r_.regions[g];
    w_.begin_object();
    w_.member("name", x.name);
    w_.key("cells");
    w_.begin_array();
    for (const std::string& c :
         {x.name, std::to_string(x.windows), time_of(r_, x.duration_s),
          time_of(r_, x.spread.samples > 0 ? x.spread.median_s : x.duration_s),
          or_na(x.tokens > 0, std::to_string(x.tokens)),
          or_na(x.tokens_per_s > 0, counted(x.tokens_per_s)),
          or_na(x.latency_per_token_s > 0, duration_to_string(x.latency_per_token_s)),
          or_na(x.flops_per_token > 0, counted(x.flops_per_token)), counted(double(x.flops)),
          counted(double(x.bwd_flops)), counted(double(x.bytes), "B"),
          counted(double(x.kv_read_bytes), "B"), counted(double(x.kv_write_bytes), "B"),
          known_share(x.mfu, x.mfu_above_peak), known_share(x.mbu, x.mbu_above_peak)})
      w_.value(c);
    w_.end_array();
    w_.key("modules");
    w_.begin_array();
    for (const ModuleStats& m : r_.modules) {
      if (g >= m.regions.size()) continue;
      const ModuleRegionStats& y = m.regions[g];
      if (y.calls == 0 && y.flops == 0 && y.bytes == 0) continue;
      std::string indent;
      for (int d = 0; d < 2 * m.depth; ++d) indent += "\u00a0";
      w_.begin_array();
      for (const std::string& c :
           {indent + label(m), m.type, std::to_string(y.calls), time_of(r_, y.latency_s),
            counted(double(y.flops)), x.flops > 0 ? share(y.flops_share) : "n/a",
            counted(double(y.bytes), "B"), counted(double(y.kv_read_bytes), "B"),
            counted(double(y.kv_write_bytes), "B"), counted(double(y.bwd_flops)),
            known_share(y.mfu, y.mfu_above_peak), known_share(y.mbu, y.mbu_above_peak)})
        w_.value(c);
      w_.end_array();
    }
    w_.end_array();
    w_.end_object();
  }
  w_.end_array();
}

// The memory footprint (at most about 4000 points) and its peak, marked.
void PageData::memory() {
  const std::vector<MemorySample>& trace = r_.memory.trace;
  w_.key("memory");
  if (trace.empty()) {
    w_.null();
    return;
  }
  w_.begin_object();
  const size_t step = std::max<size_t>(1, trace.size() / 4000);
  w_.key("points");
  w_.begin_array();
  for (size_t i = 0; i < trace.size(); i += step) {
    w_.begin_array();
    w_.value(trace[i].time_s);
    w_.value(trace[i].bytes);
    w_.end_array();
  }
  w_.end_array();
  const MemorySample* peak = &trace[0];
  for (const MemorySample& s : trace)
    if (s.bytes > peak->bytes) peak = &s;
  w_.member("peak_t", peak->time_s);
  w_.member("peak_bytes", peak->bytes);
  w_.member("peak_label", fmt::format("peak {} at {} ({}, {})", bytes_to_string(peak->bytes),
                                      peak->op.empty() ? "?" : peak->op,
                                      peak->module.empty() ? "root" : peak->module, peak->phase));
  w_.end_object();
}

void PageData::batch_sweep() {
  w_.key("sweep");
  w_.begin_array();
  for (const BatchSweepRow& row : sweep_) {
    w_.begin_array();
    w_.value(row.batch_size);
    w_.value(row.fwd_peak_bytes);
    w_.value(row.train_peak_bytes);
    w_.end_array();
  }
  w_.end_array();
}

}  // namespace

std::string html_page_data(const ProfileResult& result, const std::vector<BatchSweepRow>& sweep) {
  return PageData(result, sweep).write();
}

}  // namespace flopsprof::detail
