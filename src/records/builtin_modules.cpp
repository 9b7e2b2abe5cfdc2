// The op table of LibTorch's built-in modules (torch::nn::*Impl), used by the attribution rules.
//
// Each row lists the ops the module's forward runs at top level, as RecordFunction reports them
// (measured on LibTorch 1.13 with a thread-local callback around each module's forward, train
// and eval mode; 2.x names added where the C++ frontend changed, e.g. Linear -> aten::linear).
#include "records/builtin_modules.h"

#include <array>

namespace flopsprof::detail {

namespace {

constexpr std::string_view kMhaOps =
    "equal slice t matmul add_ add linear mul view transpose bmm baddbmm softmax _softmax dropout "
    "contiguous sum div chunk reshape masked_fill masked_fill_ cat pad _pad_enum unsqueeze zeros "
    "to expand _native_multi_head_attention scaled_dot_product_attention";
constexpr std::string_view kPadOps =
    "_pad_enum pad constant_pad_nd reflection_pad1d reflection_pad2d reflection_pad3d "
    "replication_pad1d replication_pad2d replication_pad3d";
constexpr std::string_view kUpsampleOps =
    "upsample_nearest1d upsample_nearest2d upsample_nearest3d _upsample_nearest_exact1d "
    "_upsample_nearest_exact2d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d "
    "upsample_bicubic2d upsample_trilinear3d interpolate";

// {type, ops, starts, terminals, wildcard, container, leading}
const std::array kSpecs = {
    // Containers: they run their children, no op of their own.
    BuiltinSpec{"Sequential", "", "", "", false, true},
    BuiltinSpec{"ModuleList", "", "", "", false, true},
    BuiltinSpec{"ModuleDict", "", "", "", false, true},
    BuiltinSpec{"Functional", "", "", "", true, false},
    // With parameters.
    BuiltinSpec{"Linear", "t addmm matmul add_ add linear mm", "t linear", ""},
    BuiltinSpec{"Bilinear", "bilinear", "", "bilinear"},
    BuiltinSpec{"Conv1d", "conv1d convolution _convolution _pad_enum pad", "",
                "conv1d convolution _convolution", false, false, "_pad_enum pad"},
    BuiltinSpec{"Conv2d", "conv2d convolution _convolution _pad_enum pad", "",
                "conv2d convolution _convolution", false, false, "_pad_enum pad"},
    BuiltinSpec{"Conv3d", "conv3d convolution _convolution _pad_enum pad", "",
                "conv3d convolution _convolution", false, false, "_pad_enum pad"},
    BuiltinSpec{"ConvTranspose1d", "conv_transpose1d convolution _convolution", "",
                "conv_transpose1d convolution _convolution"},
    BuiltinSpec{"ConvTranspose2d", "conv_transpose2d convolution _convolution", "",
                "conv_transpose2d convolution _convolution"},
    BuiltinSpec{"ConvTranspose3d", "conv_transpose3d convolution _convolution", "",
                "conv_transpose3d convolution _convolution"},
    BuiltinSpec{"BatchNorm1d", "add_ batch_norm", "", "batch_norm"},
    BuiltinSpec{"BatchNorm2d", "add_ batch_norm", "", "batch_norm"},
    BuiltinSpec{"BatchNorm3d", "add_ batch_norm", "", "batch_norm"},
    BuiltinSpec{"InstanceNorm1d", "instance_norm", "", "instance_norm"},
    BuiltinSpec{"InstanceNorm2d", "instance_norm", "", "instance_norm"},
    BuiltinSpec{"InstanceNorm3d", "instance_norm", "", "instance_norm"},
    BuiltinSpec{"GroupNorm", "group_norm", "", "group_norm"},
    BuiltinSpec{"LayerNorm", "layer_norm", "", "layer_norm"},
    BuiltinSpec{"Embedding", "embedding embedding_renorm_", "", "embedding"},
    BuiltinSpec{"EmbeddingBag", "arange reshape embedding_bag _embedding_bag", "",
                "embedding_bag _embedding_bag", false, false, "arange reshape", 2},
    BuiltinSpec{"PReLU", "prelu _prelu_kernel", "", "prelu _prelu_kernel"},
    BuiltinSpec{"LSTM", "zeros lstm", "", "lstm", false, false, "zeros", 2},
    BuiltinSpec{"GRU", "zeros gru", "", "gru", false, false, "zeros"},
    BuiltinSpec{"RNN", "zeros rnn_tanh rnn_relu", "", "rnn_tanh rnn_relu", false, false, "zeros"},
    BuiltinSpec{"LSTMCell", "zeros lstm_cell", "", "lstm_cell", false, false, "zeros"},
    BuiltinSpec{"GRUCell", "zeros gru_cell", "", "gru_cell", false, false, "zeros"},
    BuiltinSpec{"RNNCell", "zeros rnn_tanh_cell rnn_relu_cell", "", "rnn_tanh_cell rnn_relu_cell",
                false, false, "zeros"},
    // equal(query, key), then equal(key, value) once or twice (the self-attention test, then the
    // encoder-decoder one)
    BuiltinSpec{"MultiheadAttention", kMhaOps, "equal", "", false, false, "equal", 3},
    // Parameterless.
    BuiltinSpec{"ReLU", "relu relu_", "", "relu relu_"},
    BuiltinSpec{"ReLU6", "relu6 relu6_ hardtanh hardtanh_", "", "relu6 relu6_ hardtanh hardtanh_"},
    BuiltinSpec{"LeakyReLU", "leaky_relu leaky_relu_", "", "leaky_relu leaky_relu_"},
    BuiltinSpec{"RReLU", "rrelu rrelu_ rrelu_with_noise", "", "rrelu rrelu_ rrelu_with_noise"},
    BuiltinSpec{"ELU", "elu elu_", "", "elu elu_"},
    BuiltinSpec{"SELU", "selu selu_", "", "selu selu_"},
    BuiltinSpec{"CELU", "celu celu_", "", "celu celu_"},
    BuiltinSpec{"GELU", "gelu gelu_", "", "gelu gelu_"},
    BuiltinSpec{"SiLU", "silu silu_", "", "silu silu_"},
    BuiltinSpec{"Mish", "mish mish_", "", "mish mish_"},
    BuiltinSpec{"Sigmoid", "sigmoid sigmoid_", "", "sigmoid sigmoid_"},
    BuiltinSpec{"LogSigmoid", "log_sigmoid", "", "log_sigmoid"},
    BuiltinSpec{"Tanh", "tanh tanh_", "", "tanh tanh_"},
    BuiltinSpec{"Hardtanh", "hardtanh hardtanh_", "", "hardtanh hardtanh_"},
    BuiltinSpec{"Hardshrink", "hardshrink", "", "hardshrink"},
    BuiltinSpec{"Softshrink", "softshrink", "", "softshrink"},
    BuiltinSpec{"Softplus", "softplus", "", "softplus"},
    BuiltinSpec{"Softsign", "abs add div", "abs", "div"},
    BuiltinSpec{"Tanhshrink", "tanh sub", "", "sub"},
    BuiltinSpec{"Threshold", "threshold threshold_", "", "threshold threshold_"},
    BuiltinSpec{"GLU", "glu", "", "glu"},
    BuiltinSpec{"Softmax", "softmax _softmax", "", "softmax _softmax"},
    BuiltinSpec{"LogSoftmax", "log_softmax _log_softmax", "", "log_softmax _log_softmax"},
    BuiltinSpec{"Softmin", "neg softmax", "neg", "softmax"},
    BuiltinSpec{"Softmax2d", "softmax", "", "softmax"},
    BuiltinSpec{"Dropout", "dropout dropout_", "", "dropout dropout_"},
    BuiltinSpec{"Dropout2d", "feature_dropout feature_dropout_", "",
                "feature_dropout feature_dropout_"},
    BuiltinSpec{"Dropout3d", "feature_dropout feature_dropout_", "",
                "feature_dropout feature_dropout_"},
    BuiltinSpec{"AlphaDropout", "alpha_dropout alpha_dropout_", "", "alpha_dropout alpha_dropout_"},
    BuiltinSpec{"FeatureAlphaDropout", "feature_alpha_dropout feature_alpha_dropout_", "",
                "feature_alpha_dropout feature_alpha_dropout_"},
    BuiltinSpec{"MaxPool1d", "max_pool1d max_pool1d_with_indices", "",
                "max_pool1d max_pool1d_with_indices"},
    BuiltinSpec{"MaxPool2d", "max_pool2d max_pool2d_with_indices", "",
                "max_pool2d max_pool2d_with_indices"},
    BuiltinSpec{"MaxPool3d", "max_pool3d max_pool3d_with_indices", "",
                "max_pool3d max_pool3d_with_indices"},
    BuiltinSpec{"AvgPool1d", "avg_pool1d", "", "avg_pool1d"},
    BuiltinSpec{"AvgPool2d", "avg_pool2d", "", "avg_pool2d"},
    BuiltinSpec{"AvgPool3d", "avg_pool3d", "", "avg_pool3d"},
    BuiltinSpec{"AdaptiveAvgPool1d", "adaptive_avg_pool1d", "", "adaptive_avg_pool1d"},
    BuiltinSpec{"AdaptiveAvgPool2d", "adaptive_avg_pool2d _adaptive_avg_pool2d", "",
                "adaptive_avg_pool2d _adaptive_avg_pool2d"},
    BuiltinSpec{"AdaptiveAvgPool3d", "adaptive_avg_pool3d _adaptive_avg_pool3d", "",
                "adaptive_avg_pool3d _adaptive_avg_pool3d"},
    BuiltinSpec{"AdaptiveMaxPool1d", "adaptive_max_pool1d", "", "adaptive_max_pool1d"},
    BuiltinSpec{"AdaptiveMaxPool2d", "adaptive_max_pool2d", "", "adaptive_max_pool2d"},
    BuiltinSpec{"AdaptiveMaxPool3d", "adaptive_max_pool3d", "", "adaptive_max_pool3d"},
    BuiltinSpec{"LPPool1d", "pow avg_pool1d abs relu sign mul", "", ""},
    BuiltinSpec{"LPPool2d", "pow avg_pool2d abs relu sign mul", "", ""},
    BuiltinSpec{"MaxUnpool1d", "max_unpool1d max_unpool2d", "", "max_unpool1d max_unpool2d"},
    BuiltinSpec{"MaxUnpool2d", "max_unpool2d", "", "max_unpool2d"},
    BuiltinSpec{"MaxUnpool3d", "max_unpool3d", "", "max_unpool3d"},
    BuiltinSpec{"Flatten", "flatten view reshape", "", "flatten"},
    BuiltinSpec{"Unflatten", "unflatten view reshape", "", "unflatten"},
    BuiltinSpec{"Upsample", kUpsampleOps, "", kUpsampleOps},
    BuiltinSpec{"PixelShuffle", "pixel_shuffle", "", "pixel_shuffle"},
    BuiltinSpec{"PixelUnshuffle", "pixel_unshuffle", "", "pixel_unshuffle"},
    BuiltinSpec{"ChannelShuffle", "channel_shuffle native_channel_shuffle", "",
                "channel_shuffle native_channel_shuffle"},
    BuiltinSpec{"ZeroPad1d", kPadOps, "", kPadOps},
    BuiltinSpec{"ZeroPad2d", kPadOps, "", kPadOps},
    BuiltinSpec{"ZeroPad3d", kPadOps, "", kPadOps},
    BuiltinSpec{"ConstantPad1d", kPadOps, "", kPadOps},
    BuiltinSpec{"ConstantPad2d", kPadOps, "", kPadOps},
    BuiltinSpec{"ConstantPad3d", kPadOps, "", kPadOps},
    BuiltinSpec{"ReflectionPad1d", kPadOps, "", kPadOps},
    BuiltinSpec{"ReflectionPad2d", kPadOps, "", kPadOps},
    BuiltinSpec{"ReflectionPad3d", kPadOps, "", kPadOps},
    BuiltinSpec{"ReplicationPad1d", kPadOps, "", kPadOps},
    BuiltinSpec{"ReplicationPad2d", kPadOps, "", kPadOps},
    BuiltinSpec{"ReplicationPad3d", kPadOps, "", kPadOps},
    BuiltinSpec{"Fold", "col2im", "", "col2im"},
    BuiltinSpec{"Unfold", "im2col", "", "im2col"},
    BuiltinSpec{"CosineSimilarity", "cosine_similarity", "", "cosine_similarity"},
    BuiltinSpec{"PairwiseDistance", "pairwise_distance", "", "pairwise_distance"},
    BuiltinSpec{"Identity", "", "", ""},
    // Losses, when registered inside a model.
    BuiltinSpec{"MSELoss", "mse_loss", "", "mse_loss"},
    BuiltinSpec{"L1Loss", "l1_loss", "", "l1_loss"},
    BuiltinSpec{"SmoothL1Loss", "smooth_l1_loss", "", "smooth_l1_loss"},
    BuiltinSpec{"HuberLoss", "huber_loss", "", "huber_loss"},
    BuiltinSpec{"NLLLoss", "nll_loss nll_loss_nd nll_loss2d", "",
                "nll_loss nll_loss_nd nll_loss2d"},
    BuiltinSpec{"CrossEntropyLoss", "cross_entropy_loss cross_entropy", "",
                "cross_entropy_loss cross_entropy"},
    BuiltinSpec{"BCELoss", "binary_cross_entropy", "", "binary_cross_entropy"},
    BuiltinSpec{"BCEWithLogitsLoss", "binary_cross_entropy_with_logits", "",
                "binary_cross_entropy_with_logits"},
    BuiltinSpec{"KLDivLoss", "kl_div", "", "kl_div"},
};

}  // namespace

int word_position(std::string_view list, std::string_view word) noexcept {
  if (word.empty()) return -1;
  size_t pos = 0;
  for (int k = 0; pos < list.size(); ++k) {
    size_t end = list.find(' ', pos);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(pos, end - pos) == word) return k;
    pos = end + 1;
  }
  return -1;
}

