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
#include "reports/schema.h"

namespace flopsprof {
namespace {

using detail::JsonWriter;

template <class Array>
void by_dtype(JsonWriter& w, std::string_view key, const Array& values) {
  w.key(key);
  w.begin_object();
  for (size_t d = 0; d < values.size(); ++d) {
    if (values[d] != 0)
      w.member(dtype_name(static_cast<DType>(d)), static_cast<uint64_t>(values[d]));
  }
  w.end_object();
}

void kernels(JsonWriter& w, const std::vector<KernelStats>& list) {
  w.key("top_kernels");
  w.begin_array();
  for (const KernelStats& k : list) {
    w.begin_object();
    w.member("name", k.name);
    w.member("calls", k.calls);
    w.member("gpu_s", k.gpu_s);
    w.end_object();
  }
  w.end_array();
}

// A point on the roofline, its fields named with `prefix` ("" or "bwd_"); `bound` null when
// unknown.
void roofline(JsonWriter& w, const std::string& prefix, const RooflinePoint& p) {
  w.member(prefix + "intensity", p.intensity);
  w.member(prefix + "achieved_flops_per_s", p.achieved_flops_per_s);
  w.member(prefix + "achieved_bytes_per_s", p.achieved_bytes_per_s);
  w.member(prefix + "attainable_flops_per_s", p.attainable_flops_per_s);
  w.key(prefix + "roofline_share");  // null: no bound, or no time to divide by
  if (p.bound.empty() || !p.timed) {
    w.null();
  } else {
    w.value(p.share);
  }
  w.key(prefix + "bound");
  if (p.bound.empty()) {
    w.null();
  } else {
    w.value(p.bound);
  }
  w.key(prefix + "ceiling");
  if (p.ceiling.empty()) {
    w.null();
  } else {
    w.value(p.ceiling);
  }
  w.member(prefix + "ceiling_bytes_per_s", p.ceiling_bytes_per_s);
  w.member(prefix + "above_ceiling", p.above_ceiling);
}

// A latency spread over iterations, as `key`: only when there were several.
void spread(JsonWriter& w, std::string_view key, const LatencySpread& s) {
  if (s.samples == 0) return;
  w.key(key);
  w.begin_object();
  w.member("samples", s.samples);
  w.member("min_s", s.min_s);
  w.member("median_s", s.median_s);
  w.member("max_s", s.max_s);
  w.end_object();
}

// What ran: the forward's inputs, threads, versions, the device.
void write_workload(JsonWriter& w, const ProfileResult& r) {
  const Workload& x = r.workload;
  w.key("workload");
  w.begin_object();
  w.key("inputs");
  w.begin_array();
  for (const std::string& i : x.inputs) w.value(i);
  w.end_array();
  w.member("inputs_source", x.inputs_source);
  w.member("batch_size", r.batch_size);
  w.member("iterations", r.modules.empty() ? uint64_t{0} : r.modules[0].calls);
  w.member("intra_op_threads", x.intra_op_threads);
  w.member("libtorch_version", x.libtorch_version);
  w.member("build_type", x.build_type);
  w.member("device", x.device);
  w.member("flopsprof_version", x.flopsprof_version);
  w.member("profile_step", x.profile_step);
  w.member("runs", x.runs);
  w.member("capture", x.capture);
  w.member("capture_note", x.capture_note);
  w.end_object();
}

// The machine's ceilings and where they came from.
void write_machine(JsonWriter& w, const ProfileResult& r) {
  const MachinePeaks& m = r.machine;
  w.key("machine");
  w.begin_object();
  w.member("device", m.device);
  w.member("threads", m.threads);
  w.key("peak_flops_per_s");
  w.begin_object();
  for (size_t d = 0; d < m.flops_per_s.size(); ++d) {
    if (m.flops_per_s[d] > 0) w.member(dtype_name(static_cast<DType>(d)), m.flops_per_s[d]);
  }
  w.end_object();
  w.member("peak_bytes_per_s", m.bytes_per_s);
  w.key("bandwidth_by_level");
  w.begin_array();
  for (const BandwidthLevel& l : m.bandwidth_by_level) {
    w.begin_object();
    w.member("name", l.name);
    w.member("capacity_bytes", l.capacity_bytes);
    w.member("bytes_per_s", l.bytes_per_s);
    w.end_object();
  }
  w.end_array();
  w.member("flops_source", m.flops_source);
  w.member("bandwidth_source", m.bandwidth_source);
  w.member("detail", m.detail);
  if (!m.doubt.empty()) w.member("doubt", m.doubt);
  w.member("measure_s", m.measure_s);
  w.member("cache_file", m.cache_file);
  w.end_object();
}

// A rate or ratio that is 0 only when unknown (tokens/s, MFU without peaks): null then.
void known_or_null(JsonWriter& w, std::string_view key, double v) {
  w.key(key);
  if (v > 0) {
    w.value(v);
  } else {
    w.null();
  }
}

// A time of `r`: null where the profile has none (ProfileResult::timed: nothing ran).
void time_member(JsonWriter& w, const ProfileResult& r, std::string_view key, double seconds) {
  w.key(key);
  if (r.timed) {
    w.value(seconds);
  } else {
    w.null();
  }
}

// The summary: totals, latencies, sizes.
void write_summary(JsonWriter& w, const ProfileResult& r) {
  w.key("summary");
  w.begin_object();
  w.member("params", r.params);
  w.member("trainable_params", r.trainable_params);
  w.member("param_bytes", r.param_bytes);
  by_dtype(w, "param_bytes_by_dtype", r.param_bytes_by_dtype);
  w.member("fwd_flops", r.flops);
  w.member("fwd_macs", r.macs);
  w.member("timed", r.timed);
  time_member(w, r, "fwd_latency_s", r.duration_s);
  time_member(w, r, "fwd_latency_raw_s", r.duration_raw_s);
  time_member(w, r, "fwd_flops_per_s", r.fwd_flops_per_s);
  by_dtype(w, "flops_by_dtype", r.flops_by_dtype);
  w.member("dtype", dtype_name(r.dtype));
  // Causal masks: the headline's convention and the three counts (docs/report.md).
  w.member("attention_convention", convention_name(r.attention));
  w.member("fwd_flops_dense", r.dense_flops(r.flops, r.masked_flops));
  w.member("fwd_flops_causal", r.causal_flops(r.flops, r.masked_flops));
  w.member("fwd_flops_kernel", r.kernel_flops(r.flops, r.masked_flops, r.skipped_flops));
  w.member("bwd_flops_dense", r.dense_flops(r.bwd_flops, r.bwd_masked_flops));
  w.member("bwd_flops_causal", r.causal_flops(r.bwd_flops, r.bwd_masked_flops));
  w.member("bwd_flops_kernel",
           r.kernel_flops(r.bwd_flops, r.bwd_masked_flops, r.bwd_skipped_flops));
  w.member("attention_kernel_unknown_calls", r.kernel_unknown_calls);
  w.member("attention_masks_read_calls", r.attention_masks_read);
  w.member("attention_masks_unread_calls", r.attention_masks_unread);
  time_member(w, r, "no_formula_latency_s", r.no_formula_s);
  w.member("threads", r.threads);
  w.member("op_events", r.op_events);
  w.member("timer", r.timer);
  w.member("world_size", r.world_size);
  w.member("data_parallel_size", r.data_parallel_size);
  w.member("model_parallel_size", r.model_parallel_size);
  w.member("batch_size", r.batch_size);
  w.member("bwd_flops", r.bwd_flops);
  w.member("bwd_macs", r.bwd_macs);
  w.member("bwd_latency_s", r.bwd_latency_s);
  w.member("bwd_latency_raw_s", r.bwd_latency_raw_s);
  w.member("bwd_flops_estimate", r.estimated_bwd_flops());
  w.member("recompute_flops", r.recompute_flops);
  w.member("recompute_macs", r.recompute_macs);
  w.member("autograd_flops", r.autograd_flops);
  w.member("autograd_latency_s", r.autograd_latency_s);
  w.member("step_flops", r.step_flops);
  w.member("forwards_without_backward", r.forwards_without_backward);
  w.member("step_latency_s", r.step_latency_s);
  w.member("step_latency_raw_s", r.step_latency_raw_s);
  w.member("iter_latency_s", r.iteration_latency_s());
  time_member(w, r, "bwd_flops_per_s", r.bwd_flops_per_s);
  time_member(w, r, "fwd_bwd_flops_per_s", r.fwd_bwd_flops_per_s);
  time_member(w, r, "iter_flops_per_s", r.iter_flops_per_s);
  time_member(w, r, "samples_per_s", r.samples_per_s);
  w.member("fwd_bytes", r.fwd_bytes);
  w.member("fwd_bytes_read", r.fwd_bytes_read);
  w.member("fwd_bytes_written", r.fwd_bytes_written);
  w.member("kv_read_bytes", r.kv_read_bytes);
  w.member("kv_write_bytes", r.kv_write_bytes);
  known_or_null(w, "mfu", r.mfu);
  known_or_null(w, "hfu", r.hfu);
  known_or_null(w, "mbu", r.mbu);
  w.member("bwd_bytes", r.bwd_bytes);
  w.member("bwd_bytes_read", r.bwd_bytes_read);
  w.member("bwd_bytes_written", r.bwd_bytes_written);
  w.member("recompute_bytes", r.recompute_bytes);
  w.member("autograd_bytes", r.autograd_bytes);
  w.member("step_bytes", r.step_bytes);
  w.member("step_bytes_read", r.step_bytes_read);
  w.member("step_bytes_written", r.step_bytes_written);
  w.member("bytes_written_unknown_calls", r.bytes_written_unknown_calls);
  roofline(w, "fwd_", r.roofline);
  roofline(w, "bwd_", r.bwd_roofline);
  roofline(w, "step_", r.step_roofline);
  spread(w, "fwd_spread", r.fwd_spread);
  spread(w, "bwd_spread", r.bwd_spread);
  spread(w, "step_spread", r.step_spread);
  w.end_object();
}

// The regions the caller named (FlopsProfiler::region()); each module's share is in its own
// object's "regions".
void write_regions(JsonWriter& w, const ProfileResult& r) {
  if (r.regions.empty()) return;
  w.key("regions");
  w.begin_array();
  for (const RegionStats& g : r.regions) {
    w.begin_object();
    w.member("name", g.name);
    w.member("windows", g.windows);
    time_member(w, r, "duration_s", g.duration_s);
    time_member(w, r, "first_window_s", g.first_s);
    spread(w, "window_spread", g.spread);
    w.member("flops", g.flops);
    w.member("macs", g.macs);
    by_dtype(w, "flops_by_dtype", g.flops_by_dtype);
    w.member("bwd_flops", g.bwd_flops);
    w.member("recompute_flops", g.recompute_flops);
    w.member("outside_flops", g.outside_flops);
    w.member("bytes", g.bytes);
    w.member("kv_read_bytes", g.kv_read_bytes);
    w.member("kv_write_bytes", g.kv_write_bytes);
    w.key("tokens");
    if (g.tokens > 0) {
      w.value(g.tokens);
    } else {
      w.null();
    }
    w.member("tokens_source", g.tokens_source);
    known_or_null(w, "tokens_per_s", g.tokens_per_s);
    known_or_null(w, "flops_per_token", g.flops_per_token);
    known_or_null(w, "latency_per_token_s", g.latency_per_token_s);
    known_or_null(w, "mfu", g.mfu);
    known_or_null(w, "hfu", g.hfu);
    known_or_null(w, "mbu", g.mbu);
    w.end_object();
  }
  w.end_array();
}

// One module's share of each region, keyed by the region's name.
void write_module_regions(JsonWriter& w, const ProfileResult& r, const ModuleStats& m) {
  if (m.regions.empty()) return;
  w.key("regions");
  w.begin_object();
  for (size_t g = 0; g < m.regions.size() && g < r.regions.size(); ++g) {
    const ModuleRegionStats& x = m.regions[g];
    w.key(r.regions[g].name);
    w.begin_object();
    w.member("calls", x.calls);
    time_member(w, r, "latency_s", x.latency_s);
    w.member("flops", x.flops);
    known_or_null(w, "flops_per_token", x.flops_per_token);
    w.member("macs", x.macs);
    w.member("bytes", x.bytes);
    w.member("kv_read_bytes", x.kv_read_bytes);
    w.member("kv_write_bytes", x.kv_write_bytes);
    w.member("bwd_flops", x.bwd_flops);
    known_or_null(w, "mfu", x.mfu);
    known_or_null(w, "mbu", x.mbu);
    w.end_object();
  }
  w.end_object();
}

// Work observed outside the model's forward (data, loss, metrics, parameter updates).
void write_outside_model(JsonWriter& w, const ProfileResult& r) {
  w.key("outside_model");
  w.begin_object();
  w.member("ops", r.outside.ops);
  w.member("flops", r.outside.flops);
  w.member("macs", r.outside.macs);
  w.member("latency_s", r.outside.latency_s);
  w.member("bytes", r.outside.bytes);
  w.member("bwd_bytes", r.outside.bwd_bytes);
  w.member("bwd_flops", r.outside.bwd_flops);
  w.member("bwd_macs", r.outside.bwd_macs);
  w.member("bwd_latency_s", r.outside.bwd_latency_s);
  w.member("inferred_ops", r.outside.inferred_ops);
  w.member("inferred_flops", r.outside.inferred_flops);
  w.member("inferred_bytes", r.outside.inferred_bytes);
  w.member("inferred_bwd_flops", r.outside.inferred_bwd_flops);
  w.member("inferred_bwd_bytes", r.outside.inferred_bwd_bytes);
  w.member("maybe_missing_ops", r.outside.maybe_missing_ops);
  w.member("maybe_missing_flops", r.outside.maybe_missing_flops);
  w.member("maybe_missing_bytes", r.outside.maybe_missing_bytes);
  w.key("top_ops");
  w.begin_array();
  for (const OpStats& op : r.outside.top_ops) {
    w.begin_object();
    w.member("name", op.name);
    w.member("calls", op.calls);
    w.member("flops", op.flops);
    w.member("latency_s", op.latency_s);
    w.end_object();
  }
  w.end_array();
  w.end_object();
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
  w.member("not_removed", c.not_removed);
  w.end_object();
}

// Every module in tree order.
void write_modules(JsonWriter& w, const ProfileResult& r) {
  w.key("modules");
  w.begin_array();
  for (const ModuleStats& m : r.modules) {
    w.begin_object();
    w.member("name", m.name);
    w.member("type", m.type);
    w.member("depth", m.depth);
    w.key("parent");
    if (m.parent >= 0) {
      w.value(r.modules[m.parent].name);
    } else {
      w.null();
    }
    w.member("calls", m.calls);
    w.member("scoped", m.scoped);
    w.member("calls_inferred", m.calls_inferred);
    w.member("params", m.params);
    w.member("trainable_params", m.trainable_params);
    w.member("param_bytes", m.param_bytes);
    w.member("macs", m.macs);
    w.member("flops", m.flops);
    time_member(w, r, "latency_s", m.latency_s);
    time_member(w, r, "latency_raw_s", m.latency_raw_s);
    w.member("na_ops", m.na_ops);
    w.member("inferred_ops", m.inferred_ops);
    w.member("inferred_flops", m.inferred_flops);
    w.member("inferred_bytes", m.inferred_bytes);
    w.member("inferred_bwd_flops", m.inferred_bwd_flops);
    w.member("inferred_bwd_bytes", m.inferred_bwd_bytes);
    w.member("maybe_missing_ops", m.maybe_missing_ops);
    w.member("maybe_missing_flops", m.maybe_missing_flops);
    w.member("maybe_missing_bytes", m.maybe_missing_bytes);
    by_dtype(w, "flops_by_dtype", m.flops_by_dtype);
    w.member("dtype", dtype_name(m.dtype));
    w.member("flops_dense", r.dense_flops(m.flops, m.masked_flops));
    w.member("flops_causal", r.causal_flops(m.flops, m.masked_flops));
    w.member("flops_kernel", r.kernel_flops(m.flops, m.masked_flops, m.skipped_flops));
    w.member("bwd_flops", m.bwd_flops);
    w.member("bwd_macs", m.bwd_macs);
    w.member("bwd_latency_s", m.bwd_latency_s);
    w.member("recompute_flops", m.recompute_flops);
    w.member("recompute_macs", m.recompute_macs);
    w.member("fwd_alloc_bytes", m.fwd_alloc_bytes);
    w.member("fwd_held_bytes", m.fwd_held_bytes);
    w.member("bytes", m.bytes);
    w.member("bytes_read", m.bytes_read);
    w.member("bytes_written", m.bytes_written);
    w.member("kv_read_bytes", m.kv_read_bytes);
    w.member("kv_write_bytes", m.kv_write_bytes);
    known_or_null(w, "mfu", m.mfu);
    known_or_null(w, "hfu", m.hfu);
    known_or_null(w, "mbu", m.mbu);
    roofline(w, "", m.roofline);
    w.member("bwd_bytes", m.bwd_bytes);
    w.member("bwd_bytes_read", m.bwd_bytes_read);
    w.member("bwd_bytes_written", m.bwd_bytes_written);
    w.member("recompute_bytes", m.recompute_bytes);
    roofline(w, "bwd_", m.bwd_roofline);
    spread(w, "fwd_spread", m.fwd_spread);
    spread(w, "bwd_spread", m.bwd_spread);
    write_module_regions(w, r, m);
    w.key("ops");  // its own forward ops, slim: the op table has the rest
    w.begin_array();
    for (const OpStats& op : m.ops) {
      w.begin_object();
      w.member("name", op.name);
      w.member("calls", op.calls);
      w.member("flops", op.flops);
      w.member("macs", op.macs);
      time_member(w, r, "latency_s", op.latency_s);
      w.member("bytes", op.bytes);
      w.end_object();
    }
    w.end_array();
    if (r.gpu.measured) {
      w.member("device_fwd_s", m.device_fwd_s);
      w.member("device_bwd_s", m.device_bwd_s);
      w.member("gpu_busy_s", m.gpu_busy_s);
      w.member("gpu_span_s", m.gpu_span_s);
      kernels(w, m.top_kernels);
    }
    w.end_object();
  }
  w.end_array();
}

// The op table.
void write_ops(JsonWriter& w, const ProfileResult& r) {
  w.key("ops");
  w.begin_array();
  for (const OpStats& op : r.ops) {
    w.begin_object();
    w.member("name", op.name);
    w.member("phase", op.phase);
    w.member("has_formula", op.has_formula);
    w.member("calls", op.calls);
    w.member("flops", op.flops);
    w.member("macs", op.macs);
    time_member(w, r, "latency_s", op.latency_s);
    time_member(w, r, "latency_raw_s", op.latency_raw_s);
    time_member(w, r, "uncounted_self_latency_s", op.uncovered_s);
    w.member("bytes", op.bytes);
    w.member("bytes_read", op.bytes_read);
    w.member("bytes_written", op.bytes_written);
    w.member("written_unknown_calls", op.written_unknown);
    w.member("written_from_allocations_calls", op.written_from_allocations);
    w.member("dtype", dtype_name(op.dtype));
    roofline(w, "", op.roofline);
    w.end_object();
  }
  w.end_array();
}

// The memory footprint (with track_memory).
void write_memory(JsonWriter& w, const ProfileResult& r) {
  if (r.memory.tracked) {
    const MemoryStats& m = r.memory;
    w.key("memory");
    w.begin_object();
    w.member("peak_bytes", m.peak_bytes);
    w.member("peak_op", m.peak_op);
    w.member("peak_module", m.peak_module);
    w.member("peak_phase", m.peak_phase);
    w.member("peak_workspace_bytes", m.peak_workspace_bytes);
    w.member("tensor_peak_bytes", m.tensor_peak_bytes);
    w.member("fwd_peak_bytes", m.fwd_peak_bytes);
    w.member("final_bytes", m.final_bytes);
    w.member("peak_reserved_bytes", m.peak_reserved_bytes);
    w.member("allocations", m.allocations);
    w.member("frees", m.frees);
    w.key("trace");
    w.begin_array();
    for (const MemorySample& x : m.trace) {
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
    kernels(w, g.top_kernels);
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
    time_member(w, r, "fwd_latency_s", g.latency_s);
    w.end_object();
  }
  w.end_array();
}

// What could not be measured or was inferred.
void write_problems(JsonWriter& w, const ProfileResult& r) {
  w.key("problems");
  w.begin_array();
  for (const std::string& p : r.problems) w.value(p);
  w.end_array();
}

}  // namespace

std::string to_json(const ProfileResult& r, int indent) {
  JsonWriter w(indent);
  w.begin_object();
  w.member("schema_version", detail::kProfileSchemaVersion);
  w.member("generator", "flopsprof " FLOPSPROF_VERSION);
  write_workload(w, r);
  write_summary(w, r);
  write_correction(w, r);
  write_machine(w, r);
  write_outside_model(w, r);
  write_regions(w, r);
  write_modules(w, r);
  write_module_types(w, r);
  write_ops(w, r);
  write_memory(w, r);
  write_gpu(w, r);
  write_ranks(w, r);
  write_collectives(w, r);
  write_problems(w, r);
  w.end_object();
  return w.take();
}

}  // namespace flopsprof
