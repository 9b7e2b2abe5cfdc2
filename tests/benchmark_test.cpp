// Tests of the module benchmark API (Google Benchmark counters) and the op profiler.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "capture_path.h"
#include "flopsprof/benchmark.h"
#include "flopsprof/flopsprof.h"

namespace {

torch::nn::Linear make_linear(benchmark::State&) { return torch::nn::Linear(16, 8); }
std::tuple<torch::Tensor> make_batch(benchmark::State& state) {
  return std::make_tuple(torch::randn({state.range(0), 16}));
}
FLOPSPROF_BENCHMARK_MODULE(BM_TestLinear, make_linear, make_batch)->Arg(4)->Arg(8)->Iterations(3);
FLOPSPROF_BENCHMARK_MODULE_TRAIN(BM_TestLinearTrain, make_linear, make_batch)
    ->Arg(4)
    ->Iterations(2);

class CaptureReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) this->runs[r.benchmark_name()] = r;
  }
  std::map<std::string, Run> runs;
};

TEST(ModuleBenchmark, CountersComeFromTheFormulas) {
  CaptureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  ASSERT_TRUE(reporter.runs.count("BM_TestLinear/4/iterations:3"));
  const auto& r4 = reporter.runs["BM_TestLinear/4/iterations:3"];
  // addmm: 2 * 4*8*16 + 4*8 = 1056 FLOPs, 512 MACs; 16*8 + 8 = 136 parameters
  EXPECT_EQ(r4.counters.at("FLOPs").value, 1056.0);
  EXPECT_EQ(r4.counters.at("MACs").value, 512.0);
  EXPECT_EQ(r4.counters.at("params").value, 136.0);
  EXPECT_GT(r4.counters.at("FLOP/s").value, 0.0);
  EXPECT_EQ(r4.counters.at("bytes_per_iter").value, 4.0 * 8 * 4);  // the [4,8] fp32 output
  const auto& r8 = reporter.runs["BM_TestLinear/8/iterations:3"];
  EXPECT_EQ(r8.counters.at("FLOPs").value, 2.0 * 8 * 8 * 16 + 8 * 8);
  // forward + backward (input needs no grad): forward 1056, backward: weight gradient
  // 2 * 8*16*4 + bias gradient 32, + 136: the warm-up left gradients, so autograd's
  // AccumulateGrad adds the new ones into them (one add per parameter element). The loss `sum()`
  // is the caller's: the Linear's observed call ends before it.
  const auto& t = reporter.runs["BM_TestLinearTrain/4/iterations:2"];
  EXPECT_EQ(t.counters.at("FLOPs").value, 1056.0 + (2.0 * 8 * 16 * 4 + 32) + 136);
}

TEST(OpProfiler, TimesCountsAndCaches) {
  FLOPSPROF_SKIP_IF_PINNED("profile_op runs only while no profile runs: the run pins one");
  flopsprof::clear_op_profile_cache();
  std::vector<c10::IValue> inputs = {torch::randn({8, 16}), torch::randn({16, 4})};
  flopsprof::OpProfile p = flopsprof::profile_op("aten::mm", inputs, torch::kCPU, 5);
  EXPECT_EQ(p.samples_s.size(), 5u);
  EXPECT_LE(p.p10_s, p.median_s);
  EXPECT_LE(p.median_s, p.p90_s);
  EXPECT_GT(p.median_s, 0.0);
  ASSERT_TRUE(p.flops.has_value());
  EXPECT_EQ(p.flops->flops, 2u * 8 * 4 * 16);
  EXPECT_EQ(p.output_bytes, 8 * 4 * 4);
  EXPECT_GE(p.peak_bytes, p.output_bytes);
  EXPECT_EQ(p.workspace_bytes, p.peak_bytes - p.output_bytes);
  EXPECT_FALSE(p.cached);
  EXPECT_EQ(p.device, "cpu");
  flopsprof::OpProfile again = flopsprof::profile_op(
      "aten::mm", {torch::zeros({8, 16}), torch::zeros({16, 4})}, torch::kCPU, 5);
  EXPECT_TRUE(again.cached);  // same op, shapes, dtypes, device
  EXPECT_EQ(again.samples_s, p.samples_s);
  EXPECT_FALSE(flopsprof::profile_op("aten::mm", {torch::zeros({8, 16}), torch::zeros({16, 2})},
                                     torch::kCPU, 5)
                   .cached);
  flopsprof::clear_op_profile_cache();
  EXPECT_FALSE(flopsprof::profile_op("aten::mm", inputs, torch::kCPU, 5).cached);
}

TEST(OpProfiler, OverloadsScalarsAndErrors) {
  FLOPSPROF_SKIP_IF_PINNED("profile_op runs only while no profile runs: the run pins one");
  // add.Tensor(self, other, alpha): numel of the broadcast output
  flopsprof::OpProfile add = flopsprof::profile_op(
      "aten::add.Tensor", {torch::randn({4, 5}), torch::randn({5}), c10::Scalar(2)});
  ASSERT_TRUE(add.flops.has_value());
  EXPECT_EQ(add.flops->flops, 20u);
  flopsprof::OpProfile conv =
      flopsprof::profile_op("aten::conv2d",
                            {torch::randn({1, 3, 8, 8}), torch::randn({4, 3, 3, 3}),
                             torch::Tensor(), std::vector<int64_t>{1, 1},
                             std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, int64_t{1}},
                            torch::kCPU, 3);
  ASSERT_TRUE(conv.flops.has_value());
  EXPECT_EQ(conv.flops->macs, 4u * 64 * 27);  // Cout * out positions * Cin * k*k
  flopsprof::OpProfile cum = flopsprof::profile_op(
      "aten::cumsum", {torch::randn({4, 5}), int64_t{1}, c10::IValue()}, torch::kCPU, 2);
  EXPECT_FALSE(cum.flops.has_value());  // no formula: n/a, not 0
  EXPECT_THROW(flopsprof::profile_op("aten::no_such_op", {}), flopsprof::Error);
  EXPECT_THROW(flopsprof::profile_op("aten::mm", {torch::randn({2, 2}), torch::randn({2, 2})},
                                     torch::kCPU, 0),
               flopsprof::Error);
}

}  // namespace
