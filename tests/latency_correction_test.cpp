// Latencies with flopsprof's own cost removed (docs/report.md, "Latency correction"): the time
// transform by hand on records made up for it, and what a real profile reports of it. How close
// the corrected latencies come to unprofiled runs is measured in bench/profiler_overhead.cpp
// (timing has no place in a test).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "capture/calibration.h"
#include "capture/cost_removal.h"
#include "capture/names.h"
#include "capture_path.h"
#include "flopsprof/flopsprof.h"

namespace {

namespace d = flopsprof::detail;

d::RawEvent op(uint32_t name, int64_t start, int64_t end, int32_t parent = -1) {
  d::RawEvent e;
  e.name_id = name;
  e.start_tick = start;
  e.end_tick = end;
  e.parent = parent;
  return e;
}

// Per record: outer 20 (10 before its start, 10 after its end), inner 4 (before its end); a
// module call's record outer 6 (3 and 3), inner 2. One tick per ns.
d::CaptureCost costs() {
  d::CaptureCost c;
  c.calibrated = true;
  c.op = d::RecordCost{4, 20, 0};
  c.boxed_op = d::RecordCost{8, 40, 0};
  c.call = d::RecordCost{2, 6, 0};
  return c;
}

TEST(LatencyCorrection, EachTimestampLosesTheCostSpentBeforeItOnItsThread) {
  d::NameTable& names = d::NameTable::instance();
  const uint32_t addmm = names.intern("aten::addmm", 11);  // an unboxed kernel
  const uint32_t abs = names.intern("aten::abs", 9);       // the boxed fallback
  d::ThreadEvents t;
  t.thread_id = 7;
  // A module call [100, 300] holding addmm [120, 160] then abs [200, 260].
  d::ScopeRecord call;
  call.module = 0;
  call.builtin = true;
  call.enter_tick = 100;
  call.exit_tick = 300;
  t.scopes.push_back(call);
  t.events.push_back(op(addmm, 120, 160));
  t.events.push_back(op(abs, 200, 260));
  std::vector<d::RegionWindow> regions(2);
  regions[0].thread = 7;  // this thread's window [90, 310]
  regions[0].start_tick = 90;
  regions[0].end_tick = 310;
  regions[1].thread = 8;  // another thread's: left alone
  regions[1].start_tick = 90;
  regions[1].end_tick = 310;
  const d::CostRemoved r =
      d::remove_capture_cost({&t}, regions, costs(), /*dispatch=*/true, 1.0, names);
  const d::ThreadEvents& u = *r.threads[0];
  // In time order, the cost removed so far: call enter -3; addmm start -10 (13); addmm end -4
  // (17), then +10 after it (27); abs start -20 (47); abs end -8 (55), then +20 (75); call exit -2
  // (77), then +3 (80).
  EXPECT_EQ(u.scopes[0].enter_tick, 100 - 3);
  EXPECT_EQ(u.events[0].start_tick, 120 - 13);
  EXPECT_EQ(u.events[0].end_tick, 160 - 17);
  EXPECT_EQ(u.events[1].start_tick, 200 - 47);
  EXPECT_EQ(u.events[1].end_tick, 260 - 55);
  EXPECT_EQ(u.scopes[0].exit_tick, 300 - 77);
  EXPECT_EQ(r.regions[0].start_tick, 90);      // nothing before it
  EXPECT_EQ(r.regions[0].end_tick, 310 - 80);  // everything before it
  EXPECT_EQ(r.regions[1].end_tick, 310);       // another thread's
  // So the call lasts 200 - (its own 2 + the ops' 24 + 48): 126; addmm 40 - 4, abs 60 - 8.
  EXPECT_EQ(u.scopes[0].exit_tick - u.scopes[0].enter_tick, 200 - 2 - 24 - 48);
  EXPECT_EQ(u.events[0].end_tick - u.events[0].start_tick, 40 - 4);
  EXPECT_EQ(u.events[1].end_tick - u.events[1].start_tick, 60 - 8);
  // The input is untouched.
  EXPECT_EQ(t.events[0].start_tick, 120);
}

TEST(LatencyCorrection, NoSpanShrinksBelowNothingAndOpenRecordsStayOpen) {
  d::NameTable& names = d::NameTable::instance();
  const uint32_t addmm = names.intern("aten::addmm", 11);
  d::ThreadEvents t;
  t.events.push_back(op(addmm, 100, 102));  // shorter than its 4 inside
  t.events.push_back(op(addmm, 105, 0));    // still open
  const d::CostRemoved r = d::remove_capture_cost({&t}, {}, costs(), true, 1.0, names);
  const d::ThreadEvents& u = *r.threads[0];
  EXPECT_EQ(u.events[0].start_tick, 100 - 10);
  EXPECT_EQ(u.events[0].end_tick, u.events[0].start_tick) << "a span never below zero";
  // after it: 10 more; the next start's 10 before it; the gap of 3 cannot hold them all
  EXPECT_GE(u.events[1].start_tick, u.events[0].end_tick);
  EXPECT_EQ(u.events[1].end_tick, 0);
}

TEST(LatencyCorrection, RecordFunctionPathCountsNestedRecordsAndDispatchWrappersCostNothing) {
  d::NameTable& names = d::NameTable::instance();
  const uint32_t addmm = names.intern("aten::addmm", 11);
  const uint32_t node = names.intern("AddmmBackward0", 14);
  d::CaptureCost c = costs();
  c.op.nested_ns = 5;
  d::ThreadEvents t;
  d::RawEvent e = op(addmm, 100, 200);
  e.nested_records = 3;  // RecordFunction recorded 3 ops nested in it
  t.events.push_back(e);
  d::RawEvent wrapper = op(node, 300, 400);  // the engine's wrapper...
  wrapper.kind = d::EventKind::kBackwardNode;
  wrapper.flags = d::kBackward | d::kEngine;
  t.events.push_back(wrapper);
  d::RawEvent n = op(node, 310, 390, /*parent=*/1);  // ...and its node
  n.kind = d::EventKind::kBackwardNode;
  n.flags = d::kBackward;
  t.events.push_back(n);
  // RecordFunction path: addmm's inside is 4 + 3 x 5; the wrapper is a record like a node's.
  const d::CostRemoved rf = d::remove_capture_cost({&t}, {}, c, /*dispatch=*/false, 1.0, names);
  EXPECT_EQ(rf.threads[0]->events[0].end_tick - rf.threads[0]->events[0].start_tick,
            100 - (4 + 3 * 5));
  EXPECT_EQ(rf.threads[0]->events[1].end_tick - rf.threads[0]->events[1].start_tick,
            100 - (3 + 2 + 3 + 2));  // its node's 3 + 2 + 3 and its own 2 inside it
  // Dispatch path: flopsprof's own wrapper costs nothing; only its node's record.
  const d::CostRemoved dp = d::remove_capture_cost({&t}, {}, c, /*dispatch=*/true, 1.0, names);
  EXPECT_EQ(dp.threads[0]->events[1].end_tick - dp.threads[0]->events[1].start_tick,
            100 - (3 + 2 + 3));
}

TEST(LatencyCorrection, InPlaceTimingsAddWhatTheProgramsOwnCodeCostAboveTheCalibrations) {
  d::NameTable& names = d::NameTable::instance();
  const uint32_t addmm = names.intern("aten::addmm", 11);  // an unboxed kernel
  d::CaptureCost c = costs();
  // The calibration's own in-place means (ns): an op's opening 5 before its start and 3 after,
  // its closing 2 before its end and 2 after; a call's entry 1 and 1.
  c.in_place[d::kOpOpen] = d::HalfCost{5, 3, 50};
  c.in_place[d::kOpClose] = d::HalfCost{2, 2, 50};
  c.in_place[d::kCallEnter] = d::HalfCost{1, 1, 50};
  d::ThreadEvents t;
  t.events.push_back(op(addmm, 120, 160));
  // This profile's sums (ticks, one per ns): 8 openings at 15 before and 3 after, 8 closings at
  // 6 before and 1 after (below the calibration's: adds nothing); 7 call entries at 9 and 9 (too
  // few to say anything: fewer than kMinInPlaceSamples).
  t.cost_samples[d::kOpOpen] = d::CostSample{8 * 15, 8 * 3, 8};
  t.cost_samples[d::kOpClose] = d::CostSample{8 * 6, 8 * 1, 8};
  t.cost_samples[d::kCallEnter] = d::CostSample{7 * 9, 7 * 9, 7};
  const d::CostRemoved r = d::remove_capture_cost({&t}, {}, c, /*dispatch=*/true, 1.0, names);
  // op: before its start 15 - 5 = 10; inside 3 - 3 = 0 and 6 - 2 = 4; after its end 1 - 2 < 0.
  EXPECT_DOUBLE_EQ(r.extras.op.pre_ns, 10);
  EXPECT_DOUBLE_EQ(r.extras.op.inner_ns, 4);
  EXPECT_DOUBLE_EQ(r.extras.op.post_ns, 0);
  EXPECT_EQ(r.extras.op.samples, 16u);
  EXPECT_DOUBLE_EQ(r.extras.call.total_ns(), 0) << "7 call entries are too few";
  EXPECT_EQ(r.extras.call.samples, 7u);
  EXPECT_DOUBLE_EQ(r.extras.boxed_op.total_ns(), 0) << "none timed";
  // The op's start loses the calibrated 10 before it and the extra 10; its span the calibrated
  // 4 inside it and the extra 4.
  EXPECT_EQ(r.threads[0]->events[0].start_tick, 120 - 20);
  EXPECT_EQ(r.threads[0]->events[0].end_tick - r.threads[0]->events[0].start_tick, 40 - 8);
  // Without the calibration's own timings nothing is added (nothing to compare with).
  const d::CostRemoved bare = d::remove_capture_cost({&t}, {}, costs(), true, 1.0, names);
  EXPECT_DOUBLE_EQ(bare.extras.op.total_ns(), 0);
  EXPECT_EQ(bare.threads[0]->events[0].start_tick, 120 - 10);
  // The means are over every thread's sums, at the profile's ns per tick.
  d::ThreadEvents u;
  u.cost_samples[d::kOpOpen] = d::CostSample{8 * 5, 8 * 3, 8};
  const d::HalfCosts m = d::in_place_means({&t, &u}, 2.0);
  EXPECT_DOUBLE_EQ(m[d::kOpOpen].before_ns, 2.0 * (8 * 15 + 8 * 5) / 16);
  EXPECT_EQ(m[d::kOpOpen].n, 16u);
}

TEST(LatencyCorrection, ItsOwnCodeIsTimedInPlaceOnSampledRecords) {
  torch::nn::Sequential model(torch::nn::Linear(8, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  flopsprof::ProfilerOptions o;
  o.roofline.enabled = false;
  flopsprof::FlopsProfiler prof(model, o);
  prof.start_profile();
  constexpr int kForwards = 100;
  {
    torch::NoGradGuard g;
    for (int i = 0; i < kForwards; ++i) model->forward(torch::randn({2, 8}));
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  const flopsprof::LatencyCorrection& c = r.correction;
  ASSERT_TRUE(c.applied) << c.reason;
  EXPECT_GE(c.op_in_place_ns, 0.0);
  EXPECT_GE(c.call_in_place_ns, 0.0);
  const auto j = nlohmann::json::parse(prof.to_json());
  EXPECT_EQ(j["latency_correction"]["in_place_samples"].get<uint64_t>(), c.in_place_samples);
  EXPECT_DOUBLE_EQ(j["latency_correction"]["op_in_place_ns"].get<double>(), c.op_in_place_ns);
  if (r.timer.find("TSC") == std::string::npos) {  // another clock: nothing timed
    EXPECT_EQ(c.in_place_samples, 0u) << r.timer;
    return;
  }
  // Each forward: 3 observed module calls (2 halves each, each counted down) and 3 top-level
  // ops (the dispatch path counts an op down once and times both its halves); one in 8 to 23
  // is timed, so at least 100 x (6 + 3) / 23 = 39 (RecordFunction path: calls only, 100 x 6 /
  // 23 = 26).
  const bool dispatch = r.workload.capture == "dispatch";
  EXPECT_GE(c.in_place_samples, dispatch ? 39u : 26u);
  // the correction line names the kinds the timings added to, or says they added nothing
  const std::string text = prof.model_profile_string();
  EXPECT_TRUE(
      text.find(fmt::format("on {} record halves", c.in_place_samples)) != std::string::npos ||
      text.find(fmt::format("({} record halves timed)", c.in_place_samples)) != std::string::npos)
      << text;
  EXPECT_EQ(text.find(" 0 ns per"), std::string::npos) << "a kind that added nothing\n" << text;
}

TEST(LatencyCorrection, AProfileReportsBothFiguresAndTheCost) {
  torch::nn::Sequential model(torch::nn::Linear(8, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  flopsprof::ProfilerOptions o;
  o.roofline.enabled = false;
  flopsprof::FlopsProfiler prof(model, o);
  prof.start_profile();
  {
    torch::NoGradGuard g;
    for (int i = 0; i < 3; ++i) model->forward(torch::randn({2, 8}));
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  ASSERT_TRUE(r.correction.applied) << r.correction.reason;
  EXPECT_GE(r.correction.op_outer_ns, 0.0);
  EXPECT_GE(r.correction.call_outer_ns, 0.0);
  EXPECT_GT(r.duration_raw_s, 0.0);
  EXPECT_LE(r.duration_s, r.duration_raw_s);
  for (const auto& m : r.modules) {
    SCOPED_TRACE(m.name);
    EXPECT_LE(m.latency_s, m.latency_raw_s);
    EXPECT_GE(m.latency_s, 0.0);
  }
  for (const auto& op : r.ops) EXPECT_LE(op.latency_s, op.latency_raw_s) << op.name;
  const auto j = nlohmann::json::parse(prof.to_json());
  EXPECT_TRUE(j["latency_correction"]["applied"].get<bool>());
  EXPECT_DOUBLE_EQ(j["summary"]["fwd_latency_raw_s"].get<double>(), r.duration_raw_s);
  EXPECT_DOUBLE_EQ(j["modules"][1]["latency_raw_s"].get<double>(), r.modules[1].latency_raw_s);
  EXPECT_NE(prof.model_profile_string().find("latency correction:"), std::string::npos);
  // the correction's own error is said exactly when it removed a large share (either way: the
  // share is this machine's)
  const double raw = r.duration_raw_s + r.bwd_latency_raw_s + r.step_latency_raw_s;
  const double fixed = r.duration_s + r.bwd_latency_s + r.step_latency_s;
  EXPECT_EQ(r.correction.not_removed.find("is not measured") != std::string::npos,
            raw - fixed >= d::kCacheNoteShare * raw)
      << r.correction.not_removed;
}

TEST(LatencyCorrection, ALargeCorrectionSaysWhatItCannotRemove) {
  // 1% of the measured time or more removed: said, with the share; less: nothing
  EXPECT_EQ(d::uncalibrated_cache_cost(2.0, 1.99), "");           // 0.5%
  EXPECT_EQ(d::uncalibrated_cache_cost(0.0, 0.0), "");            // nothing measured
  const std::string said = d::uncalibrated_cache_cost(2.0, 1.7);  // 0.3 / 2 = 15%
  EXPECT_NE(said.find("removed 15.0% of the measured host time"), std::string::npos) << said;
  EXPECT_NE(said.find("LibTorch's code and data evicted from the caches"), std::string::npos)
      << said;
  EXPECT_NE(d::uncalibrated_cache_cost(1.0, 0.99), "");  // 1% exactly
}

TEST(LatencyCorrection, AStepTimerIsNotCorrectedAndSaysWhy) {
  torch::nn::Linear model(4, 4);
  flopsprof::ProfilerOptions o;
  o.roofline.enabled = false;
  o.timer = flopsprof::make_step_timer(1000);
  flopsprof::FlopsProfiler prof(model, o);
  prof.start_profile();
  model->forward(torch::randn({2, 4}));
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  EXPECT_FALSE(r.correction.applied);
  EXPECT_NE(r.correction.reason.find("custom timer"), std::string::npos) << r.correction.reason;
  EXPECT_EQ(r.duration_s, r.duration_raw_s);
  EXPECT_NE(prof.model_profile_string().find("none (latencies include flopsprof's own cost)"),
            std::string::npos);
}

// A new process's first profiler: the one-off work (the dispatch kernels installed, the path's
// cost measured) runs when the profiler is made, not at its start, and leaves the program's
// random numbers as they were; a profile that starts with no built-in module call since that work
// says its first ops ran cold; the next one, after the first one's forward, does not. Returns
// what failed (0: nothing), in a process of its own (the work is done once per process).
int first_profiler_in_a_process() {
  if (d::cached_capture_cost(true).calibrated || d::cached_capture_cost(false).calibrated) {
    std::fprintf(stderr, "a path was measured before the first profiler was made\n");
    return 1;
  }
  torch::nn::Linear model(8, 8);
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::ones({2, 8});
  torch::manual_seed(7);
  const torch::Tensor expected = torch::rand({16});
  torch::manual_seed(7);
  flopsprof::FlopsProfiler prof(model.ptr());
  if (!d::cached_capture_cost(true).calibrated && !d::cached_capture_cost(false).calibrated) {
    std::fprintf(stderr, "making the profiler did not measure the path's cost\n");
    return 2;
  }
  if (!torch::equal(torch::rand({16}), expected)) {
    std::fprintf(stderr, "the one-off work changed the program's random numbers\n");
    return 3;
  }
  int failed = 0;
  for (int k = 0; k < 2; ++k) {
    prof.start_profile();
    model->forward(x);
    prof.stop_profile();
    const flopsprof::LatencyCorrection& c = prof.result().correction;
    const bool said = c.not_removed.find("one-off work") != std::string::npos;
    if (!c.applied || said != (k == 0)) {
      std::fprintf(stderr, "profile %d: applied %d, not_removed \"%s\"\n", k, c.applied,
                   c.not_removed.c_str());
      failed = 4 + k;
    }
  }
  if (prof.model_profile_string().find("one-off work") != std::string::npos) failed = 6;
  return failed;
}

TEST(LatencyCorrection, OneOffWorkRunsWhenTheFirstProfilerIsMadeAndAColdStartSaysSo) {
  // The run that pins the RecordFunction path keeps a profile running in every process, its
  // own child included: the work could not run, and the child would wait on the pin at exit.
  FLOPSPROF_SKIP_IF_PINNED("needs a process with no profile running");
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a new process: the work is done once in one
  EXPECT_EXIT(std::exit(first_profiler_in_a_process()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
