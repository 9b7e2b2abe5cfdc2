// The JSON rendering of a profile (schema_version 2, documented in docs/json.md). Written by a
// small streaming writer: building an nlohmann DOM for a 10,000-module model took ~100 ms,
// streaming takes a few. The tests parse every document with nlohmann::json.
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "flopsprof/config.h"
#include "flopsprof/report.h"
#include "reports/json_writer.h"
#include "reports/profile_fields.h"
#include "reports/schema.h"

namespace flopsprof {
namespace {

using detail::JsonWriter;
namespace fields = detail::fields;

// Writes the fields of reports/profile_fields.h's tables, in their order.
class FieldWriter {
 public:
  FieldWriter(JsonWriter& w, const ProfileResult& r, bool slim = false)
      : w_(w), r_(r), slim_(slim) {}
  const ProfileResult& result() const { return r_; }

  template <class T>
  void count(std::string_view k, const T& v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.member(k, static_cast<uint64_t>(v));
  }
  template <class T>
  void integer(std::string_view k, const T& v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.member(k, static_cast<int64_t>(v));
  }
  void text(std::string_view k, const std::string& v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.member(k, v);
  }
  void flag(std::string_view k, bool v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.member(k, v);
  }
  void seconds(std::string_view k, double v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.member(k, v);
  }
  void number(std::string_view k, double v, fields::Need n = {}) { seconds(k, v, n); }
  void timed(std::string_view k, double v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.key(k);
    if (r_.timed) {
      w_.value(v);
    } else {
      w_.null();
    }
  }
  void timed_rate(std::string_view k, double v, fields::Need n = {}) { timed(k, v, n); }
  void known(std::string_view k, double v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.key(k);
    if (v > 0) {
      w_.value(v);
    } else {
      w_.null();
    }
  }
  void known_count(std::string_view k, uint64_t v, fields::Need n = {}) {
    if (skip(n)) return;
    w_.key(k);
    if (v > 0) {
      w_.value(v);
    } else {
      w_.null();
    }
  }
  void text_or_null(std::string_view k, const std::string& v) {
    w_.key(k);
    if (v.empty()) {
      w_.null();
    } else {
      w_.value(v);
    }
  }
  void share(std::string_view k, double share, bool timed, const std::string& bound) {
    w_.key(k);
    if (bound.empty() || !timed) {
      w_.null();
    } else {
      w_.value(share);
    }
  }
  void dtype(std::string_view k, DType d, fields::Need n = {}) {
    if (skip(n)) return;
    w_.member(k, dtype_name(d));
  }
  void convention(std::string_view k, AttentionConvention c) { w_.member(k, convention_name(c)); }
  template <class Array>
  void by_dtype(std::string_view k, const Array& values) {
    w_.key(k);
    w_.begin_object();
    for (size_t d = 0; d < values.size(); ++d) {
      if (values[d] != 0)
        w_.member(dtype_name(static_cast<DType>(d)), static_cast<uint64_t>(values[d]));
    }
    w_.end_object();
  }
  void rates(std::string_view k, const RateByDtype& values) {
    w_.key(k);
    w_.begin_object();
    for (size_t d = 0; d < values.size(); ++d) {
      if (values[d] > 0) w_.member(dtype_name(static_cast<DType>(d)), values[d]);
    }
    w_.end_object();
  }
  void text_if_any(std::string_view k, const std::string& v) {
    if (!v.empty()) w_.member(k, v);
  }
  template <class T>
  void derived(std::string_view k, const T& v) {
    w_.member(k, v);
  }
  void spread(std::string_view k, const LatencySpread& s) {
    if (s.samples == 0) return;  // only when there were several
    w_.key(k);
    object(s, [](auto& v, auto& x) { fields::spread(v, x); });
  }
  void roofline(const std::string& prefix, const RooflinePoint& p, fields::Need n = {}) {
    if (skip(n)) return;
    fields::roofline(*this, prefix, p);
  }
  void strings(std::string_view k, const std::vector<std::string>& list, fields::Need n = {}) {
    if (skip(n)) return;
    w_.key(k);
    w_.begin_array();
    for (const std::string& x : list) w_.value(x);
    w_.end_array();
  }
  void parent(std::string_view k, int parent) {
    w_.key(k);
    if (parent >= 0) {
      w_.value(r_.modules[static_cast<size_t>(parent)].name);
    } else {
      w_.null();
    }
  }
  void regions(std::string_view k, const ModuleStats& m);
  template <class T, class Table>
  void list(std::string_view k, const std::vector<T>& items, Table table, fields::Need n = {},
            bool slim = false) {
    if (skip(n)) return;
    w_.key(k);
    w_.begin_array();
    for (const T& x : items) {
      FieldWriter inner(w_, r_, slim);
      inner.object(x, table);
    }
    w_.end_array();
  }
  void slim_ops(std::string_view k, const std::vector<OpStats>& ops, fields::Need n) {
    list(
        k, ops, [](auto& v, auto& o) { fields::op(v, o); }, n, true);
  }
  // `x` as an object, its fields by `table`.
  template <class T, class Table>
  void object(const T& x, Table table) {
    w_.begin_object();
    table(*this, x);
    w_.end_object();
  }

