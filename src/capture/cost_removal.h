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

/// What a profile's in-place timings (cost_sample.h) add to one kind of record's calibrated
/// cost, host nanoseconds per record: for each half, the profile's mean above the calibration's
/// own (CaptureCost::in_place; never below 0), before the record's first timestamp (`pre`),
/// inside its span (`inner`) and after its last (`post`). `samples`: the profile's timed halves
/// of that kind; a half timed fewer than kMinInPlaceSamples times adds nothing.
struct InPlaceExtra {
  double pre_ns = 0, inner_ns = 0, post_ns = 0;
  uint64_t samples = 0;
  double total_ns() const { return pre_ns + inner_ns + post_ns; }
};
struct InPlaceExtras {
  InPlaceExtra op, boxed_op, call;
};
constexpr uint32_t kMinInPlaceSamples = 8;

/// The extras of a profile whose halves, timed in place, have the means `profile` (ns), over the
/// calibration's `cost`. Pure.
InPlaceExtras in_place_extras(const HalfCosts& profile, const CaptureCost& cost);

/// Copies of a profile's records with corrected timestamps, and the in-place extras the
/// correction included.
struct CostRemoved {
  std::vector<std::unique_ptr<ThreadEvents>> threads;
  std::vector<RegionWindow> regions;
  InPlaceExtras extras;
};

/// Copies of `threads` whose host timestamps are moved back by the capture's own cost spent
/// before them on their thread (`cost`, at `ns_per_tick`, plus the extras `threads`' in-place
/// timings measured above it): each op record costs its outer cost half before its start and half
/// after its end, and its inner cost before its end; a module call's record likewise; an autograd
/// node's record a module call's (a callback and a record, no arguments); the dispatch path's own
/// engine wrappers nothing. A span then lasts what it would have lasted without the profiler, as
/// far as the calibration knows, and never less than nothing: time is never moved back past an
/// earlier timestamp of the same thread. Region windows move with the thread that opened them
/// (RegionWindow::thread). Open records (end 0) stay open. `names` tells, on the dispatch path, ops
/// with an unboxed kernel from the boxed fallback's.
CostRemoved remove_capture_cost(const std::vector<const ThreadEvents*>& threads,
                                const std::vector<RegionWindow>& regions, const CaptureCost& cost,
                                bool dispatch, double ns_per_tick, const NameLookup& names);

/// The share of a profile's measured host time at or above which the correction's own error is
/// said (uncalibrated_cache_cost).
constexpr double kCacheNoteShare = 0.01;

/// What the correction leaves in the latencies when it was a large share of them ("" when it
/// removed less than kCacheNoteShare of `raw_s`, the measured host time, to `corrected_s`): it
/// removes flopsprof's records as calibrated and its own code as timed in place, not what the
/// records cost LibTorch's code around them (the dispatcher's turn through the interceptor's
/// kernel, LibTorch's code and data evicted from the caches), so the latencies of small ops and of
/// their modules still read high. Pure; thread-safe.
std::string uncalibrated_cache_cost(double raw_s, double corrected_s);

}  // namespace flopsprof::detail
