// Batch-size sweep: memory-tracking profiles per batch size (reports/report_sweep.h renders them).
#include "flopsprof/sweep.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "flopsprof/error.h"
#include "flopsprof/profiler.h"
#include "io/output_files.h"
#include "reports/report_sweep.h"

namespace flopsprof {

BatchSweep sweep_batch_sizes(const std::shared_ptr<torch::nn::Module>& model,
                             const std::vector<int64_t>& batch_sizes,
                             const std::function<torch::Tensor(int64_t)>& forward, bool train) {
  if (!model) throw Error("sweep_batch_sizes: the model is null");
  if (batch_sizes.empty()) throw Error("sweep_batch_sizes: no batch sizes; pass e.g. {1, 2, 4, 8}");
  for (int64_t b : batch_sizes) {
    if (b < 1)
      throw Error(fmt::format("sweep_batch_sizes: batch size {} is invalid; pass sizes >= 1", b));
  }
  ProfilerOptions options;
  options.track_memory = true;
  FlopsProfiler prof(model, options);
  BatchSweep sweep;
  for (int64_t b : batch_sizes) {
    BatchSweepRow row;
    row.batch_size = b;
    {
      torch::NoGradGuard no_grad;
      prof.start_profile();
      forward(b);  // the output is freed inside the profile: the peak is what matters
      prof.stop_profile();
      row.fwd_peak_bytes = prof.result().memory.peak_bytes;
      row.fwd_flops = prof.get_total_flops();
      row.fwd_latency_s = prof.get_total_duration();
    }
    if (train) {
      prof.start_profile();
      forward(b).sum().backward();
      prof.stop_profile();
      row.train_peak_bytes = prof.result().memory.peak_bytes;
      for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();  // free the gradients
    }
    sweep.rows.push_back(row);
  }
  prof.end_profile();
  return sweep;
}

std::string BatchSweep::table() const { return detail::sweep_table(rows); }
std::string BatchSweep::csv() const { return detail::sweep_csv(rows); }
std::string BatchSweep::svg() const { return detail::sweep_svg(rows); }

void BatchSweep::save_csv(const std::string& path) const {
  detail::write_output(path, csv(), "batch sweep CSV");
}
void BatchSweep::save_svg(const std::string& path) const {
  detail::write_output(path, svg(), "batch sweep plot");
}

}  // namespace flopsprof
