// c10d collectives: issue and completion matched, attributed to modules, summed (see
// collectives.h).
#include "aggregation/collectives.h"

#include "aggregation/aggregate.h"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>

namespace flopsprof::detail {

std::string collective_name(const std::string& record_name) {
  const size_t colon = record_name.find(':');
  return colon == std::string::npos ? record_name : record_name.substr(colon + 1);
}

namespace {

struct Issuer {
  int thread = -1, event = -1;
};

// The innermost op running at `t` on a thread other than `self`: where a collective started on a
// backend's worker thread (Gloo starts its record there) was issued.
Issuer running_at(const AggregateInput& in, int self, int64_t t) {
  Issuer best;
  int64_t best_start = INT64_MIN;
  for (size_t k = 0; k < in.threads.size(); ++k) {
    if (static_cast<int>(k) == self) continue;
    const std::vector<RawEvent>& ev = in.threads[k]->events;
    // Events are in start order: the last one started at or before t, then its parents.
    auto it = std::upper_bound(ev.begin(), ev.end(), t,
                               [](int64_t v, const RawEvent& e) { return v < e.start_tick; });
    int i = static_cast<int>(it - ev.begin()) - 1;
    while (i >= 0 && ev[i].end_tick != 0 && ev[i].end_tick < t) i = ev[i].parent;
    if (i >= 0 && ev[i].start_tick > best_start) {
      best = {static_cast<int>(k), i};
      best_start = ev[i].start_tick;
    }
  }
  return best;
}

// The first autograd node record (or engine wrapper) that started at or after `t` on a thread:
// the one its engine task ran next. -1: none.
int next_backward_node(const std::vector<RawEvent>& ev, int64_t t) {
  auto it = std::lower_bound(ev.begin(), ev.end(), t,
                             [](const RawEvent& e, int64_t v) { return e.start_tick < v; });
  for (; it != ev.end(); ++it) {
    if (it->kind == EventKind::kBackwardNode) return static_cast<int>(it - ev.begin());
  }
  return -1;
}

}  // namespace

std::vector<CollectiveCall> collective_calls(const AggregateInput& in, const Attribution& at) {
  // Completions, by (issuing thread, index): they are recorded by the thread that completed them.
  std::map<std::pair<uint32_t, uint32_t>, int64_t> ends;
  for (const ThreadEvents* th : in.threads) {
    for (const CollectiveEnd& e : th->collective_ends) ends[{e.thread, e.index}] = e.end_tick;
  }
  std::vector<CollectiveCall> out;
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    for (size_t i = 0; i < th.collectives.size(); ++i) {
      const CollectiveRecord& c = th.collectives[i];
      CollectiveCall call;
      call.thread = static_cast<int>(t);
      call.numel = c.numel;
      call.bytes = c.bytes;
      call.tensors = c.tensors;
      call.dtype = c.dtype;
      call.start = c.start_tick;
      auto it = ends.find({static_cast<uint32_t>(t), static_cast<uint32_t>(i)});
      call.completed = it != ends.end();
      call.end = call.completed ? std::max(it->second, c.start_tick) : in.stop_tick;
      call.name = in.names->name(c.name_id);
      call.short_name = collective_name(call.name);
      // Where it was issued: the op open on its thread when it started, or (a record started on
      // a backend's worker thread) the innermost op running then on another thread.
      Issuer issuer{static_cast<int>(t), c.op};
      if (c.op < 0 && (c.flags & kBackward)) {
        // In an engine task before its node's record (a gradient hook, dispatch capture): the
        // node's, as RecordFunction places it inside the engine's wrapper of that node.
        issuer.event = next_backward_node(th.events, c.start_tick);
      } else if (c.op < 0 && c.scope < 0) {
        issuer = running_at(in, static_cast<int>(t), c.start_tick);
      }
      uint8_t flags = c.flags;
      int module = kOutsideModel;
      if (issuer.event >= 0) {
        const std::vector<RawEvent>& ev = in.threads[issuer.thread]->events;
        const std::vector<int>& mod = at.threads[issuer.thread].module;
        flags |= ev[issuer.event].flags & (kBackward | kStep);
        module = mod[issuer.event];
        // A gradient hook runs in the parameter's AccumulateGrad, linked to no module: the
        // collective is then the backward of the module whose node produced that gradient, the
        // last backward work of a module before it.
        for (int j = issuer.event - 1; module == kUnlinked && j >= 0; --j) {
          if ((ev[j].flags & kBackward) && mod[j] >= 0) module = mod[j];
        }
      } else if (c.scope >= 0 && static_cast<size_t>(c.scope) < th.scopes.size() &&
                 th.scopes[c.scope].module >= 0) {
        module = th.scopes[c.scope].module;
      }
      call.module = module >= 0               ? in.tree->nodes[module].name
                    : module == kOutsideModel ? "(outside the model)"
                                              : "(autograd)";
      // The issuing op's own phase, from its flags: a collective in an autograd hook or in
      // another model's optimizer step keeps the phase it ran in.
      const Phase phase = (flags & kBackward) ? Phase::kBackward
                          : (flags & kStep)   ? Phase::kStep
                                              : Phase::kForward;
      call.phase = phase_label(phase, module);
      call.dims.assign(th.dims.begin() + c.dims_begin, th.dims.begin() + c.dims_begin + c.rank);
      out.push_back(std::move(call));
    }
  }
  return out;
}

std::vector<CollectiveStats> collective_stats(const std::vector<CollectiveCall>& calls,
                                              double ns_per_tick) {
  std::vector<CollectiveStats> out;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> at;
  for (const CollectiveCall& c : calls) {
    auto [it, fresh] = at.try_emplace({c.module, c.phase, c.name}, out.size());
    if (fresh) {
      CollectiveStats s;
      s.name = c.name;
      s.module = c.module;
      s.phase = c.phase;
      out.push_back(std::move(s));
    }
    CollectiveStats& s = out[it->second];
    ++s.calls;
    s.numel += c.numel;
    s.bytes += c.bytes;
    s.time_s += static_cast<double>(c.end - c.start) * ns_per_tick * 1e-9;
    s.incomplete += c.completed ? 0 : 1;
  }
  return out;
}

}  // namespace flopsprof::detail
