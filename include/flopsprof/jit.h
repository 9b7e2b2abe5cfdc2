// Opt-in: profiles TorchScript modules (torch::jit::Module) with the interpreter's module
// hierarchy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>

namespace flopsprof {

class JitObserver;

/// A loaded TorchScript module (`torch::jit::load`) as a tree `FlopsProfiler` can profile.
///
/// `tree()` mirrors the TorchScript submodules as `torch::nn::Module`s: each node has the Python
/// attribute name (`layer1.0.conv1`), the TorchScript class name as its type (`Conv2d`,
/// `Bottleneck`) and its own parameters and buffers (the same tensors, not copies), so parameter
/// counts are those of Python's `named_modules()`. While a `JitObserver` of this model lives and a
/// profile runs, every op the interpreter runs goes to the module its call stack names
/// (`torch::jit::currentModuleHierarchy()`, what PyTorch's profiler reports as `with_modules`).
///
/// Not thread-safe: one thread calls `forward` at a time.
class JitModel {
 public:
  /// Mirrors `module`'s submodule tree. Cost: one walk of the tree.
  explicit JitModel(torch::jit::Module module);
  ~JitModel();
  JitModel(const JitModel&) = delete;
  JitModel& operator=(const JitModel&) = delete;

  /// The mirror tree's root: pass it to `FlopsProfiler`.
  const std::shared_ptr<torch::nn::Module>& tree() const;
  torch::jit::Module& module();

  /// Runs `module().forward(inputs)` as one call of `tree()` (a call window: everything that runs
  /// inside is the model's). Exceptions of the forward propagate; scopes opened inside are closed.
  c10::IValue forward(std::vector<c10::IValue> inputs);

  /// Observes the interpreter's module hierarchy until the returned handle dies. Create it
  /// BEFORE `FlopsProfiler::start_profile()`: RecordFunction runs global start callbacks in the
  /// order they were added, and a module's scope must open before the profiler records the op.
  /// Throws `Error` when another JitObserver is alive. Costs, while alive, one
  /// `currentModuleHierarchy()` (a vector of strings) per op of every thread.
  [[nodiscard]] JitObserver observe();

  /// What the observers saw: ops with a module hierarchy, ops of a forward without one (run
  /// before the interpreter, or by a fused kernel), and hierarchy entries naming no module of the
  /// tree (e.g. "INSTANCE_NAME_UNKNOWN(...)"), at most 16 distinct ones kept.
  struct HierarchyStats {
    uint64_t ops = 0;
    uint64_t ops_without_hierarchy = 0;
    std::vector<std::string> unresolved;
  };
  HierarchyStats hierarchy_stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Keeps a RecordFunction callback registered that turns the interpreter's module hierarchy into
/// module scopes (from `JitModel::observe()`). Movable; unregisters at destruction.
class JitObserver {
 public:
  JitObserver() = default;
  JitObserver(JitObserver&& other) noexcept : handle_(other.handle_) { other.handle_ = 0; }
  JitObserver& operator=(JitObserver&& other) noexcept;
  JitObserver(const JitObserver&) = delete;
  JitObserver& operator=(const JitObserver&) = delete;
  ~JitObserver() { reset(); }
  /// Unregisters (idempotent).
  void reset() noexcept;

 private:
  friend class JitModel;
  uint64_t handle_ = 0;
};

}  // namespace flopsprof
