// Bytes moved and the roofline on real LibTorch runs: the issue's two examples, the capture facts
// bytes depend on (a repeated tensor, a broadcast view, a non-contiguous reshape, a tensor list),
// per-phase totals equal to the sum of their ops, a training step's bytes, the machine's peaks
// (given, from the environment, measured and cached, off), and what the reports show of them.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <torch/torch.h>

#include "flopsprof/flopsprof.h"
#include "models/mlp.h"
#include "profiler/peaks.h"

namespace {

using flopsprof::DType;
using flopsprof::FlopsProfiler;
using flopsprof::ProfileResult;
using json = nlohmann::json;

// Given ceilings (no measurement in these tests): 100 GFLOP/s, 10 GB/s, ridge 10 FLOP/B.
flopsprof::ProfilerOptions given_peaks() {
  flopsprof::ProfilerOptions o;
  o.roofline.set_peak_flops(100e9);
  o.roofline.peak_bandwidth = 10e9;
  return o;
}

// Sum of the bytes of `r`'s op rows in `phase`, and the row of `name` there.
uint64_t op_bytes(const ProfileResult& r, const std::string& phase) {
  uint64_t n = 0;
  for (const auto& op : r.ops) {
    if (op.phase == phase) n += op.bytes;
  }
  return n;
}
const flopsprof::OpStats* op_row(const ProfileResult& r, const std::string& name,
                                 const std::string& phase = "forward") {
  for (const auto& op : r.ops) {
    if (op.name == name && op.phase == phase) return &op;
  }
  return nullptr;
}

// A segmentation loss: nll_loss on [N, C, H, W] scores (koba-jon/pytorch_cpp's U-Net). Its kernel
// resizes its output inside the op (aten::resize_, aten::empty: metadata that counts 0 FLOPs and
// moves nothing), which took the bytes from nll_loss itself: 0 B.
TEST(RooflineRun, NllLossOnSegmentationScoresCountsItsBytes) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 4, 1));
  const torch::Tensor x = torch::randn({2, 3, 8, 8});
  const torch::Tensor target = torch::randint(0, 4, {2, 8, 8});  // int64
  FlopsProfiler prof(conv, given_peaks());
  prof.start_profile();
  torch::Tensor loss = torch::nll_loss2d(torch::log_softmax(conv(x), 1), target);
  loss.backward();
  prof.stop_profile();
  const ProfileResult r = prof.result();
  // Forward, outside the model (the outermost nll op carries the bytes): reads the 128 targets
  // (int64: 1,024 B) and one fp32 score per target (512 B); writes the mean (4 B).
  uint64_t forward = 0;
  for (const auto& op : r.ops) {
    if (op.name.find("nll_loss") != std::string::npos && op.phase == "outside") forward += op.bytes;
  }
  EXPECT_EQ(forward, 1024u + 512u + 4u);
  // Backward: nll_loss2d_backward counts its own (issue 45: it had no formula, and its bytes went
  // to the zeros_like and zero_ inside it, its reads lost): per target -grad / total weight, 3
  // FLOPs; reads grad_output (4 B), the 128 targets (1,024 B) and the total weight (4 B), writes
  // the scores' whole gradient, 2 x 4 x 8 x 8 fp32 = 2,048 B. Nothing inside it is counted again.
  const flopsprof::OpStats* back = op_row(r, "aten::nll_loss2d_backward", "outside");
  if (back == nullptr) back = op_row(r, "aten::nll_loss2d_backward", "backward");
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->has_formula);
  EXPECT_EQ(back->flops, 128u * 3);
  EXPECT_EQ(back->bytes, 4u + 1024 + 4 + 2u * 4 * 8 * 8 * 4);
  EXPECT_EQ(op_row(r, "aten::zeros_like", "backward"), nullptr);
  const flopsprof::OpStats* resize = op_row(r, "aten::resize_as_", "backward");
  if (resize != nullptr) EXPECT_EQ(resize->bytes, 0u);
}

TEST(RooflineRun, LinearAndEmbeddingAsTheIssueCountsThem) {
  torch::manual_seed(0);
  torch::nn::Linear fc(16, 32);
  torch::NoGradGuard no_grad;
  // On [10, 16]: one op (addmm on LibTorch 1.13, linear on 2.x) reads x 160 + W 512 + b 32 floats
  // and writes 320: 4,096 bytes.
  {
    FlopsProfiler prof(fc, given_peaks());
    prof.start_profile();
    fc->forward(torch::randn({10, 16}));
    prof.stop_profile();
    EXPECT_EQ(prof.get_module("").bytes, 4096u);
    EXPECT_EQ(prof.get_module("").bytes_read, 704u * 4);
    EXPECT_EQ(prof.get_module("").bytes_written, 320u * 4);
  }
  // On [2, 5, 16] (the issue's example): one aten::linear where LibTorch records it (2.x):
  // 4,096 bytes; LibTorch 1.13's C++ Linear runs matmul(x, W^T) then add_(b) instead, two ops
  // that each read and write: matmul reads x 160 + W 512, writes 320 (3,968 bytes); add_ reads
  // the product 320 + b 32 and writes 320 (2,688 bytes): 6,656 bytes.
  {
    FlopsProfiler prof(fc, given_peaks());
    prof.start_profile();
    fc->forward(torch::randn({2, 5, 16}));
    prof.stop_profile();
    const ProfileResult& r = prof.result();
    if (op_row(r, "aten::linear") != nullptr) {
      EXPECT_EQ(r.modules[0].bytes, 4096u);
    } else {
      ASSERT_NE(op_row(r, "aten::matmul"), nullptr);
      EXPECT_EQ(op_row(r, "aten::matmul")->bytes, 3968u);
      EXPECT_EQ(op_row(r, "aten::add_")->bytes, 2688u);
      EXPECT_EQ(r.modules[0].bytes, 6656u);
    }
  }
  // Embedding(1000, 16) on int64 ids [2, 5]: reads the ids (80) and 10 rows (640), writes 640.
  torch::nn::Embedding emb(1000, 16);
  FlopsProfiler prof(emb, given_peaks());
  torch::Tensor ids = torch::randint(1000, {2, 5}, torch::kLong);
  prof.start_profile();
  emb->forward(ids);
  prof.stop_profile();
  EXPECT_EQ(prof.get_module("").bytes, 1360u);
  EXPECT_EQ(prof.get_module("").bytes_read, 720u);
  // no FLOPs: memory-bound (intensity 0), its share the bandwidth it reached
  EXPECT_EQ(prof.get_module("").roofline.bound, "memory");
  // MFU and HFU have no FLOPs to rate (no dtype's peak applies): unknown, null in the JSON, n/a
  // in the text (docs/json.md); MBU is its bytes over its time against the given 10 GB/s.
  const flopsprof::ModuleStats& m = prof.get_module("");
  EXPECT_EQ(m.mfu, 0.0);
  EXPECT_EQ(m.hfu, 0.0);
  ASSERT_GT(m.latency_s, 0.0);
  EXPECT_DOUBLE_EQ(m.mbu, 1360.0 / (m.latency_s + m.bwd_latency_s) / 10e9);
  const auto j = nlohmann::json::parse(prof.to_json());
  EXPECT_TRUE(j["modules"][0]["mfu"].is_null());
  EXPECT_TRUE(j["modules"][0]["mbu"].is_number());
}

