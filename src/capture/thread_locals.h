// The capture stage's per-thread block and the session-lifetime protocol that both op capture
// paths inline (capture/observer.cpp: RecordFunction; capture/interceptor.cpp: the dispatcher).
// Internal to those two translation units and the scope records; nothing else includes it.
#pragma once

#include <atomic>
#include <cstdint>

#include "flopsprof/scope.h"

#if defined(__GNUC__)
// initial-exec: a direct %fs-relative access instead of a __tls_get_addr call (flopsprof is
// linked into the program or into a library loaded with it, not dlopen'ed late).
#define FLOPSPROF_TLS_MODEL __attribute__((tls_model("initial-exec")))
#define FLOPSPROF_NOINLINE __attribute__((noinline))
#define FLOPSPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define FLOPSPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define FLOPSPROF_TLS_MODEL
#define FLOPSPROF_NOINLINE
#define FLOPSPROF_LIKELY(x) (x)
#define FLOPSPROF_UNLIKELY(x) (x)
#endif
// Constant initialization, declared: without it an access from another translation unit calls
// the variable's initialization wrapper first (C++20's constinit; GCC and clang spell it in 17).
#if defined(__clang__)
#define FLOPSPROF_CONSTINIT __attribute__((require_constant_initialization))
#elif defined(__GNUC__)
#define FLOPSPROF_CONSTINIT __constinit
#else
#define FLOPSPROF_CONSTINIT
#endif

namespace flopsprof::detail {

class ThreadBuffer;

struct TlsBuffer {
  uint64_t session;
  ThreadBuffer* buffer;
};

/// Each thread that enters a callback owns a ThreadState whose epoch is odd while it is inside
/// one. States are never freed (a thread's is recycled for the next thread when it exits), so
/// the stopping thread may read any of them at any time.
struct ThreadState {
  std::atomic<uint64_t> epoch{0};
  std::atomic<int> blocked{0};  // > 0: a reader is copying this thread's records
  bool in_use = false;          // guarded by the states' lock (observer.cpp)
};

/// How the dispatch capture came to this thread (ThreadLocals::mode_kind).
enum ModeKind : uint8_t {
  kModePropagated = 0,  ///< never set here: the mode key, if included, came with LibTorch's
                        ///< thread-state propagation (autograd engine, at::launch)
  kModeOwner = 1,       ///< a profile started on this thread (mode_owner holds which)
  kModeJoined = 2,      ///< joined by a profile of every thread (its first module call, or
                        ///< found by the sampled check)
};

/// Every per-thread variable of the hot paths in one trivially constructible and destructible
/// block: one TLS address computation per access and no guard. No member initializers: the block
/// must stay trivially constructible, so that it is zero-initialized with the thread and no
/// access checks a dynamic-initialization guard.
struct ThreadLocals {
  TlsBuffer buffers[kMaxSessions];
  ThreadState* state;  // this thread's lifetime-protocol state, null until its first callback
  int depth;           // CallbackGuard nesting
  // Per session slot: counted ops open on this thread (RecordFunction capture). Ops nested in
  // one are never recorded, so the op callback returns before anything else while it is > 0.
  // Raised when a counted op's record commits, lowered when its OpContext dies (with the
  // RecordFunction, whether or not the end callback ran), so it cannot leak past the op.
  int counted[kMaxSessions];
  // Per session slot: the ops skipped while a counted op was open (RecordFunction made a record
  // of each, which costs the counted op's span), counted on.
  uint64_t skipped[kMaxSessions];
  int suspended;    // > 0: this thread is taking a snapshot; its callbacks record nothing
  void* free_head;  // OpContext free list
  // The dispatch capture (interceptor.cpp): how the mode key came here, and per slot the id of
  // the profile started on this thread (kModeOwner).
  uint8_t mode_kind;
  uint64_t mode_owner[kMaxSessions];
  // Record halves to go until the next one whose capture cost is timed in place (cost_sample.h;
  // <= 1: the next), and the generator of the gaps.
  int32_t cost_countdown;
  uint32_t cost_rng;
};
extern FLOPSPROF_CONSTINIT thread_local ThreadLocals tl FLOPSPROF_TLS_MODEL;

/// This thread's lifetime-protocol state, created on first use; null when it could not be
/// (out of memory).
ThreadState* this_thread_state() noexcept;

/// Enters the callback section: odd epoch, unless a reader holds the thread out (then step back,
/// wait, retry). seq_cst store then seq_cst load, against the reader's store then load.
void wait_while_blocked(ThreadState* st, uint64_t& e) noexcept;
inline void enter_section(ThreadState* st) noexcept {
  uint64_t e = st->epoch.load(std::memory_order_relaxed);
  for (;;) {
    st->epoch.store(e + 1, std::memory_order_seq_cst);
    if (FLOPSPROF_LIKELY(st->blocked.load(std::memory_order_seq_cst) == 0)) return;
    wait_while_blocked(st, e);
  }
}

/// CallbackGuard's protocol (observer.h), inlined into the op paths (the hottest code).
class OpGuard {
 public:
  OpGuard() noexcept {
    ThreadLocals& t = tl;
    st_ = t.state;
    if (FLOPSPROF_UNLIKELY(st_ == nullptr || t.suspended > 0)) {
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

}  // namespace flopsprof::detail
