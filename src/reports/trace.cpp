// Chrome trace-event JSON: phases, module and op spans per thread, autograd flows, memory counter.
#include "reports/trace.h"

#include <algorithm>
#include <string_view>

#include "reports/json_writer.h"

namespace flopsprof::detail {
namespace {

// A metadata event naming a process (tid < 0) or a thread.
void metadata(JsonWriter& w, const char* what, int64_t pid, int64_t tid, const std::string& name) {
  w.begin_object();
  w.member("name", what);
  w.member("ph", "M");
  w.member("pid", pid);
  if (tid >= 0) w.member("tid", tid);
  w.key("args");
  w.begin_object();
  w.member("name", name);
  w.end_object();
  w.end_object();
}

// A flow arrow: its start ("s") and its end ("f", bound to the enclosing slice).
void flow(JsonWriter& w, const char* name, const char* cat, int64_t id, double from_ts,
          int64_t from_pid, int64_t from_tid, double to_ts, int64_t to_pid, int64_t to_tid) {
  for (int end = 0; end < 2; ++end) {
    w.begin_object();
    w.member("name", name);
    w.member("cat", cat);
    w.member("ph", end ? "f" : "s");
    if (end) w.member("bp", "e");
    w.member("id", id);
    w.member("ts", end ? to_ts : from_ts);
    w.member("pid", end ? to_pid : from_pid);
    w.member("tid", end ? to_tid : from_tid);
    w.end_object();
  }
}

// kineto's categories, which Holistic Trace Analysis and Perfetto's views key on.
const char* kineto_category(const char* cat) {
  const std::string_view c(cat);
  if (c == "op" || c == "autograd") return "cpu_op";
  if (c == "module" || c == "phase") return "user_annotation";
  return cat;
}

// to_chrome_trace's steps, in the order it writes them: the metadata before `traceEvents`, the
// process and thread names, kineto's step annotation, the spans (parents first), the collectives,
// the autograd flows, the device tracks, then (level 2) the memory counter and flopsprof's own
// intervals.
class ChromeTraceWriter {
 public:
  ChromeTraceWriter(const TraceClock& clock, const TraceMeta& meta) : clock_(clock), meta_(meta) {
    w_.begin_object();
    w_.member("displayTimeUnit", "ms");
    w_.key("traceEvents");
    w_.begin_array();
  }

  // kineto's order: schemaVersion, deviceProperties, distributedInfo, baseTimeNanoseconds, then
  // traceEvents. Written by hand so that "rank": has the space HTA's regex requires.
  std::string prefix() const {
    JsonWriter head(-1);
    head.begin_object();
    head.member("schemaVersion", int64_t{1});
    head.key("deviceProperties");
    head.begin_array();
    if (!meta_.device.empty()) {
      head.begin_object();
      head.member("id", int64_t{0});
      head.member("name", meta_.device);
      head.end_object();
    }
    head.end_array();
    head.end_object();
    std::string prefix = head.take();
    prefix.pop_back();  // the closing brace: more members follow
    if (meta_.distributed) {
      JsonWriter backend(-1);
      backend.value(meta_.backend);
      prefix += ", \"distributedInfo\": {\"backend\": " + backend.take() +
                ", \"rank\": " + std::to_string(meta_.rank) +
                ", \"world_size\": " + std::to_string(meta_.world_size) + "}";
    }
    prefix += ", \"baseTimeNanoseconds\": " + std::to_string(meta_.base_time_ns) + ", ";
    return prefix;
  }

  void threads(const std::vector<uint64_t>& thread_ids) {
    metadata(w_, "process_name", 1, -1, "flopsprof");
    for (size_t t = 0; t < thread_ids.size(); ++t) {
      metadata(w_, "thread_name", 1, static_cast<int64_t>(t + 1),
               "thread " + std::to_string(thread_ids[t]));
    }
  }

  // kineto's step annotation, the parent of everything on its thread.
  void step_annotation() {
    if (meta_.step < 0) return;
    complete("ProfilerStep#" + std::to_string(meta_.step), "user_annotation", clock_.origin,
             meta_.step_end, 1, 1);
    w_.key("args");
    w_.begin_object();
    w_.end_object();
    w_.end_object();
  }

