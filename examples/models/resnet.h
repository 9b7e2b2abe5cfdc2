// C++ ResNet-18 and ResNet-50 with torchvision's structure and module names (11,689,512 and
// 25,557,032 parameters).
#pragma once

#include <functional>

#include <torch/torch.h>

#include <flopsprof/scope.h>

namespace models {

inline torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

inline torch::nn::Conv2d conv1x1(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false));
}

struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1(register_module("conv1", conv3x3(in, out, stride))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(out))),
        relu(register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions(true)))),
        conv2(register_module("conv2", conv3x3(out, out, 1))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      downsample = register_module(
          "downsample",
          torch::nn::Sequential(conv1x1(in, out, stride), torch::nn::BatchNorm2d(out)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    FLOPSPROF_MODULE();
    auto out = relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    out = out + (downsample ? downsample->forward(x) : x);
    return relu(out);
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::BatchNorm2d bn1, bn2;
  torch::nn::ReLU relu;
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

// torchvision's Bottleneck (ResNet v1.5: the stride on the 3x3 convolution), expansion 4.
struct BottleneckImpl : torch::nn::Module {
  BottleneckImpl(int64_t in, int64_t width, int64_t stride)
      : conv1(register_module("conv1", conv1x1(in, width, 1))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(width))),
        conv2(register_module("conv2", conv3x3(width, width, stride))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(width))),
        conv3(register_module("conv3", conv1x1(width, width * 4, 1))),
        bn3(register_module("bn3", torch::nn::BatchNorm2d(width * 4))),
        relu(register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions(true)))) {
    if (stride != 1 || in != width * 4) {
      downsample = register_module(
          "downsample",
          torch::nn::Sequential(conv1x1(in, width * 4, stride), torch::nn::BatchNorm2d(width * 4)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    FLOPSPROF_MODULE();
    auto out = relu(bn1(conv1(x)));
    out = relu(bn2(conv2(out)));
    out = bn3(conv3(out));
    out = out + (downsample ? downsample->forward(x) : x);
    return relu(out);
  }

  torch::nn::Conv2d conv1, conv2, conv3;
  torch::nn::BatchNorm2d bn1, bn2, bn3;
  torch::nn::ReLU relu;
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

// torchvision's ResNet: the stem (7x7 convolution, batch norm, ReLU, max-pool), four stages that
// `stage(i)` builds (i = 0..3, called in that order, so weights draw from the random generator
// in torchvision's order), global average pooling and the classifier over `features` channels.
struct ResNetImpl : torch::nn::Module {
  ResNetImpl(const std::function<torch::nn::Sequential(int)>& stage, int64_t features,
             int64_t num_classes)
      : conv1(register_module(
            "conv1", torch::nn::Conv2d(
                         torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(64))),
        relu(register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions(true)))),
        maxpool(register_module(
            "maxpool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)))),
        layer1(register_module("layer1", stage(0))),
        layer2(register_module("layer2", stage(1))),
        layer3(register_module("layer3", stage(2))),
        layer4(register_module("layer4", stage(3))),
        avgpool(register_module(
            "avgpool", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({1, 1})))),
        fc(register_module("fc", torch::nn::Linear(features, num_classes))) {}

  /// x: [N, 3, H, W] -> logits [N, num_classes]
  torch::Tensor forward(torch::Tensor x) {
    FLOPSPROF_MODULE();
    x = maxpool(relu(bn1(conv1(x))));
    x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
    return fc(torch::flatten(avgpool(x), 1));
  }

  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::ReLU relu;
  torch::nn::MaxPool2d maxpool;
  torch::nn::Sequential layer1, layer2, layer3, layer4;
  torch::nn::AdaptiveAvgPool2d avgpool;
  torch::nn::Linear fc;
};

// ResNet-18: two BasicBlocks per stage.
struct ResNet18Impl : ResNetImpl {
  explicit ResNet18Impl(int64_t num_classes = 1000)
      : ResNetImpl(
            [](int i) {
              const int64_t out = int64_t{64} << i;
              return torch::nn::Sequential(BasicBlock(i == 0 ? 64 : out / 2, out, i == 0 ? 1 : 2),
                                           BasicBlock(out, out, 1));
            },
            512, num_classes) {}
};
TORCH_MODULE(ResNet18);

// ResNet-50: 3, 4, 6 and 3 Bottlenecks per stage.
struct ResNet50Impl : ResNetImpl {
  explicit ResNet50Impl(int64_t num_classes = 1000)
      : ResNetImpl(
            [](int i) {
              const int64_t width = int64_t{64} << i;
              const int blocks[] = {3, 4, 6, 3};
              torch::nn::Sequential layer(
                  Bottleneck(i == 0 ? 64 : width * 2, width, i == 0 ? 1 : 2));
              for (int b = 1; b < blocks[i]; ++b) layer->push_back(Bottleneck(width * 4, width, 1));
              return layer;
            },
            2048, num_classes) {}
};
TORCH_MODULE(ResNet50);

}  // namespace models
