// Elementwise formulas: arithmetic, unary math, activations, softmax, reductions.
// Convention (DeepSpeed): 1 FLOP per element of the (right-aligned) broadcast output;
// addcmul/addcdiv 2 per element; activations and softmax numel(input); sum/mean numel(input).
// Backward of activations and softmax: numel(grad_output), as their forward. Embedding backward:
// one add per grad_output element (the scatter-add into the weight gradient).
// Bytes: inputs read once; the (broadcast) output written once, typed by promotion (comparisons:
// bool); in-place forms write self; reductions write the reduced shape; losses read the elements
// they touch (nll_loss: one per target) and write a scalar or one value per element.
#include <vector>

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

// dropout(input, p, train) as ATen's _dropout_impl computes it when training with p > 0: the
// noise scaled by 1 / (1 - p) (one per noise element: the input's, or one per feature map for the
// feature variants, whose noise is [N, C, 1, ...]) and the input times the noise (one per
// element); the alpha variants shift and scale the noise (4 per noise element) and multiply and
// add (2 per element). Drawing the mask is no arithmetic. Nothing when not training or p == 0:
// the input comes back; with p == 1, the input times a zero (one per element). native_dropout (the
// fused path): input * mask * scale, 2 per element, as its backward, grad * mask * scale.
FormulaFn dropout(bool feature, bool alpha) {
  return [=](const OpInputs& in) -> std::optional<FlopCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    const double p = in.scalar(1).value_or(0.5);
    if (!in.boolean(2).value_or(true) || p == 0) return FlopCount{};
    const uint64_t n = in.numel(0);
    if (p == 1) return flops_only(n);  // the input times a zero, no noise
    IntSpan s = in.shape(0);
    const uint64_t noise = feature && s.size() >= 2 ? sat_mul(u(s[0]), u(s[1])) : n;
    return flops_only(sat_add(sat_mul(n, alpha ? 2 : 1), sat_mul(noise, alpha ? 4 : 1)));
  };
}
std::optional<FlopCount> native_dropout(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  if (!in.boolean(2).value_or(true)) return FlopCount{};
  return flops_only(sat_mul(in.numel(0), 2));
}
std::optional<FlopCount> native_dropout_backward(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return flops_only(sat_mul(in.numel(0), 2));
}

// ---- Bytes ----

// out = broadcast of the tensor arguments at `args`, typed as `out` says (kUnknown: promoted).
BytesFn elementwise(std::initializer_list<size_t> args, DType out = DType::kUnknown) {
  std::vector<size_t> idx(args);
  return [idx, out](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(idx[0]) && (idx.size() < 2 || !in.is_tensor(idx[1]))) return std::nullopt;
    std::optional<uint64_t> n;
    DType d = out;
    switch (idx.size()) {
      case 1:
        n = count_of(in.shape(idx[0]));
        if (d == DType::kUnknown) d = in[idx[0]].dtype;
        break;
      case 2:
        n = broadcast_count(in, {idx[0], idx[1]});
        if (d == DType::kUnknown) d = result_dtype(in, {idx[0], idx[1]});
        break;
      default:
        n = broadcast_count(in, {idx[0], idx[1], idx[2]});
        if (d == DType::kUnknown) d = result_dtype(in, {idx[0], idx[1], idx[2]});
        break;
    }
    if (!n) return std::nullopt;
    if (idx.size() == 1) return reads_inputs_writes(in, *n, d);  // a backward reads 2 tensors
    // A binary or ternary op reads its operands only: a tensor after them is out= (add.out's
    // `out`), written, not read.
    uint64_t read = 0;
    for (size_t i : idx) {
      if (!(in[i].kind == ArgKind::kTensor && in[i].repeated))
        read = sat_add(read, arg_bytes(in, i));
    }
    return ByteCount{read, sat_mul(*n, element_bytes(d))};
  };
}

std::optional<ByteCount> self_in_place(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return in_place(in, 0);
}

// Elements left after reducing `shape` over `dims` (empty: all of them).
uint64_t reduced_count(IntSpan shape, IntSpan dims) {
  if (dims.empty()) return 1;
  uint64_t n = 1;
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t k = 0; k < rank; ++k) {
    bool reduced = false;
    for (int64_t d : dims) reduced = reduced || d == k || d + rank == k;
    if (!reduced) n = sat_mul(n, u(shape[static_cast<size_t>(k)]));
  }
  return n;
}

