// Chrome trace-event JSON: phases, module and op spans per thread, autograd flows, memory counter.
#include "trace.h"

#include <algorithm>

#include "json_writer.h"

namespace flopsprof::detail {

std::string to_chrome_trace(const TraceData& trace, const std::vector<uint64_t>& thread_ids,
                            const TraceClock& clock, int level,
                            const std::vector<InternalSpan>& internal) {
  auto us = [&](int64_t t) {
    return static_cast<double>(t - clock.origin) * clock.ns_per_tick * 1e-3;
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

  JsonWriter w(-1);
  w.begin_object();
  w.member("displayTimeUnit", "ms");
  w.key("traceEvents");
  w.begin_array();
  w.begin_object();
  w.member("name", "process_name");
  w.member("ph", "M");
  w.member("pid", 1);
  w.key("args");
  w.begin_object();
  w.member("name", "flopsprof");
  w.end_object();
  w.end_object();
  for (size_t t = 0; t < thread_ids.size(); ++t) {
    w.begin_object();
    w.member("name", "thread_name");
    w.member("ph", "M");
    w.member("pid", 1);
    w.member("tid", static_cast<int64_t>(t + 1));
    w.key("args");
    w.begin_object();
    w.member("name", "thread " + std::to_string(thread_ids[t]));
    w.end_object();
    w.end_object();
  }
  for (const TraceData::Span* s : spans) {
    w.begin_object();
    w.member("name", s->name);
    w.member("cat", s->cat);
    w.member("ph", "X");
    w.member("ts", us(s->start));
    w.member("dur", static_cast<double>(s->end - s->start) * clock.ns_per_tick * 1e-3);
    w.member("pid", 1);
    w.member("tid", static_cast<int64_t>(s->thread + 1));
    w.key("args");
    w.begin_object();
    if (std::string_view(s->cat) != "phase") w.member("module", s->module);
    if (!s->phase.empty()) w.member("phase", s->phase);
    if (s->flops >= 0) w.member("flops", s->flops);
    if (!s->inputs.empty()) w.member("inputs", s->inputs);
    w.end_object();
    w.end_object();
  }
  // Flow arrows: forward op (start) -> backward node (end, bound to the enclosing slice).
  int64_t id = 1;
  for (const TraceData::Flow& f : trace.flows) {
    for (int end = 0; end < 2; ++end) {
      w.begin_object();
      w.member("name", "autograd");
      w.member("cat", "autograd");
      w.member("ph", end ? "f" : "s");
      if (end) w.member("bp", "e");
      w.member("id", id);
      w.member("ts", us(end ? f.to : f.from));
      w.member("pid", 1);
      w.member("tid", static_cast<int64_t>((end ? f.to_thread : f.from_thread) + 1));
      w.end_object();
    }
    ++id;
  }
  // GPU tracks: process 2, one thread per stream; flow arrows from the launching op.
  if (!trace.gpu.empty()) {
    w.begin_object();
    w.member("name", "process_name");
    w.member("ph", "M");
    w.member("pid", 2);
    w.key("args");
    w.begin_object();
    w.member("name", "GPU");
    w.end_object();
    w.end_object();
  }
  for (const TraceData::GpuSpan& k : trace.gpu) {
    w.begin_object();
    w.member("name", k.name);
    w.member("cat", "gpu");
    w.member("ph", "X");
    w.member("ts", us(k.start));
    w.member("dur", static_cast<double>(k.end - k.start) * clock.ns_per_tick * 1e-3);
    w.member("pid", 2);
    w.member("tid", static_cast<int64_t>(k.stream));
    w.key("args");
    w.begin_object();
    w.member("module", k.module);
    w.member("device", static_cast<int64_t>(k.device));
    w.end_object();
    w.end_object();
    if (k.launcher_thread < 0) continue;
    for (int end = 0; end < 2; ++end) {
      w.begin_object();
      w.member("name", "launch");
      w.member("cat", "gpu");
      w.member("ph", end ? "f" : "s");
      if (end) w.member("bp", "e");
      w.member("id", id);
      w.member("ts", us(end ? k.start : k.launcher_start));
      w.member("pid", end ? 2 : 1);
      w.member("tid", end ? static_cast<int64_t>(k.stream) : static_cast<int64_t>(k.launcher_thread + 1));
      w.end_object();
    }
    ++id;
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
      w.begin_object();
      w.member("name", s.name);
      w.member("cat", "flopsprof");
      w.member("ph", "X");
      w.member("ts", us(s.start));
      w.member("dur", static_cast<double>(s.end - s.start) * clock.ns_per_tick * 1e-3);
      w.member("pid", 1);
      w.member("tid", int64_t{0});
      w.end_object();
    }
  }
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace flopsprof::detail
