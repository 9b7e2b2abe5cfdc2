#include "aggregation/spread.h"

#include <algorithm>

namespace flopsprof::detail {

LatencySpread spread_of(std::vector<double> samples) {
  LatencySpread s;
  if (samples.size() < 2) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.samples = n;
  s.min_s = samples.front();
  s.max_s = samples.back();
  s.median_s = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return s;
}

IterationSums::IterationSums(int modules, std::vector<std::pair<int64_t, int64_t>> spans)
    : n_(spans.size()), spans_(std::move(spans)) {
  if (n_ < 2) return;
  std::sort(spans_.begin(), spans_.end());
  sums_.assign(static_cast<size_t>(modules) * n_, 0);
}

void IterationSums::add(int module, int64_t at, int64_t ticks) {
  if (n_ < 2 || module < 0) return;
  auto it = std::upper_bound(spans_.begin(), spans_.end(), std::make_pair(at, INT64_MAX));
  if (it == spans_.begin()) return;
  --it;
  if (at >= it->second && it->second > it->first) return;  // between two iterations
  sums_[static_cast<size_t>(module) * n_ + static_cast<size_t>(it - spans_.begin())] += ticks;
}

LatencySpread IterationSums::spread(int module, double s_per_tick) const {
  if (n_ < 2) return {};
  std::vector<double> v(n_);
  for (size_t i = 0; i < n_; ++i)
    v[i] = static_cast<double>(sums_[static_cast<size_t>(module) * n_ + i]) * s_per_tick;
  return spread_of(std::move(v));
}

}  // namespace flopsprof::detail