// A reduction of self over the int list at `dims` (absent, None or empty: all elements), writing
// `outputs` tensors of the reduced shape, the first typed by the dtype argument at `dtype_at`
// (else `sum_like`: integers widen to int64, else self's), the others int64 (indices).
BytesFn reduction(int dims, int dtype_at, bool sum_like, int outputs = 1,
                  DType first = DType::kUnknown) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    const uint64_t n =
        reduced_count(in.shape(0), dims >= 0 ? in.int_list(static_cast<size_t>(dims)) : IntSpan{});
    DType d = first != DType::kUnknown ? first : in[0].dtype;
    if (sum_like && !is_floating(d)) d = DType::kInt64;
    if (dtype_at >= 0) d = dtype_arg(in, static_cast<size_t>(dtype_at), d);
    ByteCount b = reads_inputs_writes(in, n, d);
    if (outputs > 1) b.written = sat_add(b.written, sat_mul(n, sat_mul(outputs - 1, 8)));
    return b;
  };
}

// sum / mean: sum(self, dtype) or sum.dim_IntList(self, dim, keepdim, dtype)
std::optional<ByteCount> sum_bytes(const OpInputs& in) {
  if (in.size() >= 3) return reduction(1, 3, true)(in);
  return reduction(-1, 1, true)(in);
}
std::optional<ByteCount> mean_bytes(const OpInputs& in) {
  if (in.size() >= 3) return reduction(1, 3, false)(in);
  return reduction(-1, 1, false)(in);
}

// max / min: of all elements (self), per dim with indices (self, dim, keepdim), or elementwise
// (self, other)
std::optional<ByteCount> max_bytes(const OpInputs& in) {
  if (in.is_tensor(1)) return elementwise({0, 1})(in);
  if (in[1].kind == ArgKind::kInt) return reduction(1, -1, false, 2)(in);
  return reduction(-1, -1, false)(in);
}

// argmax / argmin(self, dim?, keepdim) -> int64
std::optional<ByteCount> argmax_bytes(const OpInputs& in) {
  return reduction(in[1].kind == ArgKind::kInt ? 1 : -1, -1, false, 1, DType::kInt64)(in);
}

// var / std: (self, unbiased) of all elements, or (self, dim?, unbiased|correction, keepdim);
// var_mean / std_mean write two such tensors.
BytesFn variance(int outputs) {
  return [outputs](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    const uint64_t n = reduced_count(in.shape(0), in.size() >= 4 ? in.int_list(1) : IntSpan{});
    return reads_inputs_writes(in, sat_mul(n, outputs), in[0].dtype);
  };
}

// cumsum / cumprod(self, dim, dtype?): self's shape, the dtype argument's type
std::optional<ByteCount> cumulative_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  DType d = is_floating(in[0].dtype) ? in[0].dtype : DType::kInt64;
  return reads_inputs_writes(in, count_of(in.shape(0)), dtype_arg(in, 2, d));
}

// topk(self, k, dim, largest, sorted): values and int64 indices with size k along dim
std::optional<ByteCount> topk_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0);
  auto k = in.integer(1);
  if (!in.is_tensor(0) || !k) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t dim = in.integer(2).value_or(-1);
  if (dim < 0) dim += rank;
  uint64_t n = rank == 0 ? 1 : u(*k);
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim) n = sat_mul(n, u(x[static_cast<size_t>(d)]));
  }
  return ByteCount{input_bytes(in),
                   sat_mul(n, sat_add(element_bytes(in[0].dtype), element_bytes(DType::kInt64)))};
}

// sort(self, ...): values and int64 indices of self's shape; argsort: the indices only
std::optional<ByteCount> sort_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return ByteCount{input_bytes(in),
                   sat_mul(count_of(in.shape(0)), sat_add(element_bytes(in[0].dtype), 8))};
}

// Pointwise losses (self, target, ..., reduction at `reduction`): reduction none (0) writes the
// broadcast shape, mean/sum (1, 2) one element.
BytesFn pointwise_loss(size_t reduction_at) {
  return [reduction_at](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    const int64_t reduction = in.integer(reduction_at).value_or(1);
    if (reduction != 0) return reads_inputs_writes(in, 1, in[0].dtype);
    std::optional<uint64_t> n = broadcast_count(in, {0, 1});
    if (!n) return std::nullopt;
    return reads_inputs_writes(in, *n, in[0].dtype);
  };
}

