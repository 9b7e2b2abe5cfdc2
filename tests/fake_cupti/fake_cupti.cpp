// A fake CUPTI: the part of the activity API flopsprof's backend calls, with records synthesised
// for every external correlation id pushed (kineto tests its CUPTI layer with mocks the same way).
// As the real one (seen on an H200), each record is written only when its kind is enabled, and an
// external correlation record only before an API record (CUPTI_ACTIVITY_KIND_RUNTIME or DRIVER
// enabled): a backend that enables the kernels and the correlation alone links nothing.
// Built as libcupti-compatible shared library for the tests; single-threaded use is enough here
// (one lock keeps it safe anyway).
#include "fake_cupti.h"

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
#elif CUPTI_API_VERSION >= 18
using KernelRecord = CUpti_ActivityKernel9;
using MemcpyRecord = CUpti_ActivityMemcpy5;
#else
using KernelRecord = CUpti_ActivityKernel4;
using MemcpyRecord = CUpti_ActivityMemcpy;
#endif

constexpr const char* kNames[] = {"fake_gemm", "fake_elementwise"};

struct State {
  std::mutex mu;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  int enable_result = 0;
  int enabled = 0;
  bool kinds[64] = {};  // enabled, by CUpti_ActivityKind
  int64_t kernel_ns = 1000, memcpy_ns = 300;
  int memcpy_every = 0;
  uint64_t clock = 1000000;
  uint32_t correlation = 0;
  uint64_t pushes = 0, kernels = 0, memcpys = 0, dropped = 0, requested = 0;
  std::vector<uint64_t> stack;
  uint8_t* buffer = nullptr;
  size_t size = 0, used = 0;
  // The fake CUDA device (fake_cuda_set_device); no name: no device.
  std::string device_name;
  int attrs[6] = {0, 0, 0, 0, 0, 0};  // SMs, clock, memory clock, bus bits, major, minor
};
State g;

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      return sizeof(KernelRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(MemcpyRecord);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    default:
      return sizeof(CUpti_Activity);
  }
}
size_t aligned(size_t n) { return (n + 7) & ~size_t{7}; }

void complete_current() {
  if (g.buffer == nullptr) return;
  uint8_t* b = g.buffer;
  size_t size = g.size, used = g.used;
  g.buffer = nullptr;
  g.size = g.used = 0;
  g.complete(nullptr, 0, b, size, used);
}

// Space for one record of `bytes`, asking the backend for a buffer when needed; null: dropped.
void* space(size_t bytes) {
  bytes = aligned(bytes);
  if (g.buffer != nullptr && g.used + bytes > g.size) complete_current();
  if (g.buffer == nullptr) {
    size_t max_records = 0;
    ++g.requested;
    g.request(&g.buffer, &g.size, &max_records);
    g.used = 0;
    if (g.buffer == nullptr || g.size < bytes) {
      g.buffer = nullptr;
      g.size = 0;
      return nullptr;
    }
  }
  void* p = g.buffer + g.used;
  std::memset(p, 0, bytes);
  g.used += bytes;
  return p;
}

template <class T>
T* emit(CUpti_ActivityKind kind) {
  auto* r = static_cast<T*>(space(sizeof(T)));
  if (r == nullptr) {
    ++g.dropped;
    return nullptr;
  }
  reinterpret_cast<CUpti_Activity*>(r)->kind = kind;
  return r;
}

bool enabled(CUpti_ActivityKind kind) {
  const auto k = static_cast<size_t>(kind);
  return k < sizeof g.kinds && g.kinds[k];
}

// The launch's API record (the runtime's cudaLaunchKernel), preceded by its external correlation
// record when both are enabled, as CUPTI writes them.
void api_record(uint32_t correlation, uint64_t external) {
  const CUpti_ActivityKind api = enabled(CUPTI_ACTIVITY_KIND_RUNTIME)  ? CUPTI_ACTIVITY_KIND_RUNTIME
                                 : enabled(CUPTI_ACTIVITY_KIND_DRIVER) ? CUPTI_ACTIVITY_KIND_DRIVER
                                                                       : CUPTI_ACTIVITY_KIND_INVALID;
  if (api == CUPTI_ACTIVITY_KIND_INVALID) return;
  if (enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
    auto* e = emit<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    if (e != nullptr) {
      e->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
      e->externalId = external;
      e->correlationId = correlation;
    }
  }
  if (auto* a = emit<CUpti_ActivityAPI>(api)) {
    a->start = g.clock;
    a->end = g.clock + 1;
    a->correlationId = correlation;
  }
}

}  // namespace

