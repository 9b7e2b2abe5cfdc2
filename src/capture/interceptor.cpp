// The dispatch capture (capture/interceptor.h): the interceptor's kernels, their registration,
// and which threads carry the mode key.
#include "capture/interceptor.h"

#include <chrono>
#include <mutex>
#include <unordered_set>

#include <ATen/Functions.h>
#include <ATen/SequenceNumber.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>
#include <torch/version.h>

#include <fmt/format.h>

#include "capture/calibration.h"
#include "capture/cost_sample.h"
#include "capture/op_record.h"
#include "capture/thread_locals.h"

namespace flopsprof::detail {

std::atomic<uint32_t> g_dispatch_slots{0};

namespace {

// Every key after the mode key: an op passed on with it goes to the kernel it would have run
// without the interceptor (autograd, then the backend).
const c10::DispatchKeySet kAfterMode(c10::DispatchKeySet::FULL_AFTER, kModeKey);

// The autograd sequence number RecordFunction would give this op (the next node's, when an
// autograd kernel will run it in grad mode), so both paths' records agree:
// LibTorch 1.13 asks whether the highest key is an autograd one (Dispatcher::runRecordFunction),
// 2.x whether any is.
inline int64_t sequence_nr(c10::DispatchKeySet ks) {
  if (!at::GradMode::is_enabled()) return -1;
  const c10::DispatchKeySet rest = ks & kAfterMode;
#if TORCH_VERSION_MAJOR >= 2
  if ((rest & c10::autograd_dispatch_keyset).empty()) return -1;
#else
  if (!c10::isIncludedInAlias(rest.highestPriorityTypeId(), c10::DispatchKey::Autograd)) return -1;
#endif
  return static_cast<int64_t>(at::sequence_number::peek());
}

// Whether slot `k`'s running profile `s` captures the calling thread's ops.
inline bool covers(const Session* s, int k) {
  if (s->all_threads) return true;
  const ThreadLocals& t = tl;
  return t.mode_kind == kModeOwner ? t.mode_owner[k] == s->id : t.mode_kind == kModePropagated;
}

// The records one op opened, one per running profile that covers this thread.
struct Opened {
  int n = 0;
  bool covered = false;  // some running dispatch profile covers this thread
  bool counted = false;  // the op has a formula: its nested ops are not recorded
  bool boxed = false;    // through the boxed fallback
  bool timed = false;    // timed in place (cost_sample.h), from t_in
  int64_t t_in = 0;
  int8_t slot[kMaxSessions];
  OpOpen open[kMaxSessions];
};

template <class Arg>
FLOPSPROF_NOINLINE void open_records(const char* name, c10::DispatchKeySet ks,
                                     c10::ArrayRef<Arg> inputs, Opened& o) noexcept {
  o.boxed = std::is_same_v<Arg, c10::IValue>;
  OpGuard guard;
  if (!guard.ok()) return;
  const uint32_t slots = g_dispatch_slots.load(std::memory_order_acquire);
  int64_t seq = -2;  // computed once, for the first profile that records the op
  bool tsc = false;  // the first profile that recorded it times with the TSC
  for (int k = 0; k < kMaxSessions; ++k) {
    if (((slots >> k) & 1) == 0) continue;
    Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s == nullptr || !s->dispatch || !covers(s, k)) continue;
    o.covered = true;
    const TlsBuffer& tls = tl.buffers[k];
    ThreadBuffer* b = tls.session == s->id ? tls.buffer : s->thread_buffer();
    if (b == nullptr) continue;
    uint32_t name_id;
    uint16_t name_flags;
    try {
      b->names.lookup(name, &name_id, &name_flags);  // may intern: lock, allocate
    } catch (...) {
      ++b->capture_errors;
      continue;
    }
    if (seq == -2) seq = sequence_nr(ks);
    OpOpen& open = o.open[o.n];
    if (open_op_record(s, b, name_id, name_flags, seq, inputs, open)) {
      o.counted |= (open.pushed & 1) != 0;
      if (o.n == 0) tsc = s->tsc;
      o.slot[o.n++] = static_cast<int8_t>(k);
    }
  }
  if (FLOPSPROF_UNLIKELY(o.timed) && tsc) {
    const OpOpen& first = o.open[0];
    add_cost_sample(first.buffer, o.boxed ? kBoxedOpen : kOpOpen, o.t_in,
                    first.buffer->events[first.index].start_tick, cost_ticks());
  } else {
    o.timed = false;
  }
}

FLOPSPROF_NOINLINE void close_records(const Opened& o, int64_t t_in) noexcept {
  OpGuard guard;
  if (!guard.ok()) return;
  ThreadBuffer* first = nullptr;  // the first record closed, when its profile times with the TSC
  int64_t stamp = 0;
  for (int j = 0; j < o.n; ++j) {
    Session* s = g_sessions[o.slot[j]].load(std::memory_order_acquire);
    if (s == nullptr || s->id != o.open[j].session) continue;  // that profile stopped meanwhile
    const int64_t now = s->now();
    close_op_record(s, o.open[j], now);
    if (j == 0 && s->tsc) {
      first = o.open[0].buffer;
      stamp = now;
    }
  }
  if (FLOPSPROF_UNLIKELY(o.timed) && first != nullptr)
    add_cost_sample(first, o.boxed ? kBoxedClose : kOpClose, t_in, stamp, cost_ticks());
}

// Drops the mode key on this thread: no running dispatch capture covers it.
FLOPSPROF_NOINLINE void leave_this_thread() noexcept {
  c10::impl::tls_set_dispatch_key_included(kModeKey, false);
  tl.mode_kind = kModePropagated;
}

// Records op `name` in every running profile that covers this thread and runs it (`call`): with
// the mode key excluded inside an op that has a formula (its nested ops are its own), else with
// the key still included (they are recorded as its children, as RecordFunction's path does).
template <class R, class Arg, class Call>
inline R intercept(const char* name, c10::DispatchKeySet ks, c10::ArrayRef<Arg> inputs,
                   Call&& call) {
  Opened o;
  if (g_dispatch_slots.load(std::memory_order_relaxed) != 0) {
    if (FLOPSPROF_UNLIKELY(sample_cost())) {
      o.timed = true;
      o.t_in = cost_ticks();
    }
    open_records(name, ks, inputs, o);
  }
  if (FLOPSPROF_UNLIKELY(!o.covered)) leave_this_thread();
  struct Closer {
    const Opened& o;
    ~Closer() {
      if (o.n > 0) close_records(o, FLOPSPROF_UNLIKELY(o.timed) ? cost_ticks() : 0);
    }
  } closer{o};
  if (o.counted) {
    c10::impl::ExcludeDispatchKeyGuard no_nested(kModeKey);
    return call();
  }
  return call();
}

// The boxed fallback: every op without an unboxed kernel. A boxed caller (the TorchScript
// interpreter) passes its whole stack: the op's arguments are its last ones.
void boxed_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t n = std::min(schema.arguments().size(), stack->size());
  c10::ArrayRef<const c10::IValue> inputs(stack->data() + stack->size() - n, n);
  intercept<void>(schema.name().c_str(), ks, inputs,
                  [&] { op.redispatchBoxed(ks & kAfterMode, stack); });
}

