// The formula registry (op name -> formula), OpInputs accessors and checked arithmetic.
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>

#include "formulas/common.h"
#include "formulas/registry.h"

namespace flopsprof {

const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat64:
      return "fp64";
    case DType::kFloat32:
      return "fp32";
    case DType::kTFloat32:
      return "tf32";
    case DType::kFloat16:
      return "fp16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat8:
      return "fp8";
    case DType::kComplex64:
      return "c64";
    case DType::kComplex128:
      return "c128";
    case DType::kInt64:
      return "int64";
    case DType::kInt32:
      return "int32";
    case DType::kInt16:
      return "int16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
    case DType::kQuantized:
      return "quantized";
    default:
      return "unknown";
  }
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (size_t d = 0; d < static_cast<size_t>(DType::kCount); ++d) {
    if (name == dtype_name(static_cast<DType>(d))) return static_cast<DType>(d);
  }
  return std::nullopt;
}

uint64_t checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw Error("FLOP count overflows 64 bits (" + std::to_string(a) + " x " + std::to_string(b) +
                "); the op is reported as n/a");
  }
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    throw Error("FLOP count overflows 64 bits (" + std::to_string(a) + " + " + std::to_string(b) +
                "); the op is reported as n/a");
  }
  return r;
}

const ArgView& OpInputs::operator[](size_t i) const {
  static const ArgView kNoneArg{};
  return i < count_ ? args_[i] : kNoneArg;
}

IntSpan OpInputs::shape(size_t i) const {
  const ArgView& a = (*this)[i];
  return a.kind == ArgKind::kTensor ? a.shape : IntSpan{};
}

uint64_t OpInputs::numel(size_t i) const { return is_tensor(i) ? detail::numel_of(shape(i)) : 0; }

std::optional<double> OpInputs::scalar(size_t i) const {
  const ArgView& a = (*this)[i];
  switch (a.kind) {
    case ArgKind::kDouble:
      return a.d;
    case ArgKind::kInt:
      return static_cast<double>(a.i);
    case ArgKind::kBool:
      return a.b ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> OpInputs::integer(size_t i) const {
  const ArgView& a = (*this)[i];
  if (a.kind == ArgKind::kInt) return a.i;
  if (a.kind == ArgKind::kBool) return a.b ? 1 : 0;
  return std::nullopt;
}

std::optional<bool> OpInputs::boolean(size_t i) const {
  const ArgView& a = (*this)[i];
  if (a.kind == ArgKind::kBool) return a.b;
  if (a.kind == ArgKind::kInt) return a.i != 0;
  return std::nullopt;
}

IntSpan OpInputs::int_list(size_t i) const {
  const ArgView& a = (*this)[i];
  if (a.kind == ArgKind::kIntList) return a.shape;
  if (a.kind == ArgKind::kInt) return IntSpan(&a.i, 1);
  return IntSpan{};
}

namespace detail {
namespace {

struct Registry {
  std::shared_mutex mu;
  std::map<std::string, FormulaFn, std::less<>> formulas;
  /// Built-ins whose count does not depend on the arguments (views, copies, factories): the
  /// observer records no arguments for them.
  std::set<std::string, std::less<>> constant;
  /// Bytes rules (op name -> rule): built-ins only.
  std::map<std::string, BytesFn, std::less<>> bytes;
};

std::atomic<uint64_t> g_registry_version{1};

// The registry being filled with built-ins; only set inside registry()'s initialiser.
Registry* g_building = nullptr;

Registry& registry() {
  // Built-ins are added by explicit calls here, not by static initialisers (a static library's
  // linker would drop those). Any user registration reaches the registry through this function,
  // so it always runs after the built-ins and overrides them.
  static Registry* r = [] {
    auto* reg = new Registry;
    g_building = reg;
    register_matmul_formulas();
    register_conv_formulas();
    register_norm_formulas();
    register_pointwise_formulas();
    register_pool_formulas();
    register_attention_formulas();
    register_zero_formulas();
    register_fused_formulas();
    register_reduction_formulas();
    register_loss_formulas();
    register_matmul_bytes();
    register_conv_bytes();
    register_norm_bytes();
    register_pointwise_bytes();
    register_pool_bytes();
    register_attention_bytes();
    register_zero_bytes();
    register_fused_bytes();
    g_building = nullptr;
    return reg;
  }();
  return *r;
}

}  // namespace

void add_builtin_formula(const char* op_name, FormulaFn fn) {
  // Called from inside registry()'s initialiser: the static is not published yet, so the
  // registry under construction is reached through this hand-off.
  g_building->formulas[op_name] = std::move(fn);
}

void add_builtin_constant_formula(const char* op_name, FormulaFn fn) {
  g_building->formulas[op_name] = std::move(fn);
  g_building->constant.insert(op_name);
}

void add_builtin_bytes(const char* op_name, BytesFn fn) {
  g_building->bytes[op_name] = std::move(fn);
}

BytesFn find_bytes_rule(std::string_view op_name) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.bytes.find(op_name);
  return it == r.bytes.end() ? BytesFn{} : it->second;
}

bool formula_is_constant(std::string_view op_name) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  return r.constant.find(op_name) != r.constant.end();
}

uint64_t numel_of(IntSpan shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n = checked_mul(n, u(d));
  return n;
}

std::optional<uint64_t> broadcast_numel(std::initializer_list<IntSpan> shapes) {
  size_t rank = 0;
  for (const IntSpan& s : shapes) rank = std::max(rank, s.size());
  uint64_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    int64_t dim = 1;
    for (const IntSpan& s : shapes) {
      if (k >= s.size()) continue;
      int64_t d = s.back(k);
      if (d == 1) continue;
      if (dim != 1 && d != dim) return std::nullopt;
      dim = d;
    }
    n = checked_mul(n, u(dim));
  }
  return n;
}

uint64_t formula_registry_version() { return g_registry_version.load(std::memory_order_acquire); }

FormulaFn find_formula(std::string_view op_name) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.formulas.find(op_name);
  return it == r.formulas.end() ? FormulaFn{} : it->second;
}

}  // namespace detail

void register_formula(std::string op_name, FormulaFn fn) {
  if (op_name.empty()) throw Error("register_formula: empty op name; pass e.g. \"aten::addmm\"");
  if (!fn) throw Error("register_formula(\"" + op_name + "\"): empty function");
  detail::Registry& r = detail::registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto constant = r.constant.find(op_name);
  if (constant != r.constant.end()) r.constant.erase(constant);  // a user's formula reads args
  r.formulas[std::move(op_name)] = std::move(fn);
  detail::g_registry_version.fetch_add(1, std::memory_order_acq_rel);
}

bool unregister_formula(std::string_view op_name) {
  detail::Registry& r = detail::registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto it = r.formulas.find(op_name);
  if (it == r.formulas.end()) return false;
  r.formulas.erase(it);
  auto constant = r.constant.find(op_name);
  if (constant != r.constant.end()) r.constant.erase(constant);
  detail::g_registry_version.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

bool has_formula(std::string_view op_name) {
  return static_cast<bool>(detail::find_formula(op_name));
}

std::optional<FlopCount> compute_flops(std::string_view op_name, const OpInputs& inputs) {
  FormulaFn fn = detail::find_formula(op_name);
  if (!fn) return std::nullopt;
  return fn(inputs);
}

}  // namespace flopsprof
