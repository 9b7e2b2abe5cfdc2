// The KV cache's share of the bytes ops move (see kv_cache.h).
#include "aggregation/kv_cache.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "formulas/common.h"
#include "formulas/registry.h"

namespace flopsprof::detail {
namespace {}  // namespace

std::vector<std::vector<KvBytes>> kv_cache_bytes(const std::vector<const ThreadEvents*>& threads,
                                                 const NameLookup& names,
                                                 const Attribution& attribution,
                                                 const OpCounts& counts) {
  std::vector<std::vector<KvBytes>> out(threads.size());
  std::unordered_map<uint32_t, KvRole> roles;  // by name id, looked up once
  auto role_of = [&](uint32_t id) {
    auto it = roles.find(id);
    if (it == roles.end()) it = roles.emplace(id, kv_cache_role(names.name(id))).first;
    return it->second;
  };
  // An event's argument k with its storage recorded, or null.
  auto stored = [](const ThreadEvents& t, const RawEvent& e, size_t k) -> const ArgRecord* {
    if (k >= e.args_count) return nullptr;
    const ArgRecord& a = t.args[e.args_begin + k];
    return (a.tensor_flags & kArgStorage) ? &a : nullptr;
  };
  // A forward op of the model: its module, else -1.
  auto module_of = [&](size_t t, size_t i) {
    const ThreadAttribution& ta = attribution.threads[t];
    if (ta.phase[i] != Phase::kForward || ta.module[i] < 0) return -1;
    return ta.module[i];
  };
  // The attention ops' reads of keys and values: per (storage, module) the latest read's start,
  // per (storage, module, bytes) the earliest's.
  std::map<std::pair<int64_t, int>, int64_t> latest;
  std::map<std::tuple<int64_t, int, uint64_t>, int64_t> earliest;
  std::vector<std::pair<size_t, size_t>> writers;  // (thread, event)
  for (size_t t = 0; t < threads.size(); ++t) {
    const ThreadEvents& th = *threads[t];
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      if (e.kind != EventKind::kOp || e.args_count == 0) continue;
      const KvRole role = role_of(e.name_id);
      if (role == KvRole::kNone) continue;
      const int m = module_of(t, i);
      if (m < 0) continue;
      if (role != KvRole::kAttention) {
        writers.emplace_back(t, i);
        continue;
      }
      const std::vector<ArgView> args = arg_views(th, e);  // the count stage's extents
      for (size_t k : {size_t{1}, size_t{2}}) {            // keys, values
        const ArgRecord* a = stored(th, e, k);
        if (a == nullptr) continue;
        const uint64_t bytes = sat_mul(args[k].extent, element_bytes(args[k].dtype));
        const int64_t id = th.dims[trailing_at(*a, kArgStorage)];
        auto l = latest.emplace(std::make_pair(id, m), e.start_tick).first;
        l->second = std::max(l->second, e.start_tick);
        auto f = earliest.emplace(std::make_tuple(id, m, bytes), e.start_tick).first;
        f->second = std::min(f->second, e.start_tick);
        if (out[t].empty()) out[t].resize(th.events.size());
        out[t][i].read = sat_add(out[t][i].read, bytes);
      }
    }
  }
  for (const auto& [t, i] : writers) {
    const ThreadEvents& th = *threads[t];
    const RawEvent& e = th.events[i];
    const OpCount& c = counts.threads[t][i];
    const ArgRecord* a = stored(th, e, 0);
    if (a == nullptr || !c.has_bytes()) continue;
    const int64_t id = th.dims[trailing_at(*a, kArgStorage)];
    const int m = module_of(t, i);
    bool cache = false;
    uint64_t old_cache = 0;
    if (role_of(e.name_id) == KvRole::kWritesSelf) {  // read later as keys or values
      auto l = latest.find({id, m});
      cache = l != latest.end() && l->second > e.start_tick;
    } else {  // an append: its first tensor read earlier as keys or values, whole
      old_cache =
          static_cast<uint64_t>(std::max<int64_t>(0, th.dims[trailing_at(*a, kArgStorage) + 1]));
      auto f = earliest.find({id, m, old_cache});
      cache = f != earliest.end() && f->second < e.start_tick;
    }
    if (!cache) continue;
    if (out[t].empty()) out[t].resize(th.events.size());
    out[t][i].read = std::min(old_cache, c.bytes_read);
    out[t][i].written = c.bytes_written;
  }
  return out;
}

}  // namespace flopsprof::detail
