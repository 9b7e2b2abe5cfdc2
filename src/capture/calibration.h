// The profiler's own cost per record, measured once per capture path and process (as Tracy
// calibrates its zones), so that latencies can be reported with it removed (cost_removal.h).
#pragma once

#include <string>

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

/// A capture path's costs: ops (on the dispatch path those with an unboxed kernel), ops through
/// the boxed fallback (dispatch path; the RecordFunction path's are `op`'s), and a module call's
/// record (an observed built-in module's forward).
struct CaptureCost {
  bool calibrated = false;
  RecordCost op, boxed_op, call;
};

/// The cost of `dispatch`'s path in this process: measured the first time (about 5 ms: a few
/// hundred tiny ops and module calls with and without a private profile of this thread, timed
/// on the host clock, medians of rounds), then cached. Measures only while no profile runs (a
/// running one would record the measurement's ops): otherwise the cached value, or none
/// (`calibrated` false). Not thread-safe against itself: called under the recording's start.
CaptureCost capture_cost(bool dispatch);

}  // namespace flopsprof::detail
