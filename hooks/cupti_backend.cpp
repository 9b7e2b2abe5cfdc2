// The CUPTI Activity API backend: every kernel, memcpy and memset with device timestamps, tagged
// with the launching op through external correlation ids; one flush when the profile stops.
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/format.h>

#include "gpu_backend.h"

namespace flopsprof::detail {
namespace {

constexpr CUpti_ExternalCorrelationKind kKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr size_t kBufferBytes = 8 << 20;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

std::string describe(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return fmt::format("{} ({})", s ? s : "unknown error", static_cast<int>(r));
}

// CUPTI delivers buffers on its own thread; records are parsed there into this store.
struct Store {
  std::mutex mu;
  std::vector<GpuRecord> records;
  std::unordered_map<uint32_t, uint64_t> external;  // correlationId -> external id
};
Store g_store;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

template <class T>
GpuRecord basic(GpuKind kind, const T* r, std::string name) {
  GpuRecord g;
  g.kind = kind;
  g.name = std::move(name);
  g.start_ns = static_cast<int64_t>(r->start);
  g.end_ns = static_cast<int64_t>(r->end);
  g.device = r->deviceId;
  g.stream = r->streamId;
  g.external_id = r->correlationId;  // resolved to the external id at stop
  return g;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_store.mu);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        g_store.records.push_back(basic(GpuKind::kKernel, k, k->name ? k->name : "kernel"));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        g_store.records.push_back(basic(GpuKind::kMemcpy, m, fmt::format("memcpy {} B", m->bytes)));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        g_store.records.push_back(basic(GpuKind::kMemset, m, fmt::format("memset {} B", m->bytes)));
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == kKind) g_store.external[e->correlationId] = e->externalId;
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

class CuptiBackend final : public GpuBackend {
 public:
  bool start(std::string* reason) override {
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      *reason = "cuptiActivityRegisterCallbacks: " + describe(r);
      return false;
    }
    for (CUpti_ActivityKind kind : kKinds) {
      r = cuptiActivityEnable(kind);
      if (r != CUPTI_SUCCESS) {
        *reason = fmt::format(
            "cuptiActivityEnable: {} (no driver or GPU, or CUPTI is held by another "
            "profiler such as Kineto)",
            describe(r));
        disable();
        return false;
      }
    }
    {
      std::lock_guard<std::mutex> lock(g_store.mu);
      g_store.records.clear();
      g_store.external.clear();
    }
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
      device_ = prop.name;
    }
    active_ = true;
    return true;
  }

  void push(uint64_t external_id) noexcept override {
    cuptiActivityPushExternalCorrelationId(kKind, external_id);
  }
  void pop() noexcept override {
    uint64_t last = 0;
    cuptiActivityPopExternalCorrelationId(kKind, &last);
  }

  int64_t device_now_ns() noexcept override {
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return static_cast<int64_t>(t);
  }

  GpuCollection stop() override {
    GpuCollection c;
    c.backend = "cupti";
    c.device = device_;
    if (!active_) return c;
    cuptiActivityFlushAll(1);  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: the single flush
    disable();
    std::lock_guard<std::mutex> lock(g_store.mu);
    for (GpuRecord& r : g_store.records) {
      auto it = g_store.external.find(static_cast<uint32_t>(r.external_id));
      r.external_id = it == g_store.external.end() ? 0 : it->second;
    }
    c.records = std::move(g_store.records);
    g_store.records.clear();
    g_store.external.clear();
    active_ = false;
    return c;
  }

  ~CuptiBackend() override {
    if (active_) disable();
  }

 private:
  static void disable() {
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  }
  bool active_ = false;
  std::string device_;
};

}  // namespace

std::unique_ptr<GpuBackend> make_cupti_backend() { return std::make_unique<CuptiBackend>(); }

}  // namespace flopsprof::detail
