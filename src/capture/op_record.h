// One op's record, written the same way by both capture paths: from the boxed arguments a
// RecordFunction or the dispatcher's boxed fallback hands over (c10::IValue), or from the typed
// arguments of an unboxed interceptor kernel (ArgRef). Internal to capture/observer.cpp and
// capture/interceptor.cpp: inlined into their hot paths.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <type_traits>

#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include "capture/arg_ref.h"
#include "capture/attention_mask.h"
#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture/module_index.h"
#include "capture/observer.h"
#include "capture/session.h"
#include "capture/thread_buffer.h"

namespace flopsprof::detail {

// ---------------------------------------------------------------------------------------------
// Reading either form

inline const at::Tensor* as_tensor(const c10::IValue& v) {
  return v.isTensor() ? &v.toTensor() : nullptr;
}
inline const at::Tensor* as_tensor(const ArgRef& r) {
  return r.kind == ArgRef::Kind::kTensor ? r.tensor : nullptr;
}

inline int32_t owner_of(const OwnerIndex& owners, const at::Tensor& t) {
  if (!t.defined()) return -1;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->has_storage()) return -1;
  return owners.find(impl->storage().unsafeGetStorageImpl());
}

/// The first owner set among the tensors of a tensor list argument (Tensor[]), or -1 (also when
/// the argument is not one).
inline int32_t list_owner(const Session* s, const c10::IValue& v) {
  if (!v.isTensorList()) return -1;
  for (const c10::IValue& x : v.toListRef()) {
    const int32_t o = owner_of(s->owners, x.toTensor());
    if (o >= 0) return o;
  }
  return -1;
}
inline int32_t list_owner(const Session* s, const ArgRef& r) {
  if (r.kind != ArgRef::Kind::kTensors) return -1;
  for (uint32_t k = 0; k < r.n; ++k) {
    const int32_t o = owner_of(s->owners, r.tensors[k]);
    if (o >= 0) return o;
  }
  return -1;
}
inline bool is_tensor_list(const c10::IValue& v) { return v.isTensorList(); }
inline bool is_tensor_list(const ArgRef& r) { return r.kind == ArgRef::Kind::kTensors; }

/// The first owner set among the inputs (tensors and tensor lists, in order). For a top-level op
/// (`top_level`) also its data identity (`e.data_in`: the first defined tensor no module owns;
/// the caller holds it with ThreadBuffer::hold_data); with `dataflow` (a top-level op in grad
/// mode) also where its tensor inputs came from: the smallest sequence number of their grad_fn
/// nodes, and whether one has no history and no owner (data or targets from outside the model).
/// One pass over the inputs serves all three.
template <class Arg>
int32_t find_owner(const Session* s, c10::ArrayRef<Arg> inputs, bool top_level, bool dataflow,
                   RawEvent& e, int8_t* data_arg) {
  int32_t first_owner = -1;  // inputs[0]'s, looked up once
  const at::Tensor* t0 = inputs.empty() ? nullptr : as_tensor(inputs[0]);
  if (t0 != nullptr) {  // an in-place update of a parameter?
    first_owner = owner_of(s->owners, *t0);
    if (first_owner >= 0) {
      e.flags |= kSelfOwned;
      if (!top_level) return first_owner;
    }
  }
  int32_t first = -1;
  int64_t seq = INT64_MAX;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (const at::Tensor* tp = as_tensor(inputs[k])) {
      const at::Tensor& t = *tp;
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
    } else if (first < 0 && !dataflow && is_tensor_list(inputs[k])) {
      first = list_owner(s, inputs[k]);
      if (first >= 0 && !top_level) return first;
    }
  }
  if (dataflow) {
    e.in_seq = seq == INT64_MAX ? -1 : seq;
    // Data flow follows tensors; the owner comes from a tensor when one is owned, else from the
    // first owned tensor list.
    for (size_t k = 0; k < inputs.size() && first < 0; ++k) first = list_owner(s, inputs[k]);
  }
  return first;
}

// ---------------------------------------------------------------------------------------------
// Arguments (the records FLOPs and bytes are computed from)

/// Writes one op's arguments to a thread's records (capture_args).
class ArgWriter {
 public:
  ArgWriter(ThreadEvents* b, ArgExtras extras) : b_(b), extras_(extras) {}

  void put(size_t k, const c10::IValue& v);
  void put(size_t k, const ArgRef& r);

