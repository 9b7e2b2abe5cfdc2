// The roofline checked against reality on this machine (not a test: its numbers depend on the
// CPU): the measured peaks and what measuring them costs; a large elementwise add should reach a
// large share of the measured bandwidth and be memory-bound, a large GEMM a large share of the
// measured peak and be compute-bound; ResNet-50's and BERT-base's modules on the roofline.
// Prints markdown for bench/RESULTS.md. Usage: flopsprof_bench_roofline [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/bert.h"
#include "models/resnet.h"

namespace {

using flopsprof::DType;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The best of `runs` profiles of `work` (its one op, or the whole model): the op row of `op`.
flopsprof::OpStats best_op(const std::function<void()>& work, const std::string& op,
                           const flopsprof::MachinePeaks& peaks, int runs) {
  flopsprof::ProfilerOptions o;
  o.roofline.peak_flops = peaks.flops_per_s;
  o.roofline.peak_bandwidth = peaks.bytes_per_s;
  auto dummy = std::make_shared<torch::nn::Module>();
  flopsprof::OpStats best;
  for (int r = 0; r < runs; ++r) {
    flopsprof::FlopsProfiler prof(dummy, o);
    prof.start_profile();
    work();
    prof.stop_profile();
    for (const auto& s : prof.result().ops) {
      if (s.name == op && (best.calls == 0 || s.latency_s < best.latency_s)) best = s;
    }
  }
  return best;
}

void module_table(const char* title, const flopsprof::ProfileResult& r, int depth,
                  const std::string& under = "") {
  std::printf("\n#### %s (depth %d; %s)\n\n", title, depth,
              flopsprof::duration_to_string(r.duration_s).c_str());
  std::printf(
      "| module | type | fwd time | FLOP/B | GFLOP/s | GB/s | bound | share of ceiling |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const auto& m : r.modules) {
    if (m.depth != depth || m.latency_s <= 0 || m.name.rfind(under, 0) != 0) continue;
    const auto& p = m.roofline;
    std::printf("| %s | %s | %s | %.2f | %.1f | %.2f | %s | %.0f%% |\n", m.name.c_str(),
                m.type.c_str(), flopsprof::duration_to_string(m.latency_s).c_str(), p.intensity,
                p.achieved_flops_per_s / 1e9, p.achieved_bytes_per_s / 1e9,
                p.bound.empty() ? "-" : p.bound.c_str(), 100 * p.share);
  }
  std::printf(
      "\nWhole forward: %.2f FLOP/B, %s-bound, %.0f%% of its ceiling; %.1f%% of peak FLOP/s, "
      "%.1f%% of the bandwidth.\n",
      r.roofline.intensity, r.roofline.bound.c_str(), 100 * r.roofline.share,
      100 * r.roofline.achieved_flops_per_s / r.machine.peak_flops(DType::kFloat32),
      100 * r.roofline.achieved_bytes_per_s / r.machine.bytes_per_s);
}

// Per module type at `depth` and below: summed time, FLOPs and bytes, and where they sit.
void type_table(const flopsprof::ProfileResult& r) {
  struct Acc {
    double t = 0;
    uint64_t flops = 0, bytes = 0;
    int n = 0;
  };
  std::map<std::string, Acc> by;
  for (const auto& m : r.modules) {
    if (!m.children.empty() || m.latency_s <= 0) continue;  // leaves only
    Acc& a = by[m.type];
    a.t += m.latency_s;
    a.flops += m.flops;
    a.bytes += m.bytes;
    ++a.n;
  }
  std::printf(
      "\n| leaf type | modules | time | FLOP/B | GFLOP/s | GB/s | bound | share of ceiling |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const auto& [type, a] : by) {
    const auto p =
        flopsprof::roofline_point(a.flops, true, a.bytes, a.t, r.machine, DType::kFloat32);
    std::printf("| %s | %d | %s | %.2f | %.1f | %.2f | %s | %.0f%% |\n", type.c_str(), a.n,
                flopsprof::duration_to_string(a.t).c_str(), p.intensity,
                p.achieved_flops_per_s / 1e9, p.achieved_bytes_per_s / 1e9, p.bound.c_str(),
                100 * p.share);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) torch::set_num_threads(std::atoi(argv[1]));
  torch::manual_seed(0);
  const int threads = torch::get_num_threads();
  std::printf("## Roofline (bench/roofline.cpp, %d thread(s))\n\n", threads);

  // 1. The peaks: measured now (no cache), then read back (cache), to cost both.
  auto t0 = std::chrono::steady_clock::now();
  flopsprof::MachinePeaks peaks = flopsprof::cpu_peaks({DType::kFloat32}, threads, false);
  const double fresh = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  flopsprof::MachinePeaks again = flopsprof::cpu_peaks({DType::kFloat32}, threads, true);
  const double cached = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  flopsprof::MachinePeaks bf16 = flopsprof::cpu_peaks({DType::kBFloat16}, threads, true);
  const double one_more = seconds_since(t0);
  std::printf(
      "Peaks measured: %.1f GFLOP/s fp32, %.1f GFLOP/s bf16, %.2f GB/s (ridge %.2f FLOP/B); "
      "%s.\n",
      peaks.peak_flops(DType::kFloat32) / 1e9,
      bf16.flops_per_s[static_cast<size_t>(DType::kBFloat16)] / 1e9, peaks.bytes_per_s / 1e9,
      peaks.ridge(DType::kFloat32), peaks.detail.c_str());
  std::printf(
      "Calibration cost: %.0f ms measured (fp32 GEMM + triad), %.3f ms from the cache, "
      "%.0f ms more for bf16 (%s).\n\n",
      fresh * 1e3, cached * 1e3, one_more * 1e3, again.flops_source.c_str());

  // 2. A large elementwise add (2^25 floats, 128 MiB per tensor) and a large GEMM (2048^2).
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({1 << 25}), b = torch::randn({1 << 25});
  torch::Tensor m1 = torch::randn({2048, 2048}), m2 = torch::randn({2048, 2048});
  torch::Tensor c = a.add(b);  // first touch
  // Into a fresh output (the allocator returns blocks this large to the system: every call
  // faults in 128 MiB of new pages) and into one written before (as the triad does).
  flopsprof::OpStats add = best_op([&] { a.add(b); }, "aten::add", peaks, 5);
  flopsprof::OpStats add_out = best_op([&] { torch::add_out(c, a, b); }, "aten::add", peaks, 5);
  flopsprof::OpStats mm = best_op([&] { torch::mm(m1, m2); }, "aten::mm", peaks, 5);
  std::printf(
      "| op | bytes | FLOP/B | achieved | bound | share of ceiling |\n|---|---|---|---|---|---|\n");
  for (const auto* s : {&add, &add_out}) {
    std::printf("| add [2^25] fp32, %s | %s | %.3f | %.2f GB/s | %s | %.0f%% of bandwidth |\n",
                s == &add ? "new output" : "out= written before",
                flopsprof::number_to_string(static_cast<double>(s->bytes)).c_str(),
                s->roofline.intensity, s->roofline.achieved_bytes_per_s / 1e9,
                s->roofline.bound.c_str(), 100 * s->roofline.share);
  }
  std::printf("| mm 2048^2 fp32 | %s | %.1f | %.1f GFLOP/s | %s | %.0f%% of peak |\n\n",
              flopsprof::number_to_string(static_cast<double>(mm.bytes)).c_str(),
              mm.roofline.intensity, mm.roofline.achieved_flops_per_s / 1e9,
              mm.roofline.bound.c_str(), 100 * mm.roofline.share);

  // 3. ResNet-50 (batch 1, 224x224) and BERT-base (1 x 128) forwards, eval.
  flopsprof::ProfilerOptions o;
  o.roofline.peak_flops = peaks.flops_per_s;
  o.roofline.peak_bandwidth = peaks.bytes_per_s;
  {
    models::ResNet50 resnet;
    resnet->eval();
    torch::Tensor x = torch::randn({1, 3, 224, 224});
    resnet->forward(x);
    flopsprof::FlopsProfiler prof(resnet, o);
    prof.start_profile();
    resnet->forward(x);
    prof.stop_profile();
    module_table("ResNet-50, 1x3x224x224", prof.result(), 1);
    type_table(prof.result());
  }
  {
    models::BertForMaskedLM bert;
    bert->eval();
    torch::Tensor ids = torch::randint(0, 30522, {1, 128}, torch::kLong);
    bert->forward(ids);
    flopsprof::FlopsProfiler prof(bert, o);
    prof.start_profile();
    bert->forward(ids);
    prof.stop_profile();
    module_table("BERT-base MLM, 1x128", prof.result(), 2);
    module_table("BERT-base MLM, 1x128, inside layer 0", prof.result(), 6, "bert.encoder.layer.0.");
    type_table(prof.result());
  }
  return 0;
}
