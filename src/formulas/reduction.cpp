// Reductions beyond sum/mean: variance, standard deviation, logsumexp, max/min and arg-max/min.
// Convention: what the unfused ops they stand for would count (pointwise.cpp: 1 FLOP per element
// per elementwise op or reduction pass), so a hand-written `x.var()` and `x.mean(); (x - m)
// .pow(2).mean()` agree. With n = numel(input) and r = numel(output):
//   var, var_mean: 4n + r (mean pass n, subtract n, square n, sum n; divide r)
//   std, std_mean: 4n + 2r (var, then a square root per output)
//   logsumexp:     4n + 2r (max n, subtract n, exp n, sum n; log r, add the max back r)
//   max/min/amax/amin/argmax/argmin (reductions): n comparisons, as max pooling counts them;
//   max/min(a, b) elementwise: numel(broadcast), as maximum/minimum.
//   any/all: n comparisons with zero for a floating input; 0 for a boolean or integer one (a
//   logic reduction, no floating-point operation).
//   norm / linalg_vector_norm (p over the reduced dims; p = 2 when not given): p = 2 or 'fro':
//   2n + r (square, sum; a square root per output); p = 1: 2n (abs, sum); p = +-inf: 2n (abs,
//   max); p = 0: 2n (compare with zero, count); any other p: 3n + r (abs, pow, sum; pow 1/p).
//   frobenius_norm: as p = 2.
#include <cmath>

#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// Elements of the output of a reduction of x over argument `dim_arg` (an int list, one int, or
// none / empty: every dimension).
std::optional<uint64_t> reduced_numel(const OpInputs& in, size_t dim_arg) {
  IntSpan x = in.shape(0);
  IntSpan dims = in.int_list(dim_arg);
  if (dims.empty()) return 1;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<char> reduced(x.size(), 0);
  for (int64_t d : dims) {
    if (rank == 0) return 1;
    const int64_t k = d < 0 ? d + rank : d;
    if (k < 0 || k >= rank) return std::nullopt;
    reduced[static_cast<size_t>(k)] = 1;
  }
  uint64_t out = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i]) out = checked_mul(out, u(x[i]));
  }
  return out;
}

// n * per_element + r * per_output, r the reduction's output over argument 1.
std::optional<FlopCount> reduction(const OpInputs& in, uint64_t per_element, uint64_t per_output) {
  if (!in.is_tensor(0)) return std::nullopt;
  std::optional<uint64_t> r = reduced_numel(in, 1);
  if (!r) return std::nullopt;
  return flops_only(
      checked_add(checked_mul(per_element, in.numel(0)), checked_mul(per_output, *r)));
}

std::optional<FlopCount> var(const OpInputs& in) { return reduction(in, 4, 1); }
std::optional<FlopCount> std_dev(const OpInputs& in) { return reduction(in, 4, 2); }
std::optional<FlopCount> logsumexp(const OpInputs& in) { return reduction(in, 4, 2); }

// max(x), max(x, dim), argmax(x, dim?): numel(x); max(a, b): numel(broadcast(a, b)).
std::optional<FlopCount> extremum(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  if (in.is_tensor(1)) {
    std::optional<uint64_t> n = broadcast_numel({in.shape(0), in.shape(1)});
    if (!n) return std::nullopt;
    return flops_only(*n);
  }
  return flops_only(in.numel(0));
}

// any(x), any(x, dim, keepdim), all(...): numel(x) for a floating x, else 0.
std::optional<FlopCount> any_all(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  if (!is_floating(in[0].dtype)) return FlopCount{};
  return flops_only(in.numel(0));
}

// norm(self, p?, dim?, keepdim?, dtype?) and linalg_vector_norm(self, ord, dim?, keepdim, dtype?):
// by p (see above); the reduced dims are argument 2 (none: all of them).
std::optional<FlopCount> vector_norm(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  const double p = in.size() > 1 ? in.scalar(1).value_or(2.0) : 2.0;
  std::optional<uint64_t> r = in.size() > 2 && in[2].kind == ArgKind::kIntList
                                  ? reduced_numel(in, 2)
                                  : std::optional<uint64_t>(1);
  if (!r) return std::nullopt;
  const uint64_t n = in.numel(0);
  if (p == 2.0) return flops_only(checked_add(checked_mul(2, n), *r));
  if (p == 1.0 || p == 0.0 || std::isinf(p)) return flops_only(checked_mul(2, n));
  return flops_only(checked_add(checked_mul(3, n), *r));
}

// frobenius_norm(self, dim, keepdim): p = 2 over argument 1's dims.
std::optional<FlopCount> frobenius_norm(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  std::optional<uint64_t> r = reduced_numel(in, 1);
  if (!r) return std::nullopt;
  return flops_only(checked_add(checked_mul(2, in.numel(0)), *r));
}

}  // namespace

void register_reduction_formulas() {
  for (const char* op : {"aten::any", "aten::all"}) add_builtin_formula(op, any_all);
  for (const char* op : {"aten::norm", "aten::linalg_vector_norm"}) add_builtin_formula(op, vector_norm);
  add_builtin_formula("aten::frobenius_norm", frobenius_norm);
  for (const char* op : {"aten::var", "aten::var_mean"}) add_builtin_formula(op, var);
  for (const char* op : {"aten::std", "aten::std_mean"}) add_builtin_formula(op, std_dev);
  add_builtin_formula("aten::logsumexp", logsumexp);
  for (const char* op :
       {"aten::max", "aten::min", "aten::amax", "aten::amin", "aten::argmax", "aten::argmin"}) {
    add_builtin_formula(op, extremum);
  }
}

}  // namespace flopsprof::detail
