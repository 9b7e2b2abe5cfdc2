// Profiling a torch.export program (.pt2) without running it: per-module FLOPs, MACs, bytes and
// parameters from its graph's shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "flopsprof/report.h"
#include "flopsprof/roofline.h"

namespace flopsprof {

/// How to profile an exported program.
struct ExportedOptions {
  /// Values of the program's symbolic sizes by symbol ("s0" -> 128); a symbol not given takes
  /// the hint saved with it. A name that is no symbol of the program is an error.
  std::map<std::string, int64_t> dims;
  /// The FLOP convention for causal attention (as ProfilerOptions::attention).
  AttentionConvention attention = AttentionConvention::kDense;
  /// Tokens one forward of the program processes, for FLOPs per token (the report's region
  /// "forward", which covers the whole graph); 0: the largest element count among the indices an
  /// embedding reads (token ids), as a run's regions infer them.
  uint64_t tokens = 0;
  /// Per-device batch size for the report; 0: the first user input's first dimension.
  int64_t batch_size = 0;
  /// Ceilings for the bound of each module: only given ones (`peak_flops`, `peak_bandwidth`,
  /// `bandwidth_levels`, or FLOPSPROF_PEAK_FLOPS / FLOPSPROF_PEAK_BANDWIDTH): nothing is measured,
  /// as the program does not run here.
  RooflineOptions roofline;
};

/// Profiles the program saved by `torch.export.save` (PyTorch 2.6's .pt2 layout, schema 8.x) at
/// `path` from its graph alone: nothing runs, no weights are read (a program exported under
/// FakeTensorMode has none). Each ATen node is counted by the formula of its op from the shapes
/// in the graph's tensor metadata and placed in the module of its `nn_module_stack`; parameters
/// come from the graph signature. The result has the shape of a run's: modules, ops (those
/// without a formula listed with their calls), FLOPs, MACs, bytes, intensity; it has no time
/// (`ProfileResult::timed` false: latencies, achieved rates, shares and memory are absent), no
/// backward (the graph is the forward). Throws `Error` naming the file and the fix for a file
/// that is not such a program, an unknown schema major, a corrupt member, or a symbolic size
/// with neither a value in `options.dims` nor a hint. Cost: one read of the program's JSON
/// (about 2 MB for a 7 B-parameter LLM) and one pass over its nodes. Thread-safe.
ProfileResult profile_exported(const std::string& path, const ExportedOptions& options = {});

}  // namespace flopsprof
