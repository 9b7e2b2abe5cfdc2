// C++ ResNet-18 and ResNet-50 with torchvision's structure and module names (11,689,512 and
// 25,557,032 parameters).
#pragma once

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

struct ResNet18Impl : torch::nn::Module {
  explicit ResNet18Impl(int64_t num_classes = 1000)
      : conv1(register_module(
            "conv1", torch::nn::Conv2d(
                         torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(64))),
        relu(register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions(true)))),
        maxpool(register_module(
            "maxpool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)))),
        layer1(register_module("layer1", make_layer(64, 64, 1))),
        layer2(register_module("layer2", make_layer(64, 128, 2))),
        layer3(register_module("layer3", make_layer(128, 256, 2))),
        layer4(register_module("layer4", make_layer(256, 512, 2))),
        avgpool(register_module(
            "avgpool", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({1, 1})))),
        fc(register_module("fc", torch::nn::Linear(512, num_classes))) {}

  static torch::nn::Sequential make_layer(int64_t in, int64_t out, int64_t stride) {
    return torch::nn::Sequential(BasicBlock(in, out, stride), BasicBlock(out, out, 1));
  }

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
TORCH_MODULE(ResNet18);

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

struct ResNet50Impl : torch::nn::Module {
  explicit ResNet50Impl(int64_t num_classes = 1000)
      : conv1(register_module(
            "conv1", torch::nn::Conv2d(
                         torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(64))),
        relu(register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions(true)))),
        maxpool(register_module(
            "maxpool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)))),
        layer1(register_module("layer1", make_layer(64, 64, 3, 1))),
        layer2(register_module("layer2", make_layer(256, 128, 4, 2))),
        layer3(register_module("layer3", make_layer(512, 256, 6, 2))),
        layer4(register_module("layer4", make_layer(1024, 512, 3, 2))),
        avgpool(register_module(
            "avgpool", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({1, 1})))),
        fc(register_module("fc", torch::nn::Linear(2048, num_classes))) {}

  static torch::nn::Sequential make_layer(int64_t in, int64_t width, int blocks, int64_t stride) {
    torch::nn::Sequential layer(Bottleneck(in, width, stride));
    for (int b = 1; b < blocks; ++b) layer->push_back(Bottleneck(width * 4, width, 1));
    return layer;
  }

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
TORCH_MODULE(ResNet50);

}  // namespace models
