// Removing the capture's own cost from the records' timestamps (capture/cost_removal.h).
#include "capture/cost_removal.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "capture/interceptor.h"

namespace flopsprof::detail {
namespace {

// One timestamp of a thread and the capture cost spent just before and just after it.
struct Point {
  int64_t tick;
  int order;  // ties: in record order
  int64_t* at;
  int64_t before, after;
};

int64_t ticks(double ns, double ns_per_tick) {
  return ns_per_tick > 0 ? static_cast<int64_t>(std::llround(ns / ns_per_tick)) : 0;
}

// A record's cost in ticks: before its first timestamp, after its last, inside its span.
struct Costs {
  int64_t pre, post, inner;
  double nested;  // ticks per nested record (RecordFunction path)
};

// The calibrated costs in ticks, per kind of record, with the in-place extras.
class CostModel {
 public:
  CostModel(const CaptureCost& cost, const InPlaceExtras& extras, bool dispatch, double ns_per_tick,
            const NameLookup& names)
      : dispatch_(dispatch),
        ns_per_tick_(ns_per_tick),
        names_(names),
        op_(split(cost.op, extras.op)),
        boxed_(split(cost.boxed_op, extras.boxed_op)),
        call_(split(cost.call, extras.call)) {}

  const Costs& call() const { return call_; }
  bool dispatch() const { return dispatch_; }

  // An op's: on the dispatch path, by whether its name takes an unboxed kernel.
  const Costs& op(uint32_t name_id) {
    if (!dispatch_) return op_;
    auto it = unboxed_.find(name_id);
    if (it == unboxed_.end())
      it = unboxed_.emplace(name_id, has_unboxed_kernel(names_.name(name_id))).first;
    return it->second ? op_ : boxed_;
  }

 private:
  Costs split(const RecordCost& c, const InPlaceExtra& x) const {
    const int64_t outer = ticks(c.outer_ns, ns_per_tick_);
    return Costs{outer / 2 + ticks(x.pre_ns, ns_per_tick_),
                 outer - outer / 2 + ticks(x.post_ns, ns_per_tick_),
                 ticks(c.inner_ns + x.inner_ns, ns_per_tick_),
                 ns_per_tick_ > 0 ? c.nested_ns / ns_per_tick_ : 0.0};
  }

  const bool dispatch_;
  const double ns_per_tick_;
  const NameLookup& names_;
  const Costs op_, boxed_, call_;
  std::unordered_map<uint32_t, bool> unboxed_;  // by name id (ids seen so far)
};

// Every timestamp of thread `t` (and of the regions' windows opened on it), with the cost spent
// around it.
void collect_points(ThreadEvents& t, std::vector<RegionWindow>& regions, uint64_t thread_id,
                    CostModel& model, std::vector<Point>& points) {
  points.clear();
  int order = 0;
  auto add = [&](int64_t* at, int64_t before, int64_t after) {
    if (*at != 0) points.push_back(Point{*at, order++, at, before, after});
  };
  const Costs& call = model.call();
  for (RawEvent& e : t.events) {
    Costs c{0, 0, 0, 0};
    int64_t nested = 0;
    if (e.kind == EventKind::kOp) {
      c = model.op(e.name_id);
      if (!model.dispatch())
        nested = std::llround(c.nested * static_cast<double>(e.nested_records));
    } else if (!(model.dispatch() && (e.flags & kEngine))) {  // a node's callback, or the engine's
      c = call;
    }
    add(&e.start_tick, c.pre, 0);
    add(&e.end_tick, c.inner + nested, c.post);
  }
  for (ScopeRecord& r : t.scopes) {
    if (r.window) {  // the call window's bounds are the caller's
      add(&r.enter_tick, 0, 0);
      add(&r.exit_tick, 0, 0);
    } else if (r.start_only) {  // one record, at the call's start
      add(&r.enter_tick, call.pre, 0);
      r.exit_tick = r.enter_tick;
    } else {
      add(&r.enter_tick, call.pre, 0);
      add(&r.exit_tick, call.inner, call.post);
    }
  }
  for (StepRecord& s : t.steps) {
    add(&s.start_tick, 0, 0);
    add(&s.end_tick, 0, 0);
  }
  for (MemRecord& m : t.memory) add(&m.time_tick, 0, 0);
  for (CollectiveRecord& c : t.collectives) add(&c.start_tick, 0, 0);
  for (CollectiveEnd& c : t.collective_ends) add(&c.end_tick, 0, 0);
  for (RegionWindow& w : regions) {
    if (w.thread != thread_id) continue;
    add(&w.start_tick, 0, 0);
    add(&w.end_tick, 0, 0);
  }
}

// Walks a thread's timeline, removing the cost spent so far; never back past the previous
// timestamp (the calibration's estimate can exceed what a short gap held).
void shift(std::vector<Point>& points) {
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    return a.tick != b.tick ? a.tick < b.tick : a.order < b.order;
  });
  int64_t removed = 0, previous = INT64_MIN;
  for (const Point& p : points) {
    removed += p.before;
    int64_t c = p.tick - removed;
    if (c < previous) {
      c = previous;
      removed = p.tick - c;
    }
    *p.at = c;
    previous = c;
    removed += p.after;
  }
}

}  // namespace

