// The RecordFunction observer: per-thread raw event buffers filled by the per-op callbacks.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "events.h"
#include "flopsprof/scope.h"
#include "flopsprof/timer.h"
#include "gpu.h"

namespace c10 {
class IValue;
template <typename T>
class ArrayRef;
}  // namespace c10

namespace torch::nn {
class Module;
}

namespace flopsprof::detail {

/// Op names by id. Interning takes a lock; lookups through a thread's NameCache do not.
class NameTable : public NameLookup {
 public:
  static NameTable& instance();
  /// Id of `name` (copied on first sight). Thread-safe; locks.
  uint32_t intern(const char* name, size_t length);
  const std::string& name(uint32_t id) const override;

 private:
  mutable std::mutex mu_;
  std::deque<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
};

/// Bits a thread caches per name.
enum NameFlag : uint8_t {
  kNameHasFormula = 1,
  kNameIsEngine = 2,  ///< autograd engine wrapper ("autograd::engine::evaluate_function: ...")
  kNameConstant = 4,  ///< its formula ignores the arguments: nothing to capture
};

/// Per-thread, per-profile cache: name string -> (id, flags). Open addressing on a content hash;
/// no lock and no allocation once a name has been seen.
class NameCache {
 public:
  NameCache();
  void lookup(const char* name, uint32_t* id, uint8_t* flags);
  /// Empties the cache if formulas were registered or removed since it was filled.
  void validate();

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* text = nullptr;  // interned, stable
    uint32_t id = 0;
    uint8_t flags = 0;
  };
  void grow();
  void insert(uint64_t hash, const Slot& slot);
  std::vector<Slot> slots_;
  size_t used_ = 0;
  // Fast path: names are usually the dispatcher's schema strings, whose pointers are stable.
  // Keyed by pointer, verified with strcmp (a pointer may be reused for another string).
  struct PtrSlot {
    const char* ptr = nullptr;
    const char* text = nullptr;
    uint32_t id = 0;
    uint8_t flags = 0;
  };
  std::vector<PtrSlot> by_ptr_;
  uint64_t version_ = 0;  // formula registry version the flags were computed with
};

/// Storage -> owner set, immutable during a profile. Open addressing on the pointer.
class OwnerIndex {
 public:
  void build(const std::vector<std::pair<const void*, int32_t>>& entries);
  int32_t find(const void* storage) const noexcept {
    if (slots_.empty()) return -1;
    size_t mask = slots_.size() - 1;
    size_t h = (reinterpret_cast<uintptr_t>(storage) >> 4) * 0x9E3779B97F4A7C15ull;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == storage) return slots_[i].owner;
      if (slots_[i].key == nullptr) return -1;
    }
  }

 private:
  struct Slot {
    const void* key = nullptr;
    int32_t owner = -1;
  };
  std::vector<Slot> slots_;
};

/// One thread's buffer plus the state of its open ops and scopes.
struct ThreadBuffer : ThreadEvents {
  uint32_t ordinal = 0;  ///< position in the session's buffers (external correlation ids)
  /// Empties the records for a new profile, keeping capacity and the name cache.
  void reset(uint64_t thread);
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
  void add_memory(int64_t now, int64_t bytes, int64_t total_allocated, int64_t total_reserved,
                  int8_t device_type) noexcept;
};

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

  int64_t now() const noexcept;
  /// Starts the clock (records the calibration pair).
  void start_clock() noexcept;
  /// Nanoseconds per timestamp unit, measured from start to now (1 for ns clocks).
  double ns_per_tick() const noexcept;
  /// This thread's buffer, created on first use (takes `mu` once per thread per profile).
  ThreadBuffer* thread_buffer() noexcept;
};

/// Whether this CPU has an invariant TSC (constant rate, not stopped in idle states).
bool invariant_tsc() noexcept;

/// Whether `timer` is the host steady clock (the hot path then inlines it).
bool is_host_timer(const Timer* timer) noexcept;

/// The running sessions, one per slot (several profilers may run at once), or null. Read only
/// inside a CallbackGuard: a session is freed only after every thread has left the callbacks
/// that could have loaded it (see stop_observing).
extern std::atomic<Session*> g_sessions[kMaxSessions];

/// Marks the calling thread as inside a flopsprof callback (op, scope, step, memory) for the
/// session-lifetime protocol: stop_observing() waits until no thread is inside one that may
/// have seen the stopped session. Per op: one seq_cst store on entry, one release store on exit,
/// both to this thread's own cache line. Nests.
class CallbackGuard {
 public:
  CallbackGuard() noexcept;
  ~CallbackGuard();
  CallbackGuard(const CallbackGuard&) = delete;
  CallbackGuard& operator=(const CallbackGuard&) = delete;
  /// False when this thread could not be registered (out of memory): record nothing.
  bool ok() const noexcept { return ok_; }

 private:
  bool ok_ = false;
};

/// Whether any profile is observing now.
bool any_session_active() noexcept;

/// Copies of `session`'s records while it runs, each taken while its thread is held outside the
/// callbacks (a thread entering one waits for the copy, microseconds per buffer): the reader
/// never sees a record being written. Callbacks on the calling thread are suspended meanwhile.
std::vector<std::unique_ptr<ThreadEvents>> snapshot_records(Session& session);

/// Appends the plain-data form of `inputs` (shapes, dtypes, scalars, lists) to `thread` and points
/// `event`'s argument range at it. May allocate; never called for ops nested in counted ones.
void capture_args(ThreadEvents* thread, RawEvent& event, c10::ArrayRef<const c10::IValue> inputs);

/// Test hook: the next `n` argument captures throw std::bad_alloc (as an out-of-memory would),
/// to prove the start callback is all or nothing. 0 in production (one relaxed load per capture).
extern std::atomic<int> g_fail_captures;

/// Takes a free slot for `session` and installs its RecordFunction callbacks. `all_threads` picks
/// global vs thread-local registration. Throws Error when all kMaxSessions slots are taken.
void start_observing(Session* session, bool all_threads);
/// Removes `session`'s callbacks, empties its slot and waits until no thread is inside a
/// callback that may still use it: afterwards nothing touches `session`, which may be freed.
/// Safe while other threads run ops. Idempotent.
void stop_observing(Session* session) noexcept;

}  // namespace flopsprof::detail
