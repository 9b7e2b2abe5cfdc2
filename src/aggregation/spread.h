// Latency per iteration: a module's time split by the iteration (the root's forward call, a
// backward pass) it fell in, and the spread of those sums (flopsprof::LatencySpread).
#pragma once

#include <cstdint>
#include <vector>

#include "flopsprof/report.h"

namespace flopsprof::detail {

/// min / median / max of `samples` (seconds); `samples` 0 when fewer than two are given (one
/// iteration has no spread). The median of an even count is the mean of the middle two.
LatencySpread spread_of(std::vector<double> samples);

/// Sums per (module, iteration), where the iterations are spans of one clock. Cost: a binary
/// search per add; memory 8 bytes per module and iteration, allocated only for two iterations or
/// more (a third of the call records that many module calls already take).
class IterationSums {
 public:
  /// `spans`: the iterations, [start, end) in timestamp units, in any order.
  IterationSums(int modules, std::vector<std::pair<int64_t, int64_t>> spans);
  /// Adds `ticks` to `module` in the iteration holding `at` (nothing outside every iteration).
  void add(int module, int64_t at, int64_t ticks);
  bool active() const { return n_ > 1; }
  /// The module's spread over the iterations (seconds = ticks x `s_per_tick`).
  LatencySpread spread(int module, double s_per_tick) const;

 private:
  size_t n_ = 0;
  std::vector<std::pair<int64_t, int64_t>> spans_;  // sorted by start
  std::vector<int64_t> sums_;                       // module-major
};

}  // namespace flopsprof::detail