// An unboxed kernel for op `Op` (at::_ops::<op>): the typed arguments read in place, no boxing.
template <class Op, class Sig = typename Op::schema>
struct Unboxed;
template <class Op, class R, class... A>
struct Unboxed<Op, R(A...)> {
  static_assert((has_arg_ref<A>::value && ...),
                "an argument type arg_ref cannot read: leave this op to the boxed fallback");
  // The dispatcher's schema name (RecordFunction's name() of the op), set at registration.
  static inline const char* name = nullptr;
  static R call(c10::DispatchKeySet ks, A... a) {
    const ArgRef refs[sizeof...(A) + 1] = {arg_ref(a)..., ArgRef{}};
    return intercept<R>(name, ks, c10::ArrayRef<ArgRef>(refs, sizeof...(A)),
                        [&]() -> R { return Op::redispatch(ks & kAfterMode, a...); });
  }
};

template <class Op>
void register_unboxed(torch::Library& lib) {
  const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
  Unboxed<Op>::name = op.schema().name().c_str();
  std::string name = Op::name;
  if (*Op::overload_name != '\0') name = name + "." + Op::overload_name;
  lib.impl(name.c_str(), TORCH_FN(Unboxed<Op>::call));
}

// The ops that get an unboxed kernel: those a forward or a training step calls most at top level
// (bench/instructions.cpp's workloads, transformer blocks, CNNs, the SGD and Adam steps).
// Every other op takes the boxed fallback. An op whose signature has a type arg_ref does not
// read fails to compile here (has_arg_ref).
#define FLOPSPROF_UNBOXED_OPS(X)                                                                 \
  X(linear)                                                                                      \
  X(addmm)                                                                                       \
  X(mm)                                                                                          \
  X(bmm)                                                                                         \
  X(matmul) X(baddbmm) X(conv1d) X(conv2d) X(relu) X(relu_) X(gelu) X(silu) X(sigmoid) X(tanh)   \
      X(add_Tensor) X(add__Tensor) X(sub_Tensor) X(mul_Tensor) X(mul__Tensor) X(mul_Scalar)      \
          X(div_Tensor) X(div_Scalar) X(neg) X(exp) X(rsqrt) X(sqrt) X(pow_Tensor_Scalar)        \
              X(layer_norm) X(softmax_int) X(log_softmax_int) X(dropout) X(embedding)            \
                  X(batch_norm) X(max_pool2d) X(adaptive_avg_pool2d) X(mean_dim) X(sum)          \
                      X(sum_dim_IntList) X(view) X(reshape) X(transpose_int) X(permute)          \
                          X(contiguous) X(t) X(flatten_using_ints) X(select_int) X(slice_Tensor) \
                              X(unsqueeze) X(squeeze_dim) X(expand) X(clone) X(zero_) X(copy_)   \
                                  X(masked_fill_Scalar) X(where_self) X(split_Tensor) X(chunk)   \
                                      X(index_select) X(to_dtype) X(addcmul_) X(addcdiv_)        \
                                          X(lerp__Scalar) X(mul__Scalar) X(div__Tensor) X(sqrt_) \
                                              X(add__Scalar)

