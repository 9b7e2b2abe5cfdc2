// The profile's JSON (docs/json.md), one table per struct: each key spelled once, with its kind,
// the member it holds and what a reader may miss. The writer (reports/report_json.cpp) and the
// reader (compare/profile_reader.cpp) walk the same tables with their own visitor, so a key
// cannot be written under one name and read under another; tests/profile_fields_test.cpp fills
// every field, writes, reads back and compares.
//
// A visitor `v` has one method per kind; `S` is the struct, const for the writer:
//   count       a number >= 0 (uint64_t, or a signed member that is never negative)
//   integer     int or int64_t
//   text, flag  std::string, bool
//   seconds     a duration, always written (null when not finite)
//   timed       a duration, null when the profile has no time (ProfileResult::timed)
//   timed_rate  a rate (FLOP/s, samples/s), null when the profile has no time
//   number      a rate or ratio >= 0, no bound (intensities, achieved rates)
//   known       a rate or ratio that is 0 only when unknown: null then
//   known_count a count that is 0 only when unknown: null then
//   dtype       a DType by its name ("fp32"); by_dtype, an object of them
//   spread      a LatencySpread, an object written when it has samples
//   roofline    a RooflinePoint, its keys after a prefix ("fwd_", "bwd_" or "")
//   rates       rates per dtype (doubles), an object of the non-zero ones by dtype name
//   text_if_any a string written only when not empty
//   derived     a number computed from other fields: written, never read
//   list        an array of objects, each by its own table
//   strings     an array of strings
//   parent      a module's parent: its name, or null for the root
//   regions     a module's numbers per region: an object keyed by the region's name, each by the
//               module_region table (regions are read before modules)
#pragma once

#include <string>

#include "flopsprof/result.h"

