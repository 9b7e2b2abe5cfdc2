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
  /// Writes once over the records' reserved room (empty records only), so that the pages are
  /// the process's before the first op is recorded: a fresh buffer's first records otherwise each
  /// take part of a page fault (about 30 ns per op record). About 2 MB, a few hundred
  /// microseconds. May throw std::bad_alloc (nothing changes then).
  void prefault();
  bool prefaulted = false;

  /// Keeps the object of tensor `impl` (a c10::TensorImpl*, a record's `data_in`) allocated until
  /// release_data() (the session's records are discarded), reset() or destruction: a weak
  /// reference, which frees the tensor's memory as usual but lets no other tensor take its address.
  /// Cost: an atomic increment when the op's data is not the previous op's (amortised push, no
  /// lock), and a tensor object (about 200 bytes) that the allocator cannot hand out again, which
  /// costs the next tensor's allocation more (the larger part). Throws std::bad_alloc before taking
  /// the reference.
  ///
  /// Called only for ops outside every call of a profiled module (inside_model_call() false): rule
  /// 9 (attribution/rule9_root_ends.cpp) compares the data of such an op, before the model's call,
  /// with the data of the call's first op that reads data. One held side is enough to make an
  /// equal identity the same tensor: while it is held no other tensor has its address. Ops inside
  /// a profiled module's call are the model's by evidence and never compared with each other.
  /// The holds are let go (release_data()) when an op inside such a call that reads data is
  /// recorded: the comparisons need nothing recorded before it held any longer. Kept for a whole
  /// profile, the tensor objects (a few per forward, among the program's freed activations)
  /// fragmented the heap: each forward took fresh pages from the system, page faults inside the
  /// profiled ops (a DCGAN generator's forward 7% slower, its heap 50 MB larger after 40 forwards).
  void hold_data(uint64_t impl) {
    if (impl == last_held_) return;
    held_.push_back(impl);
    last_held_ = impl;
    take_weak_reference(impl);
  }
  /// Whether the innermost open scope record is a call of a module of the profiled tree.
  bool inside_model_call() const noexcept {
    return open_scope >= 0 && scopes[static_cast<size_t>(open_scope)].module >= 0;
  }
  /// Room for `n` holds without growing (a typical profile's: no allocation per op).
  void reserve_data(size_t n) { held_.reserve(n); }
  /// Whether hold_data keeps any tensor object (inline: asked per op inside a module call).
  bool holds_data() const noexcept { return !held_.empty(); }
  /// Lets go of every tensor object hold_data kept (the records are discarded or read).
  void release_data() noexcept;

  int32_t open_op = -1;
  /// Dispatch capture: records standing for the autograd engine's evaluate_function wrapper of the
  /// node each engine task on this thread ran (RecordFunction shows that wrapper; the interceptor
  /// does not see it), innermost last: a backward inside a node (activation checkpointing) runs
  /// tasks of its own. The ops the engine runs after the node in its task (validate_outputs'
  /// sum_to, the input buffer's accumulation) are the wrapper's children, as on the
  /// RecordFunction path. `task` identifies the engine's graph task (never dereferenced).
  struct EngineWrapper {
    int32_t event;
    int32_t mark;  ///< its device-event mark (device-event timing), or -1
    const void* task;
  };
  static constexpr int kMaxEngineWrappers = 8;
  EngineWrapper engine_wrappers[kMaxEngineWrappers];
  int engine_depth = 0;
  /// Per op name id: the id of "autograd::engine::evaluate_function: <name>" (0: not yet).
  std::vector<uint32_t> engine_names;
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
  /// Inline: every observed call of a built-in module opens and closes one.
  int32_t open_scope_record(int32_t module, int64_t now, ScopeKind kind) noexcept {
    if (scopes.size() == scopes.capacity() && !grow_scopes()) return -1;
    scopes.push_back(scope_record(module, now, kind));  // cannot throw: room is there
    open_scope = static_cast<int32_t>(scopes.size() - 1);
    return open_scope;
  }
  void close_scope_record(int32_t index, int64_t now) noexcept {
    if (index < 0 || static_cast<size_t>(index) >= scopes.size()) return;
    scopes[static_cast<size_t>(index)].exit_tick = now;
    open_scope = scopes[static_cast<size_t>(index)].parent;
  }
  /// Opens a step scope record (ops until end_step are the step phase); index or -1.
  int32_t begin_step(int64_t now, bool optimizer = false) noexcept;
  void end_step(int32_t index, int64_t now) noexcept;
  /// One allocation (bytes > 0) or free, owned by the op and scope open now.
  void add_memory(int64_t now, uint64_t address, int64_t bytes, int64_t total_reserved,
                  int8_t device_type) noexcept;

 private:
  static void take_weak_reference(uint64_t impl) noexcept;
  ScopeRecord scope_record(int32_t module, int64_t now, ScopeKind kind) const noexcept {
    ScopeRecord r;
    switch (kind) {  // one flag per kind
      case ScopeKind::kBuiltin:
        r.builtin = true;
        break;
      case ScopeKind::kWindow:
        r.window = true;
        break;
      case ScopeKind::kStart:
        r.start_only = true;
        break;
      case ScopeKind::kExact:
        r.exact = true;
        break;
      default:
        break;
    }
    r.module = module;
    r.parent = open_scope;
    r.enter_tick = now;
    r.backward = backward_depth > 0;
    return r;
  }
  /// Doubles the scope records' room; false (counted in capture_errors) when it cannot.
  bool grow_scopes() noexcept;
  std::vector<uint64_t> held_;  ///< tensor objects held by hold_data, each once
  uint64_t last_held_ = 0;
};

}  // namespace flopsprof::detail
