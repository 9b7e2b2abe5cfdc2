// Convolution formulas: conv1d/2d/3d, convolution, _convolution, transposed, backend variants,
// and convolution_backward.
// Convention (DeepSpeed): MACs = N x Cout x prod(output spatial) x (Cin/groups) x prod(kernel),
// transposed: over input positions; FLOPs = 2 x MACs + one add per output element for a bias.
// Backward: the input gradient and the weight gradient each cost the forward's MACs; the bias
// gradient is one add per grad_output element; only the gradients in output_mask count.
// Bytes: input, weight and bias read once, the output [N, Cout, out spatial] written once; the
// backward reads grad_output and what the requested gradients need, and writes those gradients.
#include <cstdint>
#include <utility>
#include <vector>

#include "flopsprof/error.h"
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

struct ConvArgs {
  size_t input = 0, weight = 1, bias = 2;
  int stride = -1, padding = -1, dilation = -1, output_padding = -1, groups = -1;
  int transposed = -1;  // index of the bool argument, or -1
  bool always_transposed = false;
};

int64_t at_or(IntSpan list, size_t i, int64_t fallback) {
  if (list.empty()) return fallback;
  return list.size() == 1 ? list[0] : (i < list.size() ? list[i] : fallback);
}

// The shape facts of one convolution: batch, output channels, output and input positions.
struct ConvGeometry {
  uint64_t n = 1, c_out = 0, in_positions = 1, out_positions = 1;
  bool transposed = false;
};

std::optional<ConvGeometry> conv_geometry(const OpInputs& in, const ConvArgs& c) {
  IntSpan x = in.shape(c.input), w = in.shape(c.weight);
  if (w.size() < 3) return std::nullopt;
  size_t spatial = w.size() - 2;
  bool batched = x.size() == w.size();
  if (!batched && x.size() != w.size() - 1) return std::nullopt;
  ConvGeometry g;
  g.n = batched ? u(x[0]) : 1;
  g.transposed =
      c.always_transposed || (c.transposed >= 0 && in.boolean(c.transposed).value_or(false));
  int64_t groups = c.groups >= 0 ? in.integer(c.groups).value_or(1) : 1;
  if (groups < 1) return std::nullopt;
  IntSpan stride = c.stride >= 0 ? in.int_list(c.stride) : IntSpan{};
  IntSpan dilation = c.dilation >= 0 ? in.int_list(c.dilation) : IntSpan{};
  IntSpan out_pad = c.output_padding >= 0 ? in.int_list(c.output_padding) : IntSpan{};
  const ArgView& pad_arg = in[c.padding >= 0 ? size_t(c.padding) : in.size()];
  IntSpan padding = c.padding >= 0 ? in.int_list(c.padding) : IntSpan{};
  bool pad_same = pad_arg.kind == ArgKind::kString && pad_arg.i == 's';

  for (size_t d = 0; d < spatial; ++d) {
    int64_t size = x.back(spatial - 1 - d);
    int64_t k = w[2 + d];
    // In 128 bits: shapes recorded from ops LibTorch then rejects can overflow 64.
    const __int128 s = at_or(stride, d, 1), p = at_or(padding, d, 0), dl = at_or(dilation, d, 1);
    __int128 out;
    if (g.transposed) {
      out = (__int128{size} - 1) * s - 2 * p + dl * (k - 1) + at_or(out_pad, d, 0) + 1;
    } else if (pad_same) {
      out = size;
    } else {
      if (s < 1) return std::nullopt;
      out = (__int128{size} + 2 * p - dl * (k - 1) - 1) / s + 1;
    }
    if (out < 0) return std::nullopt;
    if (out > INT64_MAX) {
      throw Error("convolution output size overflows 64 bits; the op is reported as n/a");
    }
    g.in_positions = checked_mul(g.in_positions, u(size));
    g.out_positions = checked_mul(g.out_positions, u(static_cast<int64_t>(out)));
  }
  g.c_out = g.transposed ? checked_mul(u(w[1]), u(groups)) : u(w[0]);
  return g;
}

std::optional<FlopCount> conv_count(const OpInputs& in, const ConvArgs& c) {
  std::optional<ConvGeometry> g = conv_geometry(in, c);
  if (!g) return std::nullopt;
  uint64_t positions = g->transposed ? g->in_positions : g->out_positions;
  uint64_t macs = checked_mul(checked_mul(g->n, positions), numel_of(in.shape(c.weight)));
  uint64_t bias =
      in.is_tensor(c.bias) ? checked_mul(checked_mul(g->n, g->c_out), g->out_positions) : 0;
  return gemm_count(macs, bias);
}

// Bytes: reads input, weight and bias; writes the output [N, Cout, out spatial...].
BytesFn conv_bytes(ConvArgs c) {
  return [c](const OpInputs& in) -> std::optional<ByteCount> {
    std::optional<ConvGeometry> g;
    try {
      g = conv_geometry(in, c);
    } catch (const Error&) {  // absurd shapes: the FLOP formula reports them
      return std::nullopt;
    }
    if (!g) return std::nullopt;
    return reads_inputs_writes(in, sat_mul(sat_mul(g->n, g->c_out), g->out_positions),
                               in[c.input].dtype);
  };
}

