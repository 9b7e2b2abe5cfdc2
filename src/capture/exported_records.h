// An exported program's graph as the records a run would have made: the module tree from its
// nn_module_stack paths and graph signature, one op record per ATen node with its arguments in
// schema order (from the shapes in its tensor metadata), and one exact scope record per module
// call. Nothing runs: the aggregation counts them as it counts a run's (no times: every op and
// scope spans 0 ticks).
#pragma once

#include <string>
#include <vector>

#include "io/exported_program.h"
#include "records/events.h"
#include "records/module_tree.h"

namespace flopsprof::detail {

/// Op names by id for the records below.
struct ExportedNames : NameLookup {
  std::vector<std::string> names;
  const std::string& name(uint32_t id) const override { return names.at(id); }
  uint32_t id(const std::string& n);
};

struct ExportedRecords {
  ModuleTree tree;
  ThreadEvents thread;
  ExportedNames names;
  int64_t stop_tick = 0;
  std::vector<std::string> problems;  ///< what could not be recorded as a run would have
  std::vector<std::string> inputs;    ///< the user inputs, "fp32[8, 64]"
};

/// The records of `program`. Each node's arguments are placed by name at their position in the
/// op's schema (LibTorch's registry, or flopsprof's copy for ops this LibTorch lacks), defaults
/// filled in for those torch.export left out. Throws `Error` (naming `name`) for a graph the
/// records cannot hold (an op with more than 65,535 arguments).
ExportedRecords exported_records(const ExportedProgram& program, const std::string& name);

}  // namespace flopsprof::detail
