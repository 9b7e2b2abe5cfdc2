// The TorchScript interpreter's module hierarchy as scope records (capture/jit_hierarchy.h).
#include "capture/jit_hierarchy.h"

#include <ATen/record_function.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "flopsprof/error.h"
#include "flopsprof/scope.h"

namespace flopsprof::detail {
namespace {

std::atomic<HierarchySource*> g_active{nullptr};
std::atomic<uint64_t> g_next_id{1};

// The scopes this thread has open, outermost first, for the source `source`.
struct ThreadScopes {
  uint64_t source = 0;
  std::vector<std::string> last;               // the hierarchy of the previous op
  std::vector<const torch::nn::Module*> path;  // the open modules
  struct Handles {
    ScopeHandles h;
  };
  std::vector<Handles> handles;

  void close_to(size_t depth) noexcept {
    while (path.size() > depth) {
      close_scope_records(handles.back().h);
      handles.pop_back();
      path.pop_back();
    }
  }
};
thread_local ThreadScopes t_scopes;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& /*fn*/) {
  HierarchySource* source = g_active.load(std::memory_order_acquire);
  if (source == nullptr || !source->in_forward.load(std::memory_order_relaxed)) return nullptr;
  ThreadScopes& ts = t_scopes;
  if (ts.source != source->id) {  // another source's leftovers: scopes are per profile anyway
    ts.path.clear();
    ts.handles.clear();
    ts.last.clear();
    ts.source = source->id;
  }
  try {
    std::vector<std::string> h = torch::jit::currentModuleHierarchy();
    if (h.empty()) {
      // Not run by the interpreter (or in a fused kernel): keeps the modules open so far.
      source->ops_without.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    source->ops.fetch_add(1, std::memory_order_relaxed);
    if (h == ts.last) return nullptr;
    std::vector<const torch::nn::Module*> path = source->resolve(h);
    ts.last = std::move(h);
    size_t common = 0;
    while (common < path.size() && common < ts.path.size() && path[common] == ts.path[common])
      ++common;
    ts.close_to(common);
    for (size_t i = common; i < path.size(); ++i) {
      ts.handles.emplace_back();
      open_scope_records(path[i], ts.handles.back().h, ScopeKind::kExact);
      ts.path.push_back(path[i]);
    }
  } catch (...) {
    // A callback never throws; an op whose hierarchy could not be read keeps the open scopes.
  }
  return nullptr;
}

}  // namespace

HierarchySource::HierarchySource() : id(g_next_id.fetch_add(1)) {}

uint64_t observe_hierarchy(HierarchySource* source) {
  HierarchySource* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, source)) {
    throw Error(
        "JitModel::observe: another JitModel is being observed; end its JitObserver first (one "
        "TorchScript model is observed at a time)");
  }
  try {
    return at::addGlobalCallback(at::RecordFunctionCallback(on_start).needsInputs(false).scopes(
        {at::RecordScope::FUNCTION}));
  } catch (...) {
    g_active.store(nullptr);
    throw;
  }
}

void stop_observing_hierarchy(uint64_t handle) noexcept {
  if (handle == 0) return;
  at::removeCallback(handle);
  g_active.store(nullptr, std::memory_order_release);
}

void close_hierarchy_scopes(const HierarchySource& source) noexcept {
  if (t_scopes.source == source.id) {
    t_scopes.close_to(0);
    t_scopes.last.clear();
  }
}

void forget_hierarchy_source(HierarchySource* source) noexcept {
  g_active.compare_exchange_strong(source, nullptr);
}

}  // namespace flopsprof::detail