  // Phase, module and op spans and autograd nodes; on each thread parents before children (by
  // start, then the longer first).
  void spans(const std::vector<TraceData::Span>& all) {
    std::vector<const TraceData::Span*> spans;
    spans.reserve(all.size());
    for (const auto& s : all) spans.push_back(&s);
    std::stable_sort(spans.begin(), spans.end(),
                     [](const TraceData::Span* a, const TraceData::Span* b) {
                       if (a->thread != b->thread) return a->thread < b->thread;
                       if (a->start != b->start) return a->start < b->start;
                       return a->end > b->end;
                     });
    for (const TraceData::Span* s : spans) span(*s);
  }

  // c10d collectives, as kineto shows a process group's work: a user annotation on the issuing
  // thread, with record_param_comms' size arguments.
  void collectives(const std::vector<TraceData::Collective>& calls) {
    for (const TraceData::Collective& c : calls) {
      complete(c.name, "user_annotation", c.start, c.end, 1, c.thread + 1);
      w_.key("args");
      w_.begin_object();
      w_.member("Collective name", c.short_name);
      w_.member("In msg nelems", c.numel);
      w_.member("In msg size", c.bytes);
      w_.member("dtype", dtype_name(c.dtype));
      if (meta_.distributed) {
        w_.member("Process Group Backend", meta_.backend);
        w_.member("Rank", static_cast<int64_t>(meta_.rank));
      }
      w_.key("Input Dims");
      w_.begin_array();
      w_.begin_array();
      for (int64_t d : c.dims) w_.value(d);
      w_.end_array();
      w_.end_array();
      w_.member("Input tensors", static_cast<int64_t>(c.tensors));
      w_.member("module", c.module);
      w_.member("phase", c.phase);
      if (!c.completed) w_.member("completed", false);
      w_.end_object();
      w_.end_object();
    }
  }

  // Flow arrows: forward op (start) -> backward node (end, bound to the enclosing slice).
  void autograd_flows(const std::vector<TraceData::Flow>& flows) {
    for (const TraceData::Flow& f : flows) {
      flow(w_, "autograd", "fwdbwd", next_flow_++, us(f.from), 1, f.from_thread + 1, us(f.to), 1,
           f.to_thread + 1);
    }
  }

  // GPU tracks: process 2, one thread per stream; the per-module call spans, then the kernels,
  // copies and sets, each with a flow arrow from its launching op.
  void device(const std::vector<TraceData::GpuSpan>& gpu,
              const std::vector<TraceData::GpuSpan>& modules) {
    if (!gpu.empty()) metadata(w_, "process_name", 2, -1, "GPU");
    for (const TraceData::GpuSpan& k : modules) gpu_span(k, false);
    for (const TraceData::GpuSpan& k : gpu) {
      gpu_span(k, true);
      if (k.launcher_thread < 0) continue;
      flow(w_, "launch", "ac2g", next_flow_++, us(k.launcher_start), 1, k.launcher_thread + 1,
           us(k.start), 2, static_cast<int64_t>(k.stream));
    }
  }

  // The bytes in use over time: a counter track.
  void memory(const std::vector<std::pair<int64_t, int64_t>>& points) {
    for (const auto& [t, bytes] : points) {
      w_.begin_object();
      w_.member("name", "memory");
      w_.member("ph", "C");
      w_.member("ts", us(t));
      w_.member("pid", 1);
      w_.key("args");
      w_.begin_object();
      w_.member("bytes", bytes);
      w_.end_object();
      w_.end_object();
    }
  }

  // flopsprof's own intervals (stop_profile's computing, the trace's post-processing).
  void internal(const std::vector<InternalSpan>& spans) {
    for (const InternalSpan& s : spans) {
      complete(s.name, "flopsprof", s.start, s.end, 1, 0);
      w_.end_object();
    }
  }

  // The events after `prefix()`'s members: `traceEvents` closed.
  std::string finish() {
    w_.end_array();
    w_.end_object();
    std::string body = w_.take();
    return body.substr(1);
  }

