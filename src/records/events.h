// Raw per-thread event records: plain data written by the hot path, read after collection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flopsprof/formulas.h"

namespace flopsprof::detail {

/// Bits of `RawEvent::flags`.
enum EventFlag : uint8_t {
  kCounted = 1 << 0,        ///< outermost op with a formula: its FLOPs count
  kUnderCounted = 1 << 1,   ///< nested inside a counted op: never counted again (the observer
                            ///< skips these; synthetic inputs and other producers may record them)
  kBackward = 1 << 3,       ///< ran inside the autograd engine
  kStep = 1 << 5,           ///< ran inside a step scope (the optimizer step)
  kExternalInput = 1 << 4,  ///< a top-level forward op in grad mode read a tensor with no
                            ///< autograd history that no module owns and that requires no
                            ///< gradient (data, targets; not an unregistered module's parameter)
  kEngine = 1 << 6,         ///< the autograd engine's evaluate_function wrapper of a node
  kSelfOwned = 1 << 7,      ///< its first input (self) is a parameter or buffer of the model
};

enum class EventKind : uint8_t {
  kOp = 0,            ///< an ATen op (RecordScope::FUNCTION)
  kBackwardNode = 1,  ///< an autograd node or the engine's evaluate_function wrapper
};

/// Bits of `ArgRecord::tensor_flags` (tensors; kArgStorage also tensor lists): what the bytes an op
/// moves depend on, and what follows its sizes in `dims`.
enum ArgTensorFlag : uint8_t {
  kArgRepeated = 1 << 0,  ///< the same tensor as an earlier argument of the op
  kArgStrided = 1 << 1,   ///< not contiguous (a transpose, a slice, an expand)
  kArgExpanded = 1 << 2,  ///< a broadcast view (a stride of 0 over a size > 1): the elements
                          ///< its memory covers follow its sizes in `dims`
  kArgMaskKept = 1 << 3,  ///< an attention mask read by the capture: the count of its entries that
                          ///< keep a pair follows (after the covered elements of an expanded view)
  /// The identity of its storage follows (after the entries above; never dereferenced); for a
  /// tensor list, its first tensor's storage and bytes, after the list's bytes. Recorded for
  /// the ops that touch a KV cache (formulas/registry.h, kv_cache_role).
  kArgStorage = 1 << 4,
  /// A list of optional tensors (`Tensor?[]`: aten::index's indices): each element's element
  /// count, -1 for None, follows the list's bytes (before any entry above).
  kArgElementNumels = 1 << 5,
  /// The tensor a top-level op read as its data (RawEvent::data_in: the first no module owns):
  /// the model's first op's says what the model was fed (Workload::inputs).
  kArgData = 1 << 6,
};

/// One captured argument. Tensor sizes and list values live in `ThreadEvents::dims`.
struct ArgRecord {
  ArgKind kind = ArgKind::kNone;
  DType dtype = DType::kUnknown;  ///< tensors; a tensor list's first tensor's
  bool b = false;
  uint8_t tensor_flags = 0;  ///< ArgTensorFlag bits
  uint32_t count = 0;        ///< tensor rank, list length, tensor-list length
  union {
    double d;
    int64_t i;
    uint64_t offset;  ///< into `dims` for tensors, int lists and tensor lists (their total
                      ///< bytes), `doubles` for double lists
  };
  ArgRecord() : i(0) {}
};
static_assert(sizeof(ArgRecord) == 16, "ArgRecord stays 16 bytes");

/// Where in `ThreadEvents::dims` an argument's trailing entry `which` (kArgExpanded's covered
/// elements, kArgMaskKept's count, kArgStorage's identity) is: after its sizes (a tensor list: its
/// bytes) and the entries before it, in that order. Valid only when its flag is set.
inline size_t trailing_at(const ArgRecord& a, ArgTensorFlag which) {
  if (a.kind == ArgKind::kTensorList)  // after the list's bytes (and its elements' counts)
    return a.offset + 1 + ((a.tensor_flags & kArgElementNumels) ? a.count : 0);
  size_t at = a.offset + a.count;
  for (ArgTensorFlag f : {kArgExpanded, kArgMaskKept, kArgStorage}) {
    if (f == which) return at;
    if (a.tensor_flags & f) ++at;
  }
  return at;
}

/// One op call as the observer saw it. 88 bytes, no pointers into torch.
struct RawEvent {
  int64_t start_tick = 0;
  int64_t end_tick = 0;
  int64_t seq_nr = -1;   ///< autograd sequence number (forward op or backward node)
  int64_t seq_end = -1;  ///< forward op: the thread's next sequence number when it ended, so
                         ///< [seq_nr, seq_end) covers the nodes its nested ops created
  int64_t in_seq = -1;   ///< top-level forward op in grad mode: the smallest sequence number
                         ///< of its inputs' grad_fn (where they were computed); -1: none
  union {
    uint64_t fwd_thread = 0;  ///< backward node: the forward thread's id
    /// Op, RecordFunction path: records LibTorch made of the ops nested in it that the capture
    /// skipped (their cost is inside its span: capture/cost_removal.h); 0 on the dispatch path,
    /// where ops nested in a counted one make no record.
    uint64_t nested_records;
  };
  /// Top-level forward op: identity (never dereferenced) of the first tensor it read that no
  /// module owns (its data); 0: none. Unique for the profile: the capture keeps that tensor's
  /// object allocated (not its memory) until the records are discarded, so no later tensor
  /// takes its address. Tells a caller's `y = x.sum()` before `model(x)` (both read x) from a
  /// resize at the top of the forward (the model reads the resize's output).
  uint64_t data_in = 0;
  uint32_t name_id = 0;     ///< into the name table
  int32_t parent = -1;      ///< enclosing event on the same thread
  uint32_t args_begin = 0;  ///< into `ThreadEvents::args`
  uint16_t args_count = 0;
  uint8_t flags = 0;
  EventKind kind = EventKind::kOp;
  int32_t owner = -1;  ///< owner set (modules owning a parameter among its inputs)
  int32_t scope = -1;  ///< innermost open ScopeRecord on this thread
};

/// One FLOPSPROF_MODULE() call, a call window (get_model_profile's call of the model), or an
/// observed call of a built-in module.
/// `ScopeRecord::module` of a call of a module in another running profile's tree (another model):
/// evidence that its ops are not this model's.
constexpr int32_t kForeignModule = -1;
/// `ScopeRecord::module` of a call of a module in no running profile's tree (a member never passed
/// to register_module(), a module built inside forward, or a model no profiler knows): evidence of
/// a module call, not of whose.
constexpr int32_t kUnknownModule = -2;

struct ScopeRecord {
  int32_t module = kForeignModule;  ///< module index in the tree, kForeignModule or kUnknownModule
  int32_t parent = -1;              ///< enclosing scope record on this thread
  int64_t enter_tick = 0;
  int64_t exit_tick = 0;  ///< 0 while open
  bool backward = false;  ///< entered inside the autograd engine: a recomputed forward
  /// A call whose bounds the caller knows: records of the same module inside it are this call.
  bool window = false;
  /// A built-in module's forward observed at its function (capture/builtin_calls.cpp): exact
  /// bounds, like FLOPSPROF_MODULE(), for a module whose every call is observed.
  bool builtin = false;
  /// Only the start of a call is known (a BatchNorm's or InstanceNorm's forward is inline; its
  /// virtual input check is observed): the next op its type runs on this thread is that call's.
  /// enter_tick == exit_tick; it encloses no op.
  bool start_only = false;
  /// Every called submodule has its own record (a TorchScript module's hierarchy): the ops
  /// directly inside are this module's, not moved to a descendant by the parameters they read.
  bool exact = false;
};

/// One step scope (the optimizer step), on the thread that ran it.
struct StepRecord {
  int64_t start_tick = 0;
  int64_t end_tick = 0;  ///< 0 while open
  /// An optimizer's step() observed at its function (no step_scope()): the step of this profile
  /// only if it updates this model's parameters (another model's optimizer is outside it).
  bool optimizer = false;
};

/// One window of a region the caller named (FlopsProfiler::region()), in the recording's clock.
/// Written by the profiler's own calls (never by the per-op callbacks).
struct RegionWindow {
  std::string name;
  int64_t start_tick = 0;
  int64_t end_tick = 0;  ///< 0 while open
  uint64_t tokens = 0;   ///< given by the caller; 0: none given
  uint64_t thread = 0;   ///< the thread that opened it (ThreadEvents::thread_id's numbering)
};

/// One allocation (bytes > 0) or free (bytes < 0) reported by LibTorch's allocators.
struct MemRecord {
  int64_t time_tick = 0;
  int64_t bytes = 0;
  uint64_t address = 0;        ///< the block's (a free names its allocation's); 0: unknown
  int64_t total_reserved = 0;  ///< caching allocators (CUDA); 0 on CPU
  int32_t op = -1;             ///< the open op on this thread (index into events), -1: none
  int32_t scope = -1;          ///< the open scope on this thread
  int8_t device_type = 0;      ///< c10::DeviceType
};

/// One c10d collective (a process group's work: `gloo:all_reduce`, `nccl:broadcast`, ...), on
/// the thread that issued it. Its end is a `CollectiveEnd` on the thread that completed the work
/// (a backend's worker thread), so no thread writes into another's records.
struct CollectiveRecord {
  int64_t start_tick = 0;
  uint64_t numel = 0;             ///< elements of its input tensors
  uint64_t bytes = 0;             ///< bytes of its input tensors
  uint32_t name_id = 0;           ///< into the name table
  uint32_t tensors = 0;           ///< input tensors
  int32_t op = -1;                ///< the open op on this thread when issued (index into events)
  int32_t scope = -1;             ///< the open scope on this thread
  uint32_t dims_begin = 0;        ///< into `dims`: the first input's sizes (`rank` values)
  uint8_t rank = 0;               ///< the first input's dimensions
  DType dtype = DType::kUnknown;  ///< the first input's
  uint8_t flags = 0;              ///< kBackward, kStep: where it was issued
};
struct CollectiveEnd {
  uint32_t thread = 0;  ///< the issuing thread (index into the profile's threads)
  uint32_t index = 0;   ///< into its `collectives`
  int64_t end_tick = 0;
};

/// The halves of a record whose capture cost is measured in place (ThreadEvents::cost_samples):
/// an op's opening and closing (ops with an unboxed kernel on the dispatch path, and ops through
/// its boxed fallback), a module call record's entry and exit.
enum CostHalf : uint8_t { kOpOpen, kOpClose, kBoxedOpen, kBoxedClose, kCallEnter, kCallExit };
constexpr int kCostHalves = 6;

/// The capture's own code timed in place, summed over the sampled records of one half (about one
/// in 16, capture/cost_sample.h): the ticks it spent before the record's timestamp and after it
/// (the timestamp's own read falls in `before`). Host TSC ticks; nothing when the profile's
/// clock is another.
struct CostSample {
  int64_t before = 0, after = 0;
  uint32_t n = 0;
};

/// Everything one thread recorded in one profile.
struct ThreadEvents {
  uint64_t thread_id = 0;
  std::vector<RawEvent> events;
  std::vector<ArgRecord> args;
  std::vector<int64_t> dims;
  std::vector<double> doubles;  ///< values of double lists (their own type: no aliasing)
  std::vector<ScopeRecord> scopes;
  std::vector<StepRecord> steps;
  std::vector<MemRecord> memory;
  std::vector<CollectiveRecord> collectives;
  std::vector<CollectiveEnd> collective_ends;
  uint64_t dropped_args = 0;    ///< ops whose arguments did not fit (args_count limit)
  uint64_t capture_errors = 0;  ///< ops or records that could not be stored (reported once)
  CostSample cost_samples[kCostHalves];  ///< by CostHalf (dispatch path and module calls)
};

/// What changes whenever a record is added to `threads` or closed: per thread, the length of every
/// record list, how many op, scope and step records are still open, and the loss counters.
/// Records are only appended, and closed once, so two snapshots of one running profile with equal
/// fingerprints hold the same records. Cost: one pass over the op and scope records.
inline std::vector<uint64_t> records_fingerprint(const std::vector<const ThreadEvents*>& threads) {
  std::vector<uint64_t> f;
  f.reserve(threads.size() * 14);
  for (const ThreadEvents* t : threads) {
    uint64_t open_events = 0, open_scopes = 0, open_steps = 0;
    for (const RawEvent& e : t->events) open_events += e.end_tick == 0;
    for (const ScopeRecord& s : t->scopes) open_scopes += s.exit_tick == 0;
    for (const StepRecord& s : t->steps) open_steps += s.end_tick == 0;
    f.insert(f.end(), {t->events.size(), open_events, t->args.size(), t->dims.size(),
                       t->doubles.size(), t->scopes.size(), open_scopes, t->steps.size(),
                       open_steps, t->memory.size(), t->collectives.size(),
                       t->collective_ends.size(), t->dropped_args, t->capture_errors});
  }
  return f;
}

/// Whether op `e` of thread `th` ran inside a call of another profiled model's module (a scope
/// record of kForeignModule) and of none of this model's. Pure.
inline bool ran_in_foreign_call(const ThreadEvents& th, const RawEvent& e) {
  bool foreign = false;
  for (int s = e.scope; s >= 0; s = th.scopes[s].parent) {
    const int m = th.scopes[s].module;
    if (m >= 0) return false;
    foreign = foreign || m == kForeignModule;
  }
  return foreign;
}

/// Op names by id, as interned by the observer.
struct NameLookup {
  virtual ~NameLookup() = default;
  virtual const std::string& name(uint32_t id) const = 0;
};

}  // namespace flopsprof::detail
