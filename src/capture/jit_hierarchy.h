// The TorchScript interpreter's module hierarchy as scope records: capture's callback for a
// TorchScript model (flopsprof/jit.h's JitModel resolves the hierarchy to its mirror tree).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace flopsprof::detail {

/// A model whose interpreter-reported module hierarchy the capture stage turns into exact scope
/// records, one per module call, opened and closed as the hierarchy of consecutive ops changes.
class HierarchySource {
 public:
  HierarchySource();
  virtual ~HierarchySource() = default;
  HierarchySource(const HierarchySource&) = delete;
  HierarchySource& operator=(const HierarchySource&) = delete;

  /// The modules of `hierarchy` (torch::jit::currentModuleHierarchy(): "TOP(ResNet)::forward",
  /// "layer1(Sequential)::forward", ...), outermost first, as modules of the profiled tree.
  /// Called from the op callback, on any thread that runs the forward; may throw (the op then
  /// keeps the scopes open so far).
  virtual std::vector<const torch::nn::Module*> resolve(
      const std::vector<std::string>& hierarchy) = 0;

  const uint64_t id;                     ///< identifies the source to the callback's thread state
  std::atomic<bool> in_forward{false};   ///< set by the source around its forward
  std::atomic<uint64_t> ops{0};          ///< ops seen with a hierarchy
  std::atomic<uint64_t> ops_without{0};  ///< ops of a forward seen without one
};

/// Registers the hierarchy callback (global, ATen ops, no inputs) for `source`, until
/// `stop_observing_hierarchy(handle)`. One source is observed at a time: throws `Error` when
/// another is. Register it before a profile starts: global start callbacks run in the order they
/// were added, and a module's scope must open before the profiler records the op.
uint64_t observe_hierarchy(HierarchySource* source);
/// Removes the callback registered by `observe_hierarchy` (0: nothing) and forgets its source.
void stop_observing_hierarchy(uint64_t handle) noexcept;
/// The end of `source`'s forward on this thread: closes the scopes opened for it there.
void close_hierarchy_scopes(const HierarchySource& source) noexcept;
/// `source` is going away: if observed, no callback reads it from now on.
void forget_hierarchy_source(HierarchySource* source) noexcept;

}  // namespace flopsprof::detail
