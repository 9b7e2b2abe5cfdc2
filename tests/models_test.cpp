// Whole-model checks against published figures: ResNet-18, ResNet-50 and BERT-base MLM.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "flopsprof/flopsprof.h"
#include "models/bert.h"
#include "models/resnet.h"

namespace {

TEST(Models, ResNet18MatchesDeepSpeedFigures) {
  models::ResNet18 model;
  model->eval();
  torch::NoGradGuard no_grad;
  flopsprof::FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({1, 3, 224, 224}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_params(), 11689512u);  // torchvision resnet18
  // DeepSpeed's conv + linear MACs for torchvision's resnet18 at 1x3x224x224
  uint64_t conv_linear_macs = 0;
  for (const auto& op : prof.result().ops) {
    if (op.name.find("conv") != std::string::npos || op.name == "aten::addmm" ||
        op.name == "aten::linear") {
      conv_linear_macs += op.macs;
    }
  }
  EXPECT_EQ(conv_linear_macs, 1814073344u);
  EXPECT_EQ(prof.get_total_macs(), 1814073344u);  // nothing else has MACs
  // conv1: 7x7, 3->64, stride 2 on 224x224 -> 112x112: 64*112*112*3*49 = 118013952 MACs
  EXPECT_EQ(prof.get_module_macs("conv1"), 118013952u);
  EXPECT_EQ(prof.get_module_macs("fc"), 512u * 1000);
  EXPECT_EQ(prof.get_module("layer1.0").calls, 1u);
  EXPECT_TRUE(prof.get_module("layer1.0").scoped);
}

TEST(Models, ResNet50MatchesTorchvisionAndItsStemsBytesAreCountedByHand) {
  models::ResNet50 model;
  model->eval();
  torch::NoGradGuard no_grad;
  flopsprof::ProfilerOptions o;
  o.roofline.enabled = false;  // bytes need no peaks
  flopsprof::FlopsProfiler prof(model, o);
  prof.start_profile();
  model->forward(torch::randn({1, 3, 224, 224}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_params(), 25557032u);  // torchvision resnet50
  // conv1: 7x7, 3->64, stride 2 on 224x224 -> 112x112: 64*112*112*3*49 = 118,013,952 MACs
  EXPECT_EQ(prof.get_module_macs("conv1"), 118013952u);
  // Its bytes (fp32): reads x 3*224*224 = 150,528 and W 64*3*7*7 = 9,408 floats, writes
  // 64*112*112 = 802,816: 3,851,008 B. The max-pool (3x3, stride 2, padding 1) reads those
  // 802,816 and writes 64*56*56 = 200,704 floats: 4,014,080 B.
  EXPECT_EQ(prof.get_module("conv1").bytes, (150528u + 9408u + 802816u) * 4);
  EXPECT_EQ(prof.get_module("maxpool").bytes, (802816u + 200704u) * 4);
  // the last block's 1x1 expansion conv3 (512 -> 2048 on 7x7): reads 512*49 + 2048*512 floats,
  // writes 2048*49
  EXPECT_EQ(prof.get_module("layer4.2.conv3").bytes, (512u * 49 + 2048u * 512 + 2048u * 49) * 4);
  EXPECT_EQ(prof.get_module("").bytes, prof.result().fwd_bytes);
}

TEST(Models, BertBaseMlmMatchesAnalyticCount) {
  models::BertForMaskedLM model;
  model->eval();
  torch::NoGradGuard no_grad;
  flopsprof::FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randint(0, 30522, {1, 128}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_params(), 109514298u);
  EXPECT_EQ(prof.result().param_bytes, 109514298u * 4);  // 417.76 MB in fp32 (RAF)

  // Analytic forward FLOPs at batch 1, sequence S = 128 (1 MAC = 2 FLOPs; bias +1 per output):
  const double S = 128, H = 768, F = 3072, V = 30522, A = 12, D = 64, L = 12;
  double embeddings = 2 * S * H /* two adds */ + 5 * S * H /* LayerNorm */;
  double attention = 3 * (2 * S * H * H + S * H)  // q, k, v projections
                     + 2 * A * S * S * D          // Q K^T
                     + A * S * S                  // scale (div)
                     + A * S * S                  // softmax
                     + 2 * A * S * S * D;         // P V
  double attention_out = 2 * S * H * H + S * H + S * H /* residual */ + 5 * S * H;
  double ffn =
      (2 * S * H * F + S * F) + S * F /* gelu */ + (2 * S * F * H + S * H) + S * H + 5 * S * H;
  double head = (2 * S * H * H + S * H) + S * H /* gelu */ + 5 * S * H + (2 * S * H * V + S * V);
  double expected = embeddings + L * (attention + attention_out + ffn) + head;
  double measured = static_cast<double>(prof.get_total_flops());
  EXPECT_NEAR(measured / expected, 1.0, 0.01)
      << "measured " << measured << " expected " << expected;

  // per layer GEMM MACs: 4*S*H*H + 2*S*H*F + 2*A*S*S*D
  double layer_macs = 4 * S * H * H + 2 * S * H * F + 2 * A * S * S * D;
  EXPECT_EQ(prof.get_module_macs("bert.encoder.layer.0"), static_cast<uint64_t>(layer_macs));
  EXPECT_EQ(prof.get_module_macs("cls.predictions.decoder"), static_cast<uint64_t>(S * H * V));
  EXPECT_EQ(prof.get_module("bert.encoder.layer.11").calls, 1u);
  EXPECT_EQ(prof.get_module_flops("bert.embeddings.word_embeddings"), 0u);
}

}  // namespace