extern "C" {

void fake_cupti_reset() {
  std::lock_guard<std::mutex> lock(g.mu);
  g.enable_result = 0;
  g.kernel_ns = 1000;
  g.memcpy_ns = 300;
  g.memcpy_every = 0;
  g.pushes = g.kernels = g.memcpys = g.dropped = g.requested = 0;
  g.stack.clear();
  g.device_name.clear();
}
void fake_cuda_set_device(const char* name, int sm_count, int clock_khz, int memory_clock_khz,
                          int memory_bus_bits, int major, int minor) {
  std::lock_guard<std::mutex> lock(g.mu);
  g.device_name = name ? name : "";
  const int v[6] = {sm_count, clock_khz, memory_clock_khz, memory_bus_bits, major, minor};
  std::copy(v, v + 6, g.attrs);
}

// The CUDA runtime's device queries, answered by the fake device (the plugin finds these before
// libcudart's: the test program links this library).
cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.device_name.empty() || device != 0) return cudaErrorInsufficientDriver;
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "%s", g.device_name.c_str());
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.device_name.empty() || device != 0) return cudaErrorInsufficientDriver;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = g.attrs[0];
      return cudaSuccess;
    case cudaDevAttrClockRate:
      *value = g.attrs[1];
      return cudaSuccess;
    case cudaDevAttrMemoryClockRate:
      *value = g.attrs[2];
      return cudaSuccess;
    case cudaDevAttrGlobalMemoryBusWidth:
      *value = g.attrs[3];
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = g.attrs[4];
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = g.attrs[5];
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}
void fake_cupti_set_enable_result(int result) { g.enable_result = result; }
void fake_cupti_set_timing(int64_t kernel_ns, int64_t memcpy_ns, int memcpy_every) {
  g.kernel_ns = kernel_ns;
  g.memcpy_ns = memcpy_ns;
  g.memcpy_every = memcpy_every;
}
uint64_t fake_cupti_kernels() { return g.kernels; }
uint64_t fake_cupti_memcpys() { return g.memcpys; }
uint64_t fake_cupti_dropped() { return g.dropped; }
int fake_cupti_enabled_kinds() { return g.enabled; }
uint64_t fake_cupti_buffers_requested() { return g.requested; }

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (fake)";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard<std::mutex> lock(g.mu);
  g.request = request;
  g.complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.enable_result != 0) return static_cast<CUptiResult>(g.enable_result);
  const auto k = static_cast<size_t>(kind);
  if (k >= sizeof g.kinds) return CUPTI_ERROR_INVALID_KIND;
  if (!g.kinds[k]) ++g.enabled;
  g.kinds[k] = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(g.mu);
  const auto k = static_cast<size_t>(kind);
  if (k < sizeof g.kinds && g.kinds[k]) {
    g.kinds[k] = false;
    --g.enabled;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind,
                                                            uint64_t id) {
  std::lock_guard<std::mutex> lock(g.mu);
  g.stack.push_back(id);
  if (g.enabled == 0 || g.request == nullptr) return CUPTI_SUCCESS;
  ++g.pushes;
  // The op "launches" a kernel (and sometimes a memcpy) tagged with its id.
  const uint32_t c = ++g.correlation;
  api_record(c, id);
  if (!enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return CUPTI_SUCCESS;
  if (auto* k = emit<KernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    k->start = g.clock;
    k->end = g.clock + static_cast<uint64_t>(g.kernel_ns);
    k->deviceId = 0;
    k->streamId = 7;
    k->correlationId = c;
    k->name = kNames[g.pushes % 2];
    ++g.kernels;
    g.clock = k->end;
  }
  if (g.memcpy_every > 0 && g.pushes % static_cast<uint64_t>(g.memcpy_every) == 0 &&
      enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) {
    if (auto* m = emit<MemcpyRecord>(CUPTI_ACTIVITY_KIND_MEMCPY)) {
      m->bytes = 4096;
      m->start = g.clock;
      m->end = g.clock + static_cast<uint64_t>(g.memcpy_ns);
      m->deviceId = 0;
      m->streamId = 7;
      m->correlationId = c;
      ++g.memcpys;
      g.clock = m->end;
    }
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind,
                                                           uint64_t* last) {
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last) *last = g.stack.back();
  g.stack.pop_back();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  std::lock_guard<std::mutex> lock(g.mu);
  complete_current();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                CUpti_Activity** record) {
  uint8_t* next = *record == nullptr
                      ? buffer
                      : reinterpret_cast<uint8_t*>(*record) + aligned(record_size((*record)->kind));
  if (next >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t,
                                                       size_t* dropped) {
  std::lock_guard<std::mutex> lock(g.mu);
  *dropped = context == nullptr ? static_cast<size_t>(g.dropped) : 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = g.clock;
  return CUPTI_SUCCESS;
}

}  // extern "C"
