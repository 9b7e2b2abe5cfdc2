// The timing interface: where the profiler's timestamps come from.
#pragma once

#include <cstdint>
#include <memory>

namespace flopsprof {

/// A source of host timestamps for one profile. The default is the host steady clock (read
/// inline from the invariant TSC where there is one). Device time is not a Timer: CUPTI or device
/// events time a GPU model besides it (ProfilerOptions::device_timing, docs/gpu.md).
/// Implementations must make `now_ns()` cheap and thread-safe: it runs twice per observed op, on
/// any thread.
class Timer {
 public:
  virtual ~Timer() = default;
  /// Short name shown in reports ("host steady_clock").
  virtual const char* name() const noexcept = 0;
  /// Monotonic timestamp in nanoseconds. Hot path: no locks, no allocation.
  virtual int64_t now_ns() noexcept = 0;
  /// Called once by `start_profile()`, before any op is observed.
  virtual void on_start() {}
  /// Called once by `stop_profile()`, after the last op: the single place a device backend
  /// synchronizes.
  virtual void on_stop() {}
};

/// The host steady clock (std::chrono::steady_clock). Thread-safe, stateless.
std::shared_ptr<Timer> make_host_timer();

/// A deterministic clock for tests and reproducible reports: each call returns the previous
/// value plus `step_ns`, starting at `start_ns`. Thread-safe (atomic counter).
std::shared_ptr<Timer> make_step_timer(int64_t step_ns, int64_t start_ns = 0);

}  // namespace flopsprof
