// Host latencies with the capture's own cost removed (docs/report.md, "Latency correction"): the
// records' timestamps moved back by the calibrated cost of every record before them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/calibration.h"
#include "records/events.h"

namespace flopsprof::detail {

/// Copies of a profile's records with corrected timestamps.
struct CostRemoved {
  std::vector<std::unique_ptr<ThreadEvents>> threads;
  std::vector<RegionWindow> regions;
};

/// Copies of `threads` whose host timestamps are moved back by the capture's own cost spent
/// before them on their thread (`cost`, at `ns_per_tick`): each op record costs its outer cost
/// half before its start and half after its end, and its inner cost before its end; a module
/// call's record likewise; an autograd node's record a module call's (a callback and a record,
/// no arguments); the dispatch path's own engine wrappers nothing. A span then lasts what it would
/// have lasted without the profiler, as far as the calibration knows, and never less than
/// nothing: time is never moved back past an earlier timestamp of the same thread. Region windows
/// move with the thread that opened them (RegionWindow::thread). Open records (end 0) stay open.
/// `names` tells, on the dispatch path, ops with an unboxed kernel from the boxed fallback's.
CostRemoved remove_capture_cost(const std::vector<const ThreadEvents*>& threads,
                                const std::vector<RegionWindow>& regions, const CaptureCost& cost,
                                bool dispatch, double ns_per_tick, const NameLookup& names);

/// The share of a profile's measured host time at or above which the correction's own error is
/// said (uncalibrated_cache_cost).
constexpr double kCacheNoteShare = 0.01;

/// What the correction leaves in the latencies when it was a large share of them ("" when it
/// removed less than kCacheNoteShare of `raw_s`, the measured host time, to `corrected_s`): the
/// calibration times its probes in a tight loop, where flopsprof's code stays in the instruction
/// cache; between a program's ops that code is evicted and a record costs more than calibrated
/// (2-3 x between the ops of an MLP of Linear(64, 64) at batch 1), so the latencies of small ops
/// and of their modules still read high. Pure; thread-safe.
std::string uncalibrated_cache_cost(double raw_s, double corrected_s);

}  // namespace flopsprof::detail
