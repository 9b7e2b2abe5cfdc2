// The stage after capture (src/pipeline/) over a real recording, with its ceilings injected: what
// it computes at the stop and while running, when it computes again, and the trace's parts it hands
// the facade.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "capture/module_index.h"
#include "capture/recording.h"
#include "capture_path.h"
#include "flopsprof/flopsprof.h"
#include "pipeline/pipeline.h"

namespace {

namespace d = flopsprof::detail;

// A recording of a two-layer MLP and the pipeline over it, with a peaks source that records each
// call (the dtypes asked for and whether it may measure) and answers fixed ceilings.
struct Fixture {
  torch::nn::Sequential model{torch::nn::Linear(8, 16), torch::nn::ReLU(),
                              torch::nn::Linear(16, 4)};
  flopsprof::ProfilerOptions options;
  d::ModelIndex index = d::build_model_index(*model.ptr(), {});
  d::Recording recording{flopsprof::make_host_timer()};
  struct Call {
    std::vector<flopsprof::DType> dtypes;
    bool measure;
  };
  std::vector<Call> calls;
  std::unique_ptr<d::Pipeline> pipeline;

  explicit Fixture(std::string problem = "") {
    d::PipelineConfig c;
    c.recording = &recording;
    c.index = &index;
    c.options = &options;
    c.host_device = "the test's CPU";
    c.peaks = [this, problem](const std::vector<flopsprof::DType>& dtypes, bool measure,
                              std::string* why) {
      calls.push_back({dtypes, measure});
      *why = problem;
      flopsprof::MachinePeaks p;
      p.flops_per_s[static_cast<size_t>(flopsprof::DType::kFloat32)] = 1e12;
      p.bytes_per_s = 1e11;
      p.flops_source = p.bandwidth_source = "given";
      return p;
    };
    pipeline = std::make_unique<d::Pipeline>(std::move(c));
  }
  void start() {
    d::RecordingSetup setup;
    setup.capture = d::CaptureRequest::kAuto;  // this run's path (capture_path.h)
    recording.start(index, setup);
  }
  void forward() {
    torch::NoGradGuard no_grad;
    model->forward(torch::randn({3, 8}));
  }
  ~Fixture() { recording.end(); }
};

// 3 x (8 x 16 + 16 x 4) MACs: batch 3 through Linear(8, 16) and Linear(16, 4).
constexpr uint64_t kMacsPerForward = 3 * (8 * 16 + 16 * 4);

TEST(Pipeline, FinishComputesTheStoppedProfileWithItsCeilingsMeasuredOnce) {
  Fixture f;
  EXPECT_EQ(f.pipeline->current(), nullptr);  // nothing recorded yet
  f.start();
  f.forward();
  f.recording.stop();
  f.pipeline->finish();
  const flopsprof::ProfileResult* r = f.pipeline->current();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->macs, kMacsPerForward);
  EXPECT_EQ(r->workload.device, "the test's CPU");
  EXPECT_EQ(r->workload.capture, flopsprof_test::expected_capture());
  EXPECT_FALSE(r->workload.libtorch_version.empty());
  // The ceilings are the source's, asked once, allowed to measure, for the profile's fp32 FLOPs.
  ASSERT_EQ(f.calls.size(), 1u);
  EXPECT_TRUE(f.calls[0].measure);
  ASSERT_EQ(f.calls[0].dtypes.size(), 1u);
  EXPECT_EQ(f.calls[0].dtypes[0], flopsprof::DType::kFloat32);
  EXPECT_EQ(r->machine.peak_flops(flopsprof::DType::kFloat32), 1e12);
  EXPECT_EQ(r->machine.flops_source, "given");
  // Readers after the stop share the one result.
  EXPECT_EQ(f.pipeline->current(), r);
  EXPECT_EQ(f.calls.size(), 1u);
  EXPECT_EQ(f.pipeline->stopped(), r);
  f.pipeline->clear();
  EXPECT_EQ(f.pipeline->current(), nullptr);
}

TEST(Pipeline, ASourcesProblemIsTheProfilesRooflineProblem) {
  Fixture f("no peak for bf16: give one with --peak-flops");
  f.start();
  f.forward();
  f.recording.stop();
  f.pipeline->finish();
  const flopsprof::ProfileResult* r = f.pipeline->current();
  ASSERT_NE(r, nullptr);
  int found = 0;
  for (const std::string& p : r->problems)
    found += p == "roofline: no peak for bf16: give one with --peak-flops";
  EXPECT_EQ(found, 1);
}

TEST(Pipeline, WhileRunningTheSnapshotIsComputedAgainOnlyWhenTheRecordsChanged) {
  Fixture f;
  f.start();
  f.forward();
  const flopsprof::ProfileResult* first = f.pipeline->current();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->macs, kMacsPerForward);
  ASSERT_EQ(f.calls.size(), 1u);
  EXPECT_FALSE(f.calls[0].measure);  // never measured while the program runs
  EXPECT_EQ(f.pipeline->current(), first);
  EXPECT_EQ(f.calls.size(), 1u);  // the same records: not computed again
  EXPECT_EQ(f.pipeline->stopped(), nullptr);
  f.forward();
  const flopsprof::ProfileResult* second = f.pipeline->current();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->macs, 2 * kMacsPerForward);
  EXPECT_EQ(f.calls.size(), 2u);
  // The trace of that state: the facade adds the step and the rank.
  const d::TraceParts t = f.pipeline->trace(1);
  EXPECT_EQ(t.meta.step, -1);
  EXPECT_FALSE(t.meta.distributed);
  EXPECT_FALSE(t.thread_ids.empty());
  EXPECT_GT(t.meta.step_end, t.clock.origin);
  EXPECT_TRUE(t.internal.empty());  // the stop's span exists only once stopped
}

TEST(Pipeline, TheStoppedTraceShowsTheTimeComputingTookAtLevel2) {
  Fixture f;
  f.start();
  f.forward();
  f.recording.stop();
  f.pipeline->finish();
  ASSERT_NE(f.pipeline->current(), nullptr);
  const d::TraceParts one = f.pipeline->trace(1);
  ASSERT_EQ(one.internal.size(), 1u);
  EXPECT_EQ(one.internal[0].name, "flopsprof: stop_profile (computing results)");
  EXPECT_EQ(one.internal[0].start, one.internal[0].end);  // level 1: a mark
  const d::TraceParts two = f.pipeline->trace(2);
  ASSERT_EQ(two.internal.size(), 2u);
  EXPECT_GE(two.internal[0].end, two.internal[0].start);
  EXPECT_EQ(two.internal[1].name, "flopsprof: trace post-processing");
  EXPECT_EQ(two.internal[1].start, two.internal[0].end);
}

}  // namespace
