// Control interface of the fake CUPTI library (tests only): what it emits and what it was asked.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
/// Back to defaults: emits nothing extra, enables succeed, clock at 1,000,000 ns.
void fake_cupti_reset();
/// Result of cuptiActivityEnable (a CUptiResult; 0 = success): simulates CUPTI held elsewhere.
void fake_cupti_set_enable_result(int result);
/// Each pushed external id gets one kernel of `kernel_ns`; every `memcpy_every`-th push (0: none)
/// also a memcpy of `memcpy_ns`. Records are back to back on the device clock.
void fake_cupti_set_timing(int64_t kernel_ns, int64_t memcpy_ns, int memcpy_every);
/// Kernels and memcpys written into the backend's buffers, and records dropped for want of one.
uint64_t fake_cupti_kernels();
uint64_t fake_cupti_memcpys();
uint64_t fake_cupti_dropped();
/// Activity kinds enabled now (0 after a clean stop).
int fake_cupti_enabled_kinds();
/// Buffers requested from the backend, and pushes while nothing was enabled.
uint64_t fake_cupti_buffers_requested();
/// A fake CUDA device 0 answering the plugin's device queries (cudaGetDeviceProperties and
/// cudaDeviceGetAttribute, which this library defines ahead of the CUDA runtime's): its name,
/// SMs, clocks (kHz), memory bus (bits) and compute capability. Until set (and after a reset)
/// the queries fail, as the runtime does without a driver.
void fake_cuda_set_device(const char* name, int sm_count, int clock_khz, int memory_clock_khz,
                          int memory_bus_bits, int major, int minor);
}
