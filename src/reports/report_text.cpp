// The text report: DeepSpeed's summary (here) and the tables after it (report_text_tables.cpp):
// aggregated top modules per depth, detailed module tree, regions, ops on the roofline, ranks.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "flopsprof/report.h"
#include "reports/schema.h"
#include "reports/terminal.h"
#include "reports/text_parts.h"

namespace flopsprof {
namespace detail::text {

void line(std::string& out, const std::string& label, const std::string& value) {
  const size_t width = std::max<size_t>(kLabelWidth, label.size() + 2);  // always a space
  fmt::format_to(std::back_inserter(out), "{:<{}}{}\n", label + ":", width, value);
}

std::string percent(double fraction) { return fmt::format("{:.2f}%", 100.0 * fraction); }

std::string rate(double flops_per_s, double seconds) {
  return seconds > 0 ? flops_per_second_to_string(flops_per_s) : "n/a";
}

// Bytes moved, in decimal units as bandwidth is ("1.23 GB").
std::string traffic(uint64_t bytes) { return number_to_string(static_cast<double>(bytes), "B"); }

std::string share(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }
// A point's share, or n/a where its time is unknown (RooflinePoint::timed).
std::string share(const RooflinePoint& p) { return p.timed ? share(p.share) : "n/a"; }

// A time of `r`, or n/a where the profile has none (ProfileResult::timed: nothing ran).
std::string time_of(const ProfileResult& r, double seconds) {
  return r.timed ? duration_to_string(seconds) : std::string("n/a");
}

// Attention calls with an explicit mask: read, or counted dense (docs/report.md, "Masks").
std::string masks_text(const ProfileResult& r) {
  if (r.attention_masks_read + r.attention_masks_unread == 0) return "";
  std::string s = fmt::format("; {} call(s) with a mask tensor",
                              r.attention_masks_read + r.attention_masks_unread);
  if (r.attention_masks_read > 0)
    s += fmt::format(", {} read (masked pairs as above)", r.attention_masks_read);
  if (r.attention_masks_unread > 0) {
    s += fmt::format(", {} not read: counted dense (read_attention_masks / --read-masks)",
                     r.attention_masks_unread);
  }
  return s;
}

// The memory level a point's bytes are placed against, as the text names it: only on a machine
// with several (one ceiling goes unnamed).
std::string level_of(const RooflinePoint& p, const MachinePeaks& m) {
  return p.bound == "memory" && m.bandwidth_by_level.size() > 1 ? p.ceiling : "";
}

// "12.34 FLOP/B, memory-bound, 45.0% of the bandwidth" (what a roofline point says), or the
// intensity alone when the ceilings are unknown.
std::string point_text(const RooflinePoint& p, const MachinePeaks& m) {
  std::string s = intensity_to_string(p.intensity);
  if (p.bound.empty()) return s;
  return s + fmt::format(", {}-bound, {} of {}{}", p.bound, share(p),
                         p.bound == "memory" ? memory_ceiling_text(m, p) : "the peak FLOPS",
                         p.above_ceiling ? " (above its ceiling: see problems)" : "");
}

// A point's bound and share in a row: "memory L2 45.0%", "compute 80.1%"; "!" after a share
// above its ceiling.
std::string bound_share(const RooflinePoint& p, const MachinePeaks& m) {
  if (p.bound.empty()) return "";
  const std::string level = level_of(p, m);
  return p.bound + (level.empty() ? "" : " " + level) + " " + share(p) +
         (p.above_ceiling ? "!" : "");
}

namespace {

// The summary's sections, in the order summary() writes them.
void summary_header(std::string& out, const ReportOptions& o) {
  out += "-------------------------- flopsprof: Flops Profiler --------------------------\n";
  fmt::format_to(std::back_inserter(out), "Profile Summary at step {}:\n", o.header_step);
  out +=
      "Notations:\n"
      "data parallel size (dp_size), model parallel size (mp_size),\n"
      "number of parameters (params), number of multiply-accumulate operations (MACs),\n"
      "number of floating-point operations (flops), floating-point operations per second "
      "(FLOPS),\n"
      "fwd latency (forward propagation latency), bwd latency (backward propagation latency),\n"
      "step (weights update latency), iter latency (sum of fwd, bwd and step latency)\n\n";
}

// World, batch and parameters (per device and of the model, per dtype).
void summary_sizes(std::string& out, const ProfileResult& r) {
  const double mp = r.model_parallel_size;
  line(out, "world size", fmt::format("{}", r.world_size));
  line(out, "data parallel size", fmt::format("{}", r.data_parallel_size));
  line(out, "model parallel size", fmt::format("{}", r.model_parallel_size));
  line(out, "batch size per device", r.batch_size > 0 ? fmt::format("{}", r.batch_size) : "n/a");
  line(out, "params per device", params_to_string(r.params));
  line(out, "params of model = params per device * mp_size", number_to_string(r.params * mp));
  line(out, "trainable params per device", params_to_string(r.trainable_params));
  for (size_t d = 0; d < r.param_bytes_by_dtype.size(); ++d) {
    if (r.param_bytes_by_dtype[d] == 0) continue;
    line(out, fmt::format("params size ({})", dtype_name(static_cast<DType>(d))),
         fmt::format("{:.2f} MiB",
                     static_cast<double>(r.param_bytes_by_dtype[d]) / (1024.0 * 1024.0)));
  }
}

// Forward MACs, FLOPs (per dtype), latency and rate, and the work outside the model.
void summary_outside(std::string& out, const ProfileResult& r);

void summary_forward(std::string& out, const ProfileResult& r) {
  const double mp = r.model_parallel_size;
  if (!r.modules.empty() && r.modules[0].calls > 1) {  // the fwd lines below are sums over them
    const LatencySpread& s = r.fwd_spread;
    line(out, "fwd calls of the model (the fwd lines sum them)",
         fmt::format("{}{}{}", r.modules[0].calls, r.modules[0].calls_inferred ? " (inferred)" : "",
                     r.timed && s.samples > 1
                         ? fmt::format("; per call min / median / max {} / {} / {}",
                                       duration_to_string(s.min_s), duration_to_string(s.median_s),
                                       duration_to_string(s.max_s))
                         : std::string()));
  }
  line(out, "fwd MACs per device", macs_to_string(r.macs));
  line(out, "fwd flops per device", flops_to_string(r.flops));
  // Per dtype for floating-point work only (integer ops, index arithmetic, are not FLOPs one
  // compares with a device's peak); printed when more than one dtype is involved.
  size_t float_dtypes = 0;
  for (size_t d = 0; d < r.flops_by_dtype.size(); ++d)
    float_dtypes += r.flops_by_dtype[d] > 0 && is_floating(static_cast<DType>(d));
  for (size_t d = 0; d < r.flops_by_dtype.size() && float_dtypes > 1; ++d) {
    if (r.flops_by_dtype[d] == 0 || !is_floating(static_cast<DType>(d))) continue;
    line(out, fmt::format("fwd flops ({})", dtype_name(static_cast<DType>(d))),
         flops_to_string(r.flops_by_dtype[d]));
  }
  // Causal masks: which convention the numbers use, and the other counts beside it.
  if (r.masked_flops > 0 || r.bwd_masked_flops > 0 || r.attention == AttentionConvention::kCausal ||
      r.attention_masks_read + r.attention_masks_unread > 0) {
    line(out, "attention convention (causal masks)",
         fmt::format("{}: fwd flops {} the {} flops on masked pairs; dense {}, causal {}, as the "
                     "kernels ran {}{}{}",
                     convention_name(r.attention),
                     r.attention == AttentionConvention::kCausal ? "leave out" : "include",
                     number_to_string(static_cast<double>(r.masked_flops)),
                     number_to_string(static_cast<double>(r.dense_flops(r.flops, r.masked_flops))),
                     number_to_string(static_cast<double>(r.causal_flops(r.flops, r.masked_flops))),
                     number_to_string(static_cast<double>(
                         r.kernel_flops(r.flops, r.masked_flops, r.skipped_flops))),
                     r.kernel_unknown_calls > 0
                         ? fmt::format(" ({} call(s) by kernels whose skipped blocks are not "
                                       "modelled: counted as computed whole)",
                                       r.kernel_unknown_calls)
                         : "",
                     masks_text(r)));
  }
  line(out, "fwd flops of model = fwd flops per device * mp_size", number_to_string(r.flops * mp));
  line(out, "fwd latency",
       r.timed ? duration_to_string(r.duration_s)
               : std::string("n/a (not run: an exported program counted from its graph)"));
  line(out, "fwd FLOPS per device = fwd flops per device / fwd latency",
       rate(r.fwd_flops_per_s, r.duration_s));
  summary_outside(out, r);
}

// Work in the profile that was not the model's forward: data, loss, metrics, updates.
void summary_outside(std::string& out, const ProfileResult& r) {
  if (r.outside.ops > 0) {
    const OutsideStats& o = r.outside;
    std::string top;
    for (size_t i = 0; i < o.top_ops.size() && i < 3; ++i)
      top += (i ? ", " : "") + o.top_ops[i].name;
    line(out,
         o.other_model_ops > 0
             ? "outside the model (other profiled models, data, loss, metrics, updates)"
             : "outside the model (data, loss, metrics, updates)",
         fmt::format("{} op call(s), {} flops, {}, {} bwd flops{}{}", o.ops,
                     flops_to_string(o.flops), macs_to_string(o.macs), flops_to_string(o.bwd_flops),
                     o.other_model_ops > 0
                         ? fmt::format(" ({} op call(s), {} flops in another profiled model's "
                                       "modules)",
                                       o.other_model_ops, flops_to_string(o.other_model_flops))
                         : std::string(),
                     top.empty() ? "" : "; top: " + top));
    line(out, "outside the model latency", duration_to_string(o.latency_s));
    if (o.inferred_ops > 0) {
      line(out, "outside the model, placed by inference (op order)",
           fmt::format("{} op(s), {} FLOPs, {}{} (see problems)", o.inferred_ops,
                       number_to_string(o.inferred_flops), traffic(o.inferred_bytes),
                       o.inferred_bwd_flops > 0 || o.inferred_bwd_bytes > 0
                           ? fmt::format("; their backward {} FLOPs, {}",
                                         number_to_string(o.inferred_bwd_flops),
                                         traffic(o.inferred_bwd_bytes))
                           : std::string()));
    }
  }
}

// Measured backward, DeepSpeed's estimate beside it, recompute and autograd-only work.
void summary_backward(std::string& out, const ProfileResult& r) {
  if (r.has_backward) {
    line(out, "bwd latency",
         duration_to_string(r.bwd_latency_s) +
             (r.bwd_shared_passes > 0
                  ? fmt::format(" ({} of {} backward pass(es) also ran another profiled model's "
                                "nodes: this model's nodes' time only)",
                                r.bwd_shared_passes, r.bwd_passes)
                  : std::string()));
    line(out, "bwd flops per device (measured)", flops_to_string(r.bwd_flops));
    line(out, "bwd MACs per device (measured)", macs_to_string(r.bwd_macs));
    line(out, "bwd flops, DeepSpeed's estimate (2 * fwd flops + recompute)",
         flops_to_string(r.estimated_bwd_flops()) +
             (r.forwards_without_backward > 0
                  ? fmt::format(" (counts {} of the {} forward calls that had no backward: an "
                                "evaluation in the window)",
                                r.forwards_without_backward, r.modules[0].calls)
                  : ""));
    if (r.recompute_flops > 0) {
      line(out, "recompute flops (forward re-run in backward)", flops_to_string(r.recompute_flops));
    }
    if (r.autograd_flops > 0 || r.autograd_latency_s > 0) {
      line(out, "(autograd): bwd ops linked to no forward op",
           fmt::format("{} flops, {}", flops_to_string(r.autograd_flops),
                       duration_to_string(r.autograd_latency_s)));
    }
    line(out, "bwd FLOPS per device = bwd flops per device / bwd latency",
         rate(r.bwd_flops_per_s, r.bwd_latency_s));
    line(out, "fwd+bwd FLOPS per device = (fwd + bwd flops) / (fwd + bwd latency)",
         rate(r.fwd_bwd_flops_per_s, r.duration_s + r.bwd_latency_s));
  }
}

// The optimizer step, then the iteration (fwd + bwd + step) when training.
void summary_step_and_iteration(std::string& out, const ProfileResult& r) {
  const bool training = r.has_backward || r.has_step;
  if (r.has_step) {
    line(out, "step latency", duration_to_string(r.step_latency_s));
    line(out, "step flops", flops_to_string(r.step_flops));
  }
  if (training) {
    const double iter = r.iteration_latency_s();
    line(out, "iter latency", duration_to_string(iter));
    line(out, "FLOPS per device = (fwd + bwd flops) / iter latency",
         rate(r.iter_flops_per_s, iter));
    line(out, "samples/second",
         r.samples_per_s > 0 ? fmt::format("{:.2f}", r.samples_per_s) : "n/a");
  }
}

// Memory peaks, workspace, allocations (with track_memory).
void summary_memory(std::string& out, const ProfileResult& r) {
  if (r.memory.tracked) {
    const MemoryStats& m = r.memory;
    line(out, "memory peak (net bytes allocated during the profile)",
         fmt::format("{} at {} in {} ({})", bytes_to_string(m.peak_bytes),
                     m.peak_op.empty() ? "(between ops)" : m.peak_op,
                     detail::module_label(m.peak_module), m.peak_phase));
    if (m.peak_workspace_bytes != 0 || m.tensor_peak_bytes != m.peak_bytes) {
      line(out, "memory peak of tensors (no kernel workspace)",
           fmt::format("{} (the peak above has {} of workspace)",
                       bytes_to_string(m.tensor_peak_bytes),
                       bytes_to_string(m.peak_workspace_bytes)));
    }
    line(out, "memory peak during forward", bytes_to_string(m.fwd_peak_bytes));
    line(out, "memory in use at stop", bytes_to_string(m.final_bytes));
    if (m.peak_reserved_bytes > 0) {
      line(out, "memory peak reserved (caching allocator)", bytes_to_string(m.peak_reserved_bytes));
    }
    line(out, "allocations / frees", fmt::format("{} / {}", m.allocations, m.frees));
  }
}

// Device timing, kernels, copies and sets (when a GPU was seen).
void summary_gpu(std::string& out, const ProfileResult& r) {
  if (!r.gpu.backend.empty()) {
    const GpuStats& g = r.gpu;
    line(out, "GPU timing",
         g.reason.empty() ? g.backend : fmt::format("{} ({})", g.backend, g.reason));
    if (g.measured) {
      line(out, "GPU device", g.device.empty() ? "unknown" : g.device);
      line(out, "device time fwd / bwd / step / outside",
           fmt::format("{} / {} / {} / {}", duration_to_string(g.forward_s),
                       duration_to_string(g.backward_s), duration_to_string(g.step_s),
                       duration_to_string(g.outside_s)));
      if (g.untimed > 0) line(out, "device events not timed", std::to_string(g.untimed));
    }
    if (g.measured && g.backend == "cupti") {
      line(out, "GPU busy (sum of kernel times)", duration_to_string(g.busy_s));
      line(out, "GPU span (first kernel to last)", duration_to_string(g.span_s));
      line(out, "GPU kernels",
           fmt::format("{} ({} not linked to an op)", g.kernels,
                       duration_to_string(g.unattributed_s)));
      line(out, "GPU memcpy / memset (apart from busy)",
           fmt::format("{} = {} / {} = {}", g.memcpys, duration_to_string(g.memcpy_s), g.memsets,
                       duration_to_string(g.memset_s)));
      for (const KernelStats& k : g.top_kernels) {
        line(out, fmt::format("  kernel {}", k.name.substr(0, 40)),
             fmt::format("{} calls, {}", k.calls, duration_to_string(k.gpu_s)));
      }
    }
    if (g.dropped_records > 0) {
      line(
          out, "GPU records dropped by CUPTI",
          fmt::format("{} (buffers exhausted: the GPU figures are incomplete)", g.dropped_records));
    }
  }
}

// Whether the profile's ops were captured by the dispatcher interceptor.
bool w_dispatch(const ProfileResult& r) { return r.workload.capture == "dispatch"; }

// What the correction's in-place timings added (LatencyCorrection::*_in_place_ns), as the
// correction line's clause: only the kinds they added to (to the nearest ns); "" when none were
// timed.
std::string in_place_text(const LatencyCorrection& c) {
  if (c.in_place_samples == 0) return {};
  std::vector<std::string> added;
  for (const auto& [ns, per] : {std::pair{c.op_in_place_ns, "op"},
                                std::pair{c.boxed_op_in_place_ns, "op through the boxed fallback"},
                                std::pair{c.call_in_place_ns, "module call"}}) {
    if (ns >= 0.5) added.push_back(fmt::format("{:.0f} ns per {}", ns, per));
  }
  if (added.empty()) {
    return fmt::format(
        "; its code timed in place on {} record halves cost no more than calibrated (or too few "
        "of a kind were timed to tell)",
        c.in_place_samples);
  }
  return fmt::format(", with what its code cost in place above that: {} ({} record halves timed)",
                     fmt::join(added, ", "), c.in_place_samples);
}

// What the counts do not cover: ops without a formula, ops placed by inference; the timer.
void summary_coverage(std::string& out, const ProfileResult& r) {
  // The model's forward only; the table below also lists those of the other phases.
  line(out, "fwd ops without a formula (n/a, not counted)",
       fmt::format("{} op(s), {} call(s), {} = {} of fwd latency{}", r.no_formula_ops,
                   r.no_formula_calls, time_of(r, r.no_formula_s),
                   r.timed ? percent(r.no_formula_share) : std::string("n/a"),
                   r.no_formula_ops_elsewhere > 0
                       ? fmt::format("; {} more in backward, step or outside the model (table "
                                     "below)",
                                     r.no_formula_ops_elsewhere)
                       : std::string()));
  if (!r.modules.empty()) {
    const ModuleStats& root = r.modules[0];
    line(out, "fwd ops placed by inference (op order)",
         root.inferred_ops == 0
             ? std::string("none: every op placed by evidence")
             : fmt::format(
                   "{} op(s), {} FLOPs = {} of fwd flops, {} = {} of fwd bytes{} (see problems)",
                   root.inferred_ops, number_to_string(root.inferred_flops),
                   percent(r.inferred_flops_share), traffic(root.inferred_bytes),
                   percent(r.inferred_bytes_share),
                   root.inferred_bwd_flops > 0
                       ? fmt::format("; their backward {} FLOPs = {} of bwd flops",
                                     number_to_string(root.inferred_bwd_flops),
                                     percent(r.inferred_bwd_flops_share))
                       : ""));
  }
  line(out, "timer", r.timer);
  if (!r.workload.capture.empty()) {
    const Workload& w = r.workload;
    line(out, "capture",
         w.capture == "dispatch"
             ? std::string("dispatch (a dispatcher interceptor: ops nested in a counted op cost "
                           "nothing)")
         : w.capture == "record_function"
             ? "record_function (RecordFunction callbacks on every op)" +
                   (w.capture_note.empty() ? std::string()
                                           : "; the interceptor was not used: " + w.capture_note)
             : w.capture);
  }
  const LatencyCorrection& c = r.correction;
  if (c.applied) {
    const bool boxed = w_dispatch(r);
    line(out, "latency correction",
         fmt::format(
             "{} per op{}, {} per module call removed from the spans around them "
             "(flopsprof's own cost, calibrated at this capture path's first start{}); "
             "the root's forward {} as measured, {} corrected; raw figures: "
             "latency_raw_s in the JSON",
             duration_to_string((c.op_inner_ns + c.op_outer_ns) * 1e-9),
             boxed ? fmt::format(
                         " ({} through the boxed fallback)",
                         duration_to_string((c.boxed_op_inner_ns + c.boxed_op_outer_ns) * 1e-9))
                   : std::string(),
             duration_to_string((c.call_inner_ns + c.call_outer_ns) * 1e-9), in_place_text(c),
             duration_to_string(r.duration_raw_s), duration_to_string(r.duration_s)));
  } else if (!c.reason.empty()) {
    line(out, "latency correction", "none (latencies include flopsprof's own cost): " + c.reason);
  }
  if (!c.not_removed.empty()) line(out, "not removed from the latencies", c.not_removed);
}

// The table of ops without a formula (every phase), with their time and bytes.
void summary_ops_without_formula(std::string& out, const ProfileResult& r) {
  bool any_na = false;
  for (const OpStats& op : r.ops) any_na = any_na || !op.has_formula;
  if (any_na) {
    out += "\nOps without a formula (listed with their time and bytes; their FLOPs are n/a):\n";
    fmt::format_to(std::back_inserter(out), "    {:<40} {:>9} {:>8} {:>12} {:>12} {:>12}\n", "op",
                   "phase", "calls", "time", "self time", "bytes");
    for (const OpStats& op : r.ops) {
      if (op.has_formula) continue;
      fmt::format_to(std::back_inserter(out), "    {:<40} {:>9} {:>8} {:>12} {:>12} {:>12}{}\n",
                     op.name, op.phase, op.calls, time_of(r, op.latency_s),
                     time_of(r, op.uncovered_s), traffic(op.bytes),
                     op.written_unknown > 0            ? " (writes unknown)"
                     : op.written_from_allocations > 0 ? " (writes: allocations)"
                                                       : "");
    }
  }
}

// The first problems seen while profiling, and how many more the JSON holds.
void summary_problems(std::string& out, const ProfileResult& r) {
  if (!r.problems.empty()) {
    // The JSON carries the whole list; the text shows the first ones and says how many more.
    constexpr size_t kShown = 12;
    out += "\nProblems seen while profiling:\n";
    for (size_t k = 0; k < r.problems.size() && k < kShown; ++k)
      fmt::format_to(std::back_inserter(out), "    {}\n", r.problems[k]);
    if (r.problems.size() > kShown) {
      fmt::format_to(std::back_inserter(out),
                     "    ... and {} more (all of them in the JSON's \"problems\")\n",
                     r.problems.size() - kShown);
    }
  }
}

void summary(std::string& out, const ProfileResult& r, const ReportOptions& o) {
  summary_header(out, o);
  summary_sizes(out, r);
  summary_forward(out, r);
  summary_backward(out, r);
  summary_step_and_iteration(out, r);
  summary_memory(out, r);
  summary_gpu(out, r);
  roofline_summary(out, r);
  summary_coverage(out, r);
  summary_ops_without_formula(out, r);
  summary_problems(out, r);
}

}  // namespace
}  // namespace detail::text

std::string format_text_report(const ProfileResult& result, const ReportOptions& options) {
  namespace text = detail::text;
  if (options.module_depth < -1) {
    throw Error(fmt::format("module_depth = {} is invalid; pass -1 for all depths or a depth >= 0",
                            options.module_depth));
  }
  if (options.top_modules < 1) {
    throw Error(fmt::format("top_modules = {} is invalid; pass a count >= 1", options.top_modules));
  }
  std::string out;
  text::summary(out, result, options);
  if (!result.regions.empty()) text::regions(out, result, options);
  text::aggregated(out, result, options);
  if (options.detailed) text::detailed(out, result, options);
  if (options.roofline) text::op_roofline(out, result);
  if (result.gpu.measured) text::kernel_table(out, result, options);
  if (!result.collectives.empty()) text::collectives(out, result);
  if (result.distributed) text::ranks(out, *result.distributed, options);
  out += "------------------------------------------------------------------------------\n";
  return detail::terminal_safe(out);
}

}  // namespace flopsprof
