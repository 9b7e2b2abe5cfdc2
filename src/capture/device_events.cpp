// Device-event timing (see device_events.h).
#include "capture/device_events.h"

#include <algorithm>
#include <atomic>

#include "capture/observer.h"

namespace flopsprof::detail {
namespace {

constexpr size_t kTypes = static_cast<size_t>(c10::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES);
std::atomic<EventElapsedFn> g_elapsed[kTypes];

}  // namespace

void set_event_elapsed(c10::DeviceType type, EventElapsedFn fn) {
  g_elapsed[static_cast<size_t>(type) % kTypes].store(fn);
}

EventElapsedFn event_elapsed(c10::DeviceType type) {
  return g_elapsed[static_cast<size_t>(type) % kTypes].load();
}

bool device_events_available(c10::DeviceType type, std::string* why) {
  if (!c10::impl::hasDeviceGuardImpl(type)) {
    *why = "no " + c10::DeviceTypeName(type) + " device guard in this LibTorch";
    return false;
  }
  if (event_elapsed(type) == nullptr) {
    *why = "no elapsed-time function for " + c10::DeviceTypeName(type) + " events";
    return false;
  }
  return true;
}

DeviceEvents::DeviceEvents(c10::DeviceType type, c10::DeviceIndex index, EventElapsedFn elapsed)
    : type_(type), index_(index), impl_(c10::impl::getDeviceGuardImpl(type)), elapsed_(elapsed) {}

bool DeviceEvents::record(void** slot) const noexcept {
  try {
    const c10::Stream stream = impl_->getStream(c10::Device(type_, index_));
    // BACKEND_DEFAULT: timing enabled (PyTorch's default disables it on CUDA).
    impl_->record(slot, stream, index_, c10::EventFlag::BACKEND_DEFAULT);
    return true;
  } catch (...) {
    return false;
  }
}

void DeviceEvents::synchronize() const noexcept {
  try {
    const c10::Device device(type_, index_);
    impl_->synchronizeStream(impl_->getStream(device));
    impl_->synchronizeStream(impl_->getDefaultStream(device));
  } catch (...) {
  }
}

void DeviceEvents::resolve(const std::vector<ThreadBuffer*>& buffers, GpuCollection* out) const {
  // The reference: the event recorded first on the host (elapsed times are taken from it).
  void* ref = nullptr;
  int64_t ref_host = INT64_MAX;
  for (const ThreadBuffer* b : buffers) {
    for (const DeviceMark& m : b->marks) {
      if (m.start != nullptr && b->events[m.event].start_tick < ref_host) {
        ref_host = b->events[m.event].start_tick;
        ref = m.start;
      }
    }
  }
  std::string error;
  auto at = [&](void* e, int64_t* ns) {
    double ms = 0;
    if (e == nullptr || ref == nullptr || !elapsed_(ref, e, index_, &ms, &error)) return false;
    *ns = static_cast<int64_t>(ms * 1e6);
    return true;
  };
  for (ThreadBuffer* b : buffers) {
    for (const DeviceMark& m : b->marks) {
      DeviceSpan s;
      s.thread = b->ordinal;
      s.event = m.event;
      if (at(m.start, &s.start_ns) && at(m.end, &s.end_ns)) {
        out->spans.push_back(s);
      } else {
        ++out->untimed;
      }
    }
  }
  if (!error.empty() && out->reason.empty()) out->reason = error;
  discard(buffers);
}

void DeviceEvents::discard(const std::vector<ThreadBuffer*>& buffers) const noexcept {
  for (ThreadBuffer* b : buffers) {
    for (const DeviceMark& m : b->marks) {
      if (m.start) impl_->destroyEvent(m.start, index_);
      if (m.end) impl_->destroyEvent(m.end, index_);
    }
    b->marks.clear();
  }
}

}  // namespace flopsprof::detail