 private:
  // Sizes, layout and extras of a defined tensor argument.
  void tensor(ArgRecord& a, size_t k, const at::Tensor& t);
  void extras(ArgRecord& a, const at::Tensor& t, size_t k, ArgExtras extras);
  void ints(ArgRecord& a, const int64_t* p, size_t n) {
    a.kind = ArgKind::kIntList;
    a.count = static_cast<uint32_t>(n);
    a.offset = b_->dims.size();
    for (size_t j = 0; j < n; ++j) b_->dims.push_back(p[j]);
  }
  // A Tensor[]: its length, first dtype and total bytes (cat, stack, _foreach_*: what they move).
  template <class Get>
  void tensor_list(ArgRecord& a, size_t k, size_t n, Get get) {
    a.kind = ArgKind::kTensorList;
    a.count = static_cast<uint32_t>(n);
    int64_t bytes = 0;
    for (size_t j = 0; j < n; ++j) {
      const at::Tensor& t = get(j);
      if (!t.defined()) continue;
      if (a.dtype == DType::kUnknown) a.dtype = to_dtype(t.scalar_type());
      bytes += t.numel() * static_cast<int64_t>(t.element_size());
    }
    a.offset = b_->dims.size();
    b_->dims.push_back(bytes);
    if (((extras_.storage >> k) & 1) && n > 0 && get(0).defined()) {
      extras(a, get(0), k, ArgExtras{extras_.storage, -1});
    }
  }
  // A Tensor?[] (aten::index's indices): the bytes and first dtype as a tensor list, and each
  // element's element count (-1: None), which the output's size depends on.
  template <class Get>
  void optional_tensor_list(ArgRecord& a, size_t n, Get get) {
    a.kind = ArgKind::kTensorList;
    a.tensor_flags |= kArgElementNumels;
    a.count = static_cast<uint32_t>(n);
    a.offset = b_->dims.size();
    b_->dims.push_back(0);
    int64_t bytes = 0;
    for (size_t j = 0; j < n; ++j) {
      const at::Tensor* t = get(j);
      if (t == nullptr || !t->defined()) {
        b_->dims.push_back(-1);
        continue;
      }
      if (a.dtype == DType::kUnknown) a.dtype = to_dtype(t->scalar_type());
      bytes += t->numel() * static_cast<int64_t>(t->element_size());
      b_->dims.push_back(t->numel());
    }
    b_->dims[a.offset] = bytes;
  }

  ThreadEvents* b_;
  ArgExtras extras_;
  // The op's tensors so far, to read a tensor passed twice (x * x) once.
  static constexpr size_t kSeen = 8;
  const c10::TensorImpl* seen_[kSeen];
  size_t seen_count_ = 0;
};

#ifdef FLOPSPROF_CAPTURE_FAULTS
inline void maybe_fail_capture(ThreadEvents* b) {
  if (g_fail_captures.load(std::memory_order_relaxed) > 0 && g_fail_captures.fetch_sub(1) > 0) {
    b->dims.push_back(0);  // a partial write, as a real failure midway would leave
    throw std::bad_alloc();
  }
}
#endif

/// Appends the plain-data form of `inputs` to `b` and points `e`'s argument range at it
/// (capture_args, for either form).
template <class Arg>
void write_args(ThreadEvents* b, RawEvent& e, c10::ArrayRef<Arg> inputs, ArgExtras extras) {
#ifdef FLOPSPROF_CAPTURE_FAULTS
  maybe_fail_capture(b);
#endif
  e.args_begin = static_cast<uint32_t>(b->args.size());
  size_t n = inputs.size();
  if (n > kMaxCapturedArgs) {
    n = kMaxCapturedArgs;
    ++b->dropped_args;
  }
  ArgWriter w(b, extras);
  for (size_t k = 0; k < n; ++k) w.put(k, inputs[k]);
  e.args_count = static_cast<uint16_t>(n);
}

inline void ArgWriter::extras(ArgRecord& a, const at::Tensor& t, size_t k, ArgExtras x) {
  if (static_cast<int>(k) == x.mask) {
    if (const std::optional<uint64_t> kept = kept_mask_entries(t)) {
      b_->dims.push_back(static_cast<int64_t>(*kept));
      a.tensor_flags |= kArgMaskKept;
    }
  }
  if ((x.storage >> k) & 1) {
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    if (!impl->has_storage()) return;
    b_->dims.push_back(
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(impl->storage().unsafeGetStorageImpl())));
    if (a.kind == ArgKind::kTensorList) {  // a list's first tensor: its bytes too
      b_->dims.push_back(t.numel() * static_cast<int64_t>(t.element_size()));
    }
    a.tensor_flags |= kArgStorage;
  }
}

