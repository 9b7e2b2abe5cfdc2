// The per-op RecordFunction callbacks (the hot path), in three sections: the thread-local block
// and the session-lifetime protocol the callbacks inline; the callbacks and argument capture;
// their registration (start_observing / stop_observing). One translation unit, so that the hot
// path reads its thread-local block directly (initial-exec TLS) and inlines the protocol.
#include "capture/observer.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <thread>
#include <type_traits>

#include <ATen/SequenceNumber.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <fmt/format.h>

#include "capture/attention_mask.h"
#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture/module_index.h"
#include "flopsprof/error.h"
#include "flopsprof/scope.h"
#include "formulas/registry.h"

namespace flopsprof::detail {

// ---------------------------------------------------------------------------------------------
// The thread-local block and the session-lifetime protocol

namespace {

// No member initializers here or in ThreadLocals: the block must stay trivially constructible, so
// that it is zero-initialized with the thread and no access checks a dynamic-initialization guard
// (an initializer on any member made every access in this file test one, and kept registers
// saved in the nested ops' early return).
struct TlsBuffer {
  uint64_t session;
  ThreadBuffer* buffer;
};
// Every per-thread variable of the hot path in one trivially constructible and destructible
// block: one TLS address computation per access and no guard. initial-exec: a direct
// %fs-relative access instead of a __tls_get_addr call (flopsprof is linked into the program or
// into a library loaded with it, not dlopen'ed late).
struct ThreadState;
struct ThreadLocals {
  TlsBuffer buffers[kMaxSessions];
  ThreadState* state;  // this thread's lifetime-protocol state, null until its first callback
  int depth;           // CallbackGuard nesting
  // Per session slot: counted ops open on this thread. Ops nested in one are never recorded, so
  // the op callback returns before anything else while it is > 0. Raised when a counted op's
  // record commits, lowered when its OpContext dies (with the RecordFunction, whether or not the
  // end callback ran), so it cannot leak past the op into a later profile.
  int counted[kMaxSessions];
  int suspended;    // > 0: this thread is taking a snapshot; its callbacks record nothing
  void* free_head;  // OpContext free list
};
static_assert(std::is_trivially_default_constructible_v<ThreadLocals> &&
                  std::is_trivially_destructible_v<ThreadLocals>,
              "the hot path's thread-local block must need no guard");
#if defined(__GNUC__)
#define FLOPSPROF_TLS_MODEL __attribute__((tls_model("initial-exec")))
#define FLOPSPROF_NOINLINE __attribute__((noinline))
#else
#define FLOPSPROF_TLS_MODEL
#define FLOPSPROF_NOINLINE
#endif
thread_local ThreadLocals tl FLOPSPROF_TLS_MODEL;

// The session-lifetime protocol. Each thread that enters a callback owns a ThreadState whose
// epoch is odd while it is inside one. States are never freed (a thread's is recycled for the
// next thread when it exits), so the stopping thread may read any of them at any time.
struct ThreadState {
  std::atomic<uint64_t> epoch{0};
  std::atomic<int> blocked{0};  // > 0: a reader is copying this thread's records
  bool in_use = false;          // guarded by g_states_mu
};

// Enters the callback section: odd epoch, unless a reader holds the thread out (then step back,
// wait, retry). seq_cst store then seq_cst load, against the reader's store then load.
inline void enter_section(ThreadState* st) noexcept {
  uint64_t e = st->epoch.load(std::memory_order_relaxed);
  for (;;) {
    st->epoch.store(e + 1, std::memory_order_seq_cst);
    if (st->blocked.load(std::memory_order_seq_cst) == 0) return;
    st->epoch.store(e + 2, std::memory_order_release);
    e += 2;
    while (st->blocked.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }
}
std::mutex g_states_mu;
std::deque<ThreadState>& all_states() {
  static auto* states = new std::deque<ThreadState>;  // leaked: used by exiting threads
  return *states;
}
std::vector<ThreadState*>& free_states() {
  static auto* list = new std::vector<ThreadState*>;
  return *list;
}
struct StateRecycler {
  ~StateRecycler() {
    if (tl.state == nullptr) return;
    std::lock_guard<std::mutex> lock(g_states_mu);
    tl.state->in_use = false;
    free_states().push_back(tl.state);
    tl.state = nullptr;
  }
};
thread_local StateRecycler tl_recycler;

ThreadState* this_thread_state() noexcept {
  if (tl.state != nullptr) return tl.state;
  try {
    std::lock_guard<std::mutex> lock(g_states_mu);
    ThreadState* st;
    if (!free_states().empty()) {
      st = free_states().back();
      free_states().pop_back();
    } else {
      st = &all_states().emplace_back();
    }
    st->in_use = true;
    tl.state = st;
    (void)&tl_recycler;  // constructs the recycler for this thread
    return st;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

CallbackGuard::CallbackGuard() noexcept {
  if (tl.suspended > 0) return;  // ok_ false: record nothing, touch nothing
  ThreadState* st = this_thread_state();
  if (st == nullptr) return;
  // seq_cst: the odd epoch is visible before this thread loads a session pointer, so a stopper
  // that empties a slot and then reads an even epoch knows this thread cannot hold the session.
  if (tl.depth++ == 0) enter_section(st);
  ok_ = true;
}

CallbackGuard::~CallbackGuard() {
  if (!ok_ || --tl.depth > 0) return;
  tl.state->epoch.store(tl.state->epoch.load(std::memory_order_relaxed) + 1,
                        std::memory_order_release);
}

namespace {

// CallbackGuard's protocol, inlined into the op callbacks (the hottest path).
class OpGuard {
 public:
  OpGuard() noexcept {
    ThreadLocals& t = tl;
    st_ = t.state;
    if (__builtin_expect(st_ == nullptr || t.suspended > 0, 0)) {
      st_ = t.suspended > 0 ? nullptr : this_thread_state();
    }
    if (st_ != nullptr && t.depth++ == 0) enter_section(st_);
  }
  ~OpGuard() {
    if (st_ != nullptr && --tl.depth == 0) {
      st_->epoch.store(st_->epoch.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
  }
  OpGuard(const OpGuard&) = delete;
  OpGuard& operator=(const OpGuard&) = delete;
  bool ok() const noexcept { return st_ != nullptr; }

 private:
  ThreadState* st_;
};

}  // namespace

std::vector<std::unique_ptr<ThreadEvents>> snapshot_records(Session& session) {
  struct Suspend {
    Suspend() { ++tl.suspended; }
    ~Suspend() { --tl.suspended; }
  } suspend;
  std::vector<ThreadBuffer*> list;
  {
    std::lock_guard<std::mutex> lock(session.mu);
    for (auto& b : session.buffers) list.push_back(b.get());
  }
  std::vector<std::unique_ptr<ThreadEvents>> out;
  out.reserve(list.size());
  for (ThreadBuffer* b : list) {
    auto* st = static_cast<ThreadState*>(b->owner_state);
    const bool other = st != nullptr && st != tl.state;
    if (other) {  // hold the owner out of its callbacks while copying
      st->blocked.fetch_add(1, std::memory_order_seq_cst);
      const uint64_t e = st->epoch.load(std::memory_order_seq_cst);
      if (e & 1) {
        while (st->epoch.load(std::memory_order_acquire) == e) std::this_thread::yield();
      }
    }
    std::unique_ptr<ThreadEvents> copy;
    try {
      copy = std::make_unique<ThreadEvents>(static_cast<const ThreadEvents&>(*b));
    } catch (...) {
      if (other) st->blocked.fetch_sub(1, std::memory_order_release);
      throw;
    }
    if (other) st->blocked.fetch_sub(1, std::memory_order_release);
    out.push_back(std::move(copy));
  }
  return out;
}

ThreadBuffer* Session::thread_buffer() noexcept {
  TlsBuffer& tls = tl.buffers[slot];
  if (tls.session == id) return tls.buffer;
  try {
    std::unique_ptr<ThreadBuffer> b;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!spares.empty()) {
        b = std::move(spares.back());
        spares.pop_back();
      }
    }
    if (!b) {
      b = std::make_unique<ThreadBuffer>();
      // Sized so that a typical profile never grows them: 1 MiB of events, 256 KiB of arguments,
      // 256 KiB of module calls (each observed call of a built-in module has one), 128 KiB of
      // data holds. A vector growing mid-profile also disturbs the allocator's state for the
      // program's own allocations (measured: bench/RESULTS.md).
      b->events.reserve(16384);
      b->args.reserve(16384);
      b->dims.reserve(32768);
      b->scopes.reserve(8192);
      b->reserve_data(16384);
    }
    b->reset(at::RecordFunction::currentThreadId());
    b->owner_state = tl.state;  // before publishing: readers take the list under `mu`
    ThreadBuffer* raw = b.get();
    {
      std::lock_guard<std::mutex> lock(mu);
      raw->ordinal = static_cast<uint32_t>(buffers.size());
      buffers.push_back(std::move(b));
    }
    tls = TlsBuffer{id, raw};
    return raw;
  } catch (...) {
    return nullptr;
  }
}

// ---------------------------------------------------------------------------------------------
// The callbacks

namespace {

// Per-op state from start to end. Allocated from a per-thread free list: no malloc per op once
// the list is warm (RecordFunction owns it through a unique_ptr and deletes it after end).
struct OpContext final : at::ObserverContext {
  ThreadBuffer* buffer = nullptr;
  uint64_t session = 0;
  uint32_t index = 0;
  uint8_t pushed = 0;  // 1: counted depth, 2: backward depth, 4: a GPU correlation id
  int8_t slot = 0;     // the session slot whose counted depth this op raised (pushed & 1)
  int32_t mark = -1;   // device-event mark of a top-level record, else -1

  ~OpContext() override {
    if (pushed & 1) --tl.counted[slot];
  }

  static void* operator new(size_t size);
  static void operator delete(void* p) noexcept;
};

// Frees the thread's OpContext free list when the thread exits.
struct FreeListReleaser {
  ~FreeListReleaser() {
    while (tl.free_head) {
      void* next = *static_cast<void**>(tl.free_head);
      ::operator delete(tl.free_head);
      tl.free_head = next;
    }
  }
};
thread_local FreeListReleaser tl_free_releaser;

void* OpContext::operator new(size_t size) {
  if (tl.free_head != nullptr && size <= sizeof(OpContext)) {
    void* p = tl.free_head;
    tl.free_head = *static_cast<void**>(p);
    return p;
  }
  (void)&tl_free_releaser;  // registers the release at thread exit (first allocation only)
  return ::operator new(sizeof(OpContext));
}

void OpContext::operator delete(void* p) noexcept {
  *static_cast<void**>(p) = tl.free_head;
  tl.free_head = p;
}

// A non-empty list whose elements are tensors or None (a `Tensor?[]`).
bool optional_tensors(c10::ArrayRef<c10::IValue> list) {
  bool any = false;
  for (const c10::IValue& x : list) {
    if (x.isTensor()) {
      any = true;
    } else if (!x.isNone()) {
      return false;
    }
  }
  return any;
}

void push_list(ThreadEvents* b, ArgRecord& a, const c10::List<int64_t>& list) {
  a.count = static_cast<uint32_t>(list.size());
  a.offset = b->dims.size();
  for (int64_t v : list) b->dims.push_back(v);
}

}  // namespace

#ifdef FLOPSPROF_CAPTURE_FAULTS
std::atomic<int> g_fail_captures{0};
std::atomic<int> g_fail_registrations{0};
#endif

namespace {

// An argument's extras, after its sizes (and a broadcast view's covered elements): the kept
// entries of an attention mask, the identity of its storage (never dereferenced).
void push_extras(ThreadEvents* b, ArgRecord& a, const at::Tensor& t, size_t k, ArgExtras extras) {
  if (static_cast<int>(k) == extras.mask) {
    if (const std::optional<uint64_t> kept = kept_mask_entries(t)) {
      b->dims.push_back(static_cast<int64_t>(*kept));
      a.tensor_flags |= kArgMaskKept;
    }
  }
  if ((extras.storage >> k) & 1) {
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    if (!impl->has_storage()) return;
    b->dims.push_back(
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(impl->storage().unsafeGetStorageImpl())));
    if (a.kind == ArgKind::kTensorList) {  // a list's first tensor: its bytes too
      b->dims.push_back(t.numel() * static_cast<int64_t>(t.element_size()));
    }
    a.tensor_flags |= kArgStorage;
  }
}

}  // namespace

void capture_args(ThreadEvents* b, RawEvent& e, c10::ArrayRef<const c10::IValue> inputs,
                  ArgExtras extras) {
#ifdef FLOPSPROF_CAPTURE_FAULTS
  if (g_fail_captures.load(std::memory_order_relaxed) > 0 && g_fail_captures.fetch_sub(1) > 0) {
    b->dims.push_back(0);  // a partial write, as a real failure midway would leave
    throw std::bad_alloc();
  }
#endif
  e.args_begin = static_cast<uint32_t>(b->args.size());
  size_t n = inputs.size();
  if (n > kMaxCapturedArgs) {
    n = kMaxCapturedArgs;
    ++b->dropped_args;
  }
  // The op's tensors so far, to read a tensor passed twice (x * x) once.
  constexpr size_t kSeen = 8;
  const c10::TensorImpl* seen[kSeen];
  size_t seen_count = 0;
  for (size_t k = 0; k < n; ++k) {
    const c10::IValue& v = inputs[k];
    ArgRecord a;
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (!t.defined()) {
        a.kind = ArgKind::kUndefinedTensor;
      } else {
        a.kind = ArgKind::kTensor;
        a.dtype = to_dtype(t.scalar_type());
        c10::IntArrayRef sizes = t.sizes();
        a.count = static_cast<uint32_t>(sizes.size());
        a.offset = b->dims.size();
        for (int64_t d : sizes) b->dims.push_back(d);  // inlined, unlike a range insert
        // What the bytes it moves depend on (aggregation/op_bytes.cpp): a repeated tensor, its
        // layout, and for a broadcast view the elements its memory covers.
        const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
        for (size_t j = 0; j < seen_count; ++j) {
          if (seen[j] == impl) a.tensor_flags |= kArgRepeated;
        }
        if (seen_count < kSeen) seen[seen_count++] = impl;
        if (t.layout() == c10::kStrided && !t.is_contiguous()) {
          a.tensor_flags |= kArgStrided;
          c10::IntArrayRef strides = t.strides();
          int64_t covered = 1;
          for (size_t d = 0; d < sizes.size(); ++d) {
            if (strides[d] == 0 && sizes[d] > 1) {
              a.tensor_flags |= kArgExpanded;
            } else {
              covered *= sizes[d];
            }
          }
          if (a.tensor_flags & kArgExpanded) b->dims.push_back(covered);
        }
        if (extras.storage != 0 || extras.mask >= 0) push_extras(b, a, t, k, extras);
        if (static_cast<int>(k) == extras.data) a.tensor_flags |= kArgData;
      }
    } else if (v.isDouble()) {
      a.kind = ArgKind::kDouble;
      a.d = v.toDouble();
    } else if (v.isInt()) {
      a.kind = ArgKind::kInt;
      a.i = v.toInt();
    } else if (v.isBool()) {
      a.kind = ArgKind::kBool;
      a.b = v.toBool();
    } else if (v.isIntList()) {
      a.kind = ArgKind::kIntList;
      push_list(b, a, v.toIntList());
    } else if (v.isBoolList()) {  // e.g. the output_mask of backward ops, stored as 0/1
      a.kind = ArgKind::kIntList;
      c10::List<bool> list = v.toBoolList();
      a.count = static_cast<uint32_t>(list.size());
      a.offset = b->dims.size();
      for (size_t k2 = 0; k2 < list.size(); ++k2) b->dims.push_back(list.get(k2) ? 1 : 0);
    } else if (v.isDoubleList()) {
      a.kind = ArgKind::kDoubleList;
      c10::List<double> list = v.toDoubleList();
      a.count = static_cast<uint32_t>(list.size());
      a.offset = b->doubles.size();
      for (double d : list) b->doubles.push_back(d);
#if TORCH_VERSION_MAJOR >= 2
    } else if (v.isSymInt()) {  // LibTorch 2.x: SymInt arguments (concrete ones box as Int)
      a.kind = ArgKind::kInt;
      a.i = v.toSymInt().guard_int(__FILE__, __LINE__);
    } else if (v.isSymIntList()) {
      a.kind = ArgKind::kIntList;
      c10::ArrayRef<c10::IValue> list = v.toListRef();
      a.count = static_cast<uint32_t>(list.size());
      a.offset = b->dims.size();
      for (const c10::IValue& x : list)
        b->dims.push_back(x.toSymInt().guard_int(__FILE__, __LINE__));
#endif
    } else if (v.isTensorList()) {
      // Its length, first dtype and total bytes (cat, stack, _foreach_*: what they move).
      a.kind = ArgKind::kTensorList;
      c10::ArrayRef<c10::IValue> list = v.toListRef();
      a.count = static_cast<uint32_t>(list.size());
      int64_t bytes = 0;
      for (const c10::IValue& x : list) {
        const at::Tensor& t = x.toTensor();
        if (!t.defined()) continue;
        if (a.dtype == DType::kUnknown) a.dtype = to_dtype(t.scalar_type());
        bytes += t.numel() * static_cast<int64_t>(t.element_size());
      }
      a.offset = b->dims.size();
      b->dims.push_back(bytes);
      if (((extras.storage >> k) & 1) && !list.empty() && list[0].isTensor() &&
          list[0].toTensor().defined()) {
        push_extras(b, a, list[0].toTensor(), k, ArgExtras{extras.storage, -1});
      }
    } else if (v.isList() && optional_tensors(v.toListRef())) {
      // Tensor?[] (aten::index's indices): the bytes and first dtype as a tensor list, and each
      // element's element count (-1: None), which the output's size depends on.
      a.kind = ArgKind::kTensorList;
      a.tensor_flags |= kArgElementNumels;
      c10::ArrayRef<c10::IValue> list = v.toListRef();
      a.count = static_cast<uint32_t>(list.size());
      a.offset = b->dims.size();
      b->dims.push_back(0);
      int64_t bytes = 0;
      for (const c10::IValue& x : list) {
        if (!x.isTensor() || !x.toTensor().defined()) {
          b->dims.push_back(-1);
          continue;
        }
        const at::Tensor& t = x.toTensor();
        if (a.dtype == DType::kUnknown) a.dtype = to_dtype(t.scalar_type());
        bytes += t.numel() * static_cast<int64_t>(t.element_size());
        b->dims.push_back(t.numel());
      }
      b->dims[a.offset] = bytes;
    } else if (v.isString()) {
      a.kind = ArgKind::kString;
      const std::string& s = v.toStringRef();
      a.i = s.empty() ? 0 : s[0];
    } else if (!v.isNone()) {
      a.kind = ArgKind::kOther;
    }
    b->args.push_back(a);
  }
  e.args_count = static_cast<uint16_t>(n);
}

namespace {

inline int32_t owner_of(const OwnerIndex& owners, const at::Tensor& t) {
  if (!t.defined()) return -1;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->has_storage()) return -1;
  return owners.find(impl->storage().unsafeGetStorageImpl());
}

// The first owner set among the tensors of a tensor list, or -1.
int32_t list_owner(const Session* s, const c10::IValue& v) {
  c10::List<at::Tensor> list = v.toTensorList();
  for (size_t i = 0; i < list.size(); ++i) {
    const int32_t o = owner_of(s->owners, list.get(i));
    if (o >= 0) return o;
  }
  return -1;
}

// The first owner set among the inputs (tensors and tensor lists, in order). For a top-level op
// (`top_level`) also its data identity (`e.data_in`: the first defined tensor no module owns;
// the caller holds it with ThreadBuffer::hold_data); with `dataflow` (a top-level op in grad
// mode) also where its tensor inputs came from: the smallest sequence number of their grad_fn
// nodes, and whether one has no history and no owner (data or targets from outside the model).
// One pass over the inputs serves all three.
int32_t find_owner(const Session* s, c10::ArrayRef<const c10::IValue> inputs, bool top_level,
                   bool dataflow, RawEvent& e, int8_t* data_arg) {
  int32_t first_owner = -1;                       // inputs[0]'s, looked up once
  if (!inputs.empty() && inputs[0].isTensor()) {  // an in-place update of a parameter?
    first_owner = owner_of(s->owners, inputs[0].toTensor());
    if (first_owner >= 0) {
      e.flags |= kSelfOwned;
      if (!top_level) return first_owner;
    }
  }
  int32_t first = -1;
  int64_t seq = INT64_MAX;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const c10::IValue& v = inputs[k];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (!t.defined()) continue;
      const int32_t o = k == 0 ? first_owner : owner_of(s->owners, t);
      if (first < 0) first = o;
      if (!top_level) {
        if (first >= 0) return first;
        continue;
      }
      if (o < 0 && e.data_in == 0) {
        e.data_in = reinterpret_cast<uint64_t>(t.unsafeGetTensorImpl());
        if (k < kMaxCapturedArgs) *data_arg = static_cast<int8_t>(k);
      }
      if (dataflow) {
        if (const torch::autograd::Node* node = torch::autograd::impl::grad_fn_unsafe(t)) {
          seq = std::min<int64_t>(seq, static_cast<int64_t>(node->sequence_nr()));
        } else if (o < 0 && !t.requires_grad()) {
          e.flags |= kExternalInput;  // a leaf that requires grad is some module's parameter
        }
      } else if (first >= 0 && e.data_in != 0) {
        break;  // owner and data found; no data flow to follow
      }
    } else if (v.isTensorList() && first < 0 && !dataflow) {
      first = list_owner(s, v);
      if (first >= 0 && !top_level) return first;
    }
  }
  if (dataflow) {
    e.in_seq = seq == INT64_MAX ? -1 : seq;
    // Data flow follows tensors; the owner comes from a tensor when one is owned, else from the
    // first owned tensor list.
    for (size_t k = 0; k < inputs.size() && first < 0; ++k) {
      if (inputs[k].isTensorList()) first = list_owner(s, inputs[k]);
    }
  }
  return first;
}

// The record of an op that is not nested in a counted one (on_op_start's slow path; out of line
// so that the nested ops' early return pays for none of its frame).
template <int K>
FLOPSPROF_NOINLINE OpContext* record_op(const at::RecordFunction& fn,
                                        at::RecordScope scope) noexcept {
  OpGuard guard;
  if (!guard.ok()) return nullptr;
  Session* s = g_sessions[K].load(std::memory_order_acquire);
  if (s == nullptr) return nullptr;
  const TlsBuffer& tls = tl.buffers[K];
  ThreadBuffer* b = tls.session == s->id ? tls.buffer : s->thread_buffer();
  if (b == nullptr) return nullptr;
  // All or nothing: everything that can throw (name interning, the context, the record and its
  // arguments) happens before any per-thread state changes; on failure the record is rolled back
  // and the op is not recorded, as if unobserved.
  const size_t events_before = b->events.size(), args_before = b->args.size(),
               dims_before = b->dims.size();
  try {
    uint32_t name_id;
    uint16_t name_flags;
    b->names.lookup(fn.name(), &name_id, &name_flags);
    std::unique_ptr<OpContext> ctx(new OpContext);
    const uint32_t index = static_cast<uint32_t>(events_before);
    b->events.emplace_back();
    RawEvent& e = b->events.back();
    e.name_id = name_id;
    e.parent = b->open_op;
    e.scope = b->open_scope;
    uint8_t pushed = 0;
    if (b->backward_depth > 0) e.flags |= kBackward;
    if (b->step_depth > 0) e.flags |= kStep;
    e.seq_nr = fn.seqNr();
    if (scope == at::RecordScope::BACKWARD_FUNCTION || (name_flags & kNameIsEngine)) {
      e.kind = EventKind::kBackwardNode;
      e.flags |= kBackward;
      if (name_flags & kNameIsEngine) e.flags |= kEngine;
      e.fwd_thread = fn.forwardThreadId();
      pushed |= 2;
    } else {
      c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
      // A boxed call (the TorchScript interpreter's) passes its whole stack: the op's arguments
      // are the last num_inputs() values.
      if (inputs.size() > 1) {
        const size_t n = fn.num_inputs();
        if (n > 0 && n < inputs.size()) inputs = inputs.slice(inputs.size() - n);
      }
      int8_t data_arg = -1;
      e.owner =
          find_owner(s, inputs, b->open_op < 0, b->open_op < 0 && e.seq_nr >= 0, e, &data_arg);
      // Held only where rule 9 compares it with another op's: outside the calls of the
      // profiled model's modules (see hold_data).
      if (e.data_in != 0 && !b->inside_model_call()) b->hold_data(e.data_in);
      if (name_flags & kNameHasFormula) {
        e.flags |= kCounted;
        pushed |= 1;
      }
      // Arguments for FLOPs and bytes, also of ops without a formula (their bytes count);
      // views and metadata queries move no bytes and count no FLOPs: nothing to read.
      if (!(name_flags & kNameConstant)) {
        ArgExtras extras;
        extras.data = data_arg;
        if (name_flags & (kNameAttentionMask | kNameKvRead | kNameKvWrite)) {
          if ((name_flags & kNameAttentionMask) && s->read_masks)
            extras.mask = static_cast<int8_t>(name_flags >> kNameMaskArgShift);
          // an attention op's keys and values; a write into, or an append to, a tensor
          if (name_flags & kNameKvRead) extras.storage = 0b110;
          if (name_flags & kNameKvWrite) extras.storage = 0b1;
        }
        capture_args(b, e, inputs, extras);
      }
    }
    const bool mark = s->events != nullptr && e.parent < 0;
    if (mark && b->marks.size() == b->marks.capacity()) {
      b->marks.reserve(std::max<size_t>(256, 2 * b->marks.size()));  // may throw: before commit
    }
    // Commit (nothing below throws).
    if (pushed & 1) ++tl.counted[K];
    if (pushed & 2) ++b->backward_depth;
    b->open_op = static_cast<int32_t>(index);
    if (s->gpu != nullptr) {  // device work launched by this op carries its id
      s->gpu->push(make_external_id(b->ordinal, index));
      pushed |= 4;
    }
    ctx->mark = -1;
    if (mark) {  // top-level: timed with device events (record() never throws)
      b->marks.push_back(DeviceMark{index, nullptr, nullptr});
      if (s->events->record(&b->marks.back().start)) {
        ctx->mark = static_cast<int32_t>(b->marks.size() - 1);
      }
    }
    ctx->buffer = b;
    ctx->slot = K;
    ctx->session = s->id;
    ctx->index = index;
    ctx->pushed = pushed;
    e.start_tick = s->now();
    return ctx.release();
  } catch (...) {
    // Never throw into the dispatcher.
    b->events.resize(events_before);
    b->args.resize(args_before);
    b->dims.resize(dims_before);
    ++b->capture_errors;
    return nullptr;
  }
}

template <int K>
std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  const at::RecordScope scope = fn.scope();
  if (tl.counted[K] > 0 && scope != at::RecordScope::BACKWARD_FUNCTION) {
    // Inside a counted op: never counted, attributed with its parent. Not recorded at all, and
    // decided from this thread's own state before the lifetime protocol, which keeps the common
    // case of composite ops (linear > matmul > mm > ...) cheap.
    return nullptr;
  }
  return std::unique_ptr<at::ObserverContext>(record_op<K>(fn, scope));
}

