// Allocator memory reporting: c10's MemoryReportingInfoBase, recording into the thread buffers.
#pragma once

#include <cstddef>
#include <cstdint>

#include <torch/version.h>

namespace flopsprof::detail {

struct Session;

/// The type of the totals in c10::MemoryReportingInfoBase::reportMemoryUsage.
#if TORCH_VERSION_MAJOR >= 2
using ReportedTotal = size_t;  // LibTorch 2.x
#else
using ReportedTotal = int64_t;
#endif

/// Installs the memory observer for `session` on the calling thread (the autograd engine carries
/// it to its worker threads). Throws Error if the slot is taken (LibTorch's own profiler).
void install_memory_observer(const Session& session);
/// Removes it from the calling thread (no-op if it is not ours). Never throws.
void uninstall_memory_observer() noexcept;

}  // namespace flopsprof::detail
