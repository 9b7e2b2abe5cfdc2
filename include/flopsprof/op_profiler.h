// The op profiler: time one ATen op on given inputs (RAF's Profile(expr, device)), with FLOPs and
// memory, cached per (op, shapes, dtypes, device).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include "flopsprof/formulas.h"

namespace flopsprof {

/// What `profile_op` measured.
struct OpProfile {
  std::string op;                 ///< as given ("aten::conv2d", "aten::add.Tensor")
  std::string device;             ///< "cpu", "cuda:0"
  std::vector<double> samples_s;  ///< one latency per repetition, seconds (device-synchronized)
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  std::optional<FlopCount> flops;  ///< from the op's formula; nullopt: no formula (n/a)
  int64_t peak_bytes = 0;          ///< highest allocator growth during one call (outputs included)
  int64_t output_bytes = 0;        ///< bytes of the op's tensor outputs
  int64_t workspace_bytes = 0;     ///< peak_bytes - output_bytes: what the kernel needed besides
  bool cached = false;             ///< true when served from the cache
};

/// Runs `op` (a schema name, optionally with overload: "aten::mm", "aten::add.Tensor") on
/// `inputs` (in schema order; tensors are copied to `device`), `warm_up` times unmeasured and
/// `repeat` times measured, synchronizing the device after each call. Results are cached per
/// (op, input shapes, dtypes and scalars, device, repeat): a second identical call returns the
/// cached profile. Throws `Error` for an unknown op, `repeat` < 1, or when a profile is running.
/// Runs with RecordFunction observers disabled. Not thread-safe with respect to the cache.
OpProfile profile_op(const std::string& op, const std::vector<c10::IValue>& inputs,
                     c10::Device device = c10::kCPU, int repeat = 10, int warm_up = 2);

/// Empties the cache of `profile_op`.
void clear_op_profile_cache();

}  // namespace flopsprof
