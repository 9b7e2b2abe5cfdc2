// Decoding an op's captured arguments, and each counted op's FLOPs and MACs, evaluated once per
// profile: every consumer (module statistics, op table, trace) reads the same counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capture/events.h"
#include "flopsprof/formulas.h"

namespace flopsprof::detail {

/// One event's count.
struct OpCount {
  enum State : uint8_t {
    kNone,      ///< not a counted op, or no formula for its name
    kCounted,   ///< `fc` holds its count
    kDeclined,  ///< the formula did not understand these inputs ("n/a", never 0)
    kFailed,    ///< the formula threw (OpCounts::errors says why)
  };
  FlopCount fc;
  DType dtype = DType::kUnknown;  ///< the dtype it computes in (ops with a formula)
  State state = kNone;
  const FlopCount* counted() const { return state == kCounted ? &fc : nullptr; }
};

/// The counts of a profile's events, by thread and event index (as the threads' `events`).
struct OpCounts {
  std::vector<std::vector<OpCount>> threads;
  std::map<std::string, uint64_t> errors;  ///< "<op>: <what the formula threw>" -> count
};

/// Evaluates the formulas of every counted op of `threads` (one call per op; each formula looked
/// up once per name). Pure but for the formula registry.
OpCounts count_ops(const std::vector<const ThreadEvents*>& threads, const NameLookup& names);

/// The formula inputs of one event, as views into its thread's storage.
std::vector<ArgView> arg_views(const ThreadEvents& thread, const RawEvent& event);

/// "T<768x768xfp32>, 1, [1, 1]": an op's captured arguments as shown in the trace.
std::string format_args(const std::vector<ArgView>& args);

}  // namespace flopsprof::detail
