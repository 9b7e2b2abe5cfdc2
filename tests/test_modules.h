// Looking up a module's row in a profile result, for tests on real models.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "flopsprof/report.h"

namespace flopsprof_test {

using flopsprof::ModuleStats;
using flopsprof::ProfileResult;

/// The row of the module named `name` (dotted path; "" is the root). Adds a test failure and
/// returns an empty row when there is none.
inline const ModuleStats& module(const ProfileResult& r, const std::string& name) {
  for (const ModuleStats& m : r.modules) {
    if (m.name == name) return m;
  }
  ADD_FAILURE() << "no module '" << name << "'";
  static const ModuleStats none;
  return none;
}

/// The forward FLOPs of `name` less those of its children: its own work.
inline uint64_t own_flops(const ProfileResult& r, const std::string& name) {
  const ModuleStats& m = module(r, name);
  uint64_t children = 0;
  for (int c : m.children) children += r.modules[c].flops;
  return m.flops - children;
}

}  // namespace flopsprof_test
