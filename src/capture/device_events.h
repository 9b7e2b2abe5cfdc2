// Device-event timing: when CUPTI is unavailable and the model runs on a device whose c10 guard
// implements events (CUDA, or any backend registered with C10_REGISTER_GUARD_IMPL), an event is
// recorded on the thread's current stream at the start and the end of every top-level record (op
// or autograd node). Nothing synchronizes during the run; the events are resolved into device
// intervals after the single synchronization at stop_profile().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "records/gpu.h"

namespace flopsprof::detail {

struct ThreadBuffer;

/// Milliseconds from event `from` to event `to` (raw handles recorded by the device's guard);
/// false with `error` set when the device refuses. LibTorch 1.13's guard interface has no
/// elapsed time, so it comes from here: CUDA's from the plugin (cudaEventElapsedTime), others
/// registered by whoever provides the device (tests register their fake's).
using EventElapsedFn = bool (*)(void* from, void* to, c10::DeviceIndex device, double* ms,
                                std::string* error);

/// Registers (or, with null, removes) the elapsed-time function of `type`. Thread-safe.
void set_event_elapsed(c10::DeviceType type, EventElapsedFn fn);
EventElapsedFn event_elapsed(c10::DeviceType type);

/// The device events of one profile. `record` runs on the hot path; the rest at stop.
class DeviceEvents {
 public:
  DeviceEvents(c10::DeviceType type, c10::DeviceIndex index, EventElapsedFn elapsed);

  /// Records an event on the calling thread's current stream of the device into `*slot`.
  /// Hot path: no lock, no allocation of ours (the guard creates the event). False when the
  /// guard refused (the record stays untimed).
  bool record(void** slot) const noexcept;

  /// Waits once for the device (the streams current on the calling thread, and the default one).
  void synchronize() const noexcept;

  /// Resolves the marks of `buffers` into spans (device ns since the earliest event), destroys
  /// the events and clears the marks.
  void resolve(const std::vector<ThreadBuffer*>& buffers, GpuCollection* out) const;

  /// Destroys the events of `buffers` without reading them (a discarded profile).
  void discard(const std::vector<ThreadBuffer*>& buffers) const noexcept;

 private:
  c10::DeviceType type_;
  c10::DeviceIndex index_;
  const c10::impl::DeviceGuardImplInterface* impl_;
  EventElapsedFn elapsed_;
};

/// Whether `type` can be timed with events here (a guard with events and an elapsed function),
/// else false with `why` set.
bool device_events_available(c10::DeviceType type, std::string* why);

}  // namespace flopsprof::detail