// nll_loss*(self[N, C, ...], target[N, ...], weight?, reduction, ignore_index): gathers one
// element of self per target; writes one element per target (none) or a scalar, and
// nll_loss_forward also the total weight.
BytesFn nll_loss_bytes(bool total_weight) {
  return [total_weight](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
    const uint64_t targets = count_of(in.shape(1));
    const uint64_t es = element_bytes(in[0].dtype);
    ByteCount b;
    b.read = sat_add(arg_bytes(in, 1), sat_mul(targets, es));
    if (in.is_tensor(2)) b.read = sat_add(b.read, arg_bytes(in, 2));
    const int64_t reduction = in.integer(3).value_or(1);
    b.written = sat_mul(reduction == 0 ? targets : 1, es);
    if (total_weight) b.written = sat_add(b.written, es);
    return b;
  };
}

// nll_loss*_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight):
// reads the targets, grad_output, the weight and total_weight; writes the whole gradient (x's
// shape, zeroed then scattered into)
std::optional<ByteCount> nll_loss_backward_bytes(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(1) || !in.is_tensor(2)) return std::nullopt;
  ByteCount b;
  b.read = sat_add(arg_bytes(in, 0), arg_bytes(in, 2));
  if (in.is_tensor(3)) b.read = sat_add(b.read, arg_bytes(in, 3));
  if (in.is_tensor(6)) b.read = sat_add(b.read, arg_bytes(in, 6));
  b.written = sat_mul(count_of(in.shape(1)), element_bytes(in[1].dtype));
  return b;
}

// _softmax_backward_data(grad_output, output, dim, input_dtype): grad_output's shape, typed as
// the input was
std::optional<ByteCount> softmax_backward_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return reads_inputs_writes(in, count_of(in.shape(0)), dtype_arg(in, 3, in[0].dtype));
}

// softmax(self, dim, dtype?) / _softmax(self, dim, half_to_float): self's shape
std::optional<ByteCount> softmax_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  DType d = in[0].dtype;
  if (in[2].kind == ArgKind::kBool && in[2].b) d = DType::kFloat32;  // _softmax half_to_float
  return reads_inputs_writes(in, count_of(in.shape(0)), dtype_arg(in, 2, d));
}

// embedding_backward / embedding_dense_backward(grad_output[..., D], indices, num_weights, ...):
// the dense weight gradient [num_weights, D], written whole (zeroed, then rows added)
std::optional<ByteCount> embedding_backward_bytes(const OpInputs& in) {
  IntSpan g = in.shape(0);
  auto rows = in.integer(2);
  if (g.empty() || !rows) return std::nullopt;
  return reads_inputs_writes(in, sat_mul(u(*rows), u(g.back(0))), in[0].dtype);
}

}  // namespace

