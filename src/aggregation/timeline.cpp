// The Chrome trace's timeline (phase, module and op spans, autograd flows, device spans, memory
// counter, collectives) from the records and their analysis.
#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <vector>

#include "aggregation/timeline.h"

namespace flopsprof::detail {

namespace {

// build_trace's steps, in order: each thread's ops and autograd nodes (with the flows back to
// the forward ops that created the nodes), the phases and optimizer steps, the module calls, the
// device's kernels and the module spans over them, the memory counter, the collectives.
class TraceBuilder {
 public:
  TraceBuilder(const AggregateInput& input, const Analysis& analysis)
      : in(input),
        at(analysis.attribution),
        counts(analysis.counts),
        placements(analysis.device),
        tree(*input.tree) {}

  // Each op and autograd node of thread t, as the attribution placed it.
  void events(size_t t) {
    const ThreadEvents& th = *in.threads[t];
    const ThreadAttribution& ta = at.threads[t];
    const int tid = static_cast<int>(t);
    for (size_t i = 0; i < th.events.size(); ++i) {
      const RawEvent& e = th.events[i];
      const int m = ta.module[i];
      const bool node = e.kind == EventKind::kBackwardNode;
      TraceData::Span& sp =
          span(tid, e.start_tick, end_of(e), in.names->name(e.name_id), node ? "autograd" : "op");
      sp.external_id = make_external_id(static_cast<uint32_t>(t), static_cast<uint32_t>(i));
      sp.seq_nr = e.seq_nr;
      if (node) {
        sp.module = module_label(tree, m);
        sp.phase = "backward";
        sp.fwd_thread = e.fwd_thread;
        const Origin o = (e.flags & kEngine) ? Origin{} : at.origin[t][i];
        if (o.thread >= 0) {
          const RawEvent& f = in.threads[o.thread]->events[o.event];
          trace.flows.push_back(TraceData::Flow{o.thread, tid, f.start_tick, e.start_tick});
        }
        continue;
      }
      const Phase ph = ta.phase[i];
      if (ph == Phase::kNone) continue;
      sp.module = module_label(tree, m);
      sp.phase = phase_label(ph, m);
      const OpCount& c = counts.threads[t][i];
      if ((e.flags & kCounted) || c.has_bytes()) op_args(th, e, c, sp);
    }
  }

  // The attribution's phase spans of thread t, then its optimizer steps (this model's).
  void phases(size_t t) {
    const int tid = static_cast<int>(t);
    for (const PhaseSpan& p : at.phase_spans) {
      if (p.thread != tid) continue;
      const char* name = p.phase == Phase::kBackward ? "backward" : "forward";
      span(tid, p.start, p.end, name, "phase").phase = name;
    }
    const ThreadEvents& th = *in.threads[t];
    for (size_t k = 0; k < th.steps.size(); ++k) {
      if (!at.threads[t].step_counts[k]) continue;  // another model's optimizer
      const StepRecord& s = th.steps[k];
      const int64_t end = s.end_tick != 0 ? s.end_tick : in.stop_tick;
      span(tid, s.start_tick, end, "step", "phase").phase = "step";
    }
  }

  // The attribution's module calls.
  void module_calls() {
    for (const CallSpan& c : at.calls) {
      const ModuleNode& node = tree.nodes[c.module];
      TraceData::Span& sp = span(c.thread, c.start, c.end, call_name(node), "module");
      sp.module = node.name;
      sp.phase = "forward";
    }
  }

  // Kernels, copies and sets on the device, each with its launching op's module; per module call
  // and stream, a span from its first kernel's start to its last one's end.
  void device() {
    if (in.gpu == nullptr) return;
    const GpuCollection& g = *in.gpu;
    calls_of.assign(tree.nodes.size(), {});
    for (size_t c = 0; c < at.calls.size(); ++c) calls_of[at.calls[c].module].push_back(c);
    for (auto& cs : calls_of) {
      std::sort(cs.begin(), cs.end(),
                [&](size_t a, size_t b) { return at.calls[a].start < at.calls[b].start; });
    }
    for (size_t rec = 0; rec < g.records.size(); ++rec) {
      const GpuRecord& k = g.records[rec];
      const DevicePlacement& p = placements[rec];
      const int m = p.module;
      const RawEvent* launcher = p.thread >= 0 ? &in.threads[p.thread]->events[p.event] : nullptr;
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
      if (launcher != nullptr && k.kind == GpuKind::kKernel) {
        module_kernel_spans(sp, m, p.thread, launcher->start_tick);
      }
      sp.module = module_label(tree, m);
      if (launcher != nullptr) {
        sp.launcher_thread = p.thread;
        sp.launcher_start = launcher->start_tick;
      }
      trace.gpu.push_back(std::move(sp));
    }
    for (auto& [key, sp] : call_gpu) trace.gpu_modules.push_back(std::move(sp));
  }

