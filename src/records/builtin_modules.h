// LibTorch's built-in modules as a closed set: the ATen ops each one's forward runs at top level.
#pragma once

#include <string_view>

namespace flopsprof::detail {

/// What the forward of one LibTorch built-in module type runs, as RecordFunction sees it at top
/// level (ops nested in these are not listed). Measured on LibTorch 1.13 (tests/probe list in
/// builtin_modules.cpp); the names are stable across 2.x.
struct BuiltinSpec {
  std::string_view type;  ///< display name: "Linear", "ReLU"
  /// Ops its forward runs, without the "aten::" prefix, space-separated. Empty for containers.
  std::string_view ops;
  /// Ops that begin a call (the first op of its forward); empty: none is distinctive.
  std::string_view starts;
  /// Ops that end a call (its last op); the next op of the module starts a new call.
  std::string_view terminals;
  /// Runs whatever it wraps (`Functional`): matches any op, one call per op run between neighbours.
  bool wildcard = false;
  /// Holds other modules and runs them (Sequential, ModuleList, ModuleDict): no ops of its own.
  bool container = false;
  /// Ops its forward may run before the first op that reads a parameter (LSTM: `zeros` for the
  /// initial state); such an op right before a call joins it.
  std::string_view leading = "";
  /// How many of those its forward runs at most (one call): MultiheadAttention's `equal`s 3, an
  /// LSTM's `zeros` 2 (h and c). An op of the caller's of the same name before them is not its.
  int leading_max = 1;
};

/// The spec of a built-in type by display name, or null for any other type (user modules).
/// `cpp_type_name` must start with "torch::nn::" for a match: a user's own "Linear" is not one.
const BuiltinSpec* find_builtin(std::string_view cpp_type_name, std::string_view display_type);

/// The attribute names of a LibTorch composite's children in the order its forward runs them
/// (space-separated), where that differs from registration order; "" otherwise (user types too).
/// TransformerEncoderLayer registers `dropout` before `dropout1` but runs `dropout1` first.
std::string_view builtin_run_order(std::string_view cpp_type_name);

/// Whether the forward of LibTorch type `cpp_type_name` runs each of its children exactly once
/// (Sequential, the Transformer and its encoder/decoder stacks and layers).
bool builtin_runs_each_child_once(std::string_view cpp_type_name);

/// Position of `word` among the space-separated words of `list`, or -1.
int word_position(std::string_view list, std::string_view word) noexcept;

/// Whether `op` ("aten::relu") is in the space-separated `list` ("relu relu_").
bool op_in_list(std::string_view list, std::string_view op) noexcept;

}  // namespace flopsprof::detail
