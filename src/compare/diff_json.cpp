// The diff as JSON (docs/json.md, "Diff").
#include "compare/diff_format.h"
#include "flopsprof/diff.h"
#include "reports/json_writer.h"
#include "reports/schema.h"

namespace flopsprof {
namespace {

using detail::JsonWriter;
using detail::status_name;

// `side`: 0 base, 1 new, 2 delta. Unknown quantities are null, never 0.
void count(JsonWriter& w, const char* key, const CountDelta& c, int side) {
  w.key(key);
  if (!c.known) return w.null();
  if (side == 0) return w.value(c.base);
  if (side == 1) return w.value(c.next);
  w.value(c.delta());
}
void time(JsonWriter& w, const char* key, const TimeDelta& t, int side) {
  w.key(key);
  if (!t.known) return w.null();
  w.value(side == 0 ? t.base : side == 1 ? t.next : t.delta());
}

// `key`: `v` when known, else null.
void known_or_null(JsonWriter& w, const char* key, bool known, double v) {
  w.key(key);
  if (known)
    w.value(v);
  else
    w.null();
}

// Op deltas as "ops": [{ name, (phase), status, base, new, delta }].
void ops(JsonWriter& w, const std::vector<OpDiff>& list, bool phase) {
  w.key("ops");
  w.begin_array();
  for (const OpDiff& o : list) {
    w.begin_object();
    w.member("name", o.name);
    if (phase) w.member("phase", o.phase);
    w.member("status", status_name(o.status));
    for (int side = 0; side < 3; ++side) {
      w.key(side == 0 ? "base" : side == 1 ? "new" : "delta");
      w.begin_object();
      count(w, "calls", o.calls, side);
      count(w, "flops", o.flops, side);
      count(w, "macs", o.macs, side);
      count(w, "bytes", o.bytes, side);
      time(w, "latency_s", o.latency, side);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
}

void module_side(JsonWriter& w, const ModuleDiff& m, int side) {
  w.begin_object();
  count(w, "params", m.params, side);
  count(w, "calls", m.calls, side);
  count(w, "flops", m.flops, side);
  count(w, "macs", m.macs, side);
  count(w, "bwd_flops", m.bwd_flops, side);
  count(w, "bytes", m.bytes, side);
  time(w, "latency_s", m.latency, side);
  time(w, "bwd_latency_s", m.bwd_latency, side);
  if (side == 2) {
    known_or_null(w, "latency_pct", m.latency.known, m.latency.percent());
    w.member("latency_noise", m.latency.noise);
    w.member("bwd_latency_noise", m.bwd_latency.noise);
    w.key("flops_pct");
    w.value(m.flops.percent());
  }
  w.end_object();
}

// A rate on one side (null when unknown there); its delta only when known on both.
void rate(JsonWriter& w, const char* key, const RateDelta& r, int side) {
  w.key(key);
  const double v = side == 0 ? r.base : side == 1 ? r.next : r.delta();
  if ((side < 2 && v <= 0) || (side == 2 && !r.known())) return w.null();
  w.value(v);
}

// A region's side: base, new or delta.
void region_side(JsonWriter& w, const RegionDiff& g, int side) {
  w.begin_object();
  count(w, "windows", g.windows, side);
  count(w, "tokens", g.tokens, side);
  count(w, "flops", g.flops, side);
  count(w, "bwd_flops", g.bwd_flops, side);
  count(w, "bytes", g.bytes, side);
  time(w, "latency_s", g.latency, side);
  time(w, "latency_per_token_s", g.latency_per_token, side);
  rate(w, "tokens_per_s", g.tokens_per_s, side);
  rate(w, "mfu", g.mfu, side);
  rate(w, "mbu", g.mbu, side);
  if (side == 2) {
    w.member("latency_medians", g.latency.repeated);
    w.member("latency_noise", g.latency.noise);
    known_or_null(w, "tokens_per_s_pct", g.tokens_per_s.known(), g.tokens_per_s.percent());
  }
  w.end_object();
}

// "summary": each total's base, new, delta and its percent (times: medians, noise).
void json_totals(JsonWriter& w, const ProfileDiff& d) {
  w.key("summary");
  w.begin_object();
  for (const TotalDiff& t : d.totals) {
    w.key(t.key);
    w.begin_object();
    if (t.is_time) {
      time(w, "base", t.time, 0);
      time(w, "new", t.time, 1);
      time(w, "delta", t.time, 2);
      known_or_null(w, "delta_pct", t.time.known, t.time.percent());
      w.member("medians", t.time.repeated);
      w.member("noise", t.time.noise);
    } else {
      count(w, "base", t.count, 0);
      count(w, "new", t.count, 1);
      count(w, "delta", t.count, 2);
      known_or_null(w, "delta_pct", t.count.known, t.count.percent());
    }
    w.end_object();
  }
  w.end_object();
}

// "modules": each module's names, types, status, sides (null where it is absent) and ops.
void json_modules(JsonWriter& w, const ProfileDiff& d) {
  w.key("modules");
  w.begin_array();
  for (const ModuleDiff& m : d.modules) {
    w.begin_object();
    w.member("name", m.name);
    w.member("base_name", m.base_name);
    w.key("type");
    w.value(m.new_type.empty() ? m.base_type : m.new_type);
    w.member("base_type", m.base_type);
    w.member("new_type", m.new_type);
    w.member("depth", m.depth);
    w.member("status", status_name(m.status));
    w.key("base");
    if (m.status == ModuleDiff::Status::kAdded)
      w.null();
    else
      module_side(w, m, 0);
    w.key("new");
    if (m.status == ModuleDiff::Status::kRemoved)
      w.null();
    else
      module_side(w, m, 1);
    w.key("delta");
    module_side(w, m, 2);
    known_or_null(w, "share_of_delta", m.share_known, m.share_of_delta);
    ops(w, m.ops, false);
    w.end_object();
  }
  w.end_array();
}

// "regions": each region's status and sides (null where it is absent).
void json_regions(JsonWriter& w, const ProfileDiff& d) {
  w.key("regions");
  w.begin_array();
  for (const RegionDiff& g : d.regions) {
    w.begin_object();
    w.member("name", g.name);
    w.member("status", status_name(g.status));
    w.key("base");
    if (g.status == DiffStatus::kAdded)
      w.null();
    else
      region_side(w, g, 0);
    w.key("new");
    if (g.status == DiffStatus::kRemoved)
      w.null();
    else
      region_side(w, g, 1);
    w.key("delta");
    region_side(w, g, 2);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string diff_to_json(const ProfileDiff& d, int indent) {
  JsonWriter w(indent);
  w.begin_object();
  w.member("diff_schema_version", detail::kDiffSchemaVersion);
  w.member("base", d.base_source);
  w.member("new", d.new_source);
  w.member("base_workload", d.base_workload);
  w.member("new_workload", d.new_workload);
  w.member("latency_statistic", d.statistic);
  w.key("warnings");
  w.begin_array();
  for (const std::string& s : d.warnings) w.value(s);
  w.end_array();
  json_totals(w, d);
  json_modules(w, d);
  ops(w, d.ops, true);
  json_regions(w, d);
  w.end_object();
  return w.take();
}

}  // namespace flopsprof
