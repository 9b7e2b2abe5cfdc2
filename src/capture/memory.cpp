// Allocator memory reporting: every allocation and free of LibTorch's allocators, as plain records.
#include "capture/memory.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include "capture/observer.h"
#include "flopsprof/error.h"

namespace flopsprof::detail {
namespace {

class MemoryObserver final : public c10::MemoryReportingInfoBase {
 public:
  MemoryObserver(int slot, uint64_t session) : slot_(slot), session_(session) {}

  void reportMemoryUsage(void* ptr, int64_t alloc_size, ReportedTotal /*total_allocated*/,
                         ReportedTotal total_reserved, c10::Device device) override {
    CallbackGuard guard;
    if (!guard.ok()) return;
    Session* s = g_sessions[slot_].load(std::memory_order_acquire);
    if (s == nullptr || s->id != session_) return;
    ThreadBuffer* b = s->thread_buffer();
    if (b == nullptr) return;
    b->add_memory(s->now(), reinterpret_cast<uintptr_t>(ptr), alloc_size,
                  static_cast<int64_t>(total_reserved), static_cast<int8_t>(device.type()));
  }

  bool memoryProfilingEnabled() const override { return true; }
  uint64_t session() const { return session_; }

 private:
  int slot_;
  uint64_t session_;
};

}  // namespace

void install_memory_observer(const Session& session) {
  c10::DebugInfoBase* held = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
  if (dynamic_cast<MemoryObserver*>(held) != nullptr) {
    throw Error(
        "track_memory: another flopsprof profile on this thread already tracks memory (c10 has "
        "one memory-reporting slot per thread); stop it first, or start this profile without "
        "track_memory");
  }
  if (held != nullptr) {
    throw Error(
        "track_memory: c10's memory-reporting slot is already taken on this thread (LibTorch's "
        "own profiler is running); stop that profiler first, or profile without track_memory");
  }
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                   std::make_shared<MemoryObserver>(session.slot, session.id));
}

void uninstall_memory_observer() noexcept {
  try {
    if (dynamic_cast<MemoryObserver*>(
            c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE))) {
      c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    }
  } catch (...) {
  }
}

}  // namespace flopsprof::detail
