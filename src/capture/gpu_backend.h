// The GPU timing backends and the optional CUDA plugin that provides them.
//
// The core library has no CUDA dependency. GPU support lives in a plugin, libflopsprof_cuda.so
// (CMake option FLOPSPROF_WITH_CUDA, package component `cuda`), that the core loads with dlopen
// the first time a profile sees a model on CUDA. The plugin holds the CUPTI backend and the
// CUDA-event elapsed-time function. Fallback order: CUPTI -> device events -> host clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "records/gpu.h"

namespace flopsprof::detail {

/// Collects device activity for one profile. `push`/`pop` run on the hot path around every
/// recorded op (only while a backend is active): no locks, no allocation.
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  /// Starts collecting; false (with `reason` set) when the backend cannot run here. A backend
  /// that returns false has released everything it took.
  virtual bool start(std::string* reason) = 0;
  /// Tags the device work launched until the matching pop with `external_id`. noexcept.
  virtual void push(uint64_t external_id) noexcept = 0;
  virtual void pop() noexcept = 0;
  /// Flushes once, stops collecting and returns the records (device timestamps, external ids
  /// resolved). Safe to call more than once (later calls return nothing).
  virtual GpuCollection stop() = 0;
  /// A device timestamp (ns) for aligning the two clocks.
  virtual int64_t device_now_ns() noexcept = 0;
};

/// Limits of the CUPTI backend's activity buffers (kineto's defaults: 4 MiB buffers). Records
/// that find no buffer are dropped by CUPTI and reported as dropped.
struct CuptiLimits {
  size_t buffer_bytes = 4u << 20;
  size_t max_buffers = 64;  ///< 256 MiB of activity records at most
};

/// The plugin's entry point (C linkage, versioned): `flopsprof_gpu_plugin_v1()`. ABI 2 added
/// `cuda_device_properties`.
constexpr uint32_t kGpuPluginAbi = 2;
struct GpuPluginV1 {
  uint32_t abi = kGpuPluginAbi;  ///< kGpuPluginAbi of the plugin's build
  const char* version = "";      ///< FLOPSPROF_VERSION of the plugin's build
  /// A new CUPTI backend (not started).
  GpuBackend* (*make_cupti_backend)(const CuptiLimits& limits) = nullptr;
  /// Milliseconds between two recorded CUDA events (cudaEventElapsedTime on the raw handles
  /// a c10 CUDA guard records); false with `error` filled when the runtime refuses.
  bool (*cuda_event_elapsed_ms)(void* from, void* to, float* ms, char* error,
                                size_t error_size) = nullptr;
  /// The name of CUDA device `index`; false when unknown.
  bool (*cuda_device_name)(int index, char* name, size_t size) = nullptr;
  /// The properties of CUDA device `index` (SMs, clocks, memory bus); false when unknown.
  bool (*cuda_device_properties)(int index, GpuDeviceProperties* out) = nullptr;
};

/// The CUDA plugin, loaded once per process (thread-safe): null with `why` set when it cannot
/// be found or loaded. Search order: $FLOPSPROF_CUDA_PLUGIN (a path), the loader's search path
/// (an already-loaded plugin, RUNPATH, LD_LIBRARY_PATH), the build tree, the install libdir.
const GpuPluginV1* load_gpu_plugin(std::string* why);

/// What the profile of a model on a device uses to time the device, chosen at start_profile():
/// a started CUPTI backend, else device events (when `device_type` has events and an elapsed-time
/// function), else nothing; `timing` and `reason` say what was chosen and why not CUPTI.
struct GpuSelection {
  std::unique_ptr<GpuBackend> cupti;
  bool events = false;   ///< time top-level ops with device events (see device_events.h)
  std::string timing;    ///< "cupti", "cuda events", "<device> events" or "host clock"; empty: CPU
  std::string reason;    ///< why the earlier choices were not used
  std::string device;    ///< device name when known
  int device_type = -1;  ///< the device timed (c10::DeviceType's integer; the forced one in tests)
  int device_index = 0;
  /// The device's properties for the roofline's ceilings (a CUDA device the plugin could
  /// read); else none.
  std::optional<GpuDeviceProperties> properties;
  Tf32Use tf32;  ///< a CUDA model's fp32 work on TF32 tensor cores (LibTorch's settings)
};

/// What a profile asks of the device timing.
struct GpuTimingRequest {
  int device_type = -1;  ///< the device to time (c10::DeviceType's integer), -1: a CPU model
  int device_index = 0;
  bool try_cupti = true;   ///< false: device events first (ProfilerOptions::kDeviceEvents)
  bool try_events = true;  ///< false with try_cupti false: the host clock (kHostClock)
  CuptiLimits cupti_limits;
};

/// Chooses and starts the device timing: CUPTI -> device events -> host clock. On a CUDA device
/// also reads its name and ceilings through the plugin, whatever the timing.
GpuSelection select_gpu_timing(const GpuTimingRequest& request);

}  // namespace flopsprof::detail

extern "C" {
/// Exported by libflopsprof_cuda.so.
const flopsprof::detail::GpuPluginV1* flopsprof_gpu_plugin_v1();
}
