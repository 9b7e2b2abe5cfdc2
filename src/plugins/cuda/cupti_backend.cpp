// The CUPTI Activity API backend, run the way kineto runs it: CUPTI's buffer-completed callback
// only hands buffers over; records are parsed on the stopping thread after the single flush at
// stop_profile(). Kernels, memcpys and memsets carry the external correlation id of the op that
// launched them. Buffers are capped; records CUPTI had to drop are counted and reported.
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cupti.h>

#include "capture/gpu_backend.h"

namespace flopsprof::detail {
namespace {

// Record structs by CUPTI version. The fields read here (start, end, deviceId, streamId,
// correlationId, name, bytes) sit at the same offsets in every version since CUDA 10 (checked
// below); the version decides only which names exist. cuptiActivityGetNextRecord advances by the
// size of the struct CUPTI actually wrote.
#if CUPTI_API_VERSION >= 130000  // CUDA 13.x
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using MemsetRecord = CUpti_ActivityMemset4;
#elif CUPTI_API_VERSION >= 18  // CUDA 12.x
using KernelRecord = CUpti_ActivityKernel9;
using MemcpyRecord = CUpti_ActivityMemcpy5;
using MemsetRecord = CUpti_ActivityMemset4;
#else                          // CUDA 10.x and 11.x
using KernelRecord = CUpti_ActivityKernel4;
using MemcpyRecord = CUpti_ActivityMemcpy;
using MemsetRecord = CUpti_ActivityMemset;
#endif
static_assert(offsetof(KernelRecord, start) == 16 && offsetof(KernelRecord, end) == 24 &&
                  offsetof(KernelRecord, deviceId) == 40 &&
                  offsetof(KernelRecord, streamId) == 48 &&
                  offsetof(KernelRecord, correlationId) == 92 &&
                  offsetof(KernelRecord, name) == 104,
              "CUPTI kernel record layout changed: check the struct chosen for this CUPTI version");
static_assert(offsetof(MemcpyRecord, bytes) == 8 && offsetof(MemcpyRecord, start) == 16 &&
                  offsetof(MemcpyRecord, correlationId) == 44,
              "CUPTI memcpy record layout changed");
static_assert(offsetof(MemsetRecord, bytes) == 8 && offsetof(MemsetRecord, start) == 16 &&
                  offsetof(MemsetRecord, correlationId) == 44,
              "CUPTI memset record layout changed");

constexpr CUpti_ExternalCorrelationKind kKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
// The API kinds are enabled for the correlation alone (their records are skipped): CUPTI writes an
// external correlation record only before an API record ("when a CUPTI activity API record is
// created while within an external API region", cupti_activity.h), so without them no kernel is
// linked to its op (seen on an H200: every kernel unlinked). Runtime and driver both: cuBLAS and
// cuDNN launch through the driver API, ATen's own kernels through the runtime.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER};

std::string describe(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(s ? s : "unknown error") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

// Completed buffers, handed over by CUPTI's thread. CUPTI's callbacks are plain functions, so the
// state is global; one backend collects at a time (CUPTI allows one subscriber per process).
struct Buffers {
  std::mutex mu;
  CuptiLimits limits;
  size_t outstanding = 0;  ///< requested and not yet freed
  uint64_t refused = 0;    ///< requests refused at the cap
  struct Done {
    uint8_t* data;
    size_t valid;
    CUcontext ctx;
    uint32_t stream;
  };
  std::vector<Done> done;
};
Buffers g_buffers;
std::atomic<bool> g_active{false};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  std::lock_guard<std::mutex> lock(g_buffers.mu);
  if (g_buffers.outstanding >= g_buffers.limits.max_buffers) {
    ++g_buffers.refused;  // CUPTI drops the records and counts them
    return;
  }
  void* p = std::aligned_alloc(8, g_buffers.limits.buffer_bytes);
  if (p == nullptr) return;
  ++g_buffers.outstanding;
  *buffer = static_cast<uint8_t*>(p);
  *size = g_buffers.limits.buffer_bytes;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  std::lock_guard<std::mutex> lock(g_buffers.mu);
  g_buffers.done.push_back({buffer, valid, ctx, stream});
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
  g.external_id = r->correlationId;  // resolved to the external id after parsing
  return g;
}

class CuptiBackend final : public GpuBackend {
 public:
  explicit CuptiBackend(const CuptiLimits& limits) : limits_(limits) {}

