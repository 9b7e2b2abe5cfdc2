// GPU activity records (from CUPTI, or synthetic in tests) as plain data, before attribution.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flopsprof::detail {

enum class GpuKind : uint8_t { kKernel, kMemcpy, kMemset };

/// Where LibTorch runs a CUDA model's fp32 work on TF32 tensor cores, as it was set when the
/// profile started: cuDNN's convolutions and RNNs (`allowTF32CuDNN()`, on by default) and cuBLAS's
/// matrix products (`allowTF32CuBLAS()`, off by default). Their fp32 ops are counted in tf32
/// (DType::kTFloat32), whose ceiling is the TF32 peak. All false for a model not on CUDA.
struct Tf32Use {
  bool convolutions = false;
  bool matmuls = false;
};

/// One kernel, memcpy or memset as the device ran it.
struct GpuRecord {
  GpuKind kind = GpuKind::kKernel;
  std::string name;
  int64_t start_ns = 0, end_ns = 0;  ///< device timestamps (CUPTI's clock)
  uint32_t device = 0, stream = 0;
  uint64_t external_id = 0;  ///< the launching op (see make_external_id); 0: unknown
};

/// External correlation id of the op `event` recorded on thread buffer `thread` (both 0-based):
/// pushed to CUPTI around the op, carried by every activity it launches.
inline uint64_t make_external_id(uint32_t thread, uint32_t event) {
  return (static_cast<uint64_t>(thread + 1) << 32) | event;
}
inline bool split_external_id(uint64_t id, uint32_t* thread, uint32_t* event) {
  if (id >> 32 == 0) return false;
  *thread = static_cast<uint32_t>((id >> 32) - 1);
  *event = static_cast<uint32_t>(id & 0xffffffffu);
  return true;
}

/// The device interval of one top-level record (op or autograd node), from device events
/// recorded on the current stream at its start and end (device-event timing).
struct DeviceSpan {
  uint32_t thread = 0, event = 0;    ///< the record: thread buffer and index
  int64_t start_ns = 0, end_ns = 0;  ///< device time since the profile's first event
};

/// A start/end device-event pair of one top-level record, kept in its thread's buffer until
/// resolved at stop (raw handles of the device's c10 guard).
struct DeviceMark {
  uint32_t event = 0;  ///< index of the record in the buffer
  void* start = nullptr;
  void* end = nullptr;
};

/// What the GPU backend collected for a profile.
struct GpuCollection {
  std::vector<GpuRecord> records;  ///< CUPTI: kernels, memcpys, memsets
  std::vector<DeviceSpan> spans;   ///< device events: one per timed top-level record
  std::string backend;             ///< "cupti", "cuda events", or the fallback ("host clock")
  std::string reason;              ///< why CUPTI (and events) were not used
  std::string device;
  uint64_t dropped_records = 0;  ///< CUPTI records lost (no buffer, or buffers capped)
  uint64_t untimed = 0;          ///< device events that could not be recorded or resolved
  int64_t gpu_origin_ns = 0;     ///< a device timestamp ...
  int64_t host_origin = 0;       ///< ... and the host timestamp (profile units) taken with it
};

/// What the roofline needs of a CUDA device (the plugin reads it from the CUDA runtime).
struct GpuDeviceProperties {
  char name[256] = {0};
  int sm_count = 0;
  int clock_khz = 0;         ///< peak SM clock
  int memory_clock_khz = 0;  ///< peak memory clock
  int memory_bus_bits = 0;
  int major = 0, minor = 0;  ///< compute capability
};

}  // namespace flopsprof::detail