template <int K>
void on_op_end(const at::RecordFunction& /*fn*/, at::ObserverContext* c) {
  auto* ctx = static_cast<OpContext*>(c);
  if (ctx == nullptr) return;
  OpGuard guard;
  if (!guard.ok()) return;
  Session* s = g_sessions[K].load(std::memory_order_acquire);
  if (s == nullptr || s->id != ctx->session) return;  // the profile stopped meanwhile
  ThreadBuffer* b = ctx->buffer;
  RawEvent& e = b->events[ctx->index];
  e.end_tick = s->now();
  if (e.seq_nr >= 0 && e.kind == EventKind::kOp) e.seq_end = at::sequence_number::peek();
  if (ctx->pushed & 2) --b->backward_depth;
  if (ctx->pushed & 4) s->gpu->pop();
  if (ctx->mark >= 0) s->events->record(&b->marks[ctx->mark].end);
  if (b->open_op == static_cast<int32_t>(ctx->index)) b->open_op = e.parent;
}

}  // namespace

// Module call records (flopsprof/scope.h): every call of an observed built-in module takes them,
// so they use the op callbacks' inlined guard and buffer lookup.
const char* open_scope_records(const torch::nn::Module* module, ScopeHandles& handles,
                               ScopeKind kind) noexcept {
  OpGuard guard;
  if (!guard.ok()) return nullptr;
  // The module's index in each running profile's tree (-1: not in it). A module in none of them
  // (an unregistered member, a module built in forward) is told apart from another profiled
  // model's: the first may be this model's work, the second is not. The running profiles are
  // gathered first (usually one), so that the second pass visits only them.
  Session* sessions[kMaxSessions];
  int32_t index[kMaxSessions];
  int slots[kMaxSessions];
  int n = 0;
  bool known_anywhere = false;
  for (int k = 0; k < kMaxSessions; ++k) {
    Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s == nullptr) continue;
    auto it = s->module_index.find(module);
    const int32_t i = it == s->module_index.end() ? -1 : it->second;
    known_anywhere |= i >= 0;
    sessions[n] = s;
    index[n] = i;
    slots[n++] = k;
  }
  const char* name = nullptr;
  for (int j = 0; j < n; ++j) {
    Session* s = sessions[j];
    const bool known = index[j] >= 0;
    if (!known && kind == ScopeKind::kWindow) continue;
    const TlsBuffer& tls = tl.buffers[slots[j]];
    ThreadBuffer* b = tls.session == s->id ? tls.buffer : s->thread_buffer();
    if (b == nullptr) continue;
    ScopeHandle& h = handles[slots[j]];
    const int32_t m = known ? index[j] : known_anywhere ? kForeignModule : kUnknownModule;
    h.index = b->open_scope_record(m, s->now(), kind);
    if (h.index < 0) continue;
    h.buffer = b;
    h.session = s->id;
    if (name == nullptr && known && kind != ScopeKind::kBuiltin) {
      name = s->scope_names[index[j]].c_str();
    }
  }
  return name;
}

