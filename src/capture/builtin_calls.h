// Calls of LibTorch's built-in modules, observed at their forward functions (capture stage).
#pragma once

namespace torch::nn {
class Module;
}

namespace flopsprof::detail {

/// Whether every call of `module`'s forward is observed: its type is a LibTorch built-in whose
/// forward is defined in libtorch (not inline in a header) and flopsprof's definition of that
/// forward is the one the program calls (libflopsprof comes before libtorch in the program's
/// symbol search order, as `target_link_libraries(app flopsprof::flopsprof)` puts it). Such a
/// module's calls are exact (a scope record per call, as FLOPSPROF_MODULE() gives), and a module
/// of that type with no record was not called. Thread-safe; the first call resolves the table.
bool builtin_calls_observed(const torch::nn::Module& module);

/// Whether the start of every call of `module` is observed (BatchNorm, InstanceNorm: their
/// forward is inline, the virtual input check it begins with is not): a start-only record per
/// call, and the next op its type runs on that thread is that call's.
bool builtin_call_starts_observed(const torch::nn::Module& module);

/// Whether the program's calls of built-in forwards reach flopsprof at all (false when libtorch
/// precedes libflopsprof in the program's link order).
bool builtin_calls_interposed();

}  // namespace flopsprof::detail