// A module whose forward repeats a tensor, multiplies by a broadcast view, reshapes a transposed
// tensor (a copy) and concatenates.
struct CaptureNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& y) {
    FLOPSPROF_MODULE();
    torch::Tensor a = x * x;                 // one tensor, read once
    torch::Tensor b = x * y.expand({4, 8});  // y's memory: 8 floats
    torch::Tensor c = x.t().reshape({32});   // not contiguous: a copy
    torch::Tensor d = torch::cat({a, b});    // a list of 2 x 32 floats
    return d.sum() + c.sum();
  }
};
TORCH_MODULE(CaptureNet);

TEST(RooflineRun, ARepeatedTensorIsReadOnceABroadcastViewAtItsSizeAReshapeCopyIfStrided) {
  CaptureNet net;
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({4, 8}), y = torch::randn({1, 8});
  FlopsProfiler prof(net, given_peaks());
  prof.start_profile();
  net->forward(x, y);
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  // mul: x*x reads 32 floats, writes 32 (256 B); x*e reads 32 + 8, writes 32 (288 B)
  ASSERT_NE(op_row(r, "aten::mul"), nullptr);
  EXPECT_EQ(op_row(r, "aten::mul")->bytes, 256u + 288u);
  // the transpose and the expand are views: nothing moves
  EXPECT_EQ(op_row(r, "aten::t")->bytes, 0u);
  EXPECT_EQ(op_row(r, "aten::expand")->bytes, 0u);
  // reshape of the transposed [8,4]: a copy, 32 floats read and written
  EXPECT_EQ(op_row(r, "aten::reshape")->bytes, 256u);
  // cat of two [4,8]: reads 64 floats, writes 64
  EXPECT_EQ(op_row(r, "aten::cat")->bytes, 512u);
  EXPECT_EQ(op_row(r, "aten::cat")->bytes_written, 256u);
  // every forward op is the model's: the root's bytes are their sum
  EXPECT_EQ(r.modules[0].bytes, op_bytes(r, "forward"));
  EXPECT_EQ(r.fwd_bytes, op_bytes(r, "forward"));
}

TEST(RooflineRun, EachPhasesBytesAreTheSumOfItsOpsAndTheStepIsCountedByHand) {
  torch::manual_seed(0);
  models::Mlp model(8, 16, 4, 2);
  torch::optim::SGD sgd(model->parameters(), 0.01);
  torch::Tensor x = torch::randn({3, 8}), target = torch::randint(4, {3}, torch::kLong);
  FlopsProfiler prof(model, given_peaks());
  prof.start_profile();
  sgd.zero_grad();
  torch::Tensor loss = torch::nll_loss(model->forward(x), target);
  loss.backward();
  sgd.step();
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  ASSERT_TRUE(r.has_backward);
  ASSERT_TRUE(r.has_step);
  EXPECT_GT(r.fwd_bytes, 0u);
  EXPECT_GT(r.bwd_bytes, 0u);
  EXPECT_EQ(r.fwd_bytes, op_bytes(r, "forward"));
  EXPECT_EQ(r.outside.bytes, op_bytes(r, "outside"));
  EXPECT_EQ(r.bwd_bytes + r.outside.bwd_bytes, op_bytes(r, "backward"));
  EXPECT_EQ(r.step_bytes, op_bytes(r, "step"));
  EXPECT_EQ(r.fwd_bytes, r.fwd_bytes_read + r.fwd_bytes_written);
  // Modules: inclusive, as FLOPs; the root holds every forward op and every linked backward op
  EXPECT_EQ(r.modules[0].bytes, r.fwd_bytes);
  EXPECT_EQ(r.modules[0].bwd_bytes, r.bwd_bytes - r.autograd_bytes);
  uint64_t children = 0;
  for (int c : r.modules[0].children) children += r.modules[c].bytes;
  EXPECT_LE(children, r.modules[0].bytes);
  // SGD without momentum: p.add_(grad, -lr) per parameter reads p and its gradient and writes p:
  // 3 x (8*16 + 16 + 16*16 + 16 + 16*4 + 4 = 484) floats = 5,808 bytes
  EXPECT_EQ(r.step_bytes, 3u * 484 * 4);
  EXPECT_EQ(r.step_bytes_written, 484u * 4);
  // the backward is on the roofline too
  EXPECT_FALSE(r.modules[0].bwd_roofline.bound.empty());
  EXPECT_GT(r.modules[0].bwd_roofline.achieved_bytes_per_s, 0.0);
}

TEST(RooflineRun, PeaksGivenFromTheEnvironmentOrOff) {
  models::Mlp model(8, 16, 4, 1);
  torch::NoGradGuard no_grad;
  auto run = [&](const flopsprof::ProfilerOptions& o) {
    FlopsProfiler prof(model, o);
    prof.start_profile();
    model->forward(torch::randn({3, 8}));
    prof.stop_profile();
    return prof.result();
  };
  ProfileResult given = run(given_peaks());
  EXPECT_EQ(given.machine.flops_source, "given");
  EXPECT_EQ(given.machine.bandwidth_source, "given");
  EXPECT_DOUBLE_EQ(given.machine.peak_flops(DType::kFloat32), 100e9);
  for (const auto& m : given.modules) {
    if (m.bytes > 0) EXPECT_FALSE(m.roofline.bound.empty()) << m.name;
  }
  // The environment, when the options give nothing; the options win when they do
  setenv("FLOPSPROF_PEAK_FLOPS", "fp32=2T", 1);
  setenv("FLOPSPROF_PEAK_BANDWIDTH", "50G", 1);
  ProfileResult env = run(flopsprof::ProfilerOptions{});
  EXPECT_EQ(env.machine.flops_source, "given (FLOPSPROF_PEAK_FLOPS)");
  EXPECT_EQ(env.machine.bandwidth_source, "given (FLOPSPROF_PEAK_BANDWIDTH)");
  EXPECT_DOUBLE_EQ(env.machine.peak_flops(DType::kFloat32), 2e12);
  EXPECT_DOUBLE_EQ(env.machine.bytes_per_s, 50e9);
  ProfileResult over = run(given_peaks());
  EXPECT_EQ(over.machine.flops_source, "given");
  EXPECT_DOUBLE_EQ(over.machine.bytes_per_s, 10e9);
  // A value that does not parse is ignored, said in the problems; the profile is kept
  setenv("FLOPSPROF_PEAK_BANDWIDTH", "fast", 1);
  flopsprof::ProfilerOptions flops_only;
  flops_only.roofline.set_peak_flops(1e12);
  flops_only.roofline.peak_bandwidth = 0;
  setenv("FLOPSPROF_PEAK_FLOPS", "1T", 1);
  ProfileResult bad = run(flops_only);
  bool said = false;
  for (const auto& p : bad.problems)
    said = said || p.find("FLOPSPROF_PEAK_BANDWIDTH ignored") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_GT(bad.flops, 0u);
  unsetenv("FLOPSPROF_PEAK_FLOPS");
  unsetenv("FLOPSPROF_PEAK_BANDWIDTH");
  // Off: no ceilings, no bound; bytes still counted
  flopsprof::ProfilerOptions off;
  off.roofline.enabled = false;
  ProfileResult none = run(off);
  EXPECT_EQ(none.machine.flops_source, "");
  EXPECT_DOUBLE_EQ(none.machine.bytes_per_s, 0.0);
  EXPECT_GT(none.fwd_bytes, 0u);
  EXPECT_EQ(none.modules[0].roofline.bound, "");
  EXPECT_NE(flopsprof::format_text_report(none).find("unknown (not measured"), std::string::npos);
}

