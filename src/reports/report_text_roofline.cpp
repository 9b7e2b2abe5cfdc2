// The text summary's roofline section (report_text.cpp writes the rest of the summary).
#include <map>

#include <fmt/format.h>

#include "flopsprof/report.h"
#include "reports/text_parts.h"

namespace flopsprof::detail::text {
namespace {

// The roofline's bytes and intensity per phase.
void summary_roofline_bytes(std::string& out, const ProfileResult& r) {
  line(out, "fwd bytes moved (read + written)",
       fmt::format("{} ({} read, {} written)", traffic(r.fwd_bytes), traffic(r.fwd_bytes_read),
                   traffic(r.fwd_bytes_written)));
  if (r.kv_read_bytes + r.kv_write_bytes > 0) {
    line(out, "of which a KV cache's (keys and values read, cache written)",
         fmt::format("{} read, {} written", traffic(r.kv_read_bytes), traffic(r.kv_write_bytes)));
  }
  line(out, "fwd arithmetic intensity (flops / byte)", point_text(r.roofline, r.machine));
  if (r.has_backward) {
    line(out, "bwd bytes moved (read + written)",
         fmt::format("{} ({} read, {} written)", traffic(r.bwd_bytes + r.recompute_bytes),
                     traffic(r.bwd_bytes_read), traffic(r.bwd_bytes_written)));
    line(out, "bwd arithmetic intensity (flops / byte)", point_text(r.bwd_roofline, r.machine));
  }
  if (r.has_step) {
    line(out, "step bytes moved (read + written)",
         fmt::format("{}, {}", traffic(r.step_bytes), point_text(r.step_roofline, r.machine)));
  }
}

// The peaks of the floating dtypes the model computed in (fp32 when none), the bandwidth and its
// memory levels.
void summary_machine_peaks(std::string& out, const ProfileResult& r) {
  const MachinePeaks& m = r.machine;
  bool any = false;
  for (size_t d = 0; d < r.flops_by_dtype.size(); ++d) {
    const DType dt = static_cast<DType>(d);
    if (r.flops_by_dtype[d] == 0 || !is_floating(dt) || m.peak_flops(dt) <= 0) continue;
    any = true;
    line(out, fmt::format("machine peak FLOPS ({})", dtype_name(dt)),
         fmt::format("{} ({}{})", flops_per_second_to_string(m.peak_flops(dt)), m.flops_source,
                     m.flops_per_s[d] > 0 ? "" : ", fp32's"));
  }
  if (!any) {
    line(out, "machine peak FLOPS (fp32)",
         m.peak_flops(DType::kFloat32) > 0
             ? fmt::format("{} ({})", flops_per_second_to_string(m.peak_flops(DType::kFloat32)),
                           m.flops_source)
             : std::string("unknown"));
  }
  line(out, "machine peak memory bandwidth",
       m.bytes_per_s > 0
           ? fmt::format("{} ({})", bandwidth_to_string(m.bytes_per_s), m.bandwidth_source)
           : std::string("unknown"));
  if (m.bandwidth_by_level.size() > 1) {  // the cache-aware roofline's levels
    std::string levels;
    for (const BandwidthLevel& l : m.bandwidth_by_level) {
      levels += fmt::format(
          "{}{} {}{}", levels.empty() ? "" : ", ", l.name, bandwidth_to_string(l.bytes_per_s),
          l.capacity_bytes > 0
              ? fmt::format(" (to {})", bytes_to_string(static_cast<int64_t>(l.capacity_bytes)))
              : "");
    }
    line(out, "memory levels (by working set)", levels);
  }
  if (!m.detail.empty()) line(out, "machine", m.detail);
}

// The ridge point(s) of the model's dtype and the phases' share of the peaks.
void summary_ridges(std::string& out, const ProfileResult& r) {
  const MachinePeaks& m = r.machine;
  const DType dt = r.dtype == DType::kUnknown ? DType::kFloat32 : r.dtype;
  if (m.known(dt)) {
    const bool levels = m.bandwidth_by_level.size() > 1;
    if (levels) {  // a point's bound is against its level's ridge, not DRAM's alone
      std::string ridges;
      for (const BandwidthLevel& l : m.bandwidth_by_level) {
        if (l.bytes_per_s <= 0) continue;
        ridges += fmt::format("{}{} {}", ridges.empty() ? "" : ", ", l.name,
                              intensity_to_string(m.ridge(dt, l)));
      }
      line(out, fmt::format("machine ridge points ({}, per memory level)", dtype_name(dt)),
           ridges + " (each op is bound against the level its working set fits)");
    } else {
      line(out, fmt::format("machine ridge point ({})", dtype_name(dt)),
           intensity_to_string(m.ridge(dt)));
    }
    auto use = [&](double flops_of_peak, double bytes_of_peak) {
      return fmt::format(levels ? "{} of peak FLOPS, {} of the DRAM bandwidth"
                                : "{} of peak FLOPS, {} of the bandwidth",
                         share(flops_of_peak), share(bytes_of_peak));
    };
    line(out, "fwd utilisation (achieved / peak)", use(r.fwd_flops_of_peak, r.fwd_bytes_of_peak));
    if (r.has_backward)
      line(out, "bwd utilisation (achieved / peak)", use(r.bwd_flops_of_peak, r.bwd_bytes_of_peak));
  }
}

// MFU / HFU / MBU over fwd + bwd time, each op's FLOPs against its own dtype's peak
// (docs/report.md).
void summary_utilisation(std::string& out, const ProfileResult& r) {
  const MachinePeaks& m = r.machine;
  auto known = [](double v, bool above) {
    return v > 0 ? share(v) + (above ? "!" : "") : std::string("n/a");
  };
  line(out,
       fmt::format("MFU / HFU / MBU ({}, per-dtype peaks)", r.has_backward ? "fwd + bwd" : "fwd"),
       fmt::format("{} / {} / {} (model FLOPs in the {} convention; HFU: as the hardware ran "
                   "them, recompute included{}{})",
                   known(r.mfu, r.mfu_above_peak), known(r.hfu, r.hfu_above_peak),
                   known(r.mbu, r.mbu_above_peak), convention_name(r.attention),
                   m.bandwidth_by_level.size() > 1
                       ? "; MBU: bytes over the DRAM bandwidth, where a module's roofline "
                         "share is against its level's"
                       : "",
                   r.mfu_above_peak || r.mbu_above_peak
                       ? "; '!': above the peak it is measured against (MBU: bytes served "
                         "from caches; MFU: a peak measured too low)"
                       : ""));
}

// Ops whose written bytes no rule derives, named here: ops with a formula are in no table of
// the text (the JSON's op table has them).
void summary_unknown_writes(std::string& out, const ProfileResult& r) {
  if (r.bytes_written_unknown_calls == 0) return;
  std::string names;
  size_t shown = 0, more = 0;
  std::map<std::string, int> rows;  // an op in two phases is named with its phase
  for (const OpStats& op : r.ops) {
    if (op.written_unknown > 0 || op.written_from_allocations > 0) ++rows[op.name];
  }
  for (const OpStats& op : r.ops) {
    if (op.written_unknown == 0 && op.written_from_allocations == 0) continue;
    if (shown == 4) {
      ++more;
      continue;
    }
    names += fmt::format("{}{}{} {}", shown++ ? ", " : "", op.name,
                         rows[op.name] > 1 ? " (" + op.phase + ")" : std::string(),
                         op.written_unknown + op.written_from_allocations);
  }
  if (more > 0) names += fmt::format(" and {} more op(s)", more);
  line(out, "op calls whose written bytes no rule derives",
       fmt::format("{} (counted as reads only, or from allocations with track_memory): {}",
                   r.bytes_written_unknown_calls, names));
}

}  // namespace

// The roofline's summary lines: bytes per phase, intensity, the ceilings and their sources,
// and the share of them the model reached.
void roofline_summary(std::string& out, const ProfileResult& r) {
  summary_roofline_bytes(out, r);
  const MachinePeaks& m = r.machine;
  if (m.flops_source.empty() && m.bandwidth_source.empty()) {
    line(out, "machine peaks (roofline)", "unknown (not measured; ProfilerOptions::roofline)");
  } else {
    summary_machine_peaks(out, r);
    summary_ridges(out, r);
    summary_utilisation(out, r);
  }
  summary_unknown_writes(out, r);
}

}  // namespace flopsprof::detail::text