void register_pointwise_bytes() {
  // arithmetic with a formula, and elementwise ops without one (comparisons, logic, rounding)
  for (const char* op :
       {"aten::add",        "aten::sub",         "aten::mul",          "aten::div",
        "aten::rsub",       "aten::true_divide", "aten::pow",          "aten::maximum",
        "aten::minimum",    "aten::fmod",        "aten::remainder",    "aten::atan2",
        "aten::hypot",      "aten::xlogy",       "aten::floor_divide", "aten::fmax",
        "aten::fmin",       "aten::copysign",    "aten::logaddexp",    "aten::bitwise_and",
        "aten::bitwise_or", "aten::bitwise_xor"}) {
    add_builtin_bytes(op, elementwise({0, 1}));
  }
  for (const char* op : {"aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge",
                         "aten::logical_and", "aten::logical_or", "aten::logical_xor"}) {
    add_builtin_bytes(op, elementwise({0, 1}, DType::kBool));
  }
  for (const char* op : {"aten::logical_not", "aten::isnan", "aten::isinf", "aten::isfinite",
                         "aten::signbit", "aten::isneginf", "aten::isposinf"}) {
    add_builtin_bytes(op, elementwise({0}, DType::kBool));
  }
  for (const char* op : {"aten::addcmul", "aten::addcdiv", "aten::lerp"}) {
    add_builtin_bytes(op, elementwise({0, 1, 2}));
  }
  // where(condition, self, other); where(condition) alone is nonzero: data-dependent
  add_builtin_bytes("aten::where", [](const OpInputs& in) -> std::optional<ByteCount> {
    if (in.size() < 3) return std::nullopt;
    std::optional<uint64_t> n = broadcast_count(in, {0, 1, 2});
    if (!n) return std::nullopt;
    return reads_inputs_writes(in, *n, result_dtype(in, {1, 2}));
  });
  add_builtin_bytes("aten::prelu", same_as(0));
  for (const char* op :
       {"aten::exp", "aten::log", "aten::sqrt", "aten::rsqrt", "aten::reciprocal", "aten::neg",
        "aten::abs", "aten::sin", "aten::cos", "aten::erf", "aten::log1p", "aten::expm1",
        "aten::square", "aten::clamp", "aten::clamp_min", "aten::clamp_max", "aten::relu",
        "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh", "aten::elu", "aten::leaky_relu",
        "aten::hardswish", "aten::hardsigmoid", "aten::hardtanh", "aten::relu6", "aten::softplus",
        "aten::mish", "aten::selu", "aten::celu", "aten::threshold", "aten::log_sigmoid",
        "aten::sign", "aten::sgn", "aten::floor", "aten::ceil", "aten::round", "aten::trunc",
        "aten::frac", "aten::tan", "aten::asin", "aten::acos", "aten::atan", "aten::sinh",
        "aten::cosh", "aten::asinh", "aten::acosh", "aten::atanh", "aten::log2", "aten::log10",
        "aten::exp2", "aten::erfc", "aten::erfinv", "aten::nan_to_num", "aten::bitwise_not",
        "aten::positive",
        // backward of activations: grad_output's shape
        "aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward",
        "aten::sigmoid_backward", "aten::tanh_backward", "aten::elu_backward",
        "aten::leaky_relu_backward", "aten::hardswish_backward", "aten::hardsigmoid_backward",
        "aten::hardtanh_backward", "aten::softplus_backward", "aten::mish_backward",
        "aten::log_sigmoid_backward"}) {
    add_builtin_bytes(op, elementwise({0}));
  }
  // in-place forms: read the inputs, write self
  for (const char* op :
       {"aten::add_",         "aten::sub_",        "aten::mul_",       "aten::div_",
        "aten::true_divide_", "aten::pow_",        "aten::addcmul_",   "aten::addcdiv_",
        "aten::lerp_",        "aten::exp_",        "aten::log_",       "aten::sqrt_",
        "aten::rsqrt_",       "aten::reciprocal_", "aten::neg_",       "aten::abs_",
        "aten::clamp_",       "aten::clamp_min_",  "aten::clamp_max_", "aten::relu_",
        "aten::gelu_",        "aten::silu_",       "aten::sigmoid_",   "aten::tanh_",
        "aten::elu_",         "aten::leaky_relu_", "aten::hardswish_", "aten::hardsigmoid_",
        "aten::hardtanh_",    "aten::relu6_",      "aten::mish_",      "aten::selu_",
        "aten::celu_",        "aten::threshold_",  "aten::eq_",        "aten::ne_",
        "aten::lt_",          "aten::le_",         "aten::gt_",        "aten::ge_",
        "aten::sign_",        "aten::floor_",      "aten::ceil_",      "aten::round_",
        "aten::trunc_",       "aten::nan_to_num_", "aten::sin_",       "aten::cos_"}) {
    add_builtin_bytes(op, self_in_place);
  }
  for (const char* op :
       {"aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax"}) {
    add_builtin_bytes(op, softmax_bytes);
  }
  add_builtin_bytes("aten::_softmax_backward_data", softmax_backward_bytes);
  add_builtin_bytes("aten::_log_softmax_backward_data", softmax_backward_bytes);
  add_builtin_bytes("aten::embedding_backward", embedding_backward_bytes);
  add_builtin_bytes("aten::embedding_dense_backward", embedding_backward_bytes);
  // reductions
  add_builtin_bytes("aten::sum", sum_bytes);
  add_builtin_bytes("aten::nansum", sum_bytes);
  add_builtin_bytes("aten::mean", mean_bytes);
  add_builtin_bytes("aten::prod", [](const OpInputs& in) -> std::optional<ByteCount> {
    return in.size() >= 3 ? reduction(1, 3, true)(in) : reduction(-1, 1, true)(in);
  });
  for (const char* op : {"aten::max", "aten::min"}) add_builtin_bytes(op, max_bytes);
  for (const char* op : {"aten::amax", "aten::amin", "aten::logsumexp"}) {
    add_builtin_bytes(op, reduction(1, -1, false));
  }
  for (const char* op : {"aten::argmax", "aten::argmin"}) add_builtin_bytes(op, argmax_bytes);
  for (const char* op : {"aten::any", "aten::all"}) {
    add_builtin_bytes(op, [](const OpInputs& in) -> std::optional<ByteCount> {
      return reduction(in[1].kind == ArgKind::kInt || in[1].kind == ArgKind::kIntList ? 1 : -1, -1,
                       false, 1, DType::kBool)(in);
    });
  }
  add_builtin_bytes("aten::count_nonzero", reduction(1, -1, false, 1, DType::kInt64));
  for (const char* op : {"aten::var", "aten::std"}) add_builtin_bytes(op, variance(1));
  for (const char* op : {"aten::var_mean", "aten::std_mean"}) add_builtin_bytes(op, variance(2));
  // norm(self, p, dim, keepdim, dtype) / linalg_vector_norm(self, ord, dim, keepdim, dtype)
  add_builtin_bytes("aten::norm", reduction(2, 4, false));
  add_builtin_bytes("aten::linalg_vector_norm", reduction(2, 4, false));
  add_builtin_bytes("aten::frobenius_norm", reduction(1, -1, false));
  for (const char* op : {"aten::cumsum", "aten::cumprod"}) add_builtin_bytes(op, cumulative_bytes);
  add_builtin_bytes("aten::topk", topk_bytes);
  add_builtin_bytes("aten::sort", sort_bytes);
  add_builtin_bytes("aten::argsort", elementwise({0}, DType::kInt64));
  // losses
  add_builtin_bytes("aten::mse_loss", pointwise_loss(2));
  add_builtin_bytes("aten::l1_loss", pointwise_loss(2));
  add_builtin_bytes("aten::smooth_l1_loss", pointwise_loss(2));
  add_builtin_bytes("aten::huber_loss", pointwise_loss(2));
  add_builtin_bytes("aten::binary_cross_entropy", pointwise_loss(3));
  add_builtin_bytes("aten::binary_cross_entropy_with_logits", pointwise_loss(4));
  for (const char* op : {"aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d"}) {
    add_builtin_bytes(op, nll_loss_bytes(false));
  }
  for (const char* op : {"aten::nll_loss_forward", "aten::nll_loss2d_forward"}) {
    add_builtin_bytes(op, nll_loss_bytes(true));
  }
  // backward of losses: the input's gradient, the input's shape
  for (const char* op :
       {"aten::mse_loss_backward", "aten::l1_loss_backward", "aten::smooth_l1_loss_backward",
        "aten::huber_loss_backward", "aten::binary_cross_entropy_backward",
        "aten::binary_cross_entropy_with_logits_backward"}) {
    add_builtin_bytes(op, same_as(1));
  }
  for (const char* op : {"aten::nll_loss_backward", "aten::nll_loss2d_backward"})
    add_builtin_bytes(op, nll_loss_backward_bytes);
}

