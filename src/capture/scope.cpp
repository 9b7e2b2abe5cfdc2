// Module scopes (FLOPSPROF_MODULE) and the forward pre/post hook registry.
#include "flopsprof/scope.h"

#include <exception>
#include <iostream>
#include <mutex>
#include <vector>

#include <ATen/record_function.h>
#include <torch/nn/module.h>

#include "capture/observer.h"

namespace flopsprof {
namespace detail {

std::atomic<int> g_scope_demand{0};

void demand_scopes() noexcept { g_scope_demand.fetch_add(1, std::memory_order_relaxed); }
void release_scopes() noexcept { g_scope_demand.fetch_sub(1, std::memory_order_relaxed); }

bool foreign_observers_active() noexcept { return at::hasCallbacks(); }

// open_scope_records, close_scope_records and close_step_records: capture/observer.cpp (the op
// callbacks' inlined lifetime protocol; a built-in module's every call takes them).

ScopeHandle open_step_record(Session& s, bool optimizer) noexcept {
  ScopeHandle h;
  CallbackGuard guard;  // the memory observer may record on this thread meanwhile
  ThreadBuffer* b = guard.ok() ? s.thread_buffer() : nullptr;
  if (b == nullptr) return h;
  if (optimizer && b->step_depth > 0) return h;  // inside step_scope(): that is the step
  h.index = b->begin_step(s.now(), optimizer);
  if (h.index < 0) return h;
  h.buffer = b;
  h.session = s.id;
  return h;
}

void close_step_record(int slot, ScopeHandle& h) noexcept {
  if (h.session == 0 || slot < 0) return;
  CallbackGuard guard;
  Session* s = guard.ok() ? g_sessions[slot].load(std::memory_order_acquire) : nullptr;
  if (s != nullptr && s->id == h.session) {
    static_cast<ThreadBuffer*>(h.buffer)->end_step(h.index, s->now());
  }
  h = ScopeHandle{};
}

void open_step_records(ScopeHandles& handles) noexcept {
  CallbackGuard guard;  // open_step_record's own guard nests in it
  for (int k = 0; k < kMaxSessions && guard.ok(); ++k) {
    Session* s = g_sessions[k].load(std::memory_order_acquire);
    if (s != nullptr) handles[k] = open_step_record(*s, /*optimizer=*/true);
  }
}

namespace {

struct HookEntry {
  uint64_t id;
  const torch::nn::Module* key;
  std::weak_ptr<torch::nn::Module> module;
  ForwardHook fn;
  bool pre;
};

std::mutex g_hooks_mu;
std::vector<HookEntry> g_hooks;
uint64_t g_next_hook_id = 1;

HookHandle add_hook(const std::shared_ptr<torch::nn::Module>& module, ForwardHook hook, bool pre) {
  if (!module) throw Error("register_forward_hook: the module is null; pass a constructed module");
  if (!hook) throw Error("register_forward_hook: the hook is empty; pass a callable");
  std::lock_guard<std::mutex> lock(g_hooks_mu);
  uint64_t id = g_next_hook_id++;
  g_hooks.push_back(HookEntry{id, module.get(), module, std::move(hook), pre});
  demand_scopes();
  return HookHandle(id);
}

// Runs the hooks of `module` of the given kind; returns normally or propagates a hook's error.
void fire_hooks(const torch::nn::Module* module, bool pre) {
  std::vector<std::pair<std::shared_ptr<torch::nn::Module>, ForwardHook>> run;
  {
    std::lock_guard<std::mutex> lock(g_hooks_mu);
    for (const HookEntry& h : g_hooks) {
      if (h.key != module || h.pre != pre) continue;
      if (auto m = h.module.lock()) run.emplace_back(std::move(m), h.fn);
    }
  }
  for (auto& [m, fn] : run) fn(*m);
}

}  // namespace
}  // namespace detail

bool HookHandle::remove() {
  std::lock_guard<std::mutex> lock(detail::g_hooks_mu);
  for (auto it = detail::g_hooks.begin(); it != detail::g_hooks.end(); ++it) {
    if (it->id == id_) {
      detail::g_hooks.erase(it);
      detail::release_scopes();
      return true;
    }
  }
  return false;
}

HookHandle register_forward_pre_hook(const std::shared_ptr<torch::nn::Module>& module,
                                     ForwardHook hook) {
  return detail::add_hook(module, std::move(hook), /*pre=*/true);
}

HookHandle register_forward_hook(const std::shared_ptr<torch::nn::Module>& module,
                                 ForwardHook hook) {
  return detail::add_hook(module, std::move(hook), /*pre=*/false);
}

void ModuleScope::enter(const torch::nn::Module* module) {
  module_ = module;
  uncaught_ = std::uncaught_exceptions();
  detail::fire_hooks(module, /*pre=*/true);  // may throw: nothing is recorded yet
  active_ = true;
  {
    // The guard keeps the sessions, and the name they own, alive until the user-scope range for
    // other observers (LibTorch's profiler, Kineto, ...) has copied it.
    detail::CallbackGuard guard;
    const char* scope_name =
        detail::open_scope_records(module, records_, detail::ScopeKind::kModule);
    auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE);
    if (callbacks && !detail::only_collective_observers(*callbacks)) {
      auto* rf = new at::RecordFunction(std::move(*callbacks));
      rf->before(std::string(scope_name != nullptr ? scope_name : module->name().c_str()));
      record_function_ = rf;
    }
  }
}

void ModuleScope::exit() noexcept {
  delete static_cast<at::RecordFunction*>(record_function_);  // runs the observers' end
  detail::close_scope_records(records_);
  if (std::uncaught_exceptions() != uncaught_) return;  // forward threw: no post hooks
  try {
    detail::fire_hooks(module_, /*pre=*/false);
  } catch (const std::exception& e) {
    static std::once_flag once;
    std::call_once(once, [&] {
      std::cerr << "flopsprof: a forward hook threw (" << e.what()
                << "); forward hooks must not throw, the exception was dropped\n";
    });
  } catch (...) {
  }
}

}  // namespace flopsprof
