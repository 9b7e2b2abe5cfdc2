// Batch-size sweep: peak memory (forward and training) per batch size, as a table, CSV and plot.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "flopsprof/report.h"

namespace flopsprof {

/// The result of `sweep_batch_sizes`.
struct BatchSweep {
  std::vector<BatchSweepRow> rows;
  /// A text table ("batch  fwd peak  train peak  fwd flops  fwd latency").
  std::string table() const;
  /// CSV with a header line: batch_size,fwd_peak_bytes,train_peak_bytes,fwd_flops,fwd_latency_s.
  std::string csv() const;
  /// An SVG line plot of peak memory (MB) against batch size, forward and training.
  std::string svg() const;
  /// Write csv() / svg(); throw `Error` when the file cannot be written.
  void save_csv(const std::string& path) const;
  void save_svg(const std::string& path) const;
};

/// Runs `forward(batch)` for each batch size under a memory-tracking profile: once without grad
/// (forward peak) and, when `train`, once with grad followed by backward from the sum of its
/// output (training peak; gradients are released afterwards). Throws `Error` for an empty or
/// non-positive batch list, or when the memory-reporting slot is taken.
BatchSweep sweep_batch_sizes(const std::shared_ptr<torch::nn::Module>& model,
                             const std::vector<int64_t>& batch_sizes,
                             const std::function<torch::Tensor(int64_t batch_size)>& forward,
                             bool train = true);

}  // namespace flopsprof
