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
#include "capture/cost_sample.h"
#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture/interceptor.h"
#include "capture/module_index.h"
#include "capture/op_record.h"
#include "capture/thread_locals.h"
#include "flopsprof/error.h"
#include "flopsprof/scope.h"
#include "formulas/registry.h"

namespace flopsprof::detail {

// ---------------------------------------------------------------------------------------------
// The thread-local block and the session-lifetime protocol (capture/thread_locals.h)

FLOPSPROF_CONSTINIT thread_local ThreadLocals tl FLOPSPROF_TLS_MODEL{};
static_assert(std::is_trivially_default_constructible_v<ThreadLocals> &&
                  std::is_trivially_destructible_v<ThreadLocals>,
              "the hot path's thread-local block must need no guard");

void wait_while_blocked(ThreadState* st, uint64_t& e) noexcept {
  st->epoch.store(e + 2, std::memory_order_release);
  e += 2;
  while (st->blocked.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

namespace {

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

}  // namespace

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
  OpOpen open{};
  uint64_t skipped = 0;  // the thread's skipped count when the op began
  bool counted = false;  // raised this thread's counted depth of `slot`
  bool node = false;     // a backward node: raised the buffer's backward depth
  int8_t slot = 0;

  ~OpContext() override {
    if (counted) --tl.counted[slot];
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

}  // namespace

#ifdef FLOPSPROF_CAPTURE_FAULTS
std::atomic<int> g_fail_captures{0};
std::atomic<int> g_fail_registrations{0};
#endif

void capture_args(ThreadEvents* b, RawEvent& e, c10::ArrayRef<const c10::IValue> inputs,
                  ArgExtras extras) {
  write_args(b, e, inputs, extras);
}

namespace {

// Whether the wrapper record at `wrapper` is top-level.
inline bool w_parent_top(const ThreadBuffer* b, int32_t wrapper) {
  return b->events[static_cast<size_t>(wrapper)].parent < 0;
}

// The id of "autograd::engine::evaluate_function: <node name>" (the engine's wrapper's name on
// the RecordFunction path), interned once per name and thread. May throw.
uint32_t engine_name(ThreadBuffer* b, uint32_t name_id) {
  if (name_id < b->engine_names.size() && b->engine_names[name_id] != 0) {
    return b->engine_names[name_id];
  }
  NameTable& names = NameTable::instance();
  const std::string name = "autograd::engine::evaluate_function: " + names.name(name_id);
  const uint32_t id = names.intern(name.data(), name.size());
  if (name_id >= b->engine_names.size()) b->engine_names.resize(name_id + 1, 0);
  b->engine_names[name_id] = id;
  return id;
}

// The record of an autograd node (its name, sequence number and forward thread; no inputs).
// Under the dispatch capture, a node that starts an engine task gets a record standing for the
// engine's evaluate_function wrapper first (ThreadBuffer::engine_wrappers), which RecordFunction's
// op callback would have seen.
bool open_node_record(Session* s, ThreadBuffer* b, const at::RecordFunction& fn, uint32_t name_id,
                      uint16_t name_flags, OpOpen& o) noexcept {
  const size_t events_before = b->events.size();
  try {
    int32_t parent = b->open_op;
    // A node that starts an engine task (one per task; a nested backward's tasks too).
    const void* task = s->dispatch ? current_engine_task() : nullptr;
    // Its graph task's previous task on this thread has ended, with the tasks nested in it: its
    // wrapper and theirs are dropped.
    int keep = b->engine_depth;
    if (task != nullptr) {
      for (int j = b->engine_depth - 1; j >= 0; --j) {
        if (b->engine_wrappers[j].task == task) {
          keep = j;
          break;
        }
      }
    }
    const bool wrap = task != nullptr && keep < ThreadBuffer::kMaxEngineWrappers;
    if (wrap) {
      const uint32_t wrapper_name = engine_name(b, name_id);
      RawEvent& w = b->events.emplace_back();
      w.name_id = wrapper_name;
      w.scope = b->open_scope;
      w.kind = EventKind::kBackwardNode;
      w.flags |= kBackward | kEngine;
      if (b->step_depth > 0) w.flags |= kStep;
      parent = static_cast<int32_t>(events_before);
    }
    const uint32_t index = static_cast<uint32_t>(b->events.size());
    b->events.emplace_back();
    RawEvent& e = b->events.back();
    e.name_id = name_id;
    e.parent = parent;
    e.scope = b->open_scope;
    if (b->step_depth > 0) e.flags |= kStep;
    e.seq_nr = fn.seqNr();
    e.kind = EventKind::kBackwardNode;
    e.flags |= kBackward;
    if (name_flags & kNameIsEngine) e.flags |= kEngine;
    e.fwd_thread = fn.forwardThreadId();
    // The top-level record is timed with device events: the node, or the wrapper standing for
    // the engine's (its end recorded again at each of its children's end).
    const bool mark = s->events != nullptr && (e.parent < 0 || (wrap && w_parent_top(b, parent)));
    if (mark && b->marks.size() == b->marks.capacity()) {
      b->marks.reserve(std::max<size_t>(256, 2 * b->marks.size()));  // may throw: before commit
    }
    // Commit (nothing below throws).
    ++b->backward_depth;
    b->open_op = static_cast<int32_t>(index);
    o.pushed = 0;
    if (s->gpu != nullptr) {
      s->gpu->push(make_external_id(b->ordinal, index));
      o.pushed |= 4;
    }
    o.mark = -1;
    if (mark) {
      const uint32_t timed = wrap ? static_cast<uint32_t>(parent) : index;
      b->marks.push_back(DeviceMark{timed, nullptr, nullptr});
      if (s->events->record(&b->marks.back().start)) {
        o.mark = static_cast<int32_t>(b->marks.size() - 1);
      }
    }
    if (wrap) {
      // The wrapper's mark: its end is recorded when the node and each later child ends.
      b->engine_depth = keep;
      b->engine_wrappers[b->engine_depth++] = ThreadBuffer::EngineWrapper{parent, o.mark, task};
      o.mark = -1;
    }
    o.buffer = b;
    o.session = s->id;
    o.index = index;
    e.start_tick = s->now();
    if (wrap) b->events[static_cast<size_t>(parent)].start_tick = e.start_tick;
    return true;
  } catch (...) {
    b->events.resize(events_before);
    ++b->capture_errors;
    return false;
  }
}

// The record of an op that is not nested in a counted one, or of an autograd node (on_op_start's
// slow path; out of line so that the nested ops' early return pays for none of its frame).
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
  OpContext* ctx;
  try {
    ctx = new OpContext;
  } catch (...) {
    ++b->capture_errors;
    return nullptr;
  }
  ctx->slot = K;
  uint32_t name_id;
  uint16_t name_flags;
  try {
    b->names.lookup(fn.name(), &name_id, &name_flags);  // may intern: lock, allocate
  } catch (...) {
    delete ctx;
    ++b->capture_errors;
    return nullptr;
  }
  bool ok;
  // The engine's own records ("autograd::engine::evaluate_function: ...") are op-scoped but
  // stand for a node.
  if (scope == at::RecordScope::BACKWARD_FUNCTION || (name_flags & kNameIsEngine)) {
    ctx->node = true;
    ok = open_node_record(s, b, fn, name_id, name_flags, ctx->open);
  } else {
    c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    // A boxed call (the TorchScript interpreter's) passes its whole stack: the op's arguments
    // are the last num_inputs() values.
    if (inputs.size() > 1) {
      const size_t n = fn.num_inputs();
      if (n > 0 && n < inputs.size()) inputs = inputs.slice(inputs.size() - n);
    }
    ok = open_op_record(s, b, name_id, name_flags, fn.seqNr(), inputs, ctx->open);
    if (ok && (ctx->open.pushed & 1)) {
      ctx->counted = true;
      ctx->skipped = tl.skipped[K];
      ++tl.counted[K];
    }
  }
  if (!ok) {
    delete ctx;
    return nullptr;
  }
  return ctx;
}

template <int K>
std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  const at::RecordScope scope = fn.scope();
  if (tl.counted[K] > 0 && scope != at::RecordScope::BACKWARD_FUNCTION) {
    // Inside a counted op: never counted, attributed with its parent. Not recorded at all, and
    // decided from this thread's own state before the lifetime protocol, which keeps the common
    // case of composite ops (linear > matmul > mm > ...) cheap; counted for the latency
    // correction (RecordFunction's record of it is inside the counted op's span).
    ++tl.skipped[K];
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
  if (s == nullptr || s->id != ctx->open.session) return;  // the profile stopped meanwhile
  const int64_t end = s->now();
  if (ctx->counted)
    ctx->open.buffer->events[ctx->open.index].nested_records = tl.skipped[K] - ctx->skipped;
  close_op_record(s, ctx->open, end);
  if (ctx->node) --ctx->open.buffer->backward_depth;
}

}  // namespace

// Module call records (flopsprof/scope.h): every call of an observed built-in module takes them,
// so they use the op callbacks' inlined guard and buffer lookup.
const char* open_scope_records(const torch::nn::Module* module, ScopeHandles& handles,
                               ScopeKind kind) noexcept {
  const bool timed = sample_cost();
  const int64_t t_in = timed ? cost_ticks() : 0;
  join_this_thread();  // a thread the dispatch capture covers but has not reached yet
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
  ThreadBuffer* first = nullptr;  // the first record opened, when its profile times with the TSC
  int64_t stamp = 0;
  for (int j = 0; j < n; ++j) {
    Session* s = sessions[j];
    const bool known = index[j] >= 0;
    if (!known && kind == ScopeKind::kWindow) continue;
    const TlsBuffer& tls = tl.buffers[slots[j]];
    ThreadBuffer* b = tls.session == s->id ? tls.buffer : s->thread_buffer();
    if (b == nullptr) continue;
    ScopeHandle& h = handles[slots[j]];
    const int32_t m = known ? index[j] : known_anywhere ? kForeignModule : kUnknownModule;
    const int64_t now = s->now();
    h.index = b->open_scope_record(m, now, kind);
    if (h.index < 0) continue;
    h.buffer = b;
    h.session = s->id;
    if (name == nullptr && known && kind != ScopeKind::kBuiltin) {
      name = s->scope_names[index[j]].c_str();
    }
    if (timed && first == nullptr && s->tsc && kind != ScopeKind::kWindow &&
        kind != ScopeKind::kStart) {
      first = b;
      stamp = now;
    }
  }
  if (FLOPSPROF_UNLIKELY(timed) && first != nullptr)
    add_cost_sample(first, kCallEnter, t_in, stamp, cost_ticks());
  return name;
}

namespace {
// Ends the records `handles` opened, in the profiles still running: `end` on each one's buffer.
// Whether scope record `i` of `b` is a module call's record that the correction charges with a
// call's cost (not a call window, not a start-only record).
bool is_call_record(const ThreadBuffer& b, int32_t i) noexcept {
  const ScopeRecord& r = b.scopes[static_cast<size_t>(i)];
  return !r.window && !r.start_only;
}

// With `timed`, the first record's end, when its profile times with the TSC, is timed in place
// (kCallExit) from `t_in`, read on entering flopsprof's code.
template <void (ThreadBuffer::*End)(int32_t, int64_t) noexcept>
void end_records(ScopeHandles& handles, bool timed, int64_t t_in) noexcept {
  OpGuard guard;
  if (!guard.ok()) return;
  ThreadBuffer* first = nullptr;
  int64_t stamp = 0;
  for (int k = 0; k < kMaxSessions; ++k) {
    ScopeHandle& h = handles[k];
    if (h.session == 0) continue;
    Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s == nullptr || s->id != h.session) continue;  // that profile stopped meanwhile
    auto* b = static_cast<ThreadBuffer*>(h.buffer);
    const int64_t now = s->now();
    (b->*End)(h.index, now);
    if (timed && first == nullptr && s->tsc && h.index >= 0 && is_call_record(*b, h.index)) {
      first = b;
      stamp = now;
    }
  }
  if (FLOPSPROF_UNLIKELY(timed) && first != nullptr)
    add_cost_sample(first, kCallExit, t_in, stamp, cost_ticks());
}
}  // namespace

void close_scope_records(ScopeHandles& handles) noexcept {
  const bool timed = sample_cost();
  end_records<&ThreadBuffer::close_scope_record>(handles, timed, timed ? cost_ticks() : 0);
}

void close_step_records(ScopeHandles& handles) noexcept {
  end_records<&ThreadBuffer::end_step>(handles, false, 0);
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
    // Dispatch capture: issued in an engine task before its node's record opens (a gradient
    // hook the engine runs first; RecordFunction shows it inside the engine's wrapper of that
    // node): backward, placed by the node after it (collective_calls).
    if (s->dispatch && c.op < 0 && current_engine_task() != nullptr) c.flags |= kBackward;
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
void add_callbacks(bool all_threads, bool op_callback, SlotHandles& h) {
  // Ops: inputs boxed for shapes and ownership.
  auto ops = at::RecordFunctionCallback(on_op_start<K>, on_op_end<K>)
                 .needsInputs(true)
                 .scopes({at::RecordScope::FUNCTION});
  // Autograd nodes never read their inputs, so LibTorch does not box them; c10d work (user
  // scopes, filtered by name) passes its tensors to RecordFunction whether asked or not.
  auto nodes = at::RecordFunctionCallback(on_node_start<K>, on_node_end<K>)
                   .needsInputs(false)
                   .scopes({at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
  if (op_callback)
    h.ops = all_threads ? at::addGlobalCallback(ops) : at::addThreadLocalCallback(ops);
#ifdef FLOPSPROF_CAPTURE_FAULTS
  if (g_fail_registrations.load() > 0 && g_fail_registrations.fetch_sub(1) > 0) {
    throw std::bad_alloc();  // as LibTorch's callback list failing to grow would
  }
#endif
  h.nodes = all_threads ? at::addGlobalCallback(nodes) : at::addThreadLocalCallback(nodes);
}

void add_callbacks(int slot, bool all_threads, bool op_callback, SlotHandles& h) {
  switch (slot) {
    case 0:
      return add_callbacks<0>(all_threads, op_callback, h);
    case 1:
      return add_callbacks<1>(all_threads, op_callback, h);
    case 2:
      return add_callbacks<2>(all_threads, op_callback, h);
    default:
      return add_callbacks<3>(all_threads, op_callback, h);
  }
}
static_assert(kMaxSessions == 4, "add_callbacks instantiates one set of callbacks per slot");

// Whether a running profile captures every thread through the interceptor (under g_observe_mu).
bool any_dispatch_of_all_threads() noexcept {
  for (int k = 0; k < kMaxSessions; ++k) {
    const Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s != nullptr && s->dispatch && s->all_threads) return true;
  }
  return false;
}

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

std::string start_observing(Session* session, bool all_threads, CaptureRequest request) {
  std::lock_guard<std::mutex> lock(g_observe_mu);
  int slot = -1;
  bool running_dispatch = false, running_record_function = false;
  for (int k = 0; k < kMaxSessions; ++k) {
    const Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s != nullptr) (s->dispatch ? running_dispatch : running_record_function) = true;
    if (slot < 0 && s == nullptr && g_handles[k].ops == 0 && g_handles[k].nodes == 0) slot = k;
  }
  if (slot < 0) {
    throw Error(fmt::format(
        "{} flopsprof profiles are already running in this process (the most at once); stop one "
        "with stop_profile() or end_profile() before starting another",
        kMaxSessions));
  }
  // The path. Overlapping profiles share one: on LibTorch 1.13 a thread that carries the mode key
  // gives RecordFunction's observers no sequence numbers (the highest key is not autograd's), and
  // an op callback registered for one profile costs every op anyway.
  bool dispatch = false;
  std::string note;
  constexpr const char* kShared =
      "profiles that run at the same time in one process share one capture path";
  switch (request) {
    case CaptureRequest::kRecordFunction:
      if (running_dispatch) {
        throw Error(fmt::format(
            "capture = record_function: another flopsprof profile in this process is capturing "
            "through the dispatcher, and {}; stop it first, or start this one with capture = auto",
            kShared));
      }
      break;
    case CaptureRequest::kDispatch: {
      if (running_record_function) {
        throw Error(fmt::format(
            "capture = dispatch: another flopsprof profile in this process is capturing through "
            "RecordFunction, and {}; stop it first, or start this one with capture = auto",
            kShared));
      }
      const std::string why = install_interceptor();
      if (!why.empty()) {
        throw Error(
            fmt::format("capture = dispatch: {}; use capture = auto or record_function", why));
      }
      dispatch = true;
      break;
    }
    case CaptureRequest::kAuto:
      if (running_record_function) {
        note = fmt::format(
            "another profile of this process captures through RecordFunction, and {}", kShared);
      } else if (running_dispatch) {
        dispatch = true;
      } else {
        note = install_interceptor();
        dispatch = note.empty();
      }
      break;
  }
  session->slot = slot;
  session->dispatch = dispatch;
  session->all_threads = all_threads;
  g_sessions[slot].store(session, std::memory_order_seq_cst);
  try {
    add_callbacks(slot, all_threads, /*op_callback=*/!dispatch, g_handles[slot]);
    if (dispatch && all_threads) start_sampled_check();
  } catch (...) {
    remove_callbacks(g_handles[slot]);
    g_sessions[slot].store(nullptr, std::memory_order_seq_cst);
    session->slot = -1;
    if (!any_dispatch_of_all_threads()) stop_sampled_check();
    throw;
  }
  if (dispatch) {
    g_dispatch_slots.fetch_or(1u << slot, std::memory_order_seq_cst);
    own_this_thread(*session, slot);
  }
  return note;
}

void stop_observing(Session* session) noexcept {
  if (session == nullptr) return;
  std::lock_guard<std::mutex> lock(g_observe_mu);
  const int slot = session->slot;
  if (slot < 0 || g_sessions[slot].load() != session) return;
  if (session->dispatch) g_dispatch_slots.fetch_and(~(1u << slot), std::memory_order_seq_cst);
  remove_callbacks(g_handles[slot]);
  g_sessions[slot].store(nullptr, std::memory_order_seq_cst);
  if (!any_dispatch_of_all_threads()) stop_sampled_check();
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
  if (session->dispatch) release_this_thread(*session, slot);
  session->slot = -1;
}

}  // namespace flopsprof::detail
