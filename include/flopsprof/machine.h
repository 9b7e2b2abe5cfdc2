// The machine's ceilings for the roofline: a CPU's peaks measured by flopsprof (and cached), or
// given; a GPU's come from its device properties at start_profile().
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

}  // namespace flopsprof