void register_kernels() {
  // Leaked on purpose: see install_interceptor.
  auto* fallback = new torch::Library(torch::Library::IMPL, "_", kModeKey, __FILE__, __LINE__);
  fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&boxed_kernel>());
  auto* ops = new torch::Library(torch::Library::IMPL, "aten", kModeKey, __FILE__, __LINE__);
#define FLOPSPROF_REGISTER(op) register_unboxed<at::_ops::op>(*ops);
  FLOPSPROF_UNBOXED_OPS(FLOPSPROF_REGISTER)
#undef FLOPSPROF_REGISTER
#if TORCH_VERSION_MAJOR >= 2
  register_unboxed<at::_ops::scaled_dot_product_attention>(*ops);
#endif
}

std::mutex g_install_mu;
bool g_installed = false;
std::string g_install_error;

}  // namespace

std::string install_interceptor() noexcept {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_installed) return {};
  if (!g_install_error.empty()) return g_install_error;  // the same answer for the process
  try {
    if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(kModeKey)) {
      g_install_error = fmt::format(
          "another library registered a fallback kernel on LibTorch's dispatch key {}, which "
          "flopsprof's dispatch capture uses",
          c10::toString(kModeKey));
      return g_install_error;
    }
    const auto t0 = std::chrono::steady_clock::now();
    register_kernels();
    g_installed = true;
    note_setup_work(
        "its dispatch kernels installed",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return {};
  } catch (const std::exception& e) {
    // A registration the dispatcher refused (another fallback registered meanwhile); what was
    // registered before it stays, unreached: no thread includes the key.
    g_install_error =
        fmt::format("LibTorch's dispatcher refused flopsprof's dispatch kernels: {}", e.what());
    return g_install_error;
  }
}

