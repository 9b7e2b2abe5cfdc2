// c10d collectives seen in a profile: where each was issued (module, phase), when it completed,
// its sizes; summed per module for the reports and listed for the Chrome trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attribution/attribution.h"
#include "flopsprof/formulas.h"
#include "flopsprof/report.h"

namespace flopsprof::detail {

struct AggregateInput;

/// One collective call, its issue and completion matched across threads.
struct CollectiveCall {
  int thread = 0;              ///< the issuing thread (index into AggregateInput::threads)
  int64_t start = 0, end = 0;  ///< timestamp units; end: completion (stop when it never did)
  bool completed = true;
  std::string name;        ///< "gloo:all_reduce"
  std::string short_name;  ///< "all_reduce": collective_name(name), kineto's "Collective name"
  std::string module;      ///< the module whose work issued it (as in the op table)
  std::string phase;       ///< "forward", "backward", "step", "outside"
  uint64_t numel = 0, bytes = 0;
  uint32_t tensors = 0;
  DType dtype = DType::kUnknown;  ///< the first input's
  std::vector<int64_t> dims;      ///< the first input's sizes
};

/// Every collective of the profile, in issue order per thread. Computed once, by analyze()
/// (Analysis::collectives); the aggregation and the trace read that.
std::vector<CollectiveCall> collective_calls(const AggregateInput& input,
                                             const Attribution& attribution);

/// `calls` summed per (module, phase, name), in order of first issue.
std::vector<CollectiveStats> collective_stats(const std::vector<CollectiveCall>& calls,
                                              double ns_per_tick);

/// "all_reduce" from "gloo:all_reduce"; the process group's backend is the part before.
std::string collective_name(const std::string& record_name);

}  // namespace flopsprof::detail
