// The machine's ceilings for the roofline: a CPU's peaks measured by flopsprof (and cached), or
// given; a GPU's come from its datasheet or properties at start_profile(), with a short
// measurement on the device at the first stop_profile() (measure_device_peaks).
#pragma once

#include <string>
#include <vector>

#include "flopsprof/roofline.h"

namespace flopsprof {

/// This CPU's peaks with `threads` threads (0: LibTorch's current count, at::get_num_threads()):
/// peak FLOP/s of a square matrix product (torch::mm, LibTorch's BLAS) for each floating dtype
/// of `dtypes` (fp32 always), and the memory bandwidth of a streaming triad (a = b + s * c, 3
/// arrays larger than the last-level cache, counted as 3 x their bytes: the compulsory traffic
/// flopsprof counts for ops). The product grows until one takes >= 8 ms; each keeps the best of
/// a few: a few hundred ms in all (docs/report.md says what it costs). Kept in a small file per
/// CPU model, thread count, LibTorch version, BLAS library and ATEN_CPU_CAPABILITY
/// ($FLOPSPROF_CACHE_DIR, else $XDG_CACHE_HOME/flopsprof, else ~/.cache/flopsprof:
/// machine-peaks.txt) and read from there afterwards (`use_cache` false: always measure, and
/// keep). A dtype whose product LibTorch cannot compute here is left at 0 (fp32's is used).
/// Runs its tensors with RecordFunction off on this thread (no profile records them). Measure on
/// an idle machine: work running meanwhile lowers the peaks, and they are kept. Thread-safe
/// (one measurement at a time per process). Throws `Error` when nothing can be measured.
MachinePeaks cpu_peaks(const std::vector<DType>& dtypes, int threads = 0, bool use_cache = true);

/// The peaks LibTorch reaches on a device (`device_type` a c10::DeviceType, e.g. CUDA's 1, and
/// its index): the same square torch::mm per dtype (n up to 8192, until one product takes 2 ms)
/// and triad (3 x 128 MiB, 10 passes per timing) as cpu_peaks(), on tensors made on the device,
/// each timed from the host until the device's current stream finished it. Constant operands: no
/// random generator is drawn from. Takes about 100 ms to 1 s and up to 768 MiB of device memory,
/// which stays in LibTorch's caching allocator (reserved, not allocated). Kept for the process
/// (per device and dtypes), not in the file. A profile on a device calls it at its first
/// stop_profile() and shows its figures beside the device's datasheet or property ceilings
/// (MachinePeaks::detail), or uses them when the device has none. Thread-safe. Throws `Error`
/// when LibTorch cannot run them there.
MachinePeaks measure_device_peaks(int device_type, int device_index,
                                  const std::vector<DType>& dtypes);

}  // namespace flopsprof
