// A KV cache's reads and writes, told apart from the other bytes ops move (docs/report.md,
// "KV cache"): computed once per profile from the storages the capture recorded for the ops that
// touch a cache (formulas/registry.h, kv_cache_role).
#pragma once

#include <cstdint>
#include <vector>

#include "aggregation/op_counts.h"
#include "attribution/attribution.h"

namespace flopsprof::detail {

/// Of one op's bytes, those that are a KV cache's.
struct KvBytes {
  uint64_t read = 0, written = 0;
};

/// Per thread, per event (as the threads' `events`; empty for a thread with none):
/// - an attention op (forward) reads its keys and values: their bytes are cache reads (without a
///   cache, a prefill's or a training step's fresh keys and values: the reads are the same);
/// - an op that writes in place (copy_, index_copy_, index_put_) into a storage that a later
///   attention op of the same module reads as keys or values: its written bytes are cache
///   writes (a preallocated cache);
/// - a cat whose first tensor is a storage an earlier attention op of the same module read as
///   keys or values, of the same bytes: the cat reads the old cache and writes the new one
///   (a cache grown by cat); the old cache's bytes are cache reads, its written bytes cache
///   writes.
/// Storage identities are compared, never dereferenced; the module and byte conditions keep a
/// freed storage's reused identity from matching. Only forward ops the attribution placed in a
/// module of the model count. Pure.
std::vector<std::vector<KvBytes>> kv_cache_bytes(const std::vector<const ThreadEvents*>& threads,
                                                 const NameLookup& names,
                                                 const Attribution& attribution,
                                                 const OpCounts& counts);

}  // namespace flopsprof::detail
