// Example: benchmark the building blocks of BERT-base and ResNet-18 over batch sizes with Google
// Benchmark and flopsprof's counters (FLOPs, FLOP/s, MACs, params, bytes per iteration, peak).
// Run: flopsprof_example_benchmark_modules [--benchmark_format=json] [--benchmark_filter=Bert]
#include <torch/torch.h>

#include <flopsprof/benchmark.h>

#include "models/bert.h"
#include "models/resnet.h"

namespace {

const models::BertConfig kBert;  // BERT-base: hidden 768, 12 heads, FFN 3072
constexpr int64_t kSeq = 128;

torch::nn::Linear bert_ffn(benchmark::State&) {
  return torch::nn::Linear(kBert.hidden, kBert.intermediate);
}
torch::nn::LayerNorm bert_layer_norm(benchmark::State&) { return models::make_layer_norm(kBert); }
models::BertSelfAttention bert_attention(benchmark::State&) {
  return models::BertSelfAttention(kBert);
}
std::tuple<torch::Tensor> bert_hidden(benchmark::State& state) {
  return std::make_tuple(torch::randn({state.range(0), kSeq, kBert.hidden}));
}

// ResNet-18 layer2's 3x3 convolution (128 channels at 28x28)
torch::nn::Conv2d resnet_conv(benchmark::State&) { return models::conv3x3(128, 128, 1); }
std::tuple<torch::Tensor> resnet_feature_map(benchmark::State& state) {
  return std::make_tuple(torch::randn({state.range(0), 128, 28, 28}));
}

}  // namespace

// Batch sizes 1, 2, 4, 8: one line per sweep.
FLOPSPROF_BENCHMARK_MODULE(BM_BertFfnLinear, bert_ffn, bert_hidden)
    ->RangeMultiplier(2)
    ->Range(1, 8)
    ->Unit(benchmark::kMillisecond);
FLOPSPROF_BENCHMARK_MODULE(BM_BertLayerNorm, bert_layer_norm, bert_hidden)
    ->RangeMultiplier(2)
    ->Range(1, 8)
    ->Unit(benchmark::kMillisecond);
FLOPSPROF_BENCHMARK_MODULE(BM_BertSelfAttention, bert_attention, bert_hidden)
    ->RangeMultiplier(2)
    ->Range(1, 8)
    ->Unit(benchmark::kMillisecond);
FLOPSPROF_BENCHMARK_MODULE(BM_ResNetConv3x3, resnet_conv, resnet_feature_map)
    ->RangeMultiplier(2)
    ->Range(1, 8)
    ->Unit(benchmark::kMillisecond);
FLOPSPROF_BENCHMARK_MODULE_TRAIN(BM_BertFfnLinearTrain, bert_ffn, bert_hidden)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
