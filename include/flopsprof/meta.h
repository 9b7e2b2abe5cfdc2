// Estimating without running: profile a model on LibTorch's meta device (shapes only, no data).
#pragma once

#include <torch/nn/module.h>

namespace flopsprof {

/// Moves every parameter and buffer of `module` to the meta device in place (their storage is
/// swapped; requires_grad and leaf state are kept). The values are gone: afterwards the module
/// only computes shapes. Tensors already on meta are left alone. Also enables meta support
/// (`enable_meta_support()`). `module->to(torch::kMeta)` throws in LibTorch 1.13 for modules
/// with parameters; this does not. Not thread-safe with a forward running on the module.
void to_meta(torch::nn::Module& module);

/// Registers Meta kernels for the ATen ops that LibTorch's C++ build lacks (convolution and its
/// backward, native_batch_norm (+ backward), native_layer_norm (+ backward), index_select,
/// embedding_dense_backward, relu, equal (compares shapes), _adaptive_avg_pool2d (+ backward)),
/// each only if the dispatcher has no Meta kernel for it, and installs an allocator for the
/// meta device that reports sizes and lifetimes through c10's memory reporting, so memory
/// tracking works on meta. Idempotent, thread-safe; stays enabled for the process.
void enable_meta_support();

}  // namespace flopsprof
