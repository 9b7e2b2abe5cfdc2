// Explicit module scopes (FLOPSPROF_MODULE) and C++ forward pre/post hooks for torch::nn::Module.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace torch {
namespace nn {
class Module;
}
}  // namespace torch

namespace flopsprof {

namespace detail {
/// Profiles that can run at the same time in one process (one per FlopsProfiler).
constexpr int kMaxSessions = 4;
/// Non-zero while a profile is active or forward hooks are registered. Read on every scope entry.
extern std::atomic<int> g_scope_demand;
/// Whether some other RecordFunction observer wants user scopes (e.g. LibTorch's own profiler).
bool foreign_observers_active() noexcept;
/// A scope record of one running profile (ModuleScope, CallWindow).
struct ScopeHandle {
  void* buffer = nullptr;  // the thread's event buffer of that profile
  uint64_t session = 0;    // 0: no record in that profile
  int32_t index = -1;      // the scope record in the buffer
};
using ScopeHandles = ScopeHandle[kMaxSessions];
/// What a scope record stands for.
enum class ScopeKind : uint8_t {
  kModule,   ///< FLOPSPROF_MODULE(): one call of a user's module
  kWindow,   ///< CallWindow: one call of the model whose bounds the caller knows
  kBuiltin,  ///< one call of a LibTorch built-in module's forward, observed at its function
  kStart,    ///< the start of a call of a built-in whose forward is inline (BatchNorm,
             ///< InstanceNorm), observed at the virtual input check it begins with
  kExact,    ///< one call of a module whose every called submodule has its own record (the
             ///< TorchScript interpreter's module hierarchy): an op in it is this module's own,
             ///< whatever parameters it reads
};
/// Opens a record of `module` in every running profile that knows it; returns the module's
/// name in the first such profile (null: none).
const char* open_scope_records(const torch::nn::Module* module, ScopeHandles& handles,
                               ScopeKind kind) noexcept;
void close_scope_records(ScopeHandles& handles) noexcept;

/// One call of `module` whose bounds the caller knows (get_model_profile's call of the model):
/// everything that runs inside is that one call, however it looks (a greedy decoding loop, a
/// metric between two uses of a submodule), and a FLOPSPROF_MODULE() scope of the same module
/// inside it is the same call. Fires no hooks and opens no user scope. Costs one relaxed atomic
/// load with no profile running. Not copyable; lives on one thread.
class CallWindow {
 public:
  explicit CallWindow(const torch::nn::Module* module) {
    if (g_scope_demand.load(std::memory_order_relaxed) != 0) {
      active_ = true;
      open_scope_records(module, handles_, ScopeKind::kWindow);
    }
  }
  ~CallWindow() {
    if (active_) close_scope_records(handles_);
  }
  CallWindow(const CallWindow&) = delete;
  CallWindow& operator=(const CallWindow&) = delete;

 private:
  bool active_ = false;
  ScopeHandles handles_;
};
}  // namespace detail

/// RAII marker of one forward call of `module`. Prefer the `FLOPSPROF_MODULE()` macro.
/// While a profile is active it makes the module's boundaries exact (every op inside is
/// attributed to it or its submodules) and opens a RecordFunction user scope named after the
/// module, so other profilers see the same range. It fires the module's registered forward
/// pre-hooks on entry and forward hooks on normal exit. With no profile, no hooks and no other
/// observer it costs one relaxed atomic load and one call. Not copyable; lives on one thread.
class ModuleScope {
 public:
  explicit ModuleScope(const torch::nn::Module* module) {
    if (detail::g_scope_demand.load(std::memory_order_relaxed) != 0 ||
        detail::foreign_observers_active()) {
      enter(module);
    }
  }
  ~ModuleScope() {
    if (active_) exit();
  }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  void enter(const torch::nn::Module* module);
  void exit() noexcept;

  bool active_ = false;
  int uncaught_ = 0;  // std::uncaught_exceptions() at entry: skip post-hooks on unwind
  const torch::nn::Module* module_ = nullptr;
  detail::ScopeHandles records_;     // one per running profile that knows the module
  void* record_function_ = nullptr;  // at::RecordFunction* when another observer listens
};

/// Handle of a registered hook; `remove()` unregisters it (idempotent). Copyable.
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(uint64_t id) : id_(id) {}
  /// Unregisters the hook. Thread-safe. Returns whether it was still registered.
  bool remove();
  uint64_t id() const { return id_; }

 private:
  uint64_t id_ = 0;
};

/// Hook called with the module, at the start (pre) or normal end (post) of each forward call of a
/// module whose forward begins with `FLOPSPROF_MODULE()`. Hooks fire whether or not a profile is
/// active. A pre-hook may throw (the forward is not run); a post-hook must not throw (it runs in
/// a destructor: an exception is caught, and reported on stderr once).
using ForwardHook = std::function<void(torch::nn::Module&)>;

/// Registers `hook` to run before each forward of `module`. The registry holds a weak reference:
/// the hook dies with the module. Thread-safe.
HookHandle register_forward_pre_hook(const std::shared_ptr<torch::nn::Module>& module,
                                     ForwardHook hook);
/// Registers `hook` to run after each forward of `module` that returns normally. Thread-safe.
HookHandle register_forward_hook(const std::shared_ptr<torch::nn::Module>& module,
                                 ForwardHook hook);

}  // namespace flopsprof

/// First statement of a module's `forward`: marks one call of this module. See `ModuleScope`.
#define FLOPSPROF_MODULE()                                                 \
  ::flopsprof::ModuleScope FLOPSPROF_PRIVATE_SCOPE_NAME(flopsprof_scope_)( \
      static_cast<const ::torch::nn::Module*>(this))
#define FLOPSPROF_PRIVATE_SCOPE_CONCAT2(a, b) a##b
#define FLOPSPROF_PRIVATE_SCOPE_CONCAT(a, b) FLOPSPROF_PRIVATE_SCOPE_CONCAT2(a, b)
#define FLOPSPROF_PRIVATE_SCOPE_NAME(prefix) FLOPSPROF_PRIVATE_SCOPE_CONCAT(prefix, __LINE__)
