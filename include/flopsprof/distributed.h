// Opt-in: profiles of a multi-rank job gathered over c10d into one report.
//
//   #include <flopsprof/distributed.h>
//   prof.stop_profile();                                    // on every rank
//   flopsprof::gather_profile(prof, *store, rank, world);   // every rank calls it
//   if (rank == 0) prof.print_model_profile();              // + per-rank and per-module
//                                                           //   across ranks, stragglers
#pragma once

#include <chrono>
#include <string>

#include "flopsprof/profiler.h"
#include "flopsprof/report.h"

namespace c10d {
class Store;
}

namespace flopsprof {

/// Options of `gather_profile`.
struct GatherOptions {
  /// How long to wait for the other ranks at each exchange; a rank missing after that gives an
  /// `Error` naming the missing ranks (never a hang).
  std::chrono::milliseconds timeout{60000};
  int dst_rank = 0;                   ///< the rank that gets the combined profile
  bool all_ranks = false;             ///< every rank gets it (not only `dst_rank`)
  double straggler_threshold = 0.10;  ///< a straggler is this fraction over the median
  std::string backend = "gloo";  ///< shown in the report and traces (e.g. pg->getBackendName())
  std::string key_prefix = "flopsprof";  ///< store keys used: <prefix>/<round>/...
};

/// Gathers every rank's stopped profile through the job's c10d store (the one its process group
/// was made with: TCPStore, FileStore, a PrefixStore, ...) and combines them on `dst_rank` (or
/// on all ranks): per rank fwd / bwd / step latency and FLOPs, per module min / mean / max
/// latency and the slowest rank, stragglers and the modules that account for them. Attaches the
/// result to `prof` (`print_model_profile`, `to_json`) and labels its traces with the rank.
///
/// Every rank must call it, the same number of times, after `stop_profile()`. A small header
/// (model signature, profiled forward calls, world size) is exchanged first: ranks that profiled
/// different models or steps get an `Error` on every rank, as does a rank missing after
/// `options.timeout`. Cost: one store round trip per rank and exchange; each rank's profile is
/// sent as compact text (about 100 bytes per module). Returns the combined stats on the ranks
/// that get them, else those with only this rank.
DistributedStats gather_profile(FlopsProfiler& prof, c10d::Store& store, int rank, int world_size,
                                const GatherOptions& options = {});

}  // namespace flopsprof
