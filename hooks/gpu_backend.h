// The GPU timing backend interface: CUPTI when available, else the host clock (with the reason).
#pragma once

#include <memory>
#include <string>

#include "gpu.h"

namespace flopsprof::detail {

/// Collects device activity for one profile. `push`/`pop` run on the hot path around every
/// recorded op (only while a backend is active): no locks, no allocation.
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  /// Starts collecting; false (with `reason` set) when the backend cannot run here.
  virtual bool start(std::string* reason) = 0;
  /// Tags the device work launched until the matching pop with `external_id`. noexcept.
  virtual void push(uint64_t external_id) noexcept = 0;
  virtual void pop() noexcept = 0;
  /// Flushes once and returns the records (device timestamps, external ids resolved).
  virtual GpuCollection stop() = 0;
  /// A (device timestamp, host timestamp) pair for aligning the two clocks.
  virtual int64_t device_now_ns() noexcept = 0;
};

/// The CUPTI backend, or null when flopsprof was built without FLOPSPROF_WITH_CUPTI.
std::unique_ptr<GpuBackend> make_cupti_backend();

/// For a model on CUDA: a started CUPTI backend, or null with `backend_name` / `reason` saying
/// what timing falls back to and why (no CUPTI in this build, no driver, CUPTI held by another
/// profiler such as Kineto). For a model not on CUDA: null, both strings empty.
std::unique_ptr<GpuBackend> select_gpu_backend(bool model_on_cuda, std::string* backend_name,
                                               std::string* reason);

}  // namespace flopsprof::detail