 private:
  bool skip(fields::Need n) const { return (n.gpu && !r_.gpu.measured) || (n.full && slim_); }

  JsonWriter& w_;
  const ProfileResult& r_;
  bool slim_;  // a module's own op rows: the fields not marked `full`
};

// One module's share of each region, keyed by the region's name.
void FieldWriter::regions(std::string_view k, const ModuleStats& m) {
  if (m.regions.empty()) return;
  w_.key(k);
  w_.begin_object();
  for (size_t g = 0; g < m.regions.size() && g < r_.regions.size(); ++g) {
    w_.key(r_.regions[g].name);
    object(m.regions[g], [](auto& v, auto& x) { fields::module_region(v, x); });
  }
  w_.end_object();
}

// What was removed from the host latencies (LatencyCorrection).
void write_correction(JsonWriter& w, const ProfileResult& r) {
  const LatencyCorrection& c = r.correction;
  w.key("latency_correction");
  w.begin_object();
  w.member("applied", c.applied);
  w.member("reason", c.reason);
  w.member("op_inner_ns", c.op_inner_ns);
  w.member("op_outer_ns", c.op_outer_ns);
  w.member("boxed_op_inner_ns", c.boxed_op_inner_ns);
  w.member("boxed_op_outer_ns", c.boxed_op_outer_ns);
  w.member("call_inner_ns", c.call_inner_ns);
  w.member("call_outer_ns", c.call_outer_ns);
  w.member("nested_record_ns", c.nested_record_ns);
  w.member("op_in_place_ns", c.op_in_place_ns);
  w.member("boxed_op_in_place_ns", c.boxed_op_in_place_ns);
  w.member("call_in_place_ns", c.call_in_place_ns);
  w.member("in_place_samples", c.in_place_samples);
  w.member("not_removed", c.not_removed);
  w.end_object();
}

// Device timing and kernels (a model on a GPU).
void write_gpu(JsonWriter& w, const ProfileResult& r) {
  if (!r.gpu.backend.empty()) {
    const GpuStats& g = r.gpu;
    w.key("gpu");
    w.begin_object();
    w.member("measured", g.measured);
    w.member("backend", g.backend);
    w.member("reason", g.reason);
    w.member("device", g.device);
    w.member("busy_s", g.busy_s);
    w.member("span_s", g.span_s);
    w.member("kernels", g.kernels);
    w.member("unattributed_s", g.unattributed_s);
    w.member("memcpys", g.memcpys);
    w.member("memcpy_s", g.memcpy_s);
    w.member("memsets", g.memsets);
    w.member("memset_s", g.memset_s);
    w.member("dropped_records", g.dropped_records);
    w.member("untimed_events", g.untimed);
    w.key("device_time_s");
    w.begin_object();
    w.member("forward", g.forward_s);
    w.member("backward", g.backward_s);
    w.member("step", g.step_s);
    w.member("outside", g.outside_s);
    w.end_object();
    FieldWriter(w, r).list("top_kernels", g.top_kernels,
                           [](auto& v, auto& k) { fields::kernel(v, k); });
    w.end_object();
  }
}

// The combined ranks (after gather_profile).
void write_ranks(JsonWriter& w, const ProfileResult& r) {
  if (r.distributed) {
    const DistributedStats& d = *r.distributed;
    w.key("ranks");
    w.begin_object();
    w.member("world_size", static_cast<int64_t>(d.world_size));
    w.member("data_parallel_size", static_cast<int64_t>(d.data_parallel_size));
    w.member("backend", d.backend);
    w.member("straggler_threshold", d.threshold);
    w.key("per_rank");
    w.begin_array();
    for (const RankStats& x : d.ranks) {
      w.begin_object();
      w.member("rank", static_cast<int64_t>(x.rank));
      w.member("host", x.host);
      w.member("pid", x.pid);
      w.member("forward_calls", x.forward_calls);
      w.member("fwd_latency_s", x.fwd_latency_s);
      w.member("bwd_latency_s", x.bwd_latency_s);
      w.member("step_latency_s", x.step_latency_s);
      w.member("iteration_latency_s", x.iteration_latency_s);
      w.member("flops", x.flops);
      w.member("macs", x.macs);
      w.member("bwd_flops", x.bwd_flops);
      w.end_object();
    }
    w.end_array();
    w.key("modules");
    w.begin_array();
    for (const RankModuleStats& m : d.modules) {
      w.begin_object();
      w.member("name", m.name);
      w.member("type", m.type);
      w.member("depth", static_cast<int64_t>(m.depth));
      w.member("fwd_min_s", m.fwd_min_s);
      w.member("fwd_mean_s", m.fwd_mean_s);
      w.member("fwd_max_s", m.fwd_max_s);
      w.member("bwd_min_s", m.bwd_min_s);
      w.member("bwd_mean_s", m.bwd_mean_s);
      w.member("bwd_max_s", m.bwd_max_s);
      w.member("slowest_rank", static_cast<int64_t>(m.slowest_rank));
      w.member("flops", m.flops);
      w.member("same_flops", m.same_flops);
      w.end_object();
    }
    w.end_array();
    w.key("stragglers");
    w.begin_array();
    for (const Straggler& s : d.stragglers) {
      w.begin_object();
      w.member("rank", static_cast<int64_t>(s.rank));
      w.member("what", s.what);
      w.member("latency_s", s.value_s);
      w.member("median_s", s.median_s);
      w.member("over_median", s.over_median);
      w.key("modules");
      w.begin_array();
      for (const auto& [name, excess] : s.modules) {
        w.begin_object();
        w.member("name", name);
        w.member("excess_s", excess);
        w.end_object();
      }
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
}

// c10d collectives per module and phase: where a module's forward or backward waits on them.
void write_collectives(JsonWriter& w, const ProfileResult& r) {
  w.key("collectives");
  w.begin_array();
  for (const CollectiveStats& c : r.collectives) {
    w.begin_object();
    w.member("name", c.name);
    w.member("module", c.module);
    w.member("phase", c.phase);
    w.member("calls", c.calls);
    w.member("numel", c.numel);
    w.member("bytes", c.bytes);
    w.member("time_s", c.time_s);
    w.member("incomplete", c.incomplete);
    w.end_object();
  }
  w.end_array();
}

// The modules summed by depth and type (the text's aggregated profile).
void write_module_types(JsonWriter& w, const ProfileResult& r) {
  w.key("module_types");
  w.begin_array();
  for (const ModuleTypeStats& g : r.module_types) {
    w.begin_object();
    w.member("depth", g.depth);
    w.member("type", g.type);
    w.member("modules", g.modules);
    w.member("params", g.params);
    w.member("fwd_macs", g.macs);
    FieldWriter(w, r).timed("fwd_latency_s", g.latency_s);
    w.end_object();
  }
  w.end_array();
}

// The memory footprint (with track_memory): its totals, then its trace.
void write_memory(JsonWriter& w, const ProfileResult& r) {
  if (!r.memory.tracked) return;
  w.key(fields::kMemory);
  w.begin_object();
  FieldWriter f(w, r);
  fields::memory(f, r.memory);
  w.key("trace");
  w.begin_array();
  for (const MemorySample& x : r.memory.trace) {
    w.begin_object();
    w.member("t_s", x.time_s);
    w.member("bytes", x.bytes);
    w.member("reserved", x.reserved);
    w.member("op", x.op);
    w.member("module", x.module);
    w.member("phase", x.phase);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace

std::string to_json(const ProfileResult& r, int indent) {
  JsonWriter w(indent);
  FieldWriter f(w, r);
  w.begin_object();
  w.member(fields::kSchemaVersion, detail::kProfileSchemaVersion);
  w.member("generator", "flopsprof " FLOPSPROF_VERSION);
  w.key(fields::kWorkload);
  f.object(r, [](auto& v, auto& x) { fields::workload(v, x); });
  w.key(fields::kSummary);
  f.object(r, [](auto& v, auto& x) { fields::summary(v, x); });
  write_correction(w, r);
  w.key(fields::kMachine);
  f.object(r.machine, [](auto& v, auto& x) { fields::machine(v, x); });
  w.key(fields::kOutside);
  f.object(r.outside, [](auto& v, auto& x) { fields::outside(v, x); });
  if (!r.regions.empty())
    f.list(fields::kRegions, r.regions, [](auto& v, auto& g) { fields::region(v, g); });
  f.list(fields::kModules, r.modules, [](auto& v, auto& m) { fields::module(v, m); });
  write_module_types(w, r);
  f.list(fields::kOps, r.ops, [](auto& v, auto& o) { fields::op(v, o); });
  write_memory(w, r);
  write_gpu(w, r);
  write_ranks(w, r);
  write_collectives(w, r);
  f.strings(fields::kProblems, r.problems);
  w.end_object();
  return w.take();
}

}  // namespace flopsprof
