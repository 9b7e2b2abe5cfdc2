// Turns raw per-thread events into per-module and per-op statistics (runs after collection).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "events.h"
#include "flopsprof/report.h"
#include "module_tree.h"

namespace flopsprof::detail {

/// Names by id, as interned by the observer.
struct NameLookup {
  virtual ~NameLookup() = default;
  virtual const std::string& name(uint32_t id) const = 0;
};

struct AggregateInput {
  const ModuleTree* tree = nullptr;
  std::vector<const ThreadEvents*> threads;
  const NameLookup* names = nullptr;
  int64_t stop_ns = 0;  ///< end time for events and scopes still open (timestamp units)
  double ns_per_tick = 1.0;  ///< nanoseconds per timestamp unit (TSC ticks or 1)
  bool track_memory = false;  ///< memory records were collected
  std::string timer;
  std::vector<std::string> problems;  ///< seen during collection
};

/// Applies the counting rule (outermost op with a formula), the attribution rules (scope,
/// ownership, parent op, neighbours' lowest common ancestor) and computes all statistics.
/// Pure: no torch, no globals but the formula registry.
ProfileResult aggregate(const AggregateInput& input);

/// The formula inputs of one event, as views into its thread's storage.
std::vector<ArgView> arg_views(const ThreadEvents& thread, const RawEvent& event);

}  // namespace flopsprof::detail