namespace {
// Ends the records `handles` opened, in the profiles still running: `end` on each one's buffer.
template <void (ThreadBuffer::*End)(int32_t, int64_t) noexcept>
void end_records(ScopeHandles& handles) noexcept {
  OpGuard guard;
  if (!guard.ok()) return;
  for (int k = 0; k < kMaxSessions; ++k) {
    ScopeHandle& h = handles[k];
    if (h.session == 0) continue;
    Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s == nullptr || s->id != h.session) continue;  // that profile stopped meanwhile
    (static_cast<ThreadBuffer*>(h.buffer)->*End)(h.index, s->now());
  }
}
}  // namespace

void close_scope_records(ScopeHandles& handles) noexcept {
  end_records<&ThreadBuffer::close_scope_record>(handles);
}

void close_step_records(ScopeHandles& handles) noexcept {
  end_records<&ThreadBuffer::end_step>(handles);
}

namespace {

// c10d collectives: a process group's work records itself as a USER_SCOPE record named
// "<backend>:<collective>" (ProcessGroup::Work), started on the issuing thread and ended where the
// work completes. Other user scopes are left at the first characters of their name.
bool is_c10d_work(const char* name) noexcept {
  for (const char* prefix : {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:"}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

struct CollectiveContext final : at::ObserverContext {
  uint64_t session = 0;
  uint32_t thread = 0, index = 0;
};

template <int K>
std::unique_ptr<at::ObserverContext> on_collective_start(const at::RecordFunction& fn) {
  if (!is_c10d_work(fn.name())) return nullptr;
  OpGuard guard;
  if (!guard.ok()) return nullptr;
  Session* s = g_sessions[K].load(std::memory_order_acquire);
  ThreadBuffer* b = s == nullptr ? nullptr : s->thread_buffer();
  if (b == nullptr) return nullptr;
  const size_t dims_before = b->dims.size();
  try {
    CollectiveRecord c;
    uint16_t unused_flags;
    b->names.lookup(fn.name(), &c.name_id, &unused_flags);
    c.op = b->open_op;
    c.scope = b->open_scope;
    if (b->backward_depth > 0) c.flags |= kBackward;
    if (b->step_depth > 0) c.flags |= kStep;
    c.dims_begin = static_cast<uint32_t>(b->dims.size());
    for (const c10::IValue& v : fn.inputs()) {
      if (!v.isTensor() || !v.toTensor().defined()) continue;
      const at::Tensor& t = v.toTensor();
      if (c.tensors++ == 0) {
        c.dtype = to_dtype(t.scalar_type());
        c.rank = static_cast<uint8_t>(std::min<size_t>(t.dim(), 255));
        b->dims.insert(b->dims.end(), t.sizes().begin(), t.sizes().begin() + c.rank);
      }
      c.numel += static_cast<uint64_t>(t.numel());
      c.bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
    }
    auto ctx = std::make_unique<CollectiveContext>();
    ctx->session = s->id;
    ctx->thread = b->ordinal;
    ctx->index = static_cast<uint32_t>(b->collectives.size());
    c.start_tick = s->now();
    b->collectives.push_back(c);
    return ctx;
  } catch (...) {
    b->dims.resize(dims_before);
    ++b->capture_errors;
    return nullptr;
  }
}

template <int K>
void on_collective_end(const at::RecordFunction& /*fn*/, at::ObserverContext* c) {
  auto* ctx = static_cast<CollectiveContext*>(c);
  if (ctx == nullptr) return;
  OpGuard guard;
  if (!guard.ok()) return;
  Session* s = g_sessions[K].load(std::memory_order_acquire);
  if (s == nullptr || s->id != ctx->session) return;  // the profile stopped meanwhile
  ThreadBuffer* b = s->thread_buffer();               // the completing thread's own records
  if (b == nullptr) return;
  try {
    b->collective_ends.push_back(CollectiveEnd{ctx->thread, ctx->index, s->now()});
  } catch (...) {
    ++b->capture_errors;
  }
}

// ---------------------------------------------------------------------------------------------
// Registration: two callbacks per session slot

// Autograd nodes and c10d work share one callback. LibTorch copies every callback into a list
// per scope it observes whenever a thread takes another's state (each task of the autograd
// engine and of the intra-op pool): observing c10d with a callback of its own cost a training
// step 0.9% more instructions (bench/instructions.sh), sharing 0.7% (the extra scope's list).
// Ops keep a callback of their own, untouched by this dispatch.
template <int K>
std::unique_ptr<at::ObserverContext> on_node_start(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::USER_SCOPE) return on_collective_start<K>(fn);
  return on_op_start<K>(fn);
}

template <int K>
void on_node_end(const at::RecordFunction& fn, at::ObserverContext* c) {
  if (fn.scope() == at::RecordScope::USER_SCOPE) return on_collective_end<K>(fn, c);
  on_op_end<K>(fn, c);
}

std::mutex g_observe_mu;
struct SlotHandles {
  at::CallbackHandle ops = 0, nodes = 0;
};
SlotHandles g_handles[kMaxSessions];

// Registers slot K's callbacks, writing each handle into `h` as soon as it exists, so that a
// throw from the second registration leaves the first in `h` for the caller to remove.
template <int K>
void add_callbacks(bool all_threads, SlotHandles& h) {
  // Ops: inputs boxed for shapes and ownership.
  auto ops = at::RecordFunctionCallback(on_op_start<K>, on_op_end<K>)
                 .needsInputs(true)
                 .scopes({at::RecordScope::FUNCTION});
  // Autograd nodes never read their inputs, so LibTorch does not box them; c10d work (user
  // scopes, filtered by name) passes its tensors to RecordFunction whether asked or not.
  auto nodes = at::RecordFunctionCallback(on_node_start<K>, on_node_end<K>)
                   .needsInputs(false)
                   .scopes({at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
  h.ops = all_threads ? at::addGlobalCallback(ops) : at::addThreadLocalCallback(ops);
#ifdef FLOPSPROF_CAPTURE_FAULTS
  if (g_fail_registrations.load() > 0 && g_fail_registrations.fetch_sub(1) > 0) {
    throw std::bad_alloc();  // as LibTorch's callback list failing to grow would
  }
#endif
  h.nodes = all_threads ? at::addGlobalCallback(nodes) : at::addThreadLocalCallback(nodes);
}

void add_callbacks(int slot, bool all_threads, SlotHandles& h) {
  switch (slot) {
    case 0:
      return add_callbacks<0>(all_threads, h);
    case 1:
      return add_callbacks<1>(all_threads, h);
    case 2:
      return add_callbacks<2>(all_threads, h);
    default:
      return add_callbacks<3>(all_threads, h);
  }
}
static_assert(kMaxSessions == 4, "add_callbacks instantiates one set of callbacks per slot");

void remove_callbacks(SlotHandles& h) noexcept {
  try {
    if (h.ops != 0) at::removeCallback(h.ops);
    if (h.nodes != 0) at::removeCallback(h.nodes);
  } catch (...) {
  }
  h = SlotHandles{};
}

}  // namespace

bool only_collective_observers(const at::StepCallbacks& callbacks) noexcept {
  for (const auto& c : callbacks.callbacks_) {
    if (c.start_ != on_node_start<0> && c.start_ != on_node_start<1> &&
        c.start_ != on_node_start<2> && c.start_ != on_node_start<3>) {
      return false;
    }
  }
  return true;
}

void start_observing(Session* session, bool all_threads) {
  std::lock_guard<std::mutex> lock(g_observe_mu);
  int slot = -1;
  for (int k = 0; k < kMaxSessions && slot < 0; ++k) {
    if (g_sessions[k].load(std::memory_order_acquire) == nullptr && g_handles[k].ops == 0) slot = k;
  }
  if (slot < 0) {
    throw Error(fmt::format(
        "{} flopsprof profiles are already running in this process (the most at once); stop one "
        "with stop_profile() or end_profile() before starting another",
        kMaxSessions));
  }
  session->slot = slot;
  g_sessions[slot].store(session, std::memory_order_seq_cst);
  try {
    add_callbacks(slot, all_threads, g_handles[slot]);
  } catch (...) {
    remove_callbacks(g_handles[slot]);
    g_sessions[slot].store(nullptr, std::memory_order_seq_cst);
    session->slot = -1;
    throw;
  }
}

void stop_observing(Session* session) noexcept {
  if (session == nullptr) return;
  std::lock_guard<std::mutex> lock(g_observe_mu);
  const int slot = session->slot;
  if (slot < 0 || g_sessions[slot].load() != session) return;
  remove_callbacks(g_handles[slot]);
  g_sessions[slot].store(nullptr, std::memory_order_seq_cst);
  // Quiescence: a thread inside a callback now may have loaded `session` before the store above.
  // Wait for each such thread to leave (its epoch moves on); later callbacks see the empty slot.
  // Walks the states under their lock and allocates nothing, so it cannot fail. Holding the lock
  // while waiting is safe: a thread inside a callback already has its state and never takes it
  // (a new thread takes it before it enters; an exiting one is not inside a callback).
  std::lock_guard<std::mutex> states_lock(g_states_mu);
  for (ThreadState& st : all_states()) {
    if (!st.in_use || &st == tl.state) continue;
    const uint64_t e = st.epoch.load(std::memory_order_seq_cst);
    if ((e & 1) == 0) continue;
    while (st.epoch.load(std::memory_order_acquire) == e) std::this_thread::yield();
  }
  session->slot = -1;
}

}  // namespace flopsprof::detail
