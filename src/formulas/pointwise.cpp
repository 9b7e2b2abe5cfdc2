// Elementwise formulas: arithmetic, unary math, activations, softmax, reductions.
// Convention (DeepSpeed): 1 FLOP per element of the (right-aligned) broadcast output;
// addcmul/addcdiv 2 per element; activations and softmax numel(input); sum/mean numel(input).
// Backward of activations and softmax: numel(grad_output), as their forward. Embedding backward:
// one add per grad_output element (the scatter-add into the weight gradient).
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// Whether argument `i` is an integer (or bool) tensor or scalar: integer arithmetic is no FLOP
// (a training BatchNorm's `num_batches_tracked += 1`, index arithmetic).
bool integral(const OpInputs& in, size_t i) {
  const ArgView& a = in[i];
  if (a.kind == ArgKind::kTensor) return a.dtype != DType::kUnknown && !is_floating(a.dtype);
  return a.kind == ArgKind::kInt || a.kind == ArgKind::kBool;
}

// binary(a, b): numel(broadcast(a, b)); b may be a scalar; 0 when both are integers
std::optional<FlopCount> binary(const OpInputs& in) {
  if (!in.is_tensor(0) && !in.is_tensor(1)) return std::nullopt;
  if (integral(in, 0) && integral(in, 1)) return FlopCount{};
  auto n = broadcast_numel({in.shape(0), in.shape(1)});
  if (!n) return std::nullopt;
  return flops_only(*n);
}

// addcmul/addcdiv(self, t1, t2, value): 2 x numel(broadcast(self, t1, t2))
std::optional<FlopCount> ternary2(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  auto n = broadcast_numel({in.shape(0), in.shape(1), in.shape(2)});
  if (!n) return std::nullopt;
  return flops_only(checked_mul(2, *n));
}

// unary(x, ...): numel(x)
std::optional<FlopCount> unary(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return flops_only(in.numel(0));
}

}  // namespace

void register_pointwise_formulas() {
  for (const char* op : {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul",
                         "aten::mul_", "aten::div", "aten::div_", "aten::rsub", "aten::true_divide",
                         "aten::true_divide_", "aten::pow", "aten::pow_", "aten::maximum",
                         "aten::minimum", "aten::fmod", "aten::remainder"}) {
    add_builtin_formula(op, binary);
  }
  for (const char* op : {"aten::addcmul", "aten::addcmul_", "aten::addcdiv", "aten::addcdiv_"}) {
    add_builtin_formula(op, ternary2);
  }
  for (const char* op :
       {// unary math
        "aten::exp", "aten::exp_", "aten::log", "aten::log_", "aten::sqrt", "aten::sqrt_",
        "aten::rsqrt", "aten::rsqrt_", "aten::reciprocal", "aten::reciprocal_", "aten::neg",
        "aten::neg_", "aten::abs", "aten::abs_", "aten::sin", "aten::cos", "aten::erf",
        "aten::log1p", "aten::expm1", "aten::square", "aten::clamp", "aten::clamp_",
        "aten::clamp_min", "aten::clamp_min_", "aten::clamp_max", "aten::clamp_max_",
        // activations
        "aten::relu", "aten::relu_", "aten::gelu", "aten::gelu_", "aten::silu", "aten::silu_",
        "aten::sigmoid", "aten::sigmoid_", "aten::tanh", "aten::tanh_", "aten::elu", "aten::elu_",
        "aten::leaky_relu", "aten::leaky_relu_", "aten::hardswish", "aten::hardswish_",
        "aten::hardsigmoid", "aten::hardsigmoid_", "aten::hardtanh", "aten::hardtanh_",
        "aten::relu6", "aten::relu6_", "aten::softplus", "aten::mish", "aten::mish_", "aten::selu",
        "aten::selu_", "aten::celu", "aten::celu_", "aten::prelu", "aten::threshold",
        "aten::threshold_", "aten::log_sigmoid",
        // softmax family
        "aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax",
        // reductions
        "aten::sum", "aten::mean",
        // backward of activations and softmax: numel(grad_output)
        "aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward",
        "aten::sigmoid_backward", "aten::tanh_backward", "aten::elu_backward",
        "aten::leaky_relu_backward", "aten::hardswish_backward", "aten::hardsigmoid_backward",
        "aten::hardtanh_backward", "aten::softplus_backward", "aten::mish_backward",
        "aten::log_sigmoid_backward", "aten::_softmax_backward_data",
        "aten::_log_softmax_backward_data",
        // embedding backward: numel(grad_output)
        "aten::embedding_backward", "aten::embedding_dense_backward"}) {
    add_builtin_formula(op, unary);
  }
}

}  // namespace flopsprof::detail
