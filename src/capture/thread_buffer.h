// One thread's capture records and the state of its open ops, scopes and steps.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/names.h"
#include "flopsprof/scope.h"
#include "records/events.h"
#include "records/gpu.h"

namespace flopsprof::detail {

/// One thread's buffer plus the state of its open ops and scopes.
struct ThreadBuffer : ThreadEvents {
  uint32_t ordinal = 0;  ///< position in the session's buffers (external correlation ids)
  ThreadBuffer() = default;
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;
  ~ThreadBuffer();

  /// Empties the records for a new profile, keeping capacity and the name cache.
  void reset(uint64_t thread);

  /// Keeps the object of tensor `impl` (a c10::TensorImpl*, a record's `data_in`) allocated until
  /// release_data() (the session's records are discarded), reset() or destruction: a weak
  /// reference, which frees the tensor's memory as usual but lets no other tensor take its address,
  /// so each data identity in the records is unique. Cost: an atomic increment when the op's data
  /// is not the previous op's (amortised push, no lock); memory: one tensor object (about 200
  /// bytes) per distinct datum. Throws std::bad_alloc before taking the reference.
  void hold_data(uint64_t impl) {
    if (impl == last_held_) return;
    held_.push_back(impl);
    last_held_ = impl;
    take_weak_reference(impl);
  }
  /// Room for `n` holds without growing (a typical profile's: no allocation per op).
  void reserve_data(size_t n) { held_.reserve(n); }
  /// Lets go of every tensor object hold_data kept (the records are discarded or read).
  void release_data() noexcept;

  int32_t open_op = -1;
  int32_t backward_depth = 0;
  int32_t open_scope = -1;
  int32_t step_depth = 0;
  NameCache names;
  void* owner_state = nullptr;  ///< the owning thread's lifetime-protocol state (snapshots)
  /// Device events of top-level records (device-event timing only); resolved or destroyed at
  /// stop by DeviceEvents, never by reset().
  std::vector<DeviceMark> marks;

  // The only writers of the records besides the op callbacks (one owner: this buffer). Each runs
  // on the buffer's own thread inside a CallbackGuard and never throws: a record that cannot be
  // stored is counted in `capture_errors`.
  /// Opens a FLOPSPROF_MODULE() scope record; its index, or -1 when it could not be stored.
  int32_t open_scope_record(int32_t module, int64_t now, ScopeKind kind) noexcept;
  void close_scope_record(int32_t index, int64_t now) noexcept;
  /// Opens a step scope record (ops until end_step are the step phase); index or -1.
  int32_t begin_step(int64_t now, bool optimizer = false) noexcept;
  void end_step(int32_t index, int64_t now) noexcept;
  /// One allocation (bytes > 0) or free, owned by the op and scope open now.
  void add_memory(int64_t now, uint64_t address, int64_t bytes, int64_t total_reserved,
                  int8_t device_type) noexcept;

 private:
  static void take_weak_reference(uint64_t impl) noexcept;
  std::vector<uint64_t> held_;  ///< tensor objects held by hold_data, each once
  uint64_t last_held_ = 0;
};

}  // namespace flopsprof::detail