 private:
  // Trace time in microseconds; in double ns first: the tick difference is small, the offset
  // large but exact.
  double us(int64_t t) const {
    return (static_cast<double>(clock_.origin_ns) +
            static_cast<double>(t - clock_.origin) * clock_.ns_per_tick) *
           1e-3;
  }

  // Opens a complete event ("ph": "X"): the fields every span, annotation and kernel has.
  void complete(const std::string& name, const char* cat, int64_t start, int64_t end, int64_t pid,
                int64_t tid) {
    w_.begin_object();
    w_.member("name", name);
    w_.member("cat", cat);
    w_.member("ph", "X");
    w_.member("ts", us(start));
    w_.member("dur", static_cast<double>(end - start) * clock_.ns_per_tick * 1e-3);
    w_.member("pid", pid);
    w_.member("tid", tid);
  }

  // One span with its args: module, phase, FLOPs, bytes and intensity, inputs, and kineto's
  // args for ops and autograd nodes (HTA reads them).
  void span(const TraceData::Span& s) {
    complete(s.name, kineto_category(s.cat), s.start, s.end, 1, s.thread + 1);
    w_.key("args");
    w_.begin_object();
    if (std::string_view(s.cat) != "phase") w_.member("module", s.module);
    if (!s.phase.empty()) w_.member("phase", s.phase);
    if (s.flops >= 0) w_.member("flops", s.flops);
    if (s.bytes >= 0) {
      w_.member("bytes", s.bytes);
      w_.member("bytes read", s.bytes_read);
      w_.member("bytes written", s.bytes_written);
      if (s.intensity >= 0) w_.member("intensity", s.intensity);
    }
    if (!s.inputs.empty()) w_.member("inputs", s.inputs);
    if (s.external_id != 0) {
      w_.member("External id", s.external_id);
      w_.member("Sequence number", s.seq_nr);
      if (s.fwd_thread != 0) w_.member("Fwd thread id", s.fwd_thread);
      w_.key("Input Dims");
      w_.begin_array();
      for (const auto& dims : s.input_dims) {
        w_.begin_array();
        for (int64_t d : dims) w_.value(d);
        w_.end_array();
      }
      w_.end_array();
      w_.key("Input type");
      w_.begin_array();
      for (const auto& t : s.input_types) w_.value(t);
      w_.end_array();
    }
    w_.end_object();
    w_.end_object();
  }

  // A GPU span: kernels, memcpys, memsets (with their stream and launching op) and per-module
  // call spans (gpu_user_annotation).
  void gpu_span(const TraceData::GpuSpan& k, bool launched) {
    complete(k.name, k.cat, k.start, k.end, 2, k.stream);
    w_.key("args");
    w_.begin_object();
    w_.member("module", k.module);
    w_.member("device", static_cast<int64_t>(k.device));
    if (launched) w_.member("stream", static_cast<int64_t>(k.stream));
    if (launched && k.external_id != 0) w_.member("External id", k.external_id);
    w_.end_object();
    w_.end_object();
  }

  const TraceClock& clock_;
  const TraceMeta& meta_;
  JsonWriter w_{-1};
  int64_t next_flow_ = 1;  // flow ids, shared by autograd and launch arrows
};

}  // namespace

int64_t kineto_base_time_ns(int64_t wall_ns) {
  constexpr int64_t kThreeMonthsNs = int64_t{7889238} * 1000000000;
  const int64_t q = wall_ns / kThreeMonthsNs;
  return (wall_ns % kThreeMonthsNs < 0 ? q - 1 : q) * kThreeMonthsNs;
}

std::string to_chrome_trace(const TraceData& trace, const std::vector<uint64_t>& thread_ids,
                            const TraceClock& clock, int level,
                            const std::vector<InternalSpan>& internal, const TraceMeta& meta) {
  ChromeTraceWriter t(clock, meta);
  const std::string prefix = t.prefix();
  t.threads(thread_ids);
  t.step_annotation();
  t.spans(trace.spans);
  t.collectives(trace.collectives);
  t.autograd_flows(trace.flows);
  t.device(trace.gpu, trace.gpu_modules);
  if (level >= 2) {
    t.memory(trace.memory);
    t.internal(internal);
  }
  return prefix + t.finish();
}

}  // namespace flopsprof::detail