// A compute-bound op well above the peak FLOP/s (over 125% for at least 1 ms) says the peak is too
// low (measured on a busy machine and cached, or given too low); at a peak no CPU reaches, nothing.
TEST(RooflineRun, AnOpAboveThePeakSaysThePeakIsTooLow) {
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({256, 256}), b = torch::randn({256, 256});
  auto run = [&](double peak) {
    flopsprof::ProfilerOptions o;
    o.roofline.set_peak_flops(peak);
    o.roofline.peak_bandwidth = 1e9;
    auto dummy = std::make_shared<torch::nn::Module>();
    FlopsProfiler prof(dummy, o);
    prof.start_profile();
    // 256^3 x 2 = 33.6 MFLOP per product (intensity 2 x 256^3 / (3 x 256^2 x 4) = 42.7 FLOP/B,
    // compute-bound at either peak); products until the mm row holds 1 ms of time
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) torch::mm(a, b);
    prof.stop_profile();
    return prof.result();
  };
  auto said = [](const ProfileResult& r) {
    for (const auto& p : r.problems) {
      if (p.find("ran above the peak FLOP/s") != std::string::npos &&
          p.find("aten::mm") != std::string::npos &&
          p.find("lower than this machine reaches") != std::string::npos)
        return true;
    }
    return false;
  };
  // 0.1 GFLOP/s: any BLAS runs a 256^3 product faster than 0.125 GFLOP/s
  const ProfileResult low = run(0.1e9);
  ASSERT_NE(op_row(low, "aten::mm"), nullptr);
  EXPECT_EQ(op_row(low, "aten::mm")->roofline.bound, "compute");
  EXPECT_GT(op_row(low, "aten::mm")->latency_s, 1e-3);
  EXPECT_TRUE(said(low)) << (low.problems.empty() ? "" : low.problems.back());
  // 1 PFLOP/s: no CPU reaches it
  EXPECT_FALSE(said(run(1e15)));
}

// A scratch FLOPSPROF_CACHE_DIR for the peaks' cache file, the measured peaks forgotten on entry
// and exit; the variable restored.
class ScratchPeaksCache {
 public:
  ScratchPeaksCache() {
    if (mkdtemp(dir_) == nullptr) throw std::runtime_error("mkdtemp failed");
    if (const char* old = std::getenv("FLOPSPROF_CACHE_DIR")) saved_ = old;
    setenv("FLOPSPROF_CACHE_DIR", dir_, 1);
    flopsprof::detail::forget_measured_peaks();
  }
  ~ScratchPeaksCache() {
    if (saved_) {
      setenv("FLOPSPROF_CACHE_DIR", saved_->c_str(), 1);
    } else {
      unsetenv("FLOPSPROF_CACHE_DIR");
    }
    flopsprof::detail::forget_measured_peaks();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string dir() const { return dir_; }

 private:
  char dir_[32] = "/tmp/flopsprof_peaks_XXXXXX";
  std::optional<std::string> saved_;
};

// A measured peak that an op beat (here a cached line lowered by hand, as a measurement on a busy
// machine would leave it): the problem names the cache file and both causes, a kernel faster
// than those measured or a busy machine.
TEST(RooflineRun, AnOpAboveAMeasuredPeakNamesTheCacheAndBothCauses) {
  const ScratchPeaksCache cache;
  flopsprof::cpu_peaks({DType::kFloat32}, 0);
  const std::string file = cache.dir() + "/machine-peaks.txt";
  std::string text;
  {
    std::ifstream f(file);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  const size_t at = text.find("\tfp32=");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, text.find('\t', at + 1) - at, "\tfp32=1e8");  // 0.1 GFLOP/s
  std::ofstream(file) << text;
  flopsprof::detail::forget_measured_peaks();

  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({256, 256}), b = torch::randn({256, 256});
  auto dummy = std::make_shared<torch::nn::Module>();
  FlopsProfiler prof(dummy);
  prof.start_profile();
  const auto t0 = std::chrono::steady_clock::now();  // 1 ms of mm at least (see above)
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) torch::mm(a, b);
  prof.stop_profile();
  const ProfileResult r = prof.result();
  EXPECT_EQ(r.machine.flops_source, "measured (cached)");
  bool said = false;
  for (const std::string& p : r.problems) {
    said = said ||
           (p.find("ran above the peak FLOP/s") != std::string::npos &&
            p.find("of the peak FLOP/s (0.1 GFLOP/s, measured (cached))") != std::string::npos &&
            p.find("that work's kernels ran faster than the kernels the peak was "
                   "measured with") != std::string::npos &&
            p.find("; or the peak was measured while the machine was busy (delete " + file) !=
                std::string::npos);
  }
  EXPECT_TRUE(said) << (r.problems.empty() ? "no problems" : r.problems.back());
}

// A cached peak that no CPU measures (NaN, negative, 1e-300: a corrupt or hand-edited cache) is
// not trusted: measured again, never used (1e-300 FLOP/s gave an MFU of 2e306) nor taken as "no
// roofline" (NaN and -1 switched it off).
TEST(RooflineRun, AnImplausibleCachedPeakIsMeasuredAgain) {
  const ScratchPeaksCache cache;
  flopsprof::cpu_peaks({DType::kFloat32}, 0);
  const std::string file = cache.dir() + "/machine-peaks.txt";
  std::string good;
  {
    std::ifstream f(file);
    std::stringstream ss;
    ss << f.rdbuf();
    good = ss.str();
  }
  for (const std::string field : {"fp32", "bandwidth"}) {
    for (const std::string bad : {"nan", "-1", "1e-300", "3e30", "12abc"}) {
      std::string text = good;
      const size_t at = text.find("\t" + field + "=");
      ASSERT_NE(at, std::string::npos) << text;
      text.replace(at, text.find('\t', at + 1) - at, "\t" + field + "=" + bad);
      std::ofstream(file) << text;
      flopsprof::detail::forget_measured_peaks();
      const flopsprof::MachinePeaks p = flopsprof::cpu_peaks({DType::kFloat32}, 0);
      EXPECT_EQ(p.flops_source, "measured") << field << "=" << bad;
      EXPECT_GT(p.flops_per_s[static_cast<size_t>(DType::kFloat32)], 1e6) << field << "=" << bad;
      EXPECT_GT(p.bytes_per_s, 1e6) << field << "=" << bad;
      EXPECT_LT(p.bytes_per_s, 1e15) << field << "=" << bad;
    }
  }
}

