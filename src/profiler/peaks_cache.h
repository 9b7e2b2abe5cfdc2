// The cache of this CPU's measured peaks: one line per machine configuration in
// $FLOPSPROF_CACHE_DIR (or the XDG cache) /machine-peaks.txt, so that a profile measures them
// once per machine (docs/report.md, "The machine's roofline"). Written whole to a temporary file
// and renamed; a line that does not parse or is implausible is measured again.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "flopsprof/roofline.h"

namespace flopsprof::detail {

/// One line of the cache: "<key>\tbandwidth=<B/s>\t<dtype>=<FLOP/s>...\tdetail=<text>".
struct PeaksEntry {
  double bandwidth = 0;
  std::vector<BandwidthLevel> levels;  // the caches, fastest first (main memory: `bandwidth`)
  RateByDtype flops{};
  std::map<std::string, bool> tried;  // dtypes measured (a 0 is "cannot compute it here")
  std::string detail;
  std::string doubt;  // why its measurement looked wrong even measured twice ("": none)
};

/// The cache's folder ("" when no home or cache folder is known: nothing is cached).
std::string peaks_cache_dir();

/// Why an entry's rates cannot all be right ("" when they can): a cache level slower than main
/// memory (by more than the triads' noise, 20%), or a FLOP/s rate under half of what this CPU
/// reached with fewer threads (`others`: the cache's lines; the key differs only in its thread
/// count).
std::string implausible(const PeaksEntry& e, const std::string& key,
                        const std::map<std::string, PeaksEntry>& others);

/// The cache file's real path when it can be read and replaced; "" when not (a FIFO, a device,
/// a folder): no cache then.
std::string usable_cache_file(const std::string& file);

/// The cache's entries by key (empty when the file is absent or unreadable); lines that do not
/// parse are left out.
std::map<std::string, PeaksEntry> read_peaks_cache(const std::string& file);

/// Writes `entries` to `file` in `dir` (made when absent) through a temporary file renamed over
/// it; an unwritable cache is left as it was.
void write_peaks_cache(const std::string& dir, const std::string& file,
                       const std::map<std::string, PeaksEntry>& entries);

}  // namespace flopsprof::detail
