// Reductions beyond sum/mean: variance, standard deviation, logsumexp, max/min and arg-max/min.
// Convention: what the unfused ops they stand for would count (pointwise.cpp: 1 FLOP per element
// per elementwise op or reduction pass), so a hand-written `x.var()` and `x.mean(); (x - m)
// .pow(2).mean()` agree. With n = numel(input) and r = numel(output):
//   var, var_mean: 4n + r (mean pass n, subtract n, square n, sum n; divide r)
//   std, std_mean: 4n + 2r (var, then a square root per output)
//   logsumexp:     4n + 2r (max n, subtract n, exp n, sum n; log r, add the max back r)
//   max/min/amax/amin/argmax/argmin (reductions): n comparisons, as max pooling counts them;
//   max/min(a, b) elementwise: numel(broadcast), as maximum/minimum.
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

}  // namespace

void register_reduction_formulas() {
  for (const char* op : {"aten::var", "aten::var_mean"}) add_builtin_formula(op, var);
  for (const char* op : {"aten::std", "aten::std_mean"}) add_builtin_formula(op, std_dev);
  add_builtin_formula("aten::logsumexp", logsumexp);
  for (const char* op :
       {"aten::max", "aten::min", "aten::amax", "aten::amin", "aten::argmax", "aten::argmin"}) {
    add_builtin_formula(op, extremum);
  }
}

}  // namespace flopsprof::detail
