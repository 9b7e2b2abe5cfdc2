// Helpers shared by the built-in formula families: checked arithmetic on shapes, broadcasting.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "flopsprof/formulas.h"

namespace flopsprof::detail {

/// Bytes one op call reads and writes: its compulsory traffic (docs/report.md, "Bytes moved").
struct ByteCount {
  uint64_t read = 0;
  uint64_t written = 0;
};
/// A bytes rule: a pure function of the op's captured arguments, beside its family's FLOP
/// formulas. nullopt: what it writes cannot be derived from these arguments (the reads still
/// count: op_counts.cpp falls back to reading every input). Never throws: saturates.
using BytesFn = std::function<std::optional<ByteCount>(const OpInputs&)>;

/// Adds one built-in formula (used only while the registry is being built).
void add_builtin_formula(const char* op_name, FormulaFn fn);
/// Adds one built-in bytes rule (used only while the registry is being built).
void add_builtin_bytes(const char* op_name, BytesFn fn);
/// The bytes rule of `op_name`; empty when none. Thread-safe.
BytesFn find_bytes_rule(std::string_view op_name);
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
// Bytes rules, one function per family file (each beside its FLOP formulas).
void register_matmul_bytes();
void register_conv_bytes();
void register_norm_bytes();
void register_pointwise_bytes();
void register_pool_bytes();
void register_attention_bytes();
void register_zero_bytes();
void register_fused_bytes();

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

// ---- Bytes: saturating arithmetic on sizes (a byte count never throws or wraps) ----

inline uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
/// Bytes per element of `dtype` (0 for kUnknown).
uint64_t element_bytes(DType dtype);
/// The DType of a c10::ScalarType code as captured in an integer argument (`dtype=` arguments);
/// kUnknown for codes it does not know.
DType dtype_of_scalar_type(int64_t code);
/// The result type of mixing `a` and `b` (PyTorch's promotion among the dtypes here).
DType promote(DType a, DType b);
/// Product of the sizes, saturating.
uint64_t count_of(IntSpan shape);
/// Bytes of argument `i` if it is a tensor (the memory it covers) or a tensor list; else 0.
uint64_t arg_bytes(const OpInputs& in, size_t i);
/// Bytes of every distinct tensor and tensor-list argument: each read once.
uint64_t input_bytes(const OpInputs& in);
/// The dtype argument at `i` (an integer ScalarType code) if given, else `fallback`.
DType dtype_arg(const OpInputs& in, size_t i, DType fallback);
/// Reads every input; writes `elements` elements of `dtype`.
ByteCount reads_inputs_writes(const OpInputs& in, uint64_t elements, DType dtype);
/// Reads every input and writes tensor `i` again (an in-place op: all of self).
ByteCount in_place(const OpInputs& in, size_t i = 0);
/// Element count of the right-aligned broadcast of the tensor arguments at `indices` (scalars
/// skipped); nullopt if they do not broadcast.
std::optional<uint64_t> broadcast_count(const OpInputs& in, std::initializer_list<size_t> indices);
/// The promoted dtype of the tensor arguments at `indices`; a floating scalar argument among them
/// makes an integer result floating (fp32), as a Python float does.
DType result_dtype(const OpInputs& in, std::initializer_list<size_t> indices);
/// A rule that reads every input and writes an output shaped and typed as tensor argument `i`.
BytesFn same_as(size_t i);

}  // namespace flopsprof::detail
