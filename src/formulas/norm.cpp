// Normalisation formulas: batch_norm, layer_norm, group_norm, instance_norm and native variants.
// Convention (DeepSpeed): batch_norm training 5 x numel (affine) or 4 x, eval 2 x (affine) or
// 1 x; layer_norm / group_norm / instance_norm 5 x numel (affine) or 4 x.
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// Per-element FLOPs: normalise (sub mean, div std: plus mean and var reductions) and, when
// affine, scale and shift.
FormulaFn norm(size_t weight_index) {
  return [weight_index](const OpInputs& in) -> std::optional<FlopCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    uint64_t per = in.is_tensor(weight_index) ? 5 : 4;
    return flops_only(checked_mul(per, in.numel(0)));
  };
}

// batch_norm-like(input, weight, bias, running_mean, running_var, training, ...)
FormulaFn batch_norm(int training_index) {
  return [training_index](const OpInputs& in) -> std::optional<FlopCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    bool affine = in.is_tensor(1);
    bool training = training_index >= 0 && in.boolean(training_index).value_or(false);
    uint64_t per = training ? (affine ? 5 : 4) : (affine ? 2 : 1);
    return flops_only(checked_mul(per, in.numel(0)));
  };
}

// *_norm_backward(..., input at `input`, weight at `weight`, ..., output_mask at `mask`)
FormulaFn norm_backward(size_t input, size_t weight, size_t mask_index) {
  return [=](const OpInputs& in) -> std::optional<FlopCount> {
    IntSpan mask = in.int_list(mask_index);
    if (!in.is_tensor(input) || mask.size() != 3) return std::nullopt;
    uint64_t n = in.numel(input);
    uint64_t per = 0;
    if (mask[0] != 0) per += in.is_tensor(weight) ? 5 : 4;
    if (mask[1] != 0) per += 2;
    if (mask[2] != 0) per += 1;
    return flops_only(checked_mul(per, n));
  };
}

}  // namespace

void register_norm_formulas() {
  // native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, mask)
  add_builtin_formula("aten::native_layer_norm_backward", norm_backward(1, 5, 7));
  // native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
  //                            save_invstd, train, eps, mask)
  add_builtin_formula("aten::native_batch_norm_backward", norm_backward(1, 2, 9));
  // native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, mask)
  add_builtin_formula("aten::native_group_norm_backward", norm_backward(1, 4, 9));
  add_builtin_formula("aten::batch_norm", batch_norm(5));
  add_builtin_formula("aten::native_batch_norm", batch_norm(5));
  add_builtin_formula("aten::_native_batch_norm_legit", batch_norm(5));
  add_builtin_formula("aten::_native_batch_norm_legit_no_training", batch_norm(-1));
  // layer_norm(input, normalized_shape, weight, bias, eps, ...)
  add_builtin_formula("aten::layer_norm", norm(2));
  add_builtin_formula("aten::native_layer_norm", norm(2));
  // group_norm(input, num_groups, weight, bias, eps, ...)
  add_builtin_formula("aten::group_norm", norm(2));
  // native_group_norm(input, weight, bias, N, C, HxW, group, eps)
  add_builtin_formula("aten::native_group_norm", norm(1));
  // instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, ...)
  add_builtin_formula("aten::instance_norm", norm(1));
}

}  // namespace flopsprof::detail
