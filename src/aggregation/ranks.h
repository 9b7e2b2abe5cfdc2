// Multi-rank profiles: what each rank sends (encoded compactly), and combining the ranks into one
// report (per-module min / mean / max, stragglers). Pure: no torch, no c10d.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flopsprof/report.h"

namespace flopsprof::detail {

/// The first line of `message`, without trailing spaces: a cause quoted in an error message
/// (LibTorch's exceptions append a multi-line C++ backtrace).
std::string first_line(const std::string& message);

/// What one rank sends to the gathering rank.
struct RankProfile {
  RankStats stats;
  int world_size = 0;
  uint64_t signature = 0;  ///< the model: module names, types and parameter counts
  struct Module {
    std::string name, type;
    int depth = 0;
    uint64_t calls = 0, flops = 0, params = 0;
    double fwd_s = 0, bwd_s = 0;
  };
  std::vector<Module> modules;  ///< tree order
};

/// Builds rank `rank`'s profile from its result.
RankProfile make_rank_profile(const ProfileResult& r, int rank, int world_size,
                              const std::string& host, int64_t pid);

/// The model's signature: module names, types and parameter counts, in tree order (FNV-1a).
uint64_t model_signature(const ProfileResult& r);

/// The small header exchanged first (rank, world size, signature, forward calls), and its check:
/// `header_mismatch` returns "" when every header agrees with `mine`, else what differs.
std::string encode_header(const RankProfile& p);
std::string header_mismatch(const RankProfile& mine, const std::vector<std::string>& headers);

/// Line-oriented text with escaped fields; decode throws flopsprof::Error when malformed.
std::string encode_rank(const RankProfile& p);
RankProfile decode_rank(const std::string& text);

/// Combines the ranks (any order; one per rank 0..n-1). Stragglers: ranks whose iteration latency
/// exceeds the median across ranks by more than `threshold` (with the modules that explain at
/// least a tenth of the excess, deepest first), or, the iteration not, whose module's fwd + bwd
/// latency exceeds that module's median by more than `threshold`, and by at least half of
/// `threshold` of the median iteration and 200 us (below that it is noise, not a straggler). The
/// median of an even count is the lower of the two middle values.
DistributedStats combine_ranks(std::vector<RankProfile> ranks, double threshold,
                               const std::string& backend);

}  // namespace flopsprof::detail