namespace flopsprof::detail::fields {

/// What a reader does when a key is absent.
struct Need {
  bool required = false;  ///< absent: the file is refused
  /// The keys of one group are all present or all absent (a half is refused); with `record`,
  /// a group absent is recorded as missing under this name (LoadedProfile::missing).
  const char* group = nullptr;
  bool record = false;
  bool gpu = false;   ///< written only when the profile measured a device (GpuStats::measured)
  bool full = false;  ///< an op's: only in the op table, not in a module's slim rows
};
constexpr Need kOptional{};
constexpr Need kRequired{true};
/// Written when a device was measured; optional to read.
constexpr Need kGpu{false, nullptr, false, true};
/// In the op table only.
constexpr Need kFull{false, nullptr, false, false, true};
constexpr Need kFullRequired{true, nullptr, false, false, true};
/// All or none; none recorded as `missing` in the loaded profile.
constexpr Need lacks(const char* missing) { return Need{false, missing, true}; }
/// All or none; none is fine.
constexpr Need together(const char* group) { return Need{false, group, false}; }

// The document's sections.
constexpr const char* kWorkload = "workload";
constexpr const char* kSummary = "summary";
constexpr const char* kModules = "modules";
constexpr const char* kOps = "ops";
constexpr const char* kRegions = "regions";
constexpr const char* kMemory = "memory";
constexpr const char* kMachine = "machine";
constexpr const char* kOutside = "outside_model";
constexpr const char* kProblems = "problems";
constexpr const char* kSchemaVersion = "schema_version";
/// What the loaded profile records when a section is absent.
constexpr const char* kMissingModuleOps = "module_ops";

template <class V, class S>
void spread(V& v, S& s) {
  v.count("samples", s.samples, kRequired);
  v.seconds("min_s", s.min_s, kRequired);
  v.seconds("median_s", s.median_s, kRequired);
  v.seconds("max_s", s.max_s, kRequired);
}

template <class V, class S>
void kernel(V& v, S& k) {
  v.text("name", k.name, kRequired);
  v.count("calls", k.calls, kRequired);
  v.seconds("gpu_s", k.gpu_s, kRequired);
}

/// A point on the roofline; its keys follow `prefix`.
template <class V, class P>
void roofline(V& v, const std::string& prefix, P& p) {
  v.number(prefix + "intensity", p.intensity);
  v.number(prefix + "achieved_flops_per_s", p.achieved_flops_per_s);
  v.number(prefix + "achieved_bytes_per_s", p.achieved_bytes_per_s);
  v.number(prefix + "attainable_flops_per_s", p.attainable_flops_per_s);
  // null: no bound, or no time to divide by (RooflinePoint::timed false).
  v.share(prefix + "roofline_share", p.share, p.timed, p.bound);
  v.text_or_null(prefix + "bound", p.bound);
  v.text_or_null(prefix + "ceiling", p.ceiling);
  v.number(prefix + "ceiling_bytes_per_s", p.ceiling_bytes_per_s);
  v.flag(prefix + "above_ceiling", p.above_ceiling);
}

/// What ran: the forward's inputs, threads, versions, the device.
template <class V, class R>
void workload(V& v, R& r) {
  auto& x = r.workload;
  v.strings("inputs", x.inputs, kRequired);
  v.text("inputs_source", x.inputs_source);
  v.derived("batch_size", r.batch_size);
  v.derived("iterations", r.modules.empty() ? uint64_t{0} : r.modules[0].calls);
  v.integer("intra_op_threads", x.intra_op_threads, kRequired);
  v.text("libtorch_version", x.libtorch_version, kRequired);
  v.text("build_type", x.build_type, kRequired);
  v.text("device", x.device, kRequired);
  v.text("flopsprof_version", x.flopsprof_version, kRequired);
  v.integer("profile_step", x.profile_step, kRequired);
  v.count("runs", x.runs, kRequired);
  v.text("capture", x.capture);
  v.text("capture_note", x.capture_note);
}

/// The summary's forward: totals, latency, dtypes, the attention convention, coverage, sizes.
template <class V, class R>
void summary_forward(V& v, R& r) {
  v.count("params", r.params, kRequired);
  v.count("trainable_params", r.trainable_params);
  v.count("param_bytes", r.param_bytes);
  v.by_dtype("param_bytes_by_dtype", r.param_bytes_by_dtype);
  v.count("fwd_flops", r.flops, kRequired);
  v.count("fwd_macs", r.macs, kRequired);
  v.flag("timed", r.timed);  // before the times: null is read as 0 only when false
  v.timed("fwd_latency_s", r.duration_s, kRequired);
  v.timed("fwd_latency_raw_s", r.duration_raw_s);
  v.timed_rate("fwd_flops_per_s", r.fwd_flops_per_s);
  v.by_dtype("flops_by_dtype", r.flops_by_dtype);
  v.dtype("dtype", r.dtype);
  // Causal masks: the headline's convention and the three counts (docs/report.md).
  v.convention("attention_convention", r.attention);
  v.derived("fwd_flops_dense", r.dense_flops(r.flops, r.masked_flops));
  v.derived("fwd_flops_causal", r.causal_flops(r.flops, r.masked_flops));
  v.derived("fwd_flops_kernel", r.kernel_flops(r.flops, r.masked_flops, r.skipped_flops));
  v.derived("bwd_flops_dense", r.dense_flops(r.bwd_flops, r.bwd_masked_flops));
  v.derived("bwd_flops_causal", r.causal_flops(r.bwd_flops, r.bwd_masked_flops));
  v.derived("bwd_flops_kernel",
            r.kernel_flops(r.bwd_flops, r.bwd_masked_flops, r.bwd_skipped_flops));
  v.count("attention_kernel_unknown_calls", r.kernel_unknown_calls);
  v.count("attention_masks_read_calls", r.attention_masks_read);
  v.count("attention_masks_unread_calls", r.attention_masks_unread);
  v.timed("no_formula_latency_s", r.no_formula_s);
  v.timed("no_formula_share", r.no_formula_share);
  v.count("no_formula_ops", r.no_formula_ops);
  v.count("no_formula_calls", r.no_formula_calls);
  v.count("no_formula_ops_elsewhere", r.no_formula_ops_elsewhere);
  v.number("inferred_flops_share", r.inferred_flops_share);
  v.number("inferred_bytes_share", r.inferred_bytes_share);
  v.number("inferred_bwd_flops_share", r.inferred_bwd_flops_share);
  v.count("threads", r.threads);
  v.count("op_events", r.op_events);
  v.text("timer", r.timer);
  v.integer("world_size", r.world_size);
  v.integer("data_parallel_size", r.data_parallel_size);
  v.integer("model_parallel_size", r.model_parallel_size);
  v.count("batch_size", r.batch_size);  // int64_t, never negative
}

/// The summary's training: backward, recompute, step, the rates.
template <class V, class R>
void summary_training(V& v, R& r) {
  constexpr Need bwd = lacks("backward");
  v.count("bwd_flops", r.bwd_flops, bwd);
  v.count("bwd_macs", r.bwd_macs, bwd);
  v.seconds("bwd_latency_s", r.bwd_latency_s, bwd);
  v.seconds("bwd_latency_raw_s", r.bwd_latency_raw_s);
  v.count("bwd_passes", r.bwd_passes);
  v.count("bwd_shared_passes", r.bwd_shared_passes);
  v.derived("bwd_flops_estimate", r.estimated_bwd_flops());
  v.count("recompute_flops", r.recompute_flops);
  v.count("recompute_macs", r.recompute_macs);
  v.count("autograd_flops", r.autograd_flops);
  v.seconds("autograd_latency_s", r.autograd_latency_s);
  v.count("step_flops", r.step_flops, bwd);
  v.count("forwards_without_backward", r.forwards_without_backward);
  v.seconds("step_latency_s", r.step_latency_s, bwd);
  v.seconds("step_latency_raw_s", r.step_latency_raw_s);
  v.derived("iter_latency_s", r.iteration_latency_s());
  v.timed_rate("bwd_flops_per_s", r.bwd_flops_per_s);
  v.timed_rate("fwd_bwd_flops_per_s", r.fwd_bwd_flops_per_s);
  v.timed_rate("iter_flops_per_s", r.iter_flops_per_s);
  v.timed_rate("samples_per_s", r.samples_per_s);
}

/// The summary's bytes, utilisation, roofline points and spreads.
template <class V, class R>
void summary_bytes(V& v, R& r) {
  v.count("fwd_bytes", r.fwd_bytes, lacks("bytes"));
  v.count("fwd_bytes_read", r.fwd_bytes_read);
  v.count("fwd_bytes_written", r.fwd_bytes_written);
  v.count("kv_read_bytes", r.kv_read_bytes);
  v.count("kv_write_bytes", r.kv_write_bytes);
  v.known("mfu", r.mfu);
  v.known("hfu", r.hfu);
  v.known("mbu", r.mbu);
  v.flag("mfu_above_peak", r.mfu_above_peak);
  v.flag("hfu_above_peak", r.hfu_above_peak);
  v.flag("mbu_above_peak", r.mbu_above_peak);
  v.known("fwd_flops_of_peak", r.fwd_flops_of_peak);
  v.known("fwd_bytes_of_peak", r.fwd_bytes_of_peak);
  v.known("bwd_flops_of_peak", r.bwd_flops_of_peak);
  v.known("bwd_bytes_of_peak", r.bwd_bytes_of_peak);
  v.count("bwd_bytes", r.bwd_bytes);
  v.count("bwd_bytes_read", r.bwd_bytes_read);
  v.count("bwd_bytes_written", r.bwd_bytes_written);
  v.count("recompute_bytes", r.recompute_bytes);
  v.count("autograd_bytes", r.autograd_bytes);
  v.count("step_bytes", r.step_bytes);
  v.count("step_bytes_read", r.step_bytes_read);
  v.count("step_bytes_written", r.step_bytes_written);
  v.count("bytes_written_unknown_calls", r.bytes_written_unknown_calls);
  v.roofline("fwd_", r.roofline);
  v.roofline("bwd_", r.bwd_roofline);
  v.roofline("step_", r.step_roofline);
  v.spread("fwd_spread", r.fwd_spread);
  v.spread("bwd_spread", r.bwd_spread);
  v.spread("step_spread", r.step_spread);
}

/// The summary: totals, latencies, sizes (the three parts above, in this order).
template <class V, class R>
void summary(V& v, R& r) {
  summary_forward(v, r);
  summary_training(v, r);
  summary_bytes(v, r);
}

/// A row of the op table (every field), or of a module's own ops (the slim rows: those not
/// marked `full`, all forward).
template <class V, class S>
void op(V& v, S& o) {
  v.text("name", o.name, kRequired);
  v.text("phase", o.phase, kFullRequired);
  v.flag("has_formula", o.has_formula, kFull);
  v.count("calls", o.calls, kRequired);
  v.count("flops", o.flops, kRequired);
  v.count("macs", o.macs, kRequired);
  v.timed("latency_s", o.latency_s, kRequired);
  v.timed("latency_raw_s", o.latency_raw_s, kFull);
  v.timed("uncounted_self_latency_s", o.uncovered_s, kFull);
  v.timed("phase_share", o.phase_share, kFull);
  v.count("bytes", o.bytes);
  v.count("bytes_read", o.bytes_read, kFull);
  v.count("bytes_written", o.bytes_written, kFull);
  v.count("written_unknown_calls", o.written_unknown, kFull);
  v.count("written_from_allocations_calls", o.written_from_allocations, kFull);
  v.dtype("dtype", o.dtype, kFull);
  v.roofline("", o.roofline, kFull);
}

/// A module, in tree order.
template <class V, class S>
void module(V& v, S& m) {
  v.text("name", m.name, kRequired);
  v.text("type", m.type, kRequired);
  v.integer("depth", m.depth, kRequired);
  v.parent("parent", m.parent);
  v.count("calls", m.calls, kRequired);
  v.flag("scoped", m.scoped);
  v.flag("calls_inferred", m.calls_inferred);
  v.count("params", m.params, kRequired);
  v.count("trainable_params", m.trainable_params);
  v.count("param_bytes", m.param_bytes);
  v.count("macs", m.macs, kRequired);
  v.count("flops", m.flops, kRequired);
  v.timed("latency_s", m.latency_s, kRequired);
  v.timed("latency_raw_s", m.latency_raw_s);
  v.number("params_share", m.params_share);
  v.number("macs_share", m.macs_share);
  v.timed("latency_share", m.latency_share);
  v.count("na_ops", m.na_ops);
  v.count("inferred_ops", m.inferred_ops);
  v.count("inferred_flops", m.inferred_flops);
  v.count("inferred_bytes", m.inferred_bytes);
  v.count("inferred_bwd_flops", m.inferred_bwd_flops);
  v.count("inferred_bwd_bytes", m.inferred_bwd_bytes);
  v.count("maybe_missing_ops", m.maybe_missing_ops);
  v.count("maybe_missing_flops", m.maybe_missing_flops);
  v.count("maybe_missing_bytes", m.maybe_missing_bytes);
  v.by_dtype("flops_by_dtype", m.flops_by_dtype);
  v.dtype("dtype", m.dtype);
  v.derived("flops_dense", v.result().dense_flops(m.flops, m.masked_flops));
  v.derived("flops_causal", v.result().causal_flops(m.flops, m.masked_flops));
  v.derived("flops_kernel", v.result().kernel_flops(m.flops, m.masked_flops, m.skipped_flops));
  constexpr Need bwd = together("module backward");
  v.count("bwd_flops", m.bwd_flops, bwd);
  v.count("bwd_macs", m.bwd_macs);
  v.seconds("bwd_latency_s", m.bwd_latency_s, bwd);
  v.count("recompute_flops", m.recompute_flops);
  v.count("recompute_macs", m.recompute_macs);
  v.integer("fwd_alloc_bytes", m.fwd_alloc_bytes);
  v.integer("fwd_held_bytes", m.fwd_held_bytes);
  v.count("bytes", m.bytes);
  v.count("bytes_read", m.bytes_read);
  v.count("bytes_written", m.bytes_written);
  v.count("kv_read_bytes", m.kv_read_bytes);
  v.count("kv_write_bytes", m.kv_write_bytes);
  v.known("mfu", m.mfu);
  v.known("hfu", m.hfu);
  v.known("mbu", m.mbu);
  v.flag("mfu_above_peak", m.mfu_above_peak);
  v.flag("hfu_above_peak", m.hfu_above_peak);
  v.flag("mbu_above_peak", m.mbu_above_peak);
  v.roofline("", m.roofline);
  v.count("bwd_bytes", m.bwd_bytes);
  v.count("bwd_bytes_read", m.bwd_bytes_read);
  v.count("bwd_bytes_written", m.bwd_bytes_written);
  v.count("recompute_bytes", m.recompute_bytes);
  v.roofline("bwd_", m.bwd_roofline);
  v.spread("fwd_spread", m.fwd_spread);
  v.spread("bwd_spread", m.bwd_spread);
  v.regions("regions", m);  // its share of each region, keyed by the region's name
  // Its own forward ops, slim: the op table has the rest.
  v.slim_ops("ops", m.ops, lacks(kMissingModuleOps));
  v.seconds("device_fwd_s", m.device_fwd_s, kGpu);
  v.seconds("device_bwd_s", m.device_bwd_s, kGpu);
  v.seconds("gpu_busy_s", m.gpu_busy_s, kGpu);
  v.seconds("gpu_span_s", m.gpu_span_s, kGpu);
  v.list(
      "top_kernels", m.top_kernels, [](auto& kv, auto& k) { kernel(kv, k); }, kGpu);
}

/// A module's numbers in one region (ModuleStats::regions), under the region's name.
template <class V, class S>
void module_region(V& v, S& x) {
  v.count("calls", x.calls);
  v.timed("latency_s", x.latency_s);
  v.count("flops", x.flops);
  v.number("flops_share", x.flops_share);
  v.known("flops_per_token", x.flops_per_token);
  v.count("macs", x.macs);
  v.count("bytes", x.bytes);
  v.count("kv_read_bytes", x.kv_read_bytes);
  v.count("kv_write_bytes", x.kv_write_bytes);
  v.count("bwd_flops", x.bwd_flops);
  v.known("mfu", x.mfu);
  v.known("mbu", x.mbu);
  v.flag("mfu_above_peak", x.mfu_above_peak);
  v.flag("mbu_above_peak", x.mbu_above_peak);
}

/// A region the caller named (FlopsProfiler::region()).
template <class V, class S>
void region(V& v, S& g) {
  v.text("name", g.name, kRequired);
  v.count("windows", g.windows, kRequired);
  v.timed("duration_s", g.duration_s, kRequired);
  v.timed("first_window_s", g.first_s, kRequired);
  v.spread("window_spread", g.spread);
  v.count("flops", g.flops, kRequired);
  v.count("macs", g.macs, kRequired);
  v.by_dtype("flops_by_dtype", g.flops_by_dtype);
  v.count("bwd_flops", g.bwd_flops, kRequired);
  v.count("recompute_flops", g.recompute_flops);
  v.count("outside_flops", g.outside_flops);
  v.count("bytes", g.bytes, kRequired);
  v.count("kv_read_bytes", g.kv_read_bytes);
  v.count("kv_write_bytes", g.kv_write_bytes);
  v.number("kv_bytes_share", g.kv_bytes_share);
  v.number("kv_read_bytes_per_token", g.kv_read_per_token);
  v.number("kv_write_bytes_per_token", g.kv_write_per_token);
  v.known_count("tokens", g.tokens);
  v.text("tokens_source", g.tokens_source);
  v.known("tokens_per_s", g.tokens_per_s);
  v.known("flops_per_token", g.flops_per_token);
  v.known("latency_per_token_s", g.latency_per_token_s);
  v.known("mfu", g.mfu);
  v.known("hfu", g.hfu);
  v.known("mbu", g.mbu);
  v.flag("mfu_above_peak", g.mfu_above_peak);
  v.flag("hfu_above_peak", g.hfu_above_peak);
  v.flag("mbu_above_peak", g.mbu_above_peak);
}

/// The memory footprint's totals (with track_memory); its trace is the writer's.
template <class V, class S>
void memory(V& v, S& m) {
  v.integer("peak_bytes", m.peak_bytes, kRequired);
  v.text("peak_op", m.peak_op);
  v.text("peak_module", m.peak_module);
  v.text("peak_phase", m.peak_phase);
  v.integer("peak_workspace_bytes", m.peak_workspace_bytes);
  v.integer("tensor_peak_bytes", m.tensor_peak_bytes);
  v.integer("fwd_peak_bytes", m.fwd_peak_bytes);
  v.integer("final_bytes", m.final_bytes);
  v.integer("peak_reserved_bytes", m.peak_reserved_bytes);
  v.count("allocations", m.allocations);
  v.count("frees", m.frees);
}

/// A memory level of the machine (MachinePeaks::bandwidth_by_level).
template <class V, class S>
void bandwidth_level(V& v, S& l) {
  v.text("name", l.name);
  v.count("capacity_bytes", l.capacity_bytes);
  v.number("bytes_per_s", l.bytes_per_s);
}

/// The machine's ceilings and where they came from (written, not read: a diff compares work).
template <class V, class S>
void machine(V& v, S& m) {
  v.text("device", m.device);
  v.integer("threads", m.threads);
  v.rates("peak_flops_per_s", m.flops_per_s);
  v.number("peak_bytes_per_s", m.bytes_per_s);
  v.list("bandwidth_by_level", m.bandwidth_by_level,
         [](auto& lv, auto& l) { bandwidth_level(lv, l); });
  v.text("flops_source", m.flops_source);
  v.text("bandwidth_source", m.bandwidth_source);
  v.text("detail", m.detail);
  v.text_if_any("doubt", m.doubt);
  v.seconds("measure_s", m.measure_s);
  v.text("cache_file", m.cache_file);
}

/// One of the top ops outside the model (OutsideStats::top_ops).
template <class V, class S>
void outside_op(V& v, S& o) {
  v.text("name", o.name);
  v.count("calls", o.calls);
  v.count("flops", o.flops);
  v.seconds("latency_s", o.latency_s);
}

/// Work outside the model's forward (written, not read).
template <class V, class S>
void outside(V& v, S& o) {
  v.count("ops", o.ops);
  v.count("flops", o.flops);
  v.count("macs", o.macs);
  v.seconds("latency_s", o.latency_s);
  v.count("bytes", o.bytes);
  v.count("bwd_bytes", o.bwd_bytes);
  v.count("bwd_flops", o.bwd_flops);
  v.count("bwd_macs", o.bwd_macs);
  v.seconds("bwd_latency_s", o.bwd_latency_s);
  v.count("inferred_ops", o.inferred_ops);
  v.count("inferred_flops", o.inferred_flops);
  v.count("inferred_bytes", o.inferred_bytes);
  v.count("inferred_bwd_flops", o.inferred_bwd_flops);
  v.count("inferred_bwd_bytes", o.inferred_bwd_bytes);
  v.count("maybe_missing_ops", o.maybe_missing_ops);
  v.count("maybe_missing_flops", o.maybe_missing_flops);
  v.count("maybe_missing_bytes", o.maybe_missing_bytes);
  v.count("other_model_ops", o.other_model_ops);
  v.count("other_model_flops", o.other_model_flops);
  v.list("top_ops", o.top_ops, [](auto& ov, auto& x) { outside_op(ov, x); });
}

}  // namespace flopsprof::detail::fields