// Issue 45: peaks measured on a busy machine were cached as they came (L2 131 MB/s under DRAM's
// 13.3 GB/s, fp32 7.23 GFLOP/s at 2 threads beside 109.5 at 1; L1 24.6 GB/s beside L2's 84.8)
// and flagged every share above them. A cached line whose cache level is slower than DRAM or
// than a farther cache, or whose
// FLOP/s is under half of a line with fewer threads, is measured again; a measurement that stays
// so is used, said (MachinePeaks::doubt, a problems line), and not cached.
TEST(RooflineRun, ImplausibleLevelsOrThreadLinesAreMeasuredAgain) {
  const ScratchPeaksCache cache;
  const std::string file = cache.dir() + "/machine-peaks.txt";
  flopsprof::cpu_peaks({DType::kFloat32}, 2);
  std::string good;
  {
    std::ifstream f(file);
    std::getline(f, good);
  }
  // measured on a busy machine, the line carries its doubt: the lines below are undoubted
  if (const size_t d = good.find("\tdoubt="); d != std::string::npos)
    good.erase(d, good.find('\t', d + 1) - d);
  ASSERT_NE(good.find("|threads=2|"), std::string::npos) << good;
  auto field = [](std::string line, const std::string& name, const std::string& value) {
    const size_t at = line.find("\t" + name + "=");
    if (at == std::string::npos) return line + "\t" + name + "=" + value;  // no cache levels here
    const size_t end = line.find('\t', at + 1);
    return line.replace(at, (end == std::string::npos ? line.size() : end) - at,
                        "\t" + name + "=" + value);
  };
  // (1) L1 400 GB/s, L2 100 MB/s: L2 under DRAM (20 GB/s)
  std::ofstream(file) << field(field(good, "levels", "L1:32768:4e11;L2:1048576:1e8"), "bandwidth",
                               "2e10")
                      << "\n";
  flopsprof::detail::forget_measured_peaks();
  flopsprof::MachinePeaks p = flopsprof::cpu_peaks({DType::kFloat32}, 2);
  EXPECT_EQ(p.flops_source, "measured");  // not "measured (cached)"
  for (const auto& l : p.bandwidth_by_level) EXPECT_NE(l.bytes_per_s, 1e8) << l.name;
  // (1b) L1 30 GB/s under L2 100 GB/s (DRAM 10 GB/s): a nearer cache far slower than a farther
  // one (a milder inversion, L1 155 GB/s under L2 277, is what this machine measures at 2 threads)
  std::ofstream(file) << field(field(good, "levels", "L1:32768:3e10;L2:1048576:1e11"), "bandwidth",
                               "1e10")
                      << "\n";
  flopsprof::detail::forget_measured_peaks();
  p = flopsprof::cpu_peaks({DType::kFloat32}, 2);
  EXPECT_EQ(p.flops_source, "measured");
  for (const auto& l : p.bandwidth_by_level) EXPECT_NE(l.bytes_per_s, 3e10) << l.name;
  // (1c) L1 30 GB/s, barely above DRAM's 20 GB/s (L2 25 GB/s): an L1 at under twice DRAM
  std::ofstream(file) << field(field(good, "levels", "L1:32768:3e10;L2:1048576:2.5e10"),
                               "bandwidth", "2e10")
                      << "\n";
  flopsprof::detail::forget_measured_peaks();
  p = flopsprof::cpu_peaks({DType::kFloat32}, 2);
  EXPECT_EQ(p.flops_source, "measured");
  for (const auto& l : p.bandwidth_by_level) EXPECT_NE(l.bytes_per_s, 3e10) << l.name;
  // (2) the 2-thread line at under half of a 1-thread line's fp32 (1 PFLOP/s, trusted as a
  // rate): measured again, and still so against that line: used, doubted, and kept with its doubt
  // (a later process uses it and says so instead of measuring each time).
  std::string one = good;
  one.replace(one.find("|threads=2|"), 11, "|threads=1|");
  std::ofstream(file) << good << "\n" << field(one, "fp32", "1e15") << "\n";
  flopsprof::detail::forget_measured_peaks();
  p = flopsprof::cpu_peaks({DType::kFloat32}, 2);
  EXPECT_EQ(p.flops_source, "measured");
  EXPECT_NE(p.doubt.find("fp32"), std::string::npos) << p.doubt;
  EXPECT_NE(p.doubt.find("under half of 1.00 PFLOPS at 1"), std::string::npos) << p.doubt;
  {
    std::ifstream f(file);
    std::stringstream text;
    text << f.rdbuf();
    // its line carries the doubt (with any other cause this busy machine adds, a level first)
    const size_t doubt = text.str().find("\tdoubt=");
    ASSERT_NE(doubt, std::string::npos) << text.str();
    EXPECT_NE(text.str().find("under half of 1.00 PFLOPS at 1", doubt), std::string::npos)
        << text.str();
  }
  flopsprof::detail::forget_measured_peaks();
  const flopsprof::MachinePeaks again = flopsprof::cpu_peaks({DType::kFloat32}, 2);
  EXPECT_EQ(again.flops_source, "measured (cached)");
  EXPECT_EQ(again.doubt, p.doubt);
  // a profile against such peaks says so in its problems
  torch::nn::Linear lin(8, 8);
  flopsprof::ProfilerOptions o;
  FlopsProfiler prof(lin, o);
  prof.start_profile();
  lin->forward(torch::randn({4, 8}));
  prof.stop_profile();
  if (prof.result().machine.threads == 2) {
    bool said = false;
    for (const auto& s : prof.result().problems)
      said = said || s.find("this machine's peaks look wrong even measured twice") == 0 ||
             s.find("roofline: this machine's peaks look wrong") == 0;
    EXPECT_TRUE(said) << ::testing::PrintToString(prof.result().problems);
  }
}

// Issue 45: what each number in the text is against. The ridge per level (one DRAM ridge read
// as a contradiction beside 'compute' bounds at 2-4 FLOP/B), utilisation against DRAM said, the
// MFU line's phases as profiled, a registered layer that never ran 'not called' (not 'its work
// is its submodules''), no intensity for 0 FLOPs over 0 B.
struct WithSpareImpl : torch::nn::Module {
  WithSpareImpl()
      : used(register_module("used", torch::nn::Linear(8, 8))),
        spare(register_module("spare", torch::nn::Linear(8, 8))) {}
  torch::Tensor forward(const torch::Tensor& x) { return used(x); }
  torch::nn::Linear used, spare;
};
TORCH_MODULE(WithSpare);