FormulaFn conv(ConvArgs args) {
  return [args](const OpInputs& in) { return conv_count(in, args); };
}

// The argument layouts of the convolution ops, by name (for their formulas and bytes rules).
std::vector<std::pair<const char*, ConvArgs>> conv_ops() {
  std::vector<std::pair<const char*, ConvArgs>> ops;
  // conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups); padding may be a string
  ConvArgs convnd;
  convnd.stride = 3;
  convnd.padding = 4;
  convnd.dilation = 5;
  convnd.groups = 6;
  for (const char* op : {"aten::conv1d", "aten::conv2d", "aten::conv3d"})
    ops.push_back({op, convnd});
  // convolution / _convolution(input, weight, bias, stride, padding, dilation, transposed,
  //                            output_padding, groups, ...)
  ConvArgs general;
  general.stride = 3;
  general.padding = 4;
  general.dilation = 5;
  general.transposed = 6;
  general.output_padding = 7;
  general.groups = 8;
  for (const char* op : {"aten::convolution", "aten::_convolution"}) ops.push_back({op, general});
  // conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups, dilation)
  ConvArgs transposed;
  transposed.stride = 3;
  transposed.padding = 4;
  transposed.output_padding = 5;
  transposed.groups = 6;
  transposed.dilation = 7;
  transposed.always_transposed = true;
  for (const char* op :
       {"aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"})
    ops.push_back({op, transposed});
  // mkldnn_convolution(input, weight, bias, padding, stride, dilation, groups)
  ConvArgs mkldnn;
  mkldnn.padding = 3;
  mkldnn.stride = 4;
  mkldnn.dilation = 5;
  mkldnn.groups = 6;
  ops.push_back({"aten::mkldnn_convolution", mkldnn});
  // thnn_conv2d / _slow_conv2d_forward(input, weight, kernel_size, bias, stride, padding)
  ConvArgs thnn;
  thnn.bias = 3;
  thnn.stride = 4;
  thnn.padding = 5;
  for (const char* op : {"aten::thnn_conv2d", "aten::_slow_conv2d_forward"})
    ops.push_back({op, thnn});
  // cudnn_convolution(input, weight, padding, stride, dilation, groups, ...): no bias argument
  ConvArgs cudnn;
  cudnn.bias = 99;
  cudnn.padding = 2;
  cudnn.stride = 3;
  cudnn.dilation = 4;
  cudnn.groups = 5;
  ops.push_back({"aten::cudnn_convolution", cudnn});
  return ops;
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
//                      transposed, output_padding, groups, output_mask[3]):
// MACs = forward MACs x (grad_input + grad_weight); FLOPs = 2 x MACs + numel(grad_output) if
// grad_bias
std::optional<FlopCount> convolution_backward(const OpInputs& in) {
  ConvArgs fwd;
  fwd.input = 1;
  fwd.weight = 2;
  fwd.bias = 99;
  fwd.stride = 4;
  fwd.padding = 5;
  fwd.dilation = 6;
  fwd.transposed = 7;
  fwd.output_padding = 8;
  fwd.groups = 9;
  std::optional<FlopCount> f = conv_count(in, fwd);
  IntSpan mask = in.int_list(10);
  if (!f || mask.size() != 3) return std::nullopt;
  uint64_t grads = (mask[0] != 0 ? 1 : 0) + (mask[1] != 0 ? 1 : 0);
  uint64_t macs = checked_mul(f->macs, grads);
  return gemm_count(macs, mask[2] != 0 ? in.numel(0) : 0);
}

// convolution_backward: reads grad_output, and the weight (for grad_input) and the input (for
// grad_weight) that output_mask asks for; writes the gradients it asks for.
std::optional<ByteCount> convolution_backward_bytes(const OpInputs& in) {
  IntSpan mask = in.int_list(10);
  if (!in.is_tensor(0) || mask.size() != 3) return std::nullopt;
  ByteCount b;
  b.read = arg_bytes(in, 0);
  if (mask[0] != 0) {
    b.read = sat_add(b.read, arg_bytes(in, 2));
    b.written = sat_add(b.written, sat_mul(count_of(in.shape(1)), element_bytes(in[1].dtype)));
  }
  if (mask[1] != 0) {
    b.read = sat_add(b.read, arg_bytes(in, 1));
    b.written = sat_add(b.written, sat_mul(count_of(in.shape(2)), element_bytes(in[2].dtype)));
  }
  IntSpan w = in.shape(2);
  if (mask[2] != 0 && !w.empty()) {
    const bool transposed = in.boolean(7).value_or(false);
    const uint64_t c_out =
        transposed && w.size() > 1 ? sat_mul(u(w[1]), u(in.integer(9).value_or(1))) : u(w[0]);
    b.written = sat_add(b.written, sat_mul(c_out, element_bytes(in[0].dtype)));
  }
  return b;
}

}  // namespace

void register_conv_formulas() {
  for (const auto& [op, args] : conv_ops()) add_builtin_formula(op, conv(args));
  add_builtin_formula("aten::convolution_backward", convolution_backward);
}

void register_conv_bytes() {
  for (const auto& [op, args] : conv_ops()) add_builtin_bytes(op, conv_bytes(args));
  add_builtin_bytes("aten::convolution_backward", convolution_backward_bytes);
}

}  // namespace flopsprof::detail