bool op_in_list(std::string_view list, std::string_view op) noexcept {
  if (op.substr(0, 6) == "aten::") op.remove_prefix(6);
  return word_position(list, op) >= 0;
}

std::string_view builtin_run_order(std::string_view cpp_type_name) {
  // LibTorch's torch/csrc/api/src/nn/modules/transformer.cpp: forward() of each layer.
  if (cpp_type_name == "torch::nn::TransformerEncoderLayerImpl")
    return "self_attn dropout1 norm1 linear1 dropout linear2 dropout2 norm2";
  if (cpp_type_name == "torch::nn::TransformerDecoderLayerImpl")
    return "self_attn dropout1 norm1 multihead_attn dropout2 norm2 linear1 dropout linear2 "
           "dropout3 "
           "norm3";
  return "";
}

bool builtin_runs_each_child_once(std::string_view cpp_type_name) {
  // LibTorch's sequential.h and transformer*.cpp: forward() runs every child once, in order
  // (a TransformerEncoder's optional norm when it is set, and then it is a child).
  for (std::string_view t :
       {"torch::nn::SequentialImpl", "torch::nn::TransformerImpl",
        "torch::nn::TransformerEncoderImpl", "torch::nn::TransformerDecoderImpl",
        "torch::nn::TransformerEncoderLayerImpl", "torch::nn::TransformerDecoderLayerImpl"}) {
    if (cpp_type_name == t) return true;
  }
  return false;
}

const BuiltinSpec* find_builtin(std::string_view cpp_type_name, std::string_view display_type) {
  if (cpp_type_name.substr(0, 11) != "torch::nn::") return nullptr;
  for (const BuiltinSpec& s : kSpecs) {
    if (s.type == display_type) return &s;
  }
  return nullptr;
}

}  // namespace flopsprof::detail