TEST(RooflineRun, TheTextSaysWhatEachNumberIsAgainst) {
  WithSpare model;
  flopsprof::ProfilerOptions o;
  o.roofline.set_peak_flops(100e9);
  o.roofline.bandwidth_levels =
      flopsprof::parse_bandwidth_levels("L1:32K=400G,L2:1M=200G,DRAM=20G");
  FlopsProfiler prof(model, o);
  torch::NoGradGuard no_grad;
  prof.start_profile();
  model->forward(torch::randn({4, 8}));
  prof.stop_profile();
  const std::string text = prof.model_profile_string();
  // 100 GFLOP/s over 400, 200 and 20 GB/s
  const size_t ridges = text.find("machine ridge points (fp32, per memory level):");
  ASSERT_NE(ridges, std::string::npos) << text;
  EXPECT_NE(text.find("L1 0.25 FLOP/B, L2 0.50 FLOP/B, DRAM 5.00 FLOP/B", ridges),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("of the DRAM bandwidth"), std::string::npos) << text;
  EXPECT_NE(text.find("MFU / HFU / MBU (fwd, per-dtype peaks)"), std::string::npos) << text;
  EXPECT_EQ(text.find("fwd + bwd, per-dtype"), std::string::npos) << text;
  EXPECT_NE(text.find("MBU: bytes over the DRAM bandwidth"), std::string::npos) << text;
  const size_t spare = text.find("(spare): Linear(");
  ASSERT_NE(spare, std::string::npos) << text;
  const std::string row = text.substr(spare, text.find('\n', spare) - spare);
  EXPECT_NE(row.find(", not called"), std::string::npos) << row;
  EXPECT_EQ(row.find("its submodules'"), std::string::npos) << row;
  EXPECT_NE(row.find("n/a FLOP/B"), std::string::npos) << row;
  EXPECT_EQ(row.find("0.00 FLOP/B"), std::string::npos) << row;
}

// Issue 45: the problems named a flagged row (the worst, at 4171%) that the op table, the 15
// slowest rows, did not show; and a ceiling blended from several levels was shown as the named
// level's. Every flagged row is in the table; a blended ceiling is said to be one.
struct TwoSizesImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& small, const torch::Tensor& large) {
    torch::relu(large);
    return torch::relu(small);
  }
};
TORCH_MODULE(TwoSizes);

// One Adam training step of a small MLP against given ceilings of 1e8 FLOP/s and B/s (as
// FLOPSPROF_PEAK_*=1e8): most of its shares far above them. `check` reads the profiler.
void low_peak_training_step(const std::function<void(const FlopsProfiler&)>& check) {
  torch::manual_seed(0);
  models::Mlp model(16, 32, 4);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  flopsprof::ProfilerOptions o;
  o.roofline.set_peak_flops(1e8);
  o.roofline.peak_bandwidth = 1e8;
  FlopsProfiler prof(model, o);
  const torch::Tensor x = torch::randn({64, 16});
  prof.start_profile();
  adam.zero_grad();
  model->forward(x).sum().backward();
  adam.step();
  prof.stop_profile();
  check(prof);
}

TEST(RooflineRun, EveryFlaggedRowIsInTheTableAndABlendedCeilingIsSaid) {
  low_peak_training_step([](const FlopsProfiler& prof) {
    const std::string text = prof.model_profile_string();
    const std::string table = text.substr(text.find("Roofline per op"));
    size_t rows = 0, flagged = 0;
    for (const auto& op : prof.result().ops) {
      rows += op.bytes > 0 || op.flops > 0;
      if (!op.roofline.above_ceiling) continue;
      ++flagged;
      bool found = false;
      for (size_t at = table.find(op.name.substr(0, 36)); at != std::string::npos && !found;
           at = table.find(op.name.substr(0, 36), at + 1)) {
        const std::string line = table.substr(at, table.find('\n', at) - at);
        found = line.find(" " + op.phase + " ") != std::string::npos;
      }
      EXPECT_TRUE(found) << op.name << " " << op.phase << "\n" << table;
    }
    EXPECT_GT(rows, 15u) << "more rows than the table's 15 slowest";
    EXPECT_GT(flagged, 0u);
  });
  {
    // relu over 2 K floats (16 KiB read + written: L1) and over 8 K floats (64 KiB: DRAM): one
    // row, its bytes at two levels, its ceiling (16 + 64 KiB) / (16 KiB / 10 MB/s + 64 KiB / 1
    // MB/s) = 1.22 MB/s, neither level's
    TwoSizes model;
    flopsprof::ProfilerOptions o;
    o.roofline.set_peak_flops(1e15);  // all memory-bound
    o.roofline.bandwidth_levels = flopsprof::parse_bandwidth_levels("L1:32K=1e7,DRAM=1e6");
    FlopsProfiler prof(model, o);
    torch::NoGradGuard no_grad;
    prof.start_profile();
    model->forward(torch::randn({2048}), torch::randn({8192}));
    prof.stop_profile();
    bool said = false;
    for (const auto& s : prof.result().problems)
      said = said || s.find(
                         "of its memory ceiling (1.22 MB/s: its bytes at their levels' "
                         "bandwidths, most in DRAM, 1.00 MB/s)") != std::string::npos;
    EXPECT_TRUE(said) << ::testing::PrintToString(prof.result().problems);
    // and the summary's intensity line gives its share of that ceiling, not of DRAM's (a
    // MobileNetV2's "35.4% of the L3 bandwidth" was of 24.57 GB/s, L3's being 15.06)
    const std::string text = prof.model_profile_string();
    const size_t at = text.find("fwd arithmetic intensity (flops / byte):");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_NE(line.find("memory-bound"), std::string::npos) << line;
    EXPECT_NE(line.find("of its memory ceiling ("), std::string::npos) << line;
    EXPECT_NE(line.find(": its bytes at their levels' bandwidths, most in DRAM, 1.00 MB/s)"),
              std::string::npos)
        << line;
  }
}

// A cache level that measured no faster than main memory (this VM's 480 MiB "L3" at 15.06 GB/s
// against DRAM's 14.61): the memory overshoot line says that work placed there is held to DRAM's
// ceiling and that measuring again will not raise it; with L3 2 x DRAM's, it does not.
TEST(RooflineRun, ACacheLevelNoFasterThanMainMemoryIsSaidOnTheOvershootLine) {
  for (const char* levels : {"L1:32K=1e9,L3:1G=1.05e6,DRAM=1e6", "L1:32K=1e9,L3:1G=2e6,DRAM=1e6"}) {
    SCOPED_TRACE(levels);
    TwoSizes model;
    flopsprof::ProfilerOptions o;
    o.roofline.set_peak_flops(1e15);  // all memory-bound, and far above 1-2 MB/s
    o.roofline.bandwidth_levels = flopsprof::parse_bandwidth_levels(levels);
    FlopsProfiler prof(model, o);
    torch::NoGradGuard no_grad;
    prof.start_profile();
    model->forward(torch::randn({2048}), torch::randn({8192}));
    prof.stop_profile();
    std::string line;
    for (const auto& p : prof.result().problems) {
      if (p.rfind("roofline: ", 0) == 0 && p.find("their memory ceiling") != std::string::npos)
        line = p;
    }
    ASSERT_FALSE(line.empty()) << ::testing::PrintToString(prof.result().problems);
    const bool close = std::string(levels).find("=1.05e6") != std::string::npos;
    EXPECT_EQ(line.find("L3 measured within 10% of DRAM (1.05 MB/s against 1.00 MB/s"
                        ": a cache shared with other tenants or larger than this process's "
                        "share of it), so work placed in L3 is held to about DRAM's ceiling, and "
                        "measuring again will not raise it") != std::string::npos,
              close)
        << line;
  }
}