InPlaceExtras in_place_extras(const HalfCosts& profile, const CaptureCost& cost) {
  // A half's extra before and after its timestamp; nothing unless both sides timed it.
  auto extra = [&](CostHalf h, double HalfCost::*side) {
    const HalfCost &p = profile[h], &w = cost.in_place[h];
    if (p.n < kMinInPlaceSamples || w.n == 0) return 0.0;
    return std::max(0.0, p.*side - w.*side);
  };
  auto kind = [&](CostHalf open, CostHalf close) {
    InPlaceExtra x;
    x.pre_ns = extra(open, &HalfCost::before_ns);
    x.inner_ns = extra(open, &HalfCost::after_ns) + extra(close, &HalfCost::before_ns);
    x.post_ns = extra(close, &HalfCost::after_ns);
    x.samples = uint64_t{profile[open].n} + profile[close].n;
    return x;
  };
  return InPlaceExtras{kind(kOpOpen, kOpClose), kind(kBoxedOpen, kBoxedClose),
                       kind(kCallEnter, kCallExit)};
}

CostRemoved remove_capture_cost(const std::vector<const ThreadEvents*>& threads,
                                const std::vector<RegionWindow>& regions, const CaptureCost& cost,
                                bool dispatch, double ns_per_tick, const NameLookup& names) {
  CostRemoved out;
  out.regions = regions;
  out.extras = in_place_extras(in_place_means(threads, ns_per_tick), cost);
  CostModel model(cost, out.extras, dispatch, ns_per_tick, names);
  std::vector<Point> points;
  for (const ThreadEvents* src : threads) {
    auto t = std::make_unique<ThreadEvents>(*src);
    collect_points(*t, out.regions, src->thread_id, model, points);
    shift(points);
    // A start-only record's exit is its enter (it encloses nothing).
    for (ScopeRecord& r : t->scopes) {
      if (r.start_only) r.exit_tick = r.enter_tick;
    }
    out.threads.push_back(std::move(t));
  }
  return out;
}

std::string uncalibrated_cache_cost(double raw_s, double corrected_s) {
  if (!(raw_s > 0) || !(corrected_s >= 0) || raw_s - corrected_s < kCacheNoteShare * raw_s)
    return {};
  return fmt::format(
      "the correction removed {:.1f}% of the measured host time: each record's cost as "
      "calibrated, plus what flopsprof's own code cost in place above that; what the records "
      "cost LibTorch's code around them (the dispatcher's turn through flopsprof's kernel, "
      "LibTorch's code and data evicted from the caches) is not measured, so the latencies of "
      "small ops and of their modules still read high (bench/RESULTS.md: an MLP of "
      "Linear(64, 64) at batch 1, its first Linear 1.14-1.22 x its time alone)",
      100.0 * (raw_s - corrected_s) / raw_s);
}

}  // namespace flopsprof::detail
