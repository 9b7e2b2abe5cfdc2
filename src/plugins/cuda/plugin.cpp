// libflopsprof_cuda.so: the optional GPU part, loaded by the core with dlopen when a profile sees a
// model on CUDA. Links CUPTI and the CUDA runtime; the core links neither.
#include <cstdio>
#include <cstring>

#include <cuda_runtime_api.h>

#include "capture/gpu_backend.h"
#include "flopsprof/config.h"

namespace flopsprof::detail {

GpuBackend* new_cupti_backend(const CuptiLimits& limits);

namespace {

bool event_elapsed_ms(void* from, void* to, float* ms, char* error, size_t size) {
  cudaError_t e =
      cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to));
  if (e == cudaSuccess) return true;
  if (size > 0) std::snprintf(error, size, "cudaEventElapsedTime: %s", cudaGetErrorString(e));
  return false;
}

bool device_name(int index, char* name, size_t size) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess || size == 0) return false;
  std::snprintf(name, size, "%s", prop.name);
  return true;
}

bool device_properties(int index, GpuDeviceProperties* out) {
  if (!device_name(index, out->name, sizeof out->name)) return false;
  struct {
    cudaDeviceAttr attr;
    int* value;
  } wanted[] = {{cudaDevAttrMultiProcessorCount, &out->sm_count},
                {cudaDevAttrClockRate, &out->clock_khz},
                {cudaDevAttrMemoryClockRate, &out->memory_clock_khz},
                {cudaDevAttrGlobalMemoryBusWidth, &out->memory_bus_bits},
                {cudaDevAttrComputeCapabilityMajor, &out->major},
                {cudaDevAttrComputeCapabilityMinor, &out->minor}};
  for (const auto& w : wanted) {
    if (cudaDeviceGetAttribute(w.value, w.attr, index) != cudaSuccess) *w.value = 0;
  }
  return true;
}

GpuPluginV1 make_plugin() {
  GpuPluginV1 p;
  p.version = FLOPSPROF_VERSION;
  p.make_cupti_backend = new_cupti_backend;
  p.cuda_event_elapsed_ms = event_elapsed_ms;
  p.cuda_device_name = device_name;
  p.cuda_device_properties = device_properties;
  return p;
}

}  // namespace
}  // namespace flopsprof::detail

extern "C" __attribute__((visibility("default"))) const flopsprof::detail::GpuPluginV1*
flopsprof_gpu_plugin_v1() {
  static const flopsprof::detail::GpuPluginV1 plugin = flopsprof::detail::make_plugin();
  return &plugin;
}
