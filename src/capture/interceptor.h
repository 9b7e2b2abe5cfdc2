// The dispatch capture: a dispatcher interceptor that records each op a thread calls, below the
// cost of RecordFunction (docs/cost.md, "Capture paths"). A mode key (LibTorch's
// TESTING_ONLY_GenericMode, which nothing in LibTorch uses) is included on the threads a profile
// covers; every op they call then reaches flopsprof's kernel on that key first (unboxed kernels
// for the hottest ops, a boxed fallback for the rest), which records the op and passes it on,
// with the key excluded inside ops that have a formula, so that their nested ops never reach it.
// Autograd nodes and c10d work are still observed through RecordFunction (observer.cpp), whose
// callbacks for those scopes cost ops nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <ATen/record_function.h>
#include <c10/core/DispatchKey.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace flopsprof::detail {

struct Session;

/// The dispatch key the interceptor's kernels are registered on.
constexpr c10::DispatchKey kModeKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

/// Bit k: the profile in session slot k captures through the interceptor.
extern std::atomic<uint32_t> g_dispatch_slots;

/// Registers the interceptor's kernels with the dispatcher, once per process (they stay
/// registered: a thread whose mode key is not included never reaches them, at no cost; removing
/// them while another thread may still hold the key would make its next op fail). Thread-safe.
/// Returns "" when installed, else why not (another library holds the key's fallback, or the
/// dispatcher refused a registration): the caller falls back to RecordFunction or says so.
std::string install_interceptor() noexcept;

/// Includes the mode key on the calling thread, which starts `session` (slot `slot`): its ops and
/// those of the threads LibTorch propagates its state to are captured.
void own_this_thread(const Session& session, int slot) noexcept;
/// After `session` (slot `slot`) stopped: the calling thread stops being its owner, and drops the
/// key when no dispatch capture runs any more. Other threads drop it at their next op.
void release_this_thread(const Session& session, int slot) noexcept;

/// Called where flopsprof runs on a thread anyway (a built-in module's call): a thread that a
/// running dispatch capture covers but whose mode key is not included (a thread the program
/// started itself, or one whose thread state was restored over the key) is included from here on,
/// and the capture counts it (Session::threads_joined, coverage_gaps). One relaxed load when no
/// dispatch capture runs.
void join_this_thread() noexcept;

/// Keeps flopsprof's own ATen calls (peak measurements, a mask's copy, inputs it makes) out of
/// every profile, whichever path captures it: RecordFunction off and the mode key excluded on the
/// calling thread while it lives.
class Unobserved {
 public:
  Unobserved() = default;
  Unobserved(const Unobserved&) = delete;
  Unobserved& operator=(const Unobserved&) = delete;

 private:
  at::RecordFunctionGuard record_function_{false};
  c10::impl::ExcludeDispatchKeyGuard mode_key_{kModeKey};
};

/// While a dispatch capture of every thread runs: a RecordFunction callback for ops sampled one in
/// kSampledCheckEvery (free for the others: LibTorch only counts down to the next sample) that
/// runs join_this_thread on the sampled op's thread, so that a thread the program started and that
/// calls no built-in module is found and covered from then on, and counted. Called under the
/// registration lock (observer.cpp) when such a capture starts and after the last one stopped.
constexpr int kSampledCheckEvery = 1000;
void start_sampled_check();
void stop_sampled_check() noexcept;

/// Whether an op named `name` (its schema name, "aten::add": any overload) has one of the
/// interceptor's unboxed kernels (the others take the boxed fallback, which costs more).
bool has_unboxed_kernel(const std::string& name);

/// Whether the mode key is included on the calling thread (tests).
bool mode_key_included() noexcept;

}  // namespace flopsprof::detail
