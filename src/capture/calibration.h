// The profiler's own cost per record, measured once per capture path and process (as Tracy
// calibrates its zones), so that latencies can be reported with it removed (cost_removal.h).
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "capture/observer.h"
#include "records/events.h"

namespace flopsprof::detail {

/// What one record costs the profiled program, in host nanoseconds, split where the program's
/// spans see it: `inner`, inside the record's own span (an op's [start, end]: the interceptor's
/// pass-through, or RecordFunction's records of the op's nested ops); `outer`, around it (before
/// its start and after its end: taking the record), inside every enclosing span.
struct RecordCost {
  double inner_ns = 0, outer_ns = 0;
  /// RecordFunction path: inside an op's span, per record LibTorch made of an op nested in it
  /// (RawEvent::nested_records), on top of `inner_ns`.
  double nested_ns = 0;
};

/// One record half's in-place timings (cost_sample.h) as means, host nanoseconds: flopsprof's
/// code before the record's timestamp and after it, over `n` timed halves.
struct HalfCost {
  double before_ns = 0, after_ns = 0;
  uint32_t n = 0;
};
using HalfCosts = std::array<HalfCost, kCostHalves>;  ///< by CostHalf

/// The means of the halves `threads` timed in place, at `ns_per_tick`. Pure.
HalfCosts in_place_means(const std::vector<const ThreadEvents*>& threads, double ns_per_tick);

/// A capture path's costs: ops (on the dispatch path those with an unboxed kernel), ops through
/// the boxed fallback (dispatch path; the RecordFunction path's are `op`'s), and a module call's
/// record (an observed built-in module's forward). `in_place`: the calibration's own in-place
/// timings of the same code (warm, as the calibration runs it), which a profile's own are
/// compared with (cost_removal.h); n 0 where none were taken (the RecordFunction path's ops, a
/// clock other than the TSC).
struct CaptureCost {
  bool calibrated = false;
  RecordCost op, boxed_op, call;
  HalfCosts in_place{};
};

/// The cost of `dispatch`'s path in this process: measured the first time (about 5-10 ms: a few
/// hundred tiny ops and module calls with and without a private profile of this thread, timed
/// on the host clock, medians of rounds), then cached. Measures only while no profile runs (a
/// running one would record the measurement's ops): otherwise the cached value, or none
/// (`calibrated` false). Called when a profiler is made (prepare_capture) or, if that could not
/// measure, when its first profile stops; never when one starts: the measurement's milliseconds
/// would leave the program's caches cold for the first profiled forward (bench/RESULTS.md, "The
/// first profile in a process"). Serialised by a lock; a profile started on another thread
/// while it measures would record its ops (the check for a running profile comes first).
CaptureCost capture_cost(bool dispatch);

/// The one-off work flopsprof does once per process before its records can be taken and corrected
/// (installing the interceptor's kernels: registrations that rewrite every operator's dispatch
/// table; measuring a path's cost): a few milliseconds whose memory traffic evicts the program's
/// caches, so that ops run right after it read high (bench/RESULTS.md). `generation` counts the
/// times any of it ran; `what` and `ms` say what ran since the program last ran (a profile's
/// stop, a built-in module's call) and how long it took in all. Thread-safe.
struct SetupWork {
  uint64_t generation = 0;
  std::string what;
  double ms = 0;
};
SetupWork setup_work();
/// True from one-off work's end until the program's next call of a built-in module (observed by
/// capture/builtin_calls.cpp at the cost of this relaxed load while it is false): a profile that
/// starts while it is true starts with the caches that work evicted.
extern std::atomic<bool> g_setup_unwarmed;
/// Records that one-off work `what` just ran for `ms` milliseconds (the interceptor's
/// installation, a path's measurement).
void note_setup_work(const char* what, double ms) noexcept;

/// Does the one-off work a profile on `request`'s path would need (the interceptor installed
/// when the path may be the dispatch one; that path's cost measured, with a host clock), ahead
/// of the profile: a profiler does it when it is made. Never throws: what cannot be done now is
/// done or refused, with its reason, by the profile's start and stop.
void prepare_capture(CaptureRequest request, bool host_clock) noexcept;

/// The cost `capture_cost(dispatch)` measured earlier in this process, or none (`calibrated`
/// false): never measures. Thread-safe.
CaptureCost cached_capture_cost(bool dispatch);

}  // namespace flopsprof::detail
