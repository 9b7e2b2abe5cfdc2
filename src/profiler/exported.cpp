// Profiling an exported program from its graph (flopsprof/exported.h): the archive read (io),
// its graph as records (capture), the aggregation a run's records go through.
#include "profiler/exported.h"

#include <algorithm>

#include <torch/version.h>

#include "aggregation/aggregate.h"
#include "capture/exported_records.h"
#include "flopsprof/config.h"
#include "io/exported_program.h"
#include "io/zip_archive.h"
#include "pipeline/pipeline.h"
#include "profiler/peaks.h"

namespace flopsprof {
namespace detail {

ProfileResult profile_program(const ExportedProgram& program, const std::string& label,
                              const ExportedOptions& options) {
  ExportedRecords records = exported_records(program, label);

  AggregateInput in;
  in.tree = &records.tree;
  in.names = &records.names;
  in.threads = {&records.thread};
  in.stop_tick = records.stop_tick;
  // No time: every op and scope spans 0 ns, whatever ticks order them.
  in.ns_per_tick = 0;
  in.timer = "none (an exported program, not run)";
  in.attention = options.attention;
  in.call_fix =
      "the graph has no op of its forward: it ran none (its parent read its parameters directly, "
      "as nn.MultiheadAttention its out_proj's) or ran inside a higher-order op's subgraph, which "
      "is not counted";
  // The whole graph as one region: its tokens (given, or the embedding's indices) give the
  // FLOPs per token of the model and of each module.
  RegionWindow forward;
  forward.name = "forward";
  forward.start_tick = 0;
  forward.end_tick = records.stop_tick;
  forward.tokens = options.tokens;
  forward.thread = records.thread.thread_id;
  in.regions = {forward};
  in.problems = program.problems;
  in.problems.insert(in.problems.end(), records.problems.begin(), records.problems.end());
  const Analysis analysis = analyze(in);
  // Given ceilings only: the program does not run on this machine.
  PeaksTarget target;
  target.meta = true;
  std::string problem;
  in.machine =
      profile_peaks(options.roofline, analysis.counts.flop_dtypes(), target, false, &problem);
  if (!problem.empty()) in.problems.push_back("roofline: " + problem);
  in.batch_size = options.batch_size;
  if (in.batch_size == 0) {  // the first input's first size
    for (const std::string& t : program.user_inputs) {
      auto it = program.tensors.find(t);
      if (it != program.tensors.end() && !it->second.sizes.empty()) {
        in.batch_size = it->second.sizes[0];
        break;
      }
    }
  }
  ProfileResult r = aggregate(in, analysis);
  r.timed = false;
  // The op table's order is by time in a run; here by FLOPs, then bytes (ties: name).
  std::stable_sort(r.ops.begin(), r.ops.end(), [](const OpStats& a, const OpStats& b) {
    if (a.flops != b.flops) return a.flops > b.flops;
    return a.bytes > b.bytes;
  });
  Workload& w = r.workload;
  w.inputs = records.inputs;
  w.inputs_source = "the exported program";
  stamp_build(w);
  w.device =
      "none (exported program" +
      (program.torch_version.empty() ? std::string() : ", PyTorch " + program.torch_version) + ")";
  w.capture = "exported";
  return r;
}

}  // namespace detail

ProfileResult profile_exported(const std::string& path, const ExportedOptions& options) {
  const std::string label = "'" + path + "'";
  detail::FileZipSource file(path, label);
  return detail::profile_program(detail::read_exported_program(file, label, options.dims), label,
                                 options);
}

}  // namespace flopsprof
