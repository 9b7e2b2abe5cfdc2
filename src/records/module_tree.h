// The profiled model's module tree as plain data (built from torch::nn::Module in
// capture/module_index.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flopsprof/formulas.h"

namespace flopsprof::detail {

struct BuiltinSpec;

struct ModuleNode {
  std::string name;  ///< dotted; "" for the root
  std::string type;  ///< "Linear", "BertLayer"
  int parent = -1;
  int depth = 0;
  int subtree_end = 0;  ///< one past the last descendant (pre-order)
  /// In the order its forward runs them: registration order, or `run_order` when set.
  std::vector<int> children;
  uint64_t params = 0;
  uint64_t trainable_params = 0;
  uint64_t param_bytes = 0;
  bool ignored = false;  ///< its type was in ignore_modules (or an ancestor's was)
  int effective = 0;     ///< nearest non-ignored ancestor-or-self
  /// LibTorch built-in type (torch::nn::*Impl): the ops its forward runs; null for user types.
  const BuiltinSpec* builtin = nullptr;
  /// Parameters and buffers registered in this subtree (0: a parameterless module).
  uint64_t tensors = 0;
  int child_index = 0;  ///< position among its parent's children (run order)
  /// Its children's attribute names in the order its forward runs them (LibTorch composites
  /// whose registration order differs: builtin_run_order); empty: registration order.
  std::string_view run_order;
  /// A LibTorch composite whose forward runs each of its children exactly once
  /// (builtin_runs_each_child_once): a call of it that ran a child twice, or not at all, was not
  /// a call of its forward.
  bool once_each = false;
  /// Every call of its forward is observed (a built-in whose forward flopsprof interposes,
  /// capture/builtin_calls.h): its calls are its scope records, and no rule gives it an op.
  bool calls_observed = false;
  /// The start of every call is observed (a start-only scope record per call): BatchNorm,
  /// InstanceNorm.
  bool starts_observed = false;
};

/// Pre-order tree: nodes[0] is the root; a node's descendants follow it contiguously.
struct ModuleTree {
  std::vector<ModuleNode> nodes;
  /// owner_sets[k]: the modules owning one parameter/buffer storage, in tree order.
  std::vector<std::vector<int>> owner_sets;
  /// owner_set_is_parameter[k]: 1 when that storage is a parameter's (not only a buffer's).
  std::vector<uint8_t> owner_set_is_parameter;
  uint64_t params = 0;
  uint64_t trainable_params = 0;
  uint64_t param_bytes = 0;
  std::array<uint64_t, static_cast<size_t>(DType::kCount)> param_bytes_by_dtype{};

  bool is_ancestor_or_self(int a, int b) const {
    return a >= 0 && b >= a && b < nodes[a].subtree_end;
  }
  /// Fills depth, subtree_end, children (run order), child_index and effective from `parent`,
  /// `ignored` and `run_order`. Requires pre-order with parents before children.
  void finalize();
};

}  // namespace flopsprof::detail
