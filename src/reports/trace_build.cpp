// The trace stage's first half: the Chrome-trace timeline (phase, module and op spans, autograd
// flows, GPU spans, memory counter) from the records, their attribution and their counts.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "aggregation/collectives.h"
#include "reports/trace.h"

namespace flopsprof::detail {

TraceData build_trace(const AggregateInput& in, const Attribution& at, const OpCounts& counts) {
  const ModuleTree& tree = *in.tree;
  TraceData trace;
  auto end_of = [&](const RawEvent& e) { return e.end_tick != 0 ? e.end_tick : in.stop_tick; };
  auto span = [&](int thread, int64_t start, int64_t end, std::string name,
                  const char* cat) -> TraceData::Span& {
    TraceData::Span sp;
    sp.thread = thread;
    sp.start = start;
    sp.end = end;
    sp.name = std::move(name);
    sp.cat = cat;
    trace.spans.push_back(std::move(sp));
    return trace.spans.back();
  };
  for (size_t t = 0; t < in.threads.size(); ++t) {
    const ThreadEvents& th = *in.threads[t];
    const std::vector<RawEvent>& ev = th.events;
    const ThreadAttribution& ta = at.threads[t];
    const int tid = static_cast<int>(t);
    // Phase spans: runs of consecutive top-level events of one phase (the model's forward only).
    int64_t run_start = -1, run_end = -1;
    const char* run_phase = nullptr;
    auto close = [&] {
      if (run_phase != nullptr) span(tid, run_start, run_end, run_phase, "phase").phase = run_phase;
      run_phase = nullptr;
    };
    for (size_t i = 0; i < ev.size(); ++i) {
      const RawEvent& e = ev[i];
      const int64_t end = end_of(e);
      if (e.parent < 0) {
        const char* ph = (e.flags & kBackward)           ? "backward"
                         : (e.flags & kStep)             ? nullptr
                         : ta.module[i] == kOutsideModel ? nullptr
                                                         : "forward";
        if (ph != run_phase) {
          close();
          if (ph != nullptr) {
            run_phase = ph;
            run_start = e.start_tick;
          }
        }
        run_end = std::max(run_end, end);
      }
      const int m = ta.module[i];
      if (e.kind == EventKind::kBackwardNode) {
        TraceData::Span& sp = span(tid, e.start_tick, end, in.names->name(e.name_id), "autograd");
        sp.module = module_label(tree, m);
        sp.phase = "backward";
        sp.external_id = make_external_id(static_cast<uint32_t>(t), static_cast<uint32_t>(i));
        sp.seq_nr = e.seq_nr;
        sp.fwd_thread = e.fwd_thread;
        const Origin o = (e.flags & kEngine) ? Origin{} : at.origin[t][i];
        if (o.thread >= 0) {
          const RawEvent& f = in.threads[o.thread]->events[o.event];
          trace.flows.push_back(TraceData::Flow{o.thread, tid, f.start_tick, e.start_tick});
        }
        continue;
      }
      TraceData::Span& sp = span(tid, e.start_tick, end, in.names->name(e.name_id), "op");
      sp.external_id = make_external_id(static_cast<uint32_t>(t), static_cast<uint32_t>(i));
      sp.seq_nr = e.seq_nr;
      const Phase ph = ta.phase[i];
      if (ph == Phase::kNone) continue;
      sp.module = module_label(tree, m);
      sp.phase = ph == Phase::kForward && m == kOutsideModel ? "outside" : phase_name(ph);
      if (e.flags & kCounted) {
        if (const FlopCount* fc = counts.threads[t][i].counted()) {
          sp.flops = static_cast<int64_t>(fc->flops);
        }
        const std::vector<ArgView> args = arg_views(th, e);
        sp.inputs = format_args(args);
        for (const ArgView& a : args) {
          const bool shaped = a.kind == ArgKind::kTensor || a.kind == ArgKind::kIntList;
          sp.input_dims.emplace_back(shaped ? std::vector<int64_t>(a.shape.begin(), a.shape.end())
                                            : std::vector<int64_t>{});
          sp.input_types.push_back(a.kind == ArgKind::kTensor ? dtype_name(a.dtype)
                                   : a.kind == ArgKind::kNone ? ""
                                                              : "Scalar");
        }
      }
    }
    close();
    for (size_t k = 0; k < th.steps.size(); ++k) {
      if (!at.threads[t].step_counts[k]) continue;  // another model's optimizer
      const StepRecord& s = th.steps[k];
      const int64_t end = s.end_tick != 0 ? s.end_tick : in.stop_tick;
      span(tid, s.start_tick, end, "step", "phase").phase = "step";
    }
  }
  for (const CallSpan& c : at.calls) {
    const ModuleNode& node = tree.nodes[c.module];
    TraceData::Span& sp = span(c.thread, c.start, c.end,
                               node.type + (node.name.empty() ? "" : " " + node.name), "module");
    sp.module = node.name;
    sp.phase = "forward";
  }
  if (in.gpu != nullptr) {
    const GpuCollection& g = *in.gpu;
    std::map<std::pair<size_t, uint32_t>, TraceData::GpuSpan> call_gpu;  // (call, stream)
    std::vector<std::vector<size_t>> calls_of(tree.nodes.size());        // by start
    for (size_t c = 0; c < at.calls.size(); ++c) calls_of[at.calls[c].module].push_back(c);
    for (auto& cs : calls_of) {
      std::sort(cs.begin(), cs.end(),
                [&](size_t a, size_t b) { return at.calls[a].start < at.calls[b].start; });
    }
    for (const GpuRecord& k : g.records) {
      uint32_t t = 0, i = 0;
      int m = kUnlinked;
      const RawEvent* launcher = nullptr;
      if (split_external_id(k.external_id, &t, &i) && t < in.threads.size() &&
          i < in.threads[t]->events.size()) {
        launcher = &in.threads[t]->events[i];
        m = event_owner(at, in.threads, t, i).first;
      }
      TraceData::GpuSpan sp;
      sp.device = k.device;
      sp.stream = k.stream;
      auto to_host = [&](int64_t ns) {
        return g.host_origin +
               static_cast<int64_t>(static_cast<double>(ns - g.gpu_origin_ns) / in.ns_per_tick);
      };
      sp.start = to_host(k.start_ns);
      sp.end = to_host(k.end_ns);
      sp.name = k.name;
      sp.cat = k.kind == GpuKind::kMemcpy   ? "gpu_memcpy"
               : k.kind == GpuKind::kMemset ? "gpu_memset"
                                            : "kernel";
      sp.external_id = k.external_id;
      // The module calls that launched it: a gpu_user_annotation span per call and stream.
      if (launcher != nullptr && k.kind == GpuKind::kKernel) {
        for (int a = m; a >= 0; a = tree.nodes[a].parent) {
          const std::vector<size_t>& cs = calls_of[a];
          auto ub = std::upper_bound(cs.begin(), cs.end(), launcher->start_tick,
                                     [&](int64_t ts, size_t c) { return ts < at.calls[c].start; });
          for (auto it = ub; it != cs.begin();) {
            const CallSpan& call = at.calls[*--it];
            if (call.thread != static_cast<int>(t)) continue;
            if (launcher->start_tick > call.end) break;  // its latest call on this thread ended
            auto [slot, fresh] = call_gpu.try_emplace(std::make_pair(*it, k.stream), sp);
            if (fresh) {
              const ModuleNode& node = tree.nodes[a];
              slot->second.cat = "gpu_user_annotation";
              slot->second.name = node.type + (node.name.empty() ? "" : " " + node.name);
              slot->second.module = node.name;
              slot->second.launcher_thread = -1;
            }
            slot->second.start = std::min(slot->second.start, sp.start);
            slot->second.end = std::max(slot->second.end, sp.end);
            break;
          }
        }
      }
      sp.module = module_label(tree, m);
      if (launcher != nullptr) {
        sp.launcher_thread = static_cast<int>(t);
        sp.launcher_start = launcher->start_tick;
      }
      trace.gpu.push_back(std::move(sp));
    }
    for (auto& [key, sp] : call_gpu) trace.gpu_modules.push_back(std::move(sp));
  }
  if (in.track_memory) {
    std::vector<std::pair<int64_t, int64_t>> deltas;
    for (const ThreadEvents* th : in.threads) {
      for (const MemRecord& m : th->memory) deltas.emplace_back(m.time_tick, m.bytes);
    }
    std::stable_sort(deltas.begin(), deltas.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t in_use = 0;
    for (const auto& [time, bytes] : deltas) {
      if (__builtin_add_overflow(in_use, bytes, &in_use))
        in_use = bytes > 0 ? INT64_MAX : INT64_MIN;
      trace.memory.emplace_back(time, in_use);
    }
  }
  trace.collectives = collective_calls(in, at);
  return trace;
}

ProfileResult aggregate_with_trace(const AggregateInput& in, TraceData* trace) {
  const Analysis a = analyze(in);
  *trace = build_trace(in, a.attribution, a.counts);
  return aggregate(in, a.attribution, a.counts);
}

}  // namespace flopsprof::detail
