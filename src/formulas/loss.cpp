// Loss functions. Convention: what the unfused ops they stand for would count (1 FLOP per element
// per elementwise op or reduction pass, pointwise.cpp), n = numel(broadcast(input, target)):
//   mse_loss: subtract, square, reduce: 3n (2n with reduction 'none')
//   l1_loss:  subtract, abs, reduce: 3n (2n with reduction 'none')
//   mse_loss_backward(grad, input, target): subtract, scale by 2 (/N), multiply by grad: 3n
//   l1_loss_backward(grad, input, target):  subtract, sign, multiply by grad: 3n
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

}  // namespace

void register_loss_formulas() {
  for (const char* op : {"aten::mse_loss", "aten::l1_loss"})
    add_builtin_formula(op, elementwise_loss);
  for (const char* op : {"aten::mse_loss_backward", "aten::l1_loss_backward"})
    add_builtin_formula(op, elementwise_loss_backward);
}

}  // namespace flopsprof::detail