void register_pointwise_formulas() {
  for (bool feature : {false, true}) {
    for (bool alpha : {false, true}) {
      const std::string name =
          std::string("aten::") + (feature ? "feature_" : "") + (alpha ? "alpha_" : "") + "dropout";
      add_builtin_formula(name.c_str(), dropout(feature, alpha));
      add_builtin_formula((name + "_").c_str(), dropout(feature, alpha));
    }
  }
  add_builtin_formula("aten::native_dropout", native_dropout);
  add_builtin_formula("aten::native_dropout_backward", native_dropout_backward);
  for (const char* op : {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul",
                         "aten::mul_", "aten::div", "aten::div_", "aten::rsub", "aten::true_divide",
                         "aten::true_divide_", "aten::pow", "aten::pow_", "aten::maximum",
                         "aten::minimum", "aten::fmod", "aten::remainder"}) {
    add_builtin_formula(op, binary);
  }
  // comparisons: one per element of the broadcast, as max/min count them (reduction.cpp); 0 when
  // both operands are integers or booleans (a mask of token ids)
  for (const char* op :
       {"aten::eq", "aten::eq_", "aten::ne", "aten::ne_", "aten::lt", "aten::lt_", "aten::le",
        "aten::le_", "aten::gt", "aten::gt_", "aten::ge", "aten::ge_"}) {
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
        "aten::log1p", "aten::expm1", "aten::square", "aten::clamp", "aten::clamp_", "aten::sign",
        "aten::sign_", "aten::sgn", "aten::sgn_", "aten::clamp_min", "aten::clamp_min_",
        "aten::clamp_max", "aten::clamp_max_",
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
