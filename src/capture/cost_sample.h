// The capture's own cost timed in place, on sampled records (issue 46): the calibration
// (calibration.h) times flopsprof's code in a tight loop, where it stays in the caches; between
// a program's ops it is evicted and costs more. Per thread, one in about 16 countdown steps is
// timed with TSC reads: an op on the dispatch path (one step; both its halves, opening and
// closing, interceptor.cpp) or a module call record's entry or exit (a step each, observer.cpp).
// cost_removal.h adds what they measured above the calibration's own timings. Internal to the
// capture; inlined into its hot paths.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "capture/thread_locals.h"
#include "records/events.h"

namespace flopsprof::detail {

/// The shortest gap between two timed record halves of a thread; gaps run from it to 23 (15.5
/// on average), drawn at random so that a program's periodic pattern of records (an MLP's
/// call, op, call, op) is not timed at one phase only.
constexpr uint32_t kCostSampleMinGap = 8;

/// Whether the calling record (half) is timed: about one in 16 per thread, x86-64 only (the
/// ticks are the TSC's). Cost when not: a thread-local decrement and a branch.
inline bool sample_cost() noexcept {
#if defined(__x86_64__)
  ThreadLocals& t = tl;
  if (FLOPSPROF_LIKELY(--t.cost_countdown > 0)) return false;
  t.cost_rng = t.cost_rng * 1664525u + 1013904223u;  // a linear congruential step
  t.cost_countdown = static_cast<int32_t>(kCostSampleMinGap + (t.cost_rng >> 28));
  return true;
#else
  return false;
#endif
}

/// The TSC now (0 where there is none: sample_cost() is then never true).
inline int64_t cost_ticks() noexcept {
#if defined(__x86_64__)
  return static_cast<int64_t>(__rdtsc());
#else
  return 0;
#endif
}

/// The longest timed half kept, TSC ticks (about 25-50 us): a longer one was preempted or
/// interrupted, which is the machine's time, not flopsprof's.
constexpr int64_t kCostSampleMaxTicks = 100000;

/// Adds a timed record half to `b` (its thread's records, inside the record's callback section):
/// `t_in` read on entering flopsprof's code, `stamp` the record's timestamp (TSC ticks: a
/// profile with another clock is never sampled), `t_out` read on leaving it. A pair out of order
/// (a thread moved between cores with unsynchronised TSCs) or longer than kCostSampleMaxTicks is
/// dropped.
inline void add_cost_sample(ThreadEvents* b, CostHalf half, int64_t t_in, int64_t stamp,
                            int64_t t_out) noexcept {
  if (stamp < t_in || t_out < stamp || t_out - t_in > kCostSampleMaxTicks) return;
  CostSample& c = b->cost_samples[half];
  c.before += stamp - t_in;
  c.after += t_out - stamp;
  ++c.n;
}

}  // namespace flopsprof::detail