inline void ArgWriter::tensor(ArgRecord& a, size_t k, const at::Tensor& t) {
  a.kind = ArgKind::kTensor;
  a.dtype = to_dtype(t.scalar_type());
  c10::IntArrayRef sizes = t.sizes();
  a.count = static_cast<uint32_t>(sizes.size());
  a.offset = b_->dims.size();
  for (int64_t d : sizes) b_->dims.push_back(d);  // inlined, unlike a range insert
  // What the bytes it moves depend on (aggregation/op_bytes.cpp): a repeated tensor, its
  // layout, and for a broadcast view the elements its memory covers.
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  for (size_t j = 0; j < seen_count_; ++j) {
    if (seen_[j] == impl) a.tensor_flags |= kArgRepeated;
  }
  if (seen_count_ < kSeen) seen_[seen_count_++] = impl;
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
    if (a.tensor_flags & kArgExpanded) b_->dims.push_back(covered);
  }
  if (extras_.storage != 0 || extras_.mask >= 0) extras(a, t, k, extras_);
  if (static_cast<int>(k) == extras_.data) a.tensor_flags |= kArgData;
}

inline void ArgWriter::put(size_t k, const ArgRef& r) {
  ArgRecord a;
  switch (r.kind) {
    case ArgRef::Kind::kNone:
      break;
    case ArgRef::Kind::kTensor:
      if (r.tensor->defined()) {
        tensor(a, k, *r.tensor);
      } else {
        a.kind = ArgKind::kUndefinedTensor;
      }
      break;
    case ArgRef::Kind::kDouble:
      a.kind = ArgKind::kDouble;
      a.d = r.d;
      break;
    case ArgRef::Kind::kInt:
      a.kind = ArgKind::kInt;
      a.i = r.i;
      break;
    case ArgRef::Kind::kBool:
      a.kind = ArgKind::kBool;
      a.b = r.b;
      break;
    case ArgRef::Kind::kInts:
      ints(a, r.ints, r.n);
      break;
    case ArgRef::Kind::kTensors:
      tensor_list(a, k, r.n, [&](size_t j) -> const at::Tensor& { return r.tensors[j]; });
      break;
    case ArgRef::Kind::kOptionalTensors:
      // The list's IValue shares its elements (one reference count): read as the boxed form.
      put(k, c10::IValue(*r.optional_tensors));
      return;
    case ArgRef::Kind::kString:
      a.kind = ArgKind::kString;
      a.i = r.c;
      break;
    case ArgRef::Kind::kOther:
      a.kind = ArgKind::kOther;
      break;
  }
  b_->args.push_back(a);
}