  bool start(std::string* reason) override {
    if (g_active.exchange(true)) {
      *reason = "another flopsprof profile is using CUPTI";
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(g_buffers.mu);
      g_buffers.limits = limits_;
      g_buffers.refused = 0;
    }
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      *reason = "cuptiActivityRegisterCallbacks: " + describe(r);
      g_active = false;
      return false;
    }
    for (CUpti_ActivityKind kind : kKinds) {
      r = cuptiActivityEnable(kind);
      if (r != CUPTI_SUCCESS) {
        *reason = "cuptiActivityEnable: " + describe(r) +
                  " (no driver or GPU, or CUPTI is held by another profiler such as Kineto)";
        disable();
        discard();
        g_active = false;
        return false;
      }
    }
    started_ = true;
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
    if (!started_) return c;
    started_ = false;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // the single flush
    disable();
    std::vector<Buffers::Done> done;
    {
      std::lock_guard<std::mutex> lock(g_buffers.mu);
      done = std::move(g_buffers.done);
      g_buffers.done.clear();
    }
    // Parsed here, on the stopping thread: names are copied once per distinct kernel.
    std::unordered_map<uint32_t, uint64_t> external;  // correlationId -> external id
    std::unordered_map<const char*, std::string> names;
    std::vector<std::pair<CUcontext, uint32_t>> queues{{nullptr, 0}};
    for (const Buffers::Done& b : done) {
      bool seen = false;
      for (const auto& q : queues) seen = seen || (q.first == b.ctx && q.second == b.stream);
      if (!seen) queues.emplace_back(b.ctx, b.stream);
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(b.data, b.valid, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
          case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          case CUPTI_ACTIVITY_KIND_KERNEL: {
            auto* k = reinterpret_cast<const KernelRecord*>(record);
            auto it = names.find(k->name);
            if (it == names.end()) it = names.emplace(k->name, k->name ? k->name : "kernel").first;
            c.records.push_back(basic(GpuKind::kKernel, k, it->second));
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMCPY: {
            auto* m = reinterpret_cast<const MemcpyRecord*>(record);
            c.records.push_back(
                basic(GpuKind::kMemcpy, m, "memcpy " + std::to_string(m->bytes) + " B"));
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMSET: {
            auto* m = reinterpret_cast<const MemsetRecord*>(record);
            c.records.push_back(
                basic(GpuKind::kMemset, m, "memset " + std::to_string(m->bytes) + " B"));
            break;
          }
          case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
            if (e->externalKind == kKind) external[e->correlationId] = e->externalId;
            break;
          }
          default:
            break;
        }
      }
      std::free(b.data);
    }
    for (GpuRecord& r : c.records) {
      auto it = external.find(static_cast<uint32_t>(r.external_id));
      r.external_id = it == external.end() ? 0 : it->second;
    }
    for (const auto& q : queues) {
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(q.first, q.second, &dropped) == CUPTI_SUCCESS)
        c.dropped_records += dropped;
    }
    {
      std::lock_guard<std::mutex> lock(g_buffers.mu);
      g_buffers.outstanding = 0;
    }
    g_active = false;
    return c;
  }

  ~CuptiBackend() override {
    if (started_) {  // never leave activity enabled: a later profile would see none
      try {
        stop();
      } catch (...) {
      }
    }
  }

 private:
  static void disable() {
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  }
  static void discard() {
    std::lock_guard<std::mutex> lock(g_buffers.mu);
    for (const Buffers::Done& b : g_buffers.done) std::free(b.data);
    g_buffers.done.clear();
    g_buffers.outstanding = 0;
  }
  CuptiLimits limits_;
  bool started_ = false;
};

}  // namespace

GpuBackend* new_cupti_backend(const CuptiLimits& limits) { return new CuptiBackend(limits); }

}  // namespace flopsprof::detail
