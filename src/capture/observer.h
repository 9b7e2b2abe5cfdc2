// The RecordFunction observer: the per-op callbacks (the hot path), their registration, and the
// session-lifetime protocol that lets a profile stop while other threads run ops.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <ATen/record_function.h>

#include "capture/session.h"
#include "records/events.h"
#include "records/gpu.h"

namespace c10 {
class IValue;
template <typename T>
class ArrayRef;
}  // namespace c10

namespace flopsprof::detail {

/// The arguments of an op that capture reads (for FLOPs and bytes); ops with more are counted
/// from their first kMaxCapturedArgs, and the report says how many were.
constexpr size_t kMaxCapturedArgs = 64;

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

/// Copies of `session`'s records while it runs, each taken while its thread is held outside the
/// callbacks (a thread entering one waits for the copy, microseconds per buffer): the reader
/// never sees a record being written. Callbacks on the calling thread are suspended meanwhile.
std::vector<std::unique_ptr<ThreadEvents>> snapshot_records(Session& session);

/// What an op's arguments carry beyond their shapes (events.h, ArgTensorFlag): the storage
/// identities of the arguments in `storage` (bit k: argument k; the ops that touch a KV cache),
/// and the kept entries of the attention mask at `mask` (-1: none; read_attention_masks).
struct ArgExtras {
  uint16_t storage = 0;
  int8_t mask = -1;
  int8_t data = -1;  ///< the argument that is the op's data (RawEvent::data_in): kArgData
};

/// Appends the plain-data form of `inputs` (shapes, dtypes, scalars, lists) to `thread` and points
/// `event`'s argument range at it; each argument's extras follow its sizes. May allocate; never
/// called for ops nested in counted ones.
void capture_args(ThreadEvents* thread, RawEvent& event, c10::ArrayRef<const c10::IValue> inputs,
                  ArgExtras extras = {});

#ifdef FLOPSPROF_CAPTURE_FAULTS
/// Fault injection, only in the test build of this file (tests/CMakeLists.txt,
/// flopsprof_capture_faults; never in the library): the next `n` argument captures throw
/// std::bad_alloc midway, and the next `n` callback registrations fail after the first of a pair.
extern std::atomic<int> g_fail_captures;
extern std::atomic<int> g_fail_registrations;
#endif

/// How a profile asks to capture ops (ProfilerOptions::Capture).
enum class CaptureRequest { kAuto, kDispatch, kRecordFunction };

/// Takes a free slot for `session` and starts capturing its ops: through the dispatcher
/// interceptor (capture/interceptor.h; autograd nodes and c10d work through a RecordFunction
/// callback for those scopes only) or through RecordFunction callbacks; sets session->dispatch.
/// `all_threads` picks global vs thread-local registration (and, for the interceptor, which
/// threads it covers). Profiles that overlap in time share one path. kAuto takes the interceptor
/// unless another running profile uses RecordFunction or the interceptor cannot be installed,
/// and then returns why; an explicit request that cannot be met throws Error, as does a start
/// when all kMaxSessions slots are taken.
std::string start_observing(Session* session, bool all_threads, CaptureRequest request);

/// Removes `session`'s callbacks, empties its slot and waits until no thread is inside a
/// callback that may still use it: afterwards nothing touches `session`, which may be freed.
/// Safe while other threads run ops. Idempotent.
void stop_observing(Session* session) noexcept;

/// Opens a step record of `session` on the calling thread: an explicit one (step_scope()), or
/// with `optimizer` an optimizer's step() observed at its function. Session 0 in the handle when
/// it could not be recorded. Closed by close_step_record.
ScopeHandle open_step_record(Session& session, bool optimizer) noexcept;
/// Ends the record `handle` opened in the profile of `slot`, if that profile still runs.
void close_step_record(int slot, ScopeHandle& handle) noexcept;
/// Opens a step record (an optimizer's step() observed at its function) in every running profile
/// whose thread is not already inside a step (step_scope()); closed by close_step_records.
void open_step_records(ScopeHandles& handles) noexcept;
void close_step_records(ScopeHandles& handles) noexcept;

/// While a profile runs or forward hooks are registered, scopes record (g_scope_demand): each
/// recording and each hook takes a share at its start and gives it back at its end.
void demand_scopes() noexcept;
void release_scopes() noexcept;

/// Whether every callback in `callbacks` is flopsprof's own observer of c10d collectives (which
/// ignores any other user scope): a module scope then opens no user-scope record of its own.
bool only_collective_observers(const at::StepCallbacks& callbacks) noexcept;

}  // namespace flopsprof::detail