inline void ArgWriter::put(size_t k, const c10::IValue& v) {
  ArgRecord a;
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      a.kind = ArgKind::kUndefinedTensor;
    } else {
      tensor(a, k, t);
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
    c10::ArrayRef<c10::IValue> list = v.toListRef();
    a.count = static_cast<uint32_t>(list.size());
    a.offset = b_->dims.size();
    for (const c10::IValue& x : list) b_->dims.push_back(x.toInt());
  } else if (v.isBoolList()) {  // e.g. the output_mask of backward ops, stored as 0/1
    a.kind = ArgKind::kIntList;
    c10::ArrayRef<c10::IValue> list = v.toListRef();
    a.count = static_cast<uint32_t>(list.size());
    a.offset = b_->dims.size();
    for (const c10::IValue& x : list) b_->dims.push_back(x.toBool() ? 1 : 0);
  } else if (v.isDoubleList()) {
    a.kind = ArgKind::kDoubleList;
    c10::ArrayRef<c10::IValue> list = v.toListRef();
    a.count = static_cast<uint32_t>(list.size());
    a.offset = b_->doubles.size();
    for (const c10::IValue& x : list) b_->doubles.push_back(x.toDouble());
#if TORCH_VERSION_MAJOR >= 2
  } else if (v.isSymInt()) {  // LibTorch 2.x: SymInt arguments (concrete ones box as Int)
    a.kind = ArgKind::kInt;
    a.i = v.toSymInt().guard_int(__FILE__, __LINE__);
  } else if (v.isSymIntList()) {
    a.kind = ArgKind::kIntList;
    c10::ArrayRef<c10::IValue> list = v.toListRef();
    a.count = static_cast<uint32_t>(list.size());
    a.offset = b_->dims.size();
    for (const c10::IValue& x : list)
      b_->dims.push_back(x.toSymInt().guard_int(__FILE__, __LINE__));
#endif
  } else if (v.isTensorList()) {
    c10::ArrayRef<c10::IValue> list = v.toListRef();
    tensor_list(a, k, list.size(),
                [&](size_t j) -> const at::Tensor& { return list[j].toTensor(); });
  } else if (v.isList()) {
    c10::ArrayRef<c10::IValue> list = v.toListRef();
    bool any = false, only = true;  // a non-empty list of tensors or None: a Tensor?[]
    for (const c10::IValue& x : list) {
      if (x.isTensor()) {
        any = true;
      } else if (!x.isNone()) {
        only = false;
        break;
      }
    }
    if (any && only) {
      optional_tensor_list(a, list.size(), [&](size_t j) -> const at::Tensor* {
        return list[j].isTensor() ? &list[j].toTensor() : nullptr;
      });
    } else {
      a.kind = ArgKind::kOther;
    }
  } else if (v.isString()) {
    a.kind = ArgKind::kString;
    const std::string& s = v.toStringRef();
    a.i = s.empty() ? 0 : s[0];
  } else if (!v.isNone()) {
    a.kind = ArgKind::kOther;
  }
  b_->args.push_back(a);
}

// ---------------------------------------------------------------------------------------------
// The record of an op: opened before it runs, closed after

/// The autograd engine's graph task the calling thread runs a task of now (between the task's
/// start and its end, around its node's call and the engine's work after it), as an identity
/// (never dereferenced); null outside the engine's tasks.
inline const void* current_engine_task() noexcept {
  return torch::autograd::get_current_graph_task_nodes_in_graph();
}

/// The wrapper record (ThreadBuffer::engine_wrappers) an op opening now on `b`'s thread belongs
/// to, or -1: the innermost wrapper of the graph task running now, when no op or node is open
/// inside it. Wrappers of tasks that ended are dropped.
inline int32_t engine_parent(ThreadBuffer* b) noexcept {
  const void* task = current_engine_task();
  while (b->engine_depth > 0 && b->engine_wrappers[b->engine_depth - 1].task != task) {
    --b->engine_depth;
  }
  if (b->engine_depth == 0) return -1;
  const int32_t w = b->engine_wrappers[b->engine_depth - 1].event;
  return b->events[static_cast<size_t>(w)].parent == b->open_op ? w : -1;
}

/// An op record opened in one session (closed by close_op_record). Trivial: the dispatch path
/// keeps one per running profile on its stack, written only when a record opens.
struct OpOpen {
  ThreadBuffer* buffer;
  uint64_t session;
  uint32_t index;
  uint8_t pushed;  ///< 1: a counted op (its nested ops are not recorded), 4: a GPU correlation id
  int32_t mark;    ///< device-event mark of a top-level record, else -1
};

// A top-level op's data identity, held only where rule 9 compares it with another op's: outside
// the calls of the profiled model's modules (see ThreadBuffer::hold_data), and only until the
// next op inside such a call reads data: that op's identity (rule 9's model_data, or one after
// it) is then recorded, so no later comparison needs the earlier ones held. Held longer, the
// tensor objects (one per such op, a profile's worth) sit among the program's freed activations
// and fragment the heap: each forward then takes fresh pages from the system (page faults in the
// profiled ops).
// hold_data may throw (before the record commits: it is then rolled back, the hold harmless);
// the release comes after the commit (release_identities), so that an op never recorded lets go
// of nothing.
// `inside`: b->inside_model_call(), read once per op by the caller.
inline void keep_data_identity(ThreadBuffer* b, uint64_t data_in, bool inside) {
  if (data_in != 0 && !inside) b->hold_data(data_in);
}
inline void release_identities(ThreadBuffer* b, uint64_t data_in, bool inside) noexcept {
  if (data_in != 0 && inside && b->holds_data()) b->release_data();
}

