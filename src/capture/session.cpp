// A running profile's clock and the table of running sessions (see session.h).
#include "capture/session.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace flopsprof::detail {

std::atomic<Session*> g_sessions[kMaxSessions];

bool any_session_active() noexcept {
  for (auto& s : g_sessions) {
    if (s.load(std::memory_order_acquire) != nullptr) return true;
  }
  return false;
}

namespace {
int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool invariant_tsc() noexcept {
#if defined(__x86_64__)
  unsigned int eax, ebx, ecx, edx;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

void Session::start_clock() noexcept {
  ns0 = steady_ns();
  tick0 = now();  // time 0 of the trace, in this session's timestamp units
}

namespace {
// Moves `from` to the end of `to`; without memory to grow `to`, `from`'s buffers are freed (only
// warm caches are lost: the records were discarded or read already).
void append(std::vector<std::unique_ptr<ThreadBuffer>>& to,
            std::vector<std::unique_ptr<ThreadBuffer>>& from) noexcept {
  try {
    to.reserve(to.size() + from.size());
    for (auto& b : from) to.push_back(std::move(b));
  } catch (...) {
  }
  from.clear();
}
}  // namespace

void Session::recycle() noexcept {
  std::lock_guard<std::mutex> lock(mu);
  for (auto& b : buffers) b->release_data();  // the records are discarded: no identity to keep
  append(spares, buffers);
}

void Session::reuse_buffers(Session& earlier) noexcept {
  std::lock_guard<std::mutex> lock(mu);
  std::lock_guard<std::mutex> other(earlier.mu);
  for (auto& b : earlier.buffers) b->release_data();
  append(spares, earlier.buffers);
  append(spares, earlier.spares);
}

double Session::ns_per_tick() const noexcept {
  if (!tsc) return 1.0;
  int64_t ticks = now() - tick0;
  int64_t ns = steady_ns() - ns0;
  return ticks > 0 && ns > 0 ? static_cast<double>(ns) / static_cast<double>(ticks) : 1.0;
}

}  // namespace flopsprof::detail