void own_this_thread(const Session& session, int slot) noexcept {
  ThreadLocals& t = tl;
  if (t.mode_kind != kModeOwner) {
    for (uint64_t& id : t.mode_owner) id = 0;
  }
  t.mode_kind = kModeOwner;
  t.mode_owner[slot] = session.id;
  c10::impl::tls_set_dispatch_key_included(kModeKey, true);
}

void release_this_thread(const Session& session, int slot) noexcept {
  ThreadLocals& t = tl;
  if (t.mode_kind == kModeOwner && t.mode_owner[slot] == session.id) t.mode_owner[slot] = 0;
  if (g_dispatch_slots.load(std::memory_order_acquire) == 0) {
    c10::impl::tls_set_dispatch_key_included(kModeKey, false);
    t.mode_kind = kModePropagated;
    for (uint64_t& id : t.mode_owner) id = 0;
  }
}

void join_this_thread() noexcept {
  const uint32_t slots = g_dispatch_slots.load(std::memory_order_relaxed);
  if (slots == 0 || c10::impl::tls_is_dispatch_key_included(kModeKey)) return;
  CallbackGuard guard;
  if (!guard.ok()) return;
  ThreadLocals& t = tl;
  bool join = false;
  for (int k = 0; k < kMaxSessions; ++k) {
    if (((slots >> k) & 1) == 0) continue;
    Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s == nullptr || !s->dispatch) continue;
    if (t.mode_kind == kModeOwner && t.mode_owner[k] == s->id) {
      // The profile's own thread lost the key (a thread-state guard that began before the profile
      // restored its state): ops since then were not seen.
      s->coverage_gaps.fetch_add(1, std::memory_order_relaxed);
      join = true;
    } else if (s->all_threads) {
      s->threads_joined.fetch_add(1, std::memory_order_relaxed);
      join = true;
    }
  }
  if (!join) return;
  if (t.mode_kind != kModeOwner) t.mode_kind = kModeJoined;
  c10::impl::tls_set_dispatch_key_included(kModeKey, true);
}

bool mode_key_included() noexcept { return c10::impl::tls_is_dispatch_key_included(kModeKey); }

bool has_unboxed_kernel(const std::string& name) {
  static const std::unordered_set<std::string> names = [] {
    std::unordered_set<std::string> s;
#define FLOPSPROF_NAME(op) s.insert(at::_ops::op::name);
    FLOPSPROF_UNBOXED_OPS(FLOPSPROF_NAME)
#undef FLOPSPROF_NAME
#if TORCH_VERSION_MAJOR >= 2
    s.insert(at::_ops::scaled_dot_product_attention::name);
#endif
    return s;
  }();
  return names.count(name) > 0;
}

namespace {
at::CallbackHandle g_sampled_check = 0;  // guarded by the registration lock (observer.cpp)

std::unique_ptr<at::ObserverContext> sampled_check(const at::RecordFunction& /*fn*/) {
  join_this_thread();
  return nullptr;
}
}  // namespace

void start_sampled_check() {
  if (g_sampled_check != 0) return;
  g_sampled_check = at::addGlobalCallback(at::RecordFunctionCallback(sampled_check)
                                              .needsInputs(false)
                                              .scopes({at::RecordScope::FUNCTION})
                                              .samplingProb(1.0 / kSampledCheckEvery));
}

void stop_sampled_check() noexcept {
  if (g_sampled_check == 0) return;
  try {
    at::removeCallback(g_sampled_check);
  } catch (...) {
  }
  g_sampled_check = 0;
}

}  // namespace flopsprof::detail
