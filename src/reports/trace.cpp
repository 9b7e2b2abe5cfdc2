// Chrome trace-event JSON: phases, module and op spans per thread, autograd flows, memory counter.
#include "reports/trace.h"

#include <algorithm>
#include <string_view>

#include "aggregation/collectives.h"
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

}  // namespace

int64_t kineto_base_time_ns(int64_t wall_ns) {
  constexpr int64_t kThreeMonthsNs = int64_t{7889238} * 1000000000;
  const int64_t q = wall_ns / kThreeMonthsNs;
  return (wall_ns % kThreeMonthsNs < 0 ? q - 1 : q) * kThreeMonthsNs;
}

std::string to_chrome_trace(const TraceData& trace, const std::vector<uint64_t>& thread_ids,
                            const TraceClock& clock, int level,
                            const std::vector<InternalSpan>& internal, const TraceMeta& meta) {
  // In double ns first: the tick difference is small, the offset large but exact.
  auto us = [&](int64_t t) {
    return (static_cast<double>(clock.origin_ns) +
            static_cast<double>(t - clock.origin) * clock.ns_per_tick) *
           1e-3;
  };
  // Parents before children on each thread: by start, then the longer first.
  std::vector<const TraceData::Span*> spans;
  spans.reserve(trace.spans.size());
  for (const auto& s : trace.spans) spans.push_back(&s);
  std::stable_sort(spans.begin(), spans.end(),
                   [](const TraceData::Span* a, const TraceData::Span* b) {
                     if (a->thread != b->thread) return a->thread < b->thread;
                     if (a->start != b->start) return a->start < b->start;
                     return a->end > b->end;
                   });

  // kineto's order: schemaVersion, deviceProperties, distributedInfo, baseTimeNanoseconds, then
  // traceEvents. Written by hand so that "rank": has the space HTA's regex requires.
  JsonWriter head(-1);
  head.begin_object();
  head.member("schemaVersion", int64_t{1});
  head.key("deviceProperties");
  head.begin_array();
  if (!meta.device.empty()) {
    head.begin_object();
    head.member("id", int64_t{0});
    head.member("name", meta.device);
    head.end_object();
  }
  head.end_array();
  head.end_object();
  std::string prefix = head.take();
  prefix.pop_back();  // the closing brace: more members follow
  if (meta.distributed) {
    JsonWriter backend(-1);
    backend.value(meta.backend);
    prefix += ", \"distributedInfo\": {\"backend\": " + backend.take() +
              ", \"rank\": " + std::to_string(meta.rank) +
              ", \"world_size\": " + std::to_string(meta.world_size) + "}";
  }
  prefix += ", \"baseTimeNanoseconds\": " + std::to_string(meta.base_time_ns) + ", ";

  JsonWriter w(-1);
  // Opens a complete event ("ph": "X"): the fields every span, annotation and kernel has.
  auto complete = [&](const std::string& name, const char* cat, int64_t start, int64_t end,
                      int64_t pid, int64_t tid) {
    w.begin_object();
    w.member("name", name);
    w.member("cat", cat);
    w.member("ph", "X");
    w.member("ts", us(start));
    w.member("dur", static_cast<double>(end - start) * clock.ns_per_tick * 1e-3);
    w.member("pid", pid);
    w.member("tid", tid);
  };
  w.begin_object();
  w.member("displayTimeUnit", "ms");
  w.key("traceEvents");
  w.begin_array();
  metadata(w, "process_name", 1, -1, "flopsprof");
  for (size_t t = 0; t < thread_ids.size(); ++t) {
    metadata(w, "thread_name", 1, static_cast<int64_t>(t + 1),
             "thread " + std::to_string(thread_ids[t]));
  }
  if (meta.step >= 0) {  // kineto's step annotation, the parent of everything on its thread
    complete("ProfilerStep#" + std::to_string(meta.step), "user_annotation", clock.origin,
             meta.step_end, 1, 1);
    w.key("args");
    w.begin_object();
    w.end_object();
    w.end_object();
  }
  for (const TraceData::Span* s : spans) {
    complete(s->name, kineto_category(s->cat), s->start, s->end, 1, s->thread + 1);
    w.key("args");
    w.begin_object();
    if (std::string_view(s->cat) != "phase") w.member("module", s->module);
    if (!s->phase.empty()) w.member("phase", s->phase);
    if (s->flops >= 0) w.member("flops", s->flops);
    if (s->bytes >= 0) {
      w.member("bytes", s->bytes);
      w.member("bytes read", s->bytes_read);
      w.member("bytes written", s->bytes_written);
      // FLOPs per byte moved (ops with a FLOP count)
      if (s->flops >= 0 && s->bytes > 0)
        w.member("intensity", static_cast<double>(s->flops) / static_cast<double>(s->bytes));
    }
    if (!s->inputs.empty()) w.member("inputs", s->inputs);
    if (s->external_id != 0) {
      w.member("External id", s->external_id);
      w.member("Sequence number", s->seq_nr);
      if (s->fwd_thread != 0) w.member("Fwd thread id", s->fwd_thread);
      w.key("Input Dims");
      w.begin_array();
      for (const auto& dims : s->input_dims) {
        w.begin_array();
        for (int64_t d : dims) w.value(d);
        w.end_array();
      }
      w.end_array();
      w.key("Input type");
      w.begin_array();
      for (const auto& t : s->input_types) w.value(t);
      w.end_array();
    }
    w.end_object();
    w.end_object();
  }
  // c10d collectives, as kineto shows a process group's work: a user annotation on the issuing
  // thread, with record_param_comms' size arguments.
  for (const TraceData::Collective& c : trace.collectives) {
    complete(c.name, "user_annotation", c.start, c.end, 1, c.thread + 1);
    w.key("args");
    w.begin_object();
    w.member("Collective name", collective_name(c.name));
    w.member("In msg nelems", c.numel);
    w.member("In msg size", c.bytes);
    w.member("dtype", dtype_name(c.dtype));
    if (meta.distributed) {
      w.member("Process Group Backend", meta.backend);
      w.member("Rank", static_cast<int64_t>(meta.rank));
    }
    w.key("Input Dims");
    w.begin_array();
    w.begin_array();
    for (int64_t d : c.dims) w.value(d);
    w.end_array();
    w.end_array();
    w.member("Input tensors", static_cast<int64_t>(c.tensors));
    w.member("module", c.module);
    w.member("phase", c.phase);
    if (!c.completed) w.member("completed", false);
    w.end_object();
    w.end_object();
  }
  // Flow arrows: forward op (start) -> backward node (end, bound to the enclosing slice).
  int64_t id = 1;
  for (const TraceData::Flow& f : trace.flows) {
    flow(w, "autograd", "fwdbwd", id++, us(f.from), 1, f.from_thread + 1, us(f.to), 1,
         f.to_thread + 1);
  }
  // GPU tracks: process 2, one thread per stream; flow arrows from the launching op.
  if (!trace.gpu.empty()) metadata(w, "process_name", 2, -1, "GPU");
  // A GPU span: kernels, memcpys, memsets (with their stream and launching op) and per-module
  // call spans (gpu_user_annotation).
  auto gpu_span = [&](const TraceData::GpuSpan& k, bool launched) {
    complete(k.name, k.cat, k.start, k.end, 2, k.stream);
    w.key("args");
    w.begin_object();
    w.member("module", k.module);
    w.member("device", static_cast<int64_t>(k.device));
    if (launched) w.member("stream", static_cast<int64_t>(k.stream));
    if (launched && k.external_id != 0) w.member("External id", k.external_id);
    w.end_object();
    w.end_object();
  };
  for (const TraceData::GpuSpan& k : trace.gpu_modules) gpu_span(k, false);
  for (const TraceData::GpuSpan& k : trace.gpu) {
    gpu_span(k, true);
    if (k.launcher_thread < 0) continue;
    flow(w, "launch", "ac2g", id++, us(k.launcher_start), 1, k.launcher_thread + 1, us(k.start), 2,
         static_cast<int64_t>(k.stream));
  }
  if (level >= 2) {
    for (const auto& [t, bytes] : trace.memory) {
      w.begin_object();
      w.member("name", "memory");
      w.member("ph", "C");
      w.member("ts", us(t));
      w.member("pid", 1);
      w.key("args");
      w.begin_object();
      w.member("bytes", bytes);
      w.end_object();
      w.end_object();
    }
    for (const InternalSpan& s : internal) {
      complete(s.name, "flopsprof", s.start, s.end, 1, 0);
      w.end_object();
    }
  }
  w.end_array();
  w.end_object();
  std::string body = w.take();
  return prefix + body.substr(1);
}

}  // namespace flopsprof::detail
