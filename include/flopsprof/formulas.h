// FLOP formulas: the plain-data view of an op's inputs, and registration of formulas per op name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "flopsprof/error.h"

namespace flopsprof {

/// Element type of a tensor argument, independent of LibTorch's headers.
enum class DType : uint8_t {
  kUnknown = 0,
  kFloat64,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat8,
  kComplex64,
  kComplex128,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
  kQuantized,
  /// fp32 computed on TF32 tensor cores: never a tensor's dtype, the dtype a GPU's fp32
  /// convolutions (cuDNN) or matrix products (cuBLAS) are counted in where LibTorch allows TF32
  /// for them (at::globalContext().allowTF32CuDNN() / allowTF32CuBLAS()), so that their ceiling
  /// is the TF32 peak. 4 bytes an element, as fp32.
  kTFloat32,
  kCount,  // number of values; not a dtype
};

/// Short name of a dtype ("fp32", "bf16", ...). Never null.
const char* dtype_name(DType dtype) noexcept;
/// The dtype whose dtype_name() is `name` ("fp32" -> kFloat32), or none (kCount's name, and any
/// other text, included). Pure.
std::optional<DType> dtype_from_name(std::string_view name) noexcept;

/// Whether `dtype` is floating point or complex (the dtypes FLOP/s is compared against a peak for).
constexpr bool is_floating(DType dtype) noexcept {
  return dtype == DType::kFloat64 || dtype == DType::kFloat32 || dtype == DType::kTFloat32 ||
         dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat8 ||
         dtype == DType::kComplex64 || dtype == DType::kComplex128;
}

/// What one op argument was, as captured by the profiler.
enum class ArgKind : uint8_t {
  kNone = 0,         ///< `None`, or an argument the profiler did not capture
  kTensor,           ///< a defined tensor: `shape` and `dtype` are set
  kUndefinedTensor,  ///< an undefined (absent) optional tensor
  kDouble,           ///< a floating scalar: `d`
  kInt,              ///< an integer scalar: `i`
  kBool,             ///< a boolean: `b`
  kIntList,          ///< a list of integers: `list`
  kDoubleList,       ///< a list of doubles: `dlist`
  kTensorList,       ///< a list of tensors: `i` holds the count, `extent` their bytes and `dtype`
                     ///< the first one's (their shapes are not captured); a list of optional
                     ///< tensors (`Tensor?[]`, aten::index's indices) also each element's
                     ///< element count in `shape` (-1 for None)
  kString,           ///< a string: `i` holds its first character ('s' for "same", 'v' for "valid")
  kOther,            ///< anything else (a generator, a device, ...)
};

/// A read-only list of int64 values (a tensor's sizes or an int-list argument). Valid only for the
/// duration of the formula call.
class IntSpan {
 public:
  IntSpan() = default;
  IntSpan(const int64_t* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  /// Element counted from the end: `back(0)` is the last. Requires `k < size()`.
  int64_t back(size_t k = 0) const { return data_[size_ - 1 - k]; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

/// One captured argument of an op.
struct ArgView {
  ArgKind kind = ArgKind::kNone;
  DType dtype = DType::kUnknown;  ///< for kTensor
  IntSpan shape;                  ///< tensor sizes (kTensor) or the values (kIntList)
  const double* dlist = nullptr;  ///< for kDoubleList, `shape.size()` values
  double d = 0;
  int64_t i = 0;
  bool b = false;
  /// kTensor: elements of memory its values occupy: its shape's element count, or fewer for a
  /// broadcast (expanded) view, whose repeated elements are stored once. kTensorList: the bytes
  /// of all its tensors.
  uint64_t extent = 0;
  bool repeated = false;   ///< kTensor: the same tensor as an earlier argument of the op
  bool contiguous = true;  ///< kTensor: laid out contiguously (row-major)
  /// kTensor, the mask of an attention op read by the capture (ProfilerOptions::
  /// read_attention_masks): of its elements (over its shape, a broadcast view's repeats
  /// included), those that keep a (query, key) pair: true in a boolean mask, above -9,000 in an
  /// additive one. Unset for every other argument, and for a mask that was not read.
  std::optional<uint64_t> kept;
};

/// The arguments of one op call, in schema order, as plain data.
/// Accessors are total: an index past the end reads as `kNone`.
class OpInputs {
 public:
  OpInputs(const ArgView* args, size_t count) : args_(args), count_(count) {}
  size_t size() const { return count_; }
  const ArgView& operator[](size_t i) const;
  bool is_tensor(size_t i) const { return (*this)[i].kind == ArgKind::kTensor; }
  /// Sizes of tensor argument `i`; empty when `i` is not a tensor.
  IntSpan shape(size_t i) const;
  /// Element count of tensor argument `i` (0 when not a tensor). Throws `Error` on overflow.
  uint64_t numel(size_t i) const;
  std::optional<double> scalar(size_t i) const;  ///< kDouble, kInt or kBool as a double
  std::optional<int64_t> integer(size_t i) const;
  std::optional<bool> boolean(size_t i) const;
  /// Int list argument `i` (a single int reads as a list of one); empty otherwise.
  IntSpan int_list(size_t i) const;

 private:
  const ArgView* args_;
  size_t count_;
};

/// Result of a formula. 1 MAC = 2 FLOPs is the convention of the built-in GEMM/conv formulas;
/// non-GEMM ops report FLOPs and 0 MACs.
struct FlopCount {
  uint64_t flops = 0;
  uint64_t macs = 0;
  /// Attention under a causal mask (docs/report.md, "Causal attention"): of `flops` and `macs`
  /// (the dense count: every query against every key), the part on (query, key) pairs the mask
  /// discards. The causal convention counts `flops - masked_flops`. 0 for every other op.
  uint64_t masked_flops = 0, masked_macs = 0;
  /// Of `flops`, what the kernel never computed (fully masked blocks a flash kernel skips):
  /// what ran is `flops - skipped_flops`. 0 where the kernel computes every pair.
  uint64_t skipped_flops = 0;
  /// The kernel that ran is not known from this op (it dispatches to one of several, or the
  /// kernel's blocking is not modelled): `skipped_flops` is 0 and what ran may be less.
  bool kernel_unknown = false;
  /// Attention with an explicit mask tensor: its values were read (`masked_flops` holds what it
  /// discards), or not (ProfilerOptions::read_attention_masks off, or values it cannot read:
  /// counted dense, `masked_flops` 0).
  bool mask_read = false, mask_unread = false;
};

/// A formula: a pure function of the op's inputs. Return `std::nullopt` when the inputs are not
/// understood ("no formula" for this call, reported as n/a, never 0). May throw `Error` (e.g. from
/// `checked_mul`) on overflow; the profiler then reports the op as n/a and notes the problem.
using FormulaFn = std::function<std::optional<FlopCount>(const OpInputs&)>;

/// Registers `fn` as the formula of the ATen op `op_name` (e.g. "aten::addmm", "myops::fused").
/// Replaces any existing formula, built-in ones included. Thread-safe. Takes effect for profiles
/// started after the call.
void register_formula(std::string op_name, FormulaFn fn);

/// Removes the formula of `op_name`; returns whether there was one. Thread-safe.
bool unregister_formula(std::string_view op_name);

/// Whether a formula is registered for `op_name`. Thread-safe.
bool has_formula(std::string_view op_name);

/// Runs the registered formula of `op_name` on `inputs`; `std::nullopt` when there is none or it
/// declines. Thread-safe. Throws `Error` on overflow.
std::optional<FlopCount> compute_flops(std::string_view op_name, const OpInputs& inputs);

/// a * b, throwing `Error` if the product does not fit in 64 bits.
uint64_t checked_mul(uint64_t a, uint64_t b);
/// a + b, throwing `Error` if the sum does not fit in 64 bits.
uint64_t checked_add(uint64_t a, uint64_t b);

namespace detail {
/// Registers a formula at static-initialisation time; used by FLOPSPROF_REGISTER_FORMULA.
struct FormulaRegistrar {
  FormulaRegistrar(const char* op_name, FormulaFn fn) { register_formula(op_name, std::move(fn)); }
};
}  // namespace detail

}  // namespace flopsprof

#define FLOPSPROF_PRIVATE_CONCAT2(a, b) a##b
#define FLOPSPROF_PRIVATE_CONCAT(a, b) FLOPSPROF_PRIVATE_CONCAT2(a, b)
#define FLOPSPROF_PRIVATE_NAME(prefix) FLOPSPROF_PRIVATE_CONCAT(prefix, __COUNTER__)

/// Registers `fn` (anything convertible to `flopsprof::FormulaFn`) for op `op_name` when the
/// program starts. Put it in a source file of the executable (a static library's linker may drop
/// an unreferenced registration); `flopsprof::register_formula` is the explicit alternative.
#define FLOPSPROF_REGISTER_FORMULA(op_name, fn)                              \
  static const ::flopsprof::detail::FormulaRegistrar FLOPSPROF_PRIVATE_NAME( \
      flopsprof_private_formula_)(op_name, fn)