// Issue 45: with a low given ceiling (1e8 FLOP/s and B/s, as FLOPSPROF_PEAK_*=1e8), a training
// step's shares stand far above it: every one above the tolerance is flagged, in every phase, and
// one problems line per side counts them all (19 of 29 modules carried no flag before).
TEST(RooflineRun, EveryShareAboveItsCeilingIsFlagged) {
  low_peak_training_step([](const FlopsProfiler& prof) {
    const ProfileResult& r = prof.result();
    size_t above[2] = {0, 0}, ops[2] = {0, 0}, modules[2] = {0, 0};  // [compute, memory]
    auto check = [&](const flopsprof::RooflinePoint& p, const std::string& what) {
      if (p.bound.empty()) return false;
      EXPECT_EQ(p.above_ceiling, p.share > 1.0 + flopsprof::kCeilingTolerance) << what;
      if (p.above_ceiling) ++above[p.bound == "memory" ? 1 : 0];
      return p.above_ceiling;
    };
    for (const auto& op : r.ops) {
      if (check(op.roofline, op.name + " " + op.phase))
        ++ops[op.roofline.bound == "memory" ? 1 : 0];
    }
    for (const auto& m : r.modules) {
      bool counted[2] = {false, false};
      for (const auto* p : {&m.roofline, &m.bwd_roofline}) {
        if (check(*p, m.name)) counted[p->bound == "memory" ? 1 : 0] = true;
      }
      for (int k = 0; k < 2; ++k) modules[k] += counted[k];
    }
    check(r.step_roofline, "step");
    EXPECT_GT(above[0] + above[1], 0u);
    // one line per side, with its counts
    for (int k = 0; k < 2; ++k) {
      if (ops[k] + modules[k] == 0) continue;
      std::string counts = ops[k] > 0 ? fmt::format("{} op row(s)", ops[k]) : "";
      if (modules[k] > 0)
        counts += fmt::format("{}{} module(s)", counts.empty() ? "" : " and ", modules[k]);
      const std::string want = fmt::format("roofline: {} ran above {}", counts,
                                           k == 1 ? "their memory ceiling" : "the peak FLOP/s");
      bool said = false;
      for (const auto& p : r.problems) said = said || p.rfind(want, 0) == 0;
      EXPECT_TRUE(said) << want << "\n" << ::testing::PrintToString(r.problems);
    }
    // the JSON carries each flag, per phase
    const json j = json::parse(prof.to_json());
    EXPECT_EQ(j["summary"]["step_above_ceiling"], r.step_roofline.above_ceiling);
    EXPECT_EQ(j["modules"][0]["bwd_above_ceiling"], r.modules[0].bwd_roofline.above_ceiling);
  });
}

