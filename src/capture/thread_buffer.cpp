// The writers of a thread's records besides the op callbacks (see thread_buffer.h).
#include "capture/thread_buffer.h"

#include <algorithm>

#include <c10/core/TensorImpl.h>

namespace flopsprof::detail {

ThreadBuffer::~ThreadBuffer() { release_data(); }

void ThreadBuffer::take_weak_reference(uint64_t impl) noexcept {
  c10::intrusive_ptr_target* target = reinterpret_cast<c10::TensorImpl*>(impl);
  c10::raw::weak_intrusive_ptr::incref(target);
}

void ThreadBuffer::release_data() noexcept {
  for (uint64_t impl : held_) {
    c10::intrusive_ptr_target* target = reinterpret_cast<c10::TensorImpl*>(impl);
    c10::raw::weak_intrusive_ptr::decref(target);
  }
  held_.clear();
  last_held_ = 0;
}

void ThreadBuffer::reset(uint64_t thread) {
  release_data();
  thread_id = thread;
  events.clear();
  args.clear();
  dims.clear();
  doubles.clear();
  scopes.clear();
  steps.clear();
  memory.clear();
  collectives.clear();
  collective_ends.clear();
  dropped_args = 0;
  open_op = -1;
  engine_depth = 0;
  backward_depth = 0;
  open_scope = -1;
  step_depth = 0;
  capture_errors = 0;
  for (CostSample& c : cost_samples) c = CostSample{};
  names.validate();
}

namespace {
template <class T>
void touch(std::vector<T>& v) {
  if (!v.empty()) return;
  v.resize(v.capacity());
  v.clear();
}
}  // namespace

void ThreadBuffer::prefault() {
  if (prefaulted) return;
  touch(events);
  touch(args);
  touch(dims);
  touch(scopes);
  prefaulted = true;
}

bool ThreadBuffer::grow_scopes() noexcept {
  try {
    scopes.reserve(std::max<size_t>(16, 2 * scopes.capacity()));
  } catch (...) {
    ++capture_errors;
    return false;
  }
  return true;
}

int32_t ThreadBuffer::begin_step(int64_t now, bool optimizer) noexcept {
  try {
    steps.push_back(StepRecord{now, 0, optimizer});
  } catch (...) {
    ++capture_errors;
    return -1;
  }
  ++step_depth;
  return static_cast<int32_t>(steps.size() - 1);
}

void ThreadBuffer::end_step(int32_t index, int64_t now) noexcept {
  if (index < 0 || static_cast<size_t>(index) >= steps.size()) return;
  steps[index].end_tick = now;
  --step_depth;
}

void ThreadBuffer::add_memory(int64_t now, uint64_t address, int64_t bytes, int64_t total_reserved,
                              int8_t device_type) noexcept {
  MemRecord r;
  r.time_tick = now;
  r.bytes = bytes;
  r.address = address;
  r.total_reserved = total_reserved;
  r.op = open_op;
  r.scope = open_scope;
  r.device_type = device_type;
  try {
    memory.push_back(r);
  } catch (...) {
    ++capture_errors;  // never throw into the allocator
  }
}

}  // namespace flopsprof::detail
