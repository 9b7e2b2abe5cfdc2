// Choosing the GPU timing backend: CUPTI -> host clock, with the reason shown in the report.
#include "gpu_backend.h"

#include "flopsprof/config.h"

namespace flopsprof::detail {

#ifndef FLOPSPROF_HAS_CUPTI
std::unique_ptr<GpuBackend> make_cupti_backend() { return nullptr; }
#endif

std::unique_ptr<GpuBackend> select_gpu_backend(bool model_on_cuda, std::string* backend_name,
                                               std::string* reason) {
  backend_name->clear();
  reason->clear();
  if (!model_on_cuda) return nullptr;
  std::unique_ptr<GpuBackend> cupti = make_cupti_backend();
  std::string why;
  if (cupti == nullptr) {
    why = "CUPTI not built in (configure with FLOPSPROF_WITH_CUPTI=ON)";
  } else if (cupti->start(&why)) {
    *backend_name = "cupti";
    return cupti;
  }
  // CUDA-event timing is not implemented yet: host timestamps, one synchronization at stop.
  *backend_name = "host clock";
  *reason = "CUPTI unavailable: " + why;
  return nullptr;
}

}  // namespace flopsprof::detail