/// Opens the record of op `name_id` (with the flags of its name, from the buffer's NameCache)
/// with autograd sequence number `seq_nr` in `s` on this thread's buffer `b`: all or nothing
/// (everything that can throw happens before any per-thread state changes; on failure the
/// record is rolled back, counted in capture_errors, and the op is not recorded). Called inside
/// an OpGuard.
template <class Arg>
bool open_op_record(Session* s, ThreadBuffer* b, uint32_t name_id, uint16_t name_flags,
                    int64_t seq_nr, c10::ArrayRef<Arg> inputs, OpOpen& o) noexcept {
  const size_t events_before = b->events.size(), args_before = b->args.size(),
               dims_before = b->dims.size();
  try {
    const uint32_t index = static_cast<uint32_t>(events_before);
    int32_t parent = b->open_op;
    bool engine = false;  // run by the autograd engine after the node of its task
    if (b->engine_depth > 0) {
      const int32_t w = engine_parent(b);
      if (w >= 0) {
        parent = w;
        engine = true;
      }
    }
    b->events.emplace_back();
    RawEvent& e = b->events.back();
    e.name_id = name_id;
    e.parent = parent;
    e.scope = b->open_scope;
    uint8_t pushed = 0;
    if (b->backward_depth > 0 || engine) e.flags |= kBackward;
    if (b->step_depth > 0) e.flags |= kStep;
    e.seq_nr = seq_nr;
    int8_t data_arg = -1;
    e.owner = find_owner(s, inputs, parent < 0, parent < 0 && seq_nr >= 0, e, &data_arg);
    const bool inside = b->inside_model_call();
    keep_data_identity(b, e.data_in, inside);
    if (name_flags & kNameHasFormula) {
      e.flags |= kCounted;
      pushed |= 1;
    }
    // Arguments for FLOPs and bytes, also of ops without a formula (their bytes count); views
    // and metadata queries move no bytes and count no FLOPs: nothing to read.
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
      write_args(b, e, inputs, extras);
    }
    const bool mark = s->events != nullptr && parent < 0;
    if (mark && b->marks.size() == b->marks.capacity()) {
      b->marks.reserve(std::max<size_t>(256, 2 * b->marks.size()));  // may throw: before commit
    }
    // Commit (nothing below throws).
    release_identities(b, e.data_in, inside);
    b->open_op = static_cast<int32_t>(index);
    if (s->gpu != nullptr) {  // device work launched by this op carries its id
      s->gpu->push(make_external_id(b->ordinal, index));
      pushed |= 4;
    }
    o.mark = -1;
    if (mark) {  // top-level: timed with device events (record() never throws)
      b->marks.push_back(DeviceMark{index, nullptr, nullptr});
      if (s->events->record(&b->marks.back().start)) {
        o.mark = static_cast<int32_t>(b->marks.size() - 1);
      }
    }
    o.buffer = b;
    o.session = s->id;
    o.index = index;
    o.pushed = pushed;
    e.start_tick = s->now();
    return true;
  } catch (...) {
    // Never throw into the dispatcher.
    b->events.resize(events_before);
    b->args.resize(args_before);
    b->dims.resize(dims_before);
    ++b->capture_errors;
    return false;
  }
}

/// Closes a record open_op_record opened in `s` (which the caller checked is still o.session's).
/// With `seq_end`, a forward op in grad mode records the thread's next sequence number.
inline void close_op_record(Session* s, const OpOpen& o, int64_t end_tick) noexcept {
  ThreadBuffer* b = o.buffer;
  RawEvent& e = b->events[o.index];
  e.end_tick = end_tick;
  if (e.seq_nr >= 0 && e.kind == EventKind::kOp) e.seq_end = at::sequence_number::peek();
  if (o.pushed & 4) s->gpu->pop();
  if (o.mark >= 0) s->events->record(&b->marks[o.mark].end);
  int32_t parent = e.parent;
  if (b->engine_depth > 0 && parent == b->engine_wrappers[b->engine_depth - 1].event) {
    // The engine's wrapper ends with the last of its children (it is never open: ops after the
    // task are not its).
    const ThreadBuffer::EngineWrapper& top = b->engine_wrappers[b->engine_depth - 1];
    RawEvent& w = b->events[static_cast<size_t>(parent)];
    w.end_tick = std::max(w.end_tick, end_tick);
    if (top.mark >= 0) s->events->record(&b->marks[static_cast<size_t>(top.mark)].end);
    parent = w.parent;
  }
  if (b->open_op == static_cast<int32_t>(o.index)) b->open_op = parent;
}

}  // namespace flopsprof::detail
