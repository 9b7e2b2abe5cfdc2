// The aggregation's entry points (aggregate.h): the analysis (memory timeline, attribution, counts,
// collectives, device placements, KV bytes), the steps aggregate() runs in order (aggregator.h)
// and the few that frame them: calls, the model's input, the finish.
#include "aggregation/aggregate.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "aggregation/aggregator.h"
#include "aggregation/collectives.h"
#include "aggregation/regions.h"
#include "aggregation/spread.h"
#include "formulas/registry.h"

namespace flopsprof::detail {

std::vector<MemoryPoint> memory_timeline(const AggregateInput& in, bool* saturated) {
  std::vector<MemoryPoint> points;
  *saturated = false;
  if (!in.track_memory) return points;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const std::vector<MemRecord>& mem = in.threads[t]->memory;
    for (size_t k = 0; k < mem.size(); ++k) {
      MemoryPoint p;
      p.time = mem[k].time_tick;
      p.in_use = mem[k].bytes;
      p.thread = static_cast<uint32_t>(t);
      p.record = static_cast<uint32_t>(k);
      points.push_back(p);
    }
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const MemoryPoint& a, const MemoryPoint& b) { return a.time < b.time; });
  auto record = [&](const MemoryPoint& p) -> const MemRecord& {
    return in.threads[p.thread]->memory[p.record];
  };
  // Workspace: match each free with the allocation of the same block, in time order.
  std::map<std::pair<int8_t, uint64_t>, size_t> live;  // block -> its allocation's point
  for (size_t i = 0; i < points.size(); ++i) {
    const MemRecord& m = record(points[i]);
    if (m.address == 0 || m.bytes == 0) continue;
    const std::pair<int8_t, uint64_t> block{m.device_type, m.address};
    if (m.bytes > 0) {
      live[block] = i;
      continue;
    }
    auto it = live.find(block);
    if (it == live.end()) continue;  // allocated before the profile
    MemoryPoint& alloc = points[it->second];
    const int32_t op = record(alloc).op;
    live.erase(it);
    if (alloc.thread != points[i].thread || op < 0) continue;
    const std::vector<RawEvent>& events = in.threads[alloc.thread]->events;
    for (int32_t e = m.op; e >= op && static_cast<size_t>(e) < events.size();
         e = events[e].parent) {
      if (e == op) {
        alloc.is_workspace = points[i].is_workspace = true;
        break;
      }
    }
  }
  auto add = [saturated](int64_t* total, int64_t bytes) {
    if (__builtin_add_overflow(*total, bytes, total)) {  // absurd meta shapes
      *total = bytes > 0 ? INT64_MAX : INT64_MIN;
      *saturated = true;
    }
  };
  int64_t in_use = 0, workspace = 0;
  for (MemoryPoint& p : points) {
    const int64_t bytes = p.in_use;  // the record's delta until here
    add(&in_use, bytes);
    if (p.is_workspace) add(&workspace, bytes);
    p.in_use = in_use;
    p.workspace = workspace;
  }
  return points;
}

Analysis analyze(const AggregateInput& in) {
  Analysis a{attribute(in),
             count_ops(in.threads, *in.names, in.attention, in.tf32),
             {},
             false,
             {},
             {},
             {}};
  a.kv = kv_cache_bytes(in.threads, *in.names, a.attribution, a.counts);
  a.memory = memory_timeline(in, &a.memory_saturated);
  a.collectives = collective_calls(in, a.attribution);
  if (in.gpu != nullptr) {
    a.device.reserve(in.gpu->records.size());
    for (const GpuRecord& k : in.gpu->records) {
      DevicePlacement p;
      uint32_t t = 0, i = 0;
      if (split_external_id(k.external_id, &t, &i) && t < in.threads.size() &&
          i < in.threads[t]->events.size()) {
        p.thread = static_cast<int>(t);
        p.event = i;
        std::tie(p.module, p.phase) = event_owner(a.attribution, in.threads, t, i);
      }
      a.device.push_back(p);
    }
  }
  return a;
}

ProfileResult aggregate(const AggregateInput& in) { return aggregate(in, analyze(in)); }

namespace agg {

// What the model was fed, where no caller said (a start/stop profile): the data tensor of the
// model's first forward op that read one (its first argument no module owns: the first ops of
// a Linear transpose its weight), "fp32[2, 16]".
void Aggregator::model_input() {
  int64_t first_start = INT64_MAX;
  std::string input;
  size_t first_thread = 0;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    const ThreadAttribution& ta = at.threads[t];
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      if (e.start_tick >= first_start) break;  // events are in start order
      if (e.parent >= 0 || ta.phase[i] != Phase::kForward || ta.module[i] < 0) continue;
      const ArgRecord* data = nullptr;
      for (uint32_t k = e.args_begin; k < e.args_begin + e.args_count && !data; ++k) {
        const ArgRecord& a = th.args[k];
        if (a.kind == ArgKind::kTensor && (a.tensor_flags & kArgData)) data = &a;
      }
      if (data == nullptr) continue;
      std::string sizes;
      for (uint32_t d = 0; d < data->count; ++d)
        sizes += fmt::format("{}{}", d ? ", " : "", th.dims[data->offset + d]);
      input = fmt::format("{}[{}]", dtype_name(data->dtype), sizes);
      first_start = e.start_tick;
      first_thread = t;
      break;
    }
  }
  if (input.empty()) return;
  r.workload.inputs = {input};
  r.workload.inputs_source = "the model's first op";
  // Ops right before it left outside but marked (attribution rule 9): the forward may have
  // begun with them, on other inputs (a mask and a cast of the batch before an Embedding).
  const ThreadEvents& th = *in.threads[first_thread];
  const ThreadAttribution& ta = at.threads[first_thread];
  uint64_t before = 0;
  for (size_t i = 0; i < th.events.size(); ++i) {
    const RawEvent& e = th.events[i];
    if (e.start_tick >= first_start) break;
    before += e.parent < 0 && ta.phase[i] == Phase::kForward && ta.module[i] == kOutsideModel &&
              ta.inferred[i];
  }
  if (before > 0) {
    r.workload.inputs_source = fmt::format(
        "the model's first op ({} op(s) before it may be its forward's, which read other "
        "inputs)",
        before);
  }
}

// Calls and their latency per module (the attribution's call spans).
void Aggregator::add_calls() {
  for (const CallSpan& c : at.calls) {
    ++acc[c.module].calls;
    acc[c.module].ns += c.end - c.start;
    fwd_iters.add(c.module, c.start, c.end - c.start);
  }
}

// Formula errors, overflow, and the collectives per module.
void Aggregator::finish() {
  for (const auto& [msg, count] : counts.errors) {
    r.problems.push_back(fmt::format("{} ({} call(s))", msg, count));
  }
  if (overflow) r.problems.push_back("a FLOP or MAC total overflowed 64 bits and was saturated");
  r.collectives = collective_stats(collectives, in.ns_per_tick);
}

}  // namespace agg

ProfileResult aggregate(const AggregateInput& in, const Analysis& analysis) {
  agg::Aggregator a(in, analysis);
  a.count_events();
  a.add_calls();
  a.model_input();
  a.place_memory();
  a.place_device_activity();
  a.module_table();
  a.footprint();
  a.inference_problems();
  a.op_table();
  a.finish();
  a.shares();
  split_by_region(in, analysis, a.r);
  return std::move(a.r);
}
}  // namespace flopsprof::detail
