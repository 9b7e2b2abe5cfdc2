// A running profile's shared state: its slot, clock, ownership index, GPU timing and thread
// buffers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "capture/owner_index.h"
#include "capture/thread_buffer.h"
#include "flopsprof/scope.h"
#include "flopsprof/timer.h"

namespace torch::nn {
class Module;
}

namespace flopsprof::detail {

/// The state of one running profile, shared by the callbacks of all threads.
class GpuBackend;
class DeviceEvents;

struct Session {
  uint64_t id = 0;
  int slot = -1;              ///< index into g_sessions while observing
  GpuBackend* gpu = nullptr;  ///< device activity backend (CUPTI) while active, else null
  const DeviceEvents* events = nullptr;  ///< device-event timing while active, else null
  Timer* timer = nullptr;
  bool host_clock = true;  ///< use the inlined steady clock instead of the virtual call
  bool read_masks =
      false;  ///< read attention masks' values (ProfilerOptions::read_attention_masks)
  /// Ops are captured by the dispatcher interceptor (capture/interceptor.h), not RecordFunction.
  bool dispatch = false;
  /// Every thread is observed (ProfilerOptions::Threads::kAll), not only the starting thread and
  /// those LibTorch propagates its state to.
  bool all_threads = true;
  /// Dispatch capture: threads that joined at their first built-in module call (every-thread
  /// profiles), and times the starting thread was found without the mode key (its ops before
  /// were not seen). Written by any thread.
  std::atomic<uint32_t> threads_joined{0}, coverage_gaps{0};
  /// Host clock via the invariant TSC: timestamps are raw ticks, converted after collection
  /// with the rate measured between start and read-out (see ticks_to_ns).
  bool tsc = false;
  int64_t tick0 = 0, ns0 = 0;  ///< a (ticks, steady ns) pair taken at start
  OwnerIndex owners;
  std::unordered_map<const torch::nn::Module*, int32_t> module_index;
  std::vector<std::string> scope_names;  ///< RecordFunction user-scope names per module
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  /// Buffers of an earlier profile of the same profiler, reused (warm memory and name caches).
  std::vector<std::unique_ptr<ThreadBuffer>> spares;

  /// The current timestamp in this session's units (TSC ticks, or ns). Inlined: the op
  /// callbacks read it twice per op.
  int64_t now() const noexcept {
#if defined(__x86_64__)
    if (tsc) return static_cast<int64_t>(__rdtsc());
#endif
    if (host_clock) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    }
    return timer->now_ns();
  }
  /// Starts the clock (records the calibration pair).
  void start_clock() noexcept;
  /// Nanoseconds per timestamp unit, measured from start to now (1 for ns clocks).
  double ns_per_tick() const noexcept;
  /// This thread's buffer, created on first use (takes `mu` once per thread per profile).
  ThreadBuffer* thread_buffer() noexcept;
  /// Makes this stopped session's buffers spares (their records are discarded).
  void recycle() noexcept;
  /// Takes `earlier`'s buffers and spares (a stopped session of the same profiler) as spares.
  void reuse_buffers(Session& earlier) noexcept;
};

/// Whether this CPU has an invariant TSC (constant rate, not stopped in idle states).
bool invariant_tsc() noexcept;

/// Whether `timer` is the host steady clock (the hot path then inlines it).
bool is_host_timer(const Timer* timer) noexcept;

/// The running sessions, one per slot (several profilers may run at once), or null. Read only
/// inside a CallbackGuard: a session is freed only after every thread has left the callbacks
/// that could have loaded it (see stop_observing).
extern std::atomic<Session*> g_sessions[kMaxSessions];

/// Whether any profile is observing now.
bool any_session_active() noexcept;

}  // namespace flopsprof::detail