  // The bytes in use over time: the analysis' merged memory timeline.
  void memory(const std::vector<MemoryPoint>& timeline) {
    if (!in.track_memory) return;
    trace.memory.reserve(timeline.size());
    for (const MemoryPoint& p : timeline) trace.memory.emplace_back(p.time, p.in_use);
  }

  void collectives(const std::vector<CollectiveCall>& calls) { trace.collectives = calls; }

  TraceData trace;

 private:
  int64_t end_of(const RawEvent& e) const { return e.end_tick != 0 ? e.end_tick : in.stop_tick; }

  static std::string call_name(const ModuleNode& node) {
    return node.type + (node.name.empty() ? "" : " " + node.name);
  }

  TraceData::Span& span(int thread, int64_t start, int64_t end, std::string name, const char* cat) {
    TraceData::Span sp;
    sp.thread = thread;
    sp.start = start;
    sp.end = end;
    sp.name = std::move(name);
    sp.cat = cat;
    trace.spans.push_back(std::move(sp));
    return trace.spans.back();
  }

  // A counted op's FLOPs and its arguments as kineto writes them (HTA reads them).
  static void op_args(const ThreadEvents& th, const RawEvent& e, const OpCount& count,
                      TraceData::Span& sp) {
    if (const FlopCount* fc = count.counted()) sp.flops = static_cast<int64_t>(fc->flops);
    if (count.has_bytes()) {
      auto clamp = [](uint64_t v) {
        return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX));
      };
      sp.bytes = clamp(count.bytes_total());
      sp.bytes_read = clamp(count.bytes_read);
      sp.bytes_written = clamp(count.bytes_written);
      if (sp.flops >= 0 && sp.bytes > 0)
        sp.intensity = static_cast<double>(sp.flops) / static_cast<double>(sp.bytes);
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

  // Widens, for module m and each ancestor, the span of its call (on `thread`, latest started at
  // or before `launched`, not yet ended then) on the kernel's stream to cover kernel `sp`.
  void module_kernel_spans(const TraceData::GpuSpan& sp, int m, int thread, int64_t launched) {
    for (int a = m; a >= 0; a = tree.nodes[a].parent) {
      const std::vector<size_t>& cs = calls_of[a];
      auto ub = std::upper_bound(cs.begin(), cs.end(), launched,
                                 [&](int64_t ts, size_t c) { return ts < at.calls[c].start; });
      for (auto it = ub; it != cs.begin();) {
        const CallSpan& call = at.calls[*--it];
        if (call.thread != thread) continue;
        if (launched > call.end) break;  // its latest call on this thread ended
        auto [slot, fresh] = call_gpu.try_emplace(std::make_pair(*it, sp.stream), sp);
        if (fresh) {
          const ModuleNode& node = tree.nodes[a];
          slot->second.cat = "gpu_user_annotation";
          slot->second.name = call_name(node);
          slot->second.module = node.name;
          slot->second.launcher_thread = -1;
        }
        slot->second.start = std::min(slot->second.start, sp.start);
        slot->second.end = std::max(slot->second.end, sp.end);
        break;
      }
    }
  }

  const AggregateInput& in;
  const Attribution& at;
  const OpCounts& counts;
  const std::vector<DevicePlacement>& placements;  // per device record
  const ModuleTree& tree;
  std::vector<std::vector<size_t>> calls_of;  // per module: its calls, by start
  std::map<std::pair<size_t, uint32_t>, TraceData::GpuSpan> call_gpu;  // (call, stream)
};

}  // namespace

TraceData build_trace(const AggregateInput& in, const Analysis& analysis) {
  TraceBuilder b(in, analysis);
  for (size_t t = 0; t < in.threads.size(); ++t) {
    b.events(t);
    b.phases(t);
  }
  b.module_calls();
  b.device();
  b.memory(analysis.memory);
  b.collectives(analysis.collectives);
  return std::move(b.trace);
}

ProfileResult aggregate_with_trace(const AggregateInput& in, TraceData* trace) {
  const Analysis a = analyze(in);
  *trace = build_trace(in, a);
  return aggregate(in, a);
}

}  // namespace flopsprof::detail
