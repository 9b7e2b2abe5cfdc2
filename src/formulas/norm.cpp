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

// ---- Bytes ----

uint64_t norm_tensor_out(const OpInputs& in, size_t i) {
  return sat_mul(count_of(in.shape(i)), element_bytes(in[i].dtype));
}

// batch_norm-like(input, weight, bias, running_mean, running_var, training, ...): the output; in
// training the updated running statistics, and `saved` statistics (native_batch_norm: mean and
// invstd per channel).
BytesFn batch_norm_bytes(int training_index, bool saved) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    ByteCount b{input_bytes(in), norm_tensor_out(in, 0)};
    const bool training = training_index >= 0 && in.boolean(training_index).value_or(false);
    IntSpan x = in.shape(0);
    const uint64_t channels = x.size() > 1 ? u(x[1]) : 1;
    if (training) {
      b.written = sat_add(b.written, sat_add(arg_bytes(in, 3), arg_bytes(in, 4)));
      if (saved) b.written = sat_add(b.written, sat_mul(2 * channels, element_bytes(in[0].dtype)));
    }
    return b;
  };
}

// native_layer_norm(input, normalized_shape, weight, bias, eps): output, mean and rstd (one per
// normalised row each).
std::optional<ByteCount> native_layer_norm_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  const uint64_t n = count_of(in.shape(0)), inner = count_of(in.int_list(1));
  const uint64_t rows = inner == 0 ? 0 : n / inner;
  return ByteCount{input_bytes(in),
                   sat_add(norm_tensor_out(in, 0), sat_mul(2 * rows, element_bytes(in[0].dtype)))};
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps): output, mean and rstd [N, group]
std::optional<ByteCount> native_group_norm_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  const uint64_t stats = sat_mul(u(in.integer(3).value_or(0)), u(in.integer(6).value_or(0)));
  return ByteCount{input_bytes(in),
                   sat_add(norm_tensor_out(in, 0), sat_mul(2 * stats, element_bytes(in[0].dtype)))};
}

// *_norm_backward(..., input at `input`, weight at `weight`, output_mask at `mask`): grad_input
// (as the input), grad_weight and grad_bias (as the weight, or `channels` elements of the input's
// dtype when there is none).
BytesFn norm_backward_bytes(size_t input, size_t weight, size_t mask_index) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    IntSpan mask = in.int_list(mask_index);
    if (!in.is_tensor(input) || mask.size() != 3) return std::nullopt;
    ByteCount b{input_bytes(in), 0};
    if (mask[0] != 0) b.written = norm_tensor_out(in, input);
    IntSpan x = in.shape(input);
    const uint64_t per_param = in.is_tensor(weight) ? norm_tensor_out(in, weight)
                               : x.size() > 1 ? sat_mul(u(x[1]), element_bytes(in[input].dtype))
                                              : 0;
    if (mask[1] != 0) b.written = sat_add(b.written, per_param);
    if (mask[2] != 0) b.written = sat_add(b.written, per_param);
    return b;
  };
}

}  // namespace

void register_norm_bytes() {
  add_builtin_bytes("aten::native_layer_norm_backward", norm_backward_bytes(1, 5, 7));
  add_builtin_bytes("aten::native_batch_norm_backward", norm_backward_bytes(1, 2, 9));
  add_builtin_bytes("aten::native_group_norm_backward", norm_backward_bytes(1, 4, 9));
  add_builtin_bytes("aten::batch_norm", batch_norm_bytes(5, false));
  add_builtin_bytes("aten::native_batch_norm", batch_norm_bytes(5, true));
  add_builtin_bytes("aten::_native_batch_norm_legit", batch_norm_bytes(5, true));
  add_builtin_bytes("aten::_native_batch_norm_legit_no_training", batch_norm_bytes(-1, false));
  for (const char* op : {"aten::layer_norm", "aten::group_norm", "aten::instance_norm"}) {
    add_builtin_bytes(op, same_as(0));
  }
  add_builtin_bytes("aten::native_layer_norm", native_layer_norm_bytes);
  add_builtin_bytes("aten::native_group_norm", native_group_norm_bytes);
}

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