// With this machine's measured levels, work whose working set sits in a cache is placed against
// that cache's bandwidth: a ReLU over 64 KiB (128 KiB touched) and an AdamW step over 100 K
// parameters sit under their level's ceiling (one DRAM ceiling put such work at up to 296%).
// Never unflagged above it: a measurement on a busy machine may still put it there, and then the
// flag and its problems line say so.
TEST(RooflineRun, SmallWorkingSetsSitUnderTheirCacheLevel) {
  const ScratchPeaksCache cache;
  struct Relu : torch::nn::Module {
    torch::Tensor forward(const torch::Tensor& x) { return torch::relu(x); }
  };
  auto relu = std::make_shared<Relu>();
  const torch::Tensor x = torch::randn({16384});  // 64 KiB
  torch::NoGradGuard no_grad;
  // The levels are this machine's, measured; the peak FLOP/s is given (1 TFLOP/s): this test is
  // about where the bytes sit, and a FLOP/s measured on a busy machine (the LibTorch 2.6 suite
  // beside a build) put the ReLU's 0.125 FLOP/B above L2's ridge, compute-bound.
  flopsprof::ProfilerOptions o;
  o.roofline.set_peak_flops(1e12);
  FlopsProfiler prof(relu, o);
  prof.start_profile();
  for (int i = 0; i < 20; ++i) relu->forward(x);
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  if (r.machine.bandwidth_by_level.size() < 2)  // no /sys/devices/system/cpu/cpu0/cache here
    GTEST_SKIP() << "this machine reports no cache levels: " << r.machine.detail;
  const flopsprof::BandwidthLevel& fit =
      r.machine.bandwidth_by_level[static_cast<size_t>(r.machine.level_for(2 * 65536))];
  const flopsprof::RooflinePoint& p = r.modules[0].roofline;
  EXPECT_EQ(p.bound, "memory");
  EXPECT_EQ(p.ceiling, fit.name);
  EXPECT_NE(p.ceiling, "DRAM") << "128 KiB fits a cache of this machine";
  auto under_or_said = [](const ProfileResult& res, const flopsprof::RooflinePoint& q) {
    if (!q.above_ceiling) return q.share <= 1.0 + flopsprof::kCeilingTolerance;
    for (const auto& s : res.problems) {
      if (s.find("measured while the machine was busy") != std::string::npos) return true;
      if (s.find("peaks look wrong even measured twice") != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(under_or_said(r, p)) << p.share << " of " << p.ceiling;
  // AdamW over 100,000 parameters: the step's ops (each a few hundred KiB) in the caches
  torch::NoGradGuard stop_no_grad;
  torch::Tensor w = torch::randn({100000}).requires_grad_();
  w.mutable_grad() = torch::randn({100000});
  torch::optim::AdamW opt({w}, torch::optim::AdamWOptions(1e-3));
  auto holder = std::make_shared<torch::nn::Module>();
  holder->register_parameter("w", w);
  FlopsProfiler step(holder, o);
  step.start_profile();
  for (int i = 0; i < 5; ++i) {
    auto s = step.step_scope();
    opt.step();
  }
  step.stop_profile();
  const ProfileResult& sr = step.result();
  ASSERT_GT(sr.step_bytes, 0u);
  EXPECT_NE(sr.step_roofline.ceiling, "DRAM") << sr.step_roofline.ceiling;
  EXPECT_TRUE(under_or_said(sr, sr.step_roofline))
      << sr.step_roofline.share << " of " << sr.step_roofline.ceiling;
}

// A device's short measurement runs the CPU's code on the device's tensors: run here with the CPU
// as the device. Positive ceilings, "measured", kept for the process; neither it nor the CPU's
// measurement draws from the random generator (the program's random numbers stay the same);
// a device LibTorch cannot run on throws an Error that says what to do.
TEST(RooflineRun, DevicePeaksAreMeasuredOnItsTensorsAndDrawNoRandomNumbers) {
  flopsprof::detail::forget_measured_peaks();
  const int cpu = static_cast<int>(c10::DeviceType::CPU);
  torch::manual_seed(7);
  const torch::Tensor expected = torch::randn({4});
  torch::manual_seed(7);
  const flopsprof::MachinePeaks p = flopsprof::measure_device_peaks(cpu, 0, {DType::kFloat32});
  flopsprof::cpu_peaks({DType::kFloat32}, 0, /*use_cache=*/false);
  EXPECT_TRUE(torch::equal(torch::randn({4}), expected)) << "a measurement drew random numbers";
  EXPECT_GT(p.peak_flops(DType::kFloat32), 0.0);
  EXPECT_GT(p.bytes_per_s, 0.0);
  EXPECT_EQ(p.flops_source, "measured");
  EXPECT_EQ(p.device, "cpu:0");
  EXPECT_GT(p.measure_s, 0.0);
  EXPECT_NE(p.detail.find("fp32 mm "), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("triad 3 x "), std::string::npos) << p.detail;
  const flopsprof::MachinePeaks again = flopsprof::measure_device_peaks(cpu, 0, {DType::kFloat32});
  EXPECT_EQ(again.measure_s, 0.0) << "measured once per process";
  EXPECT_DOUBLE_EQ(again.bytes_per_s, p.bytes_per_s);
  try {
    flopsprof::measure_device_peaks(static_cast<int>(c10::DeviceType::XLA), 0, {DType::kFloat32});
    ADD_FAILURE() << "no Error on a device LibTorch has no backend for";
  } catch (const flopsprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find("measuring the peaks of xla:0 failed"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--peak-flops"), std::string::npos) << e.what();
  }
}

// A device's ceilings stay its datasheet's (or properties'); the measurement is shown beside
// them with its share of each.
TEST(RooflineRun, ADevicesMeasurementIsShownBesideItsCeilings) {
  flopsprof::MachinePeaks table;
  table.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 67e12;
  table.flops_per_s[static_cast<size_t>(DType::kBFloat16)] = 989.4e12;
  table.bytes_per_s = 3.35e12;
  table.flops_source = table.bandwidth_source = "device table";
  table.detail = "NVIDIA H100 80GB HBM3: datasheet";
  flopsprof::MachinePeaks m;
  m.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 50.25e12;    // 75% of 67
  m.flops_per_s[static_cast<size_t>(DType::kBFloat16)] = 742.05e12;  // 75% of 989.4
  m.bytes_per_s = 2.68e12;                                           // 80% of 3.35
  m.detail = "fp32 mm 8192^3; triad 3 x 128 MiB x 10";
  m.measure_s = 0.25;
  const flopsprof::MachinePeaks p = flopsprof::detail::with_measurement(table, m);
  EXPECT_EQ(p.flops_source, "device table");
  EXPECT_DOUBLE_EQ(p.peak_flops(DType::kFloat32), 67e12);
  EXPECT_DOUBLE_EQ(p.bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(p.measure_s, 0.25);
  EXPECT_EQ(p.detail.rfind("NVIDIA H100 80GB HBM3: datasheet; measured on the device: ", 0), 0u)
      << p.detail;
  EXPECT_NE(p.detail.find("fp32 50.25 TFLOP/s (75% of the ceiling)"), std::string::npos)
      << p.detail;
  EXPECT_NE(p.detail.find("bf16 742 TFLOP/s (75% of the ceiling)"), std::string::npos) << p.detail;
  EXPECT_NE(
      p.detail.find("2680 GB/s (80% of the ceiling) (fp32 mm 8192^3; triad 3 x 128 MiB x 10)"),
      std::string::npos)
      << p.detail;
}

// A CPU's peak FLOP/s is its fastest kernel family's: on an AVX-512 machine OpenBLAS's GEMM (its
// AVX2 kernel) reached 34 GFLOP/s on one thread and oneDNN's convolutions 137-150, so a peak from
// the GEMM alone put every convolution at 400% "of peak".
TEST(Roofline, ThePeakIsTheFastestKernelFamilysAndEachIsNamed) {
  using flopsprof::detail::fastest_kernel;
  std::string detail;
  EXPECT_DOUBLE_EQ(
      fastest_kernel({{34e9, "fp32 mm 1024^3"}, {140e9, "fp32 conv2d 3x3 8x64x56^2"}}, &detail),
      140e9);
  EXPECT_EQ(detail,
            "fp32 mm 1024^3 34 GFLOP/s, fp32 conv2d 3x3 8x64x56^2 140 GFLOP/s (the peak); ");
  EXPECT_DOUBLE_EQ(
      fastest_kernel({{150e9, "fp32 mm 2048^3"}, {90.5e9, "fp32 conv2d 3x3 4x64x56^2"}}, &detail),
      150e9);
  EXPECT_EQ(detail,
            "fp32 mm 2048^3 150 GFLOP/s (the peak), fp32 conv2d 3x3 4x64x56^2 90.5 GFLOP/s; ");
  // One kernel measured (fp64 has no convolution timed): nothing to single out
  EXPECT_DOUBLE_EQ(fastest_kernel({{12.25e9, "fp64 mm 1024^3"}, {0, ""}}, &detail), 12.25e9);
  EXPECT_EQ(detail, "fp64 mm 1024^3 12.25 GFLOP/s; ");
  // Neither runs: 0 (the dtype then uses fp32's peak), the reason kept
  EXPECT_EQ(fastest_kernel({{0, "fp16 mm not supported"}, {0, ""}}, &detail), 0.0);
  EXPECT_EQ(detail, "fp16 mm not supported; ");
}

TEST(RooflineRun, CpuPeaksAreMeasuredOnceAndKeptInTheCacheFile) {
  const ScratchPeaksCache cache;
  const std::string dir = cache.dir();
  flopsprof::MachinePeaks first = flopsprof::cpu_peaks({DType::kFloat32}, 1);
  EXPECT_GT(first.peak_flops(DType::kFloat32), 0.0);
  EXPECT_GT(first.bytes_per_s, 0.0);
  EXPECT_EQ(first.flops_source, "measured");
  EXPECT_EQ(first.threads, 1);
  EXPECT_GT(first.measure_s, 0.0);
  std::cout << "     measured with 1 thread in " << first.measure_s
            << " s: " << first.peak_flops(DType::kFloat32) / 1e9 << " GFLOP/s, "
            << first.bytes_per_s / 1e9 << " GB/s (" << first.detail << ")\n";
  // Two kernel families timed, the peak the faster one's (its rate as printed, 4 digits)
  for (const char* kernel : {"fp32 mm ", "fp32 conv2d 3x3 ", " (the peak)"}) {
    EXPECT_NE(first.detail.find(kernel), std::string::npos) << kernel << " in " << first.detail;
  }
  double fastest = 0;
  for (size_t at = first.detail.find(" GFLOP/s"); at != std::string::npos;
       at = first.detail.find(" GFLOP/s", at + 1)) {
    const size_t begin = first.detail.rfind(' ', at - 1) + 1;
    fastest = std::max(fastest, std::stod(first.detail.substr(begin, at - begin)) * 1e9);
  }
  EXPECT_NEAR(first.peak_flops(DType::kFloat32), fastest, 1e-3 * fastest) << first.detail;
  // The cache file has this machine's line, keyed by model, threads and LibTorch
  std::ifstream f(std::string(dir) + "/machine-peaks.txt");
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("|threads=1|libtorch="), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("fp32="), std::string::npos);
  // Again in this process: no measurement
  flopsprof::MachinePeaks again = flopsprof::cpu_peaks({DType::kFloat32}, 1);
  EXPECT_EQ(again.measure_s, 0.0);
  EXPECT_DOUBLE_EQ(again.bytes_per_s, first.bytes_per_s);
  // In a new process (forgotten here): read from the file, said so
  flopsprof::detail::forget_measured_peaks();
  flopsprof::MachinePeaks cached = flopsprof::cpu_peaks({DType::kFloat32}, 1);
  EXPECT_EQ(cached.flops_source, "measured (cached)");
  EXPECT_EQ(cached.measure_s, 0.0);
  EXPECT_DOUBLE_EQ(cached.bytes_per_s, first.bytes_per_s);
  // Another thread count is another line
  flopsprof::MachinePeaks two = flopsprof::cpu_peaks({DType::kFloat32}, 2);
  EXPECT_GT(two.measure_s, 0.0);
  std::ifstream f2(std::string(dir) + "/machine-peaks.txt");
  std::string line;
  int lines = 0;
  while (std::getline(f2, line)) lines += !line.empty();
  EXPECT_EQ(lines, 2) << two.doubt;
}

TEST(RooflineRun, TraceTextAndJsonShowBytesAndTheRoofline) {
  torch::nn::Linear fc(16, 32);
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(fc, given_peaks());
  prof.start_profile();
  fc->forward(torch::randn({10, 16}));
  prof.stop_profile();
  // Chrome trace: the product's bytes and intensity in its args (FLOPs 2*10*32*16 + 320 = 10,560)
  json trace = json::parse(prof.chrome_trace());
  bool found = false;
  for (const json& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if ((name == "aten::addmm" || name == "aten::linear") && e.value("ph", "") == "X") {
      found = true;
      EXPECT_EQ(e["args"]["bytes"], 4096);
      EXPECT_EQ(e["args"]["bytes read"], 2816);
      EXPECT_NEAR(e["args"]["intensity"].get<double>(), 10560.0 / 4096.0, 1e-9);
    }
  }
  EXPECT_TRUE(found);
  // Text: the summary lines and the tree's columns after DeepSpeed's; hidden on request
  const std::string text = prof.model_profile_string();
  EXPECT_NE(text.find("fwd bytes moved (read + written):"), std::string::npos);
  EXPECT_NE(text.find("machine peak memory bandwidth:"), std::string::npos);
  EXPECT_NE(text.find("10.00 GB/s (given)"), std::string::npos);
  EXPECT_NE(text.find("4.10 KB moved, 2.58 FLOP/B memory"), std::string::npos) << text;
  EXPECT_NE(text.find("Roofline per op"), std::string::npos);
  flopsprof::ReportOptions plain;
  plain.roofline = false;
  const std::string deepspeed = flopsprof::format_text_report(prof.result(), plain);
  EXPECT_EQ(deepspeed.find(" moved, "), std::string::npos);
  EXPECT_EQ(deepspeed.find("Roofline per op"), std::string::npos);
  EXPECT_NE(deepspeed.find("fwd bytes moved"), std::string::npos) << "summary kept";
  // JSON: summary, modules, ops and the machine
  json j = json::parse(prof.to_json());
  EXPECT_EQ(j["summary"]["fwd_bytes"], 4096);
  EXPECT_EQ(j["modules"][0]["bytes"], 4096);
  EXPECT_EQ(j["modules"][0]["bound"], "memory");  // 2.58 FLOP/B < 10
  EXPECT_EQ(j["machine"]["bandwidth_source"], "given");
}

// MFU and MBU above their peaks are flagged, never shown plain: per module, in the summary, the
// text ("!") and the JSON (the helper's YOLOv3 run showed modules at MBU 3.65, against DRAM,
// unflagged). Against 1 B/s and 1 kFLOP/s a Linear(256, 256) forward, which moves at least its
// 256 x 256 x 4 = 262,144 weight bytes, is far above both whatever its time; against 1e18 of
// each, far below.
TEST(RooflineRun, UtilisationAboveItsPeakIsFlaggedEverywhere) {
  torch::NoGradGuard no_grad;
  torch::nn::Linear model(256, 256);
  const torch::Tensor x = torch::randn({4, 256});
  auto run = [&](double peak) {
    flopsprof::ProfilerOptions o;
    o.roofline.set_peak_flops(peak);
    o.roofline.peak_bandwidth = peak;
    FlopsProfiler prof(model.ptr(), o);
    prof.start_profile();
    model->forward(x);
    prof.stop_profile();
    return std::make_pair(prof.result(), prof.to_json());
  };
  const auto [low, low_json] = run(1.0);
  ASSERT_GT(low.mbu, 1.1);
  EXPECT_TRUE(low.mbu_above_peak);
  EXPECT_TRUE(low.mfu_above_peak);
  EXPECT_TRUE(low.hfu_above_peak);
  EXPECT_TRUE(low.modules[0].mbu_above_peak);
  EXPECT_TRUE(low.modules[0].mfu_above_peak);
  const json j = json::parse(low_json);
  EXPECT_EQ(j["summary"]["mbu_above_peak"], true);
  EXPECT_EQ(j["modules"][0]["mfu_above_peak"], true);
  const std::string text = flopsprof::format_text_report(low);
  const size_t line = text.find("MFU / HFU / MBU");
  ASSERT_NE(line, std::string::npos) << text;
  const std::string mfu_line = text.substr(line, text.find('\n', line) - line);
  EXPECT_NE(mfu_line.find("%!"), std::string::npos) << mfu_line;
  EXPECT_NE(mfu_line.find("'!': above the peak"), std::string::npos) << mfu_line;

  const auto [high, high_json] = run(1e18);
  EXPECT_GT(high.mbu, 0.0);
  EXPECT_FALSE(high.mbu_above_peak);
  EXPECT_FALSE(high.mfu_above_peak);
  EXPECT_FALSE(high.hfu_above_peak);
  EXPECT_FALSE(high.modules[0].mbu_above_peak);
  EXPECT_EQ(json::parse(high_json)["summary"]["mbu_above_peak"], false);
  EXPECT_EQ(flopsprof::format_text_report(high).find("'!': above the peak"), std::string::npos);
}

}  // namespace
