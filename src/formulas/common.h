// Helpers shared by the built-in formula families: checked arithmetic on shapes, broadcasting.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "flopsprof/formulas.h"

namespace flopsprof::detail {

/// Adds one built-in formula (used only while the registry is being built).
void add_builtin_formula(const char* op_name, FormulaFn fn);
/// The same, for a formula whose count does not depend on the arguments.
void add_builtin_constant_formula(const char* op_name, FormulaFn fn);

void register_matmul_formulas();
void register_conv_formulas();
void register_norm_formulas();
void register_pointwise_formulas();
void register_pool_formulas();
void register_attention_formulas();
void register_zero_formulas();
void register_fused_formulas();
void register_reduction_formulas();
void register_loss_formulas();

/// Product of the sizes (1 for a scalar). Throws Error on overflow.
uint64_t numel_of(IntSpan shape);

/// Element count of the right-aligned broadcast of `shapes`; nullopt if they do not broadcast.
std::optional<uint64_t> broadcast_numel(std::initializer_list<IntSpan> shapes);

/// GEMM-like count: FLOPs = 2 * macs + extra_flops (bias / beta*input adds).
inline FlopCount gemm_count(uint64_t macs, uint64_t extra_flops) {
  return FlopCount{checked_add(checked_mul(2, macs), extra_flops), macs};
}

/// Non-GEMM count: `flops` FLOPs, 0 MACs.
inline FlopCount flops_only(uint64_t flops) { return FlopCount{flops, 0}; }

inline uint64_t u(int64_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v); }

}  // namespace flopsprof::detail
