// Loss functions. Convention: what the unfused ops they stand for would count (1 FLOP per element
// per elementwise op or reduction pass, pointwise.cpp), n = numel(broadcast(input, target)):
//   mse_loss: subtract, square, reduce: 3n (2n with reduction 'none')
//   l1_loss:  subtract, abs, reduce: 3n (2n with reduction 'none')
//   mse_loss_backward(grad, input, target): subtract, scale by 2 (/N), multiply by grad: 3n
//   l1_loss_backward(grad, input, target):  subtract, sign, multiply by grad: 3n
//   binary_cross_entropy(x, t, weight?, reduction): -(t log x + (1 - t) log(1 - x)): log, 1 - x,
//     log, 1 - t, two products, add, negate: 8n, + n with a weight, + n to reduce (not 'none')
//   binary_cross_entropy_backward(grad, x, t, weight?, reduction): grad (x - t) / max((1 - x) x,
//     eps) (ATen's CPU and CUDA kernels): the difference, 1 - x, the product, the max, the
//     division, the product with grad: 6n, + n with a weight, + n for the mean's division
//   binary_cross_entropy_with_logits(x, t, weight?, pos_weight?, reduction): (1 - t) x +
//     softplus(-x): 1 - t, product, negate, exp, log1p, add: 6n, + n with a weight, + 3n with a
//     pos_weight (its (pw - 1) t + 1 and the product with the softplus), + n to reduce
//   binary_cross_entropy_with_logits_backward(grad, x, t, weight?, pos_weight?, reduction):
//     (sigmoid(x) - t) * grad: 3n, + n with a weight, + 3n with a pos_weight, + n for the mean
//   nll_loss*(x[N, C, ...], target[N, ...], weight?, reduction, ignore_index), m = numel(target):
//     the gathered value negated: m, + m with a weight (the product; its total weight is an add
//     per target too: + m), + m to reduce (not 'none'), + 1 for the mean's division ('mean')
//   nll_loss*_backward(grad_output, x, target, weight?, reduction, ignore_index, total_weight):
//     each target's gradient -grad_output (* weight[t]) (/ total_weight with 'mean') scattered into
//     a zeroed gradient of x's shape: negate and multiply by grad_output: 2m, + m with a weight,
//     + m for the mean's division
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

constexpr int64_t kReductionNone = 0;  // at::Reduction::None

// loss(input, target, reduction): (2 + reduced) * numel(broadcast(input, target))
std::optional<FlopCount> elementwise_loss(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
  std::optional<uint64_t> n = broadcast_numel({in.shape(0), in.shape(1)});
  if (!n) return std::nullopt;
  const std::optional<int64_t> reduction = in.integer(2);
  const uint64_t per = reduction && *reduction == kReductionNone ? 2 : 3;
  return flops_only(checked_mul(per, *n));
}

// loss_backward(grad_output, input, target, reduction): 3 * numel(broadcast(input, target))
std::optional<FlopCount> elementwise_loss_backward(const OpInputs& in) {
  if (!in.is_tensor(1) || !in.is_tensor(2)) return std::nullopt;
  std::optional<uint64_t> n = broadcast_numel({in.shape(1), in.shape(2)});
  if (!n) return std::nullopt;
  return flops_only(checked_mul(3, *n));
}

constexpr int64_t kReductionMean = 1;  // at::Reduction::Mean

std::optional<FlopCount> binary_cross_entropy(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
  std::optional<uint64_t> n = broadcast_numel({in.shape(0), in.shape(1)});
  if (!n) return std::nullopt;
  const std::optional<int64_t> reduction = in.integer(3);
  uint64_t per = 8;
  if (in.is_tensor(2)) ++per;
  if (!reduction || *reduction != kReductionNone) ++per;
  return flops_only(checked_mul(per, *n));
}

std::optional<FlopCount> binary_cross_entropy_backward(const OpInputs& in) {
  if (!in.is_tensor(1) || !in.is_tensor(2)) return std::nullopt;
  std::optional<uint64_t> n = broadcast_numel({in.shape(1), in.shape(2)});
  if (!n) return std::nullopt;
  const std::optional<int64_t> reduction = in.integer(4);
  uint64_t per = 6;
  if (in.is_tensor(3)) ++per;
  if (reduction && *reduction == kReductionMean) ++per;
  return flops_only(checked_mul(per, *n));
}

// (with_logits: the backward's arguments start one later, after grad_output)
std::optional<FlopCount> bce_with_logits(const OpInputs& in, bool backward) {
  const size_t x = backward ? 1 : 0;
  if (!in.is_tensor(x) || !in.is_tensor(x + 1)) return std::nullopt;
  std::optional<uint64_t> n = broadcast_numel({in.shape(x), in.shape(x + 1)});
  if (!n) return std::nullopt;
  const std::optional<int64_t> reduction = in.integer(x + 4);
  uint64_t per = backward ? 3 : 6;
  if (in.is_tensor(x + 2)) ++per;
  if (in.is_tensor(x + 3)) per += 3;
  if (backward ? (reduction && *reduction == kReductionMean)
               : (!reduction || *reduction != kReductionNone))
    ++per;
  return flops_only(checked_mul(per, *n));
}

std::optional<FlopCount> nll_loss(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
  const uint64_t m = in.numel(1);
  const std::optional<int64_t> reduction = in.integer(3);
  const bool reduced = !reduction || *reduction != kReductionNone;
  uint64_t per = 1;
  if (in.is_tensor(2)) per += 2;
  if (reduced) ++per;
  const uint64_t mean = reduction && *reduction == kReductionMean ? 1 : 0;
  return flops_only(checked_add(checked_mul(per, m), mean));
}

std::optional<FlopCount> nll_loss_backward(const OpInputs& in) {
  if (!in.is_tensor(1) || !in.is_tensor(2)) return std::nullopt;
  const uint64_t m = in.numel(2);
  const std::optional<int64_t> reduction = in.integer(4);
  uint64_t per = 2;
  if (in.is_tensor(3)) ++per;
  if (reduction && *reduction == kReductionMean) ++per;
  return flops_only(checked_mul(per, m));
}

}  // namespace

void register_loss_formulas() {
  for (const char* op : {"aten::nll_loss_backward", "aten::nll_loss2d_backward"})
    add_builtin_formula(op, nll_loss_backward);
  add_builtin_formula("aten::binary_cross_entropy", binary_cross_entropy);
  add_builtin_formula("aten::binary_cross_entropy_backward", binary_cross_entropy_backward);
  add_builtin_formula("aten::binary_cross_entropy_with_logits",
                      [](const OpInputs& in) { return bce_with_logits(in, false); });
  add_builtin_formula("aten::binary_cross_entropy_with_logits_backward",
                      [](const OpInputs& in) { return bce_with_logits(in, true); });
  for (const char* op : {"aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d",
                         "aten::nll_loss_forward", "aten::nll_loss2d_forward"})
    add_builtin_formula(op, nll_loss);
  for (const char* op : {"aten::mse_loss", "aten::l1_loss"})
    add_builtin_formula(op, elementwise_loss);
  for (const char* op : {"aten::mse_loss_backward", "aten::l1_loss_backward"})
    add_builtin_formula(op, elementwise_loss_backward);
}

}  // namespace flopsprof::detail
