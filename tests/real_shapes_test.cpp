// Attribution on the shapes of real programs that broke it (a ResNet-50, a U-Net, a CycleGAN, a
// YOLOv3 and a ViT written by others): each test is our own model of that shape, with no
// annotation, numbers derived by hand from the shapes. Every test also checks that
// get_model_profile and start_profile/stop_profile give the same per-module answer.
#include <gtest/gtest.h>

#include <optional>

#include <torch/torch.h>

#include "capture/builtin_calls.h"
#include "flopsprof/flopsprof.h"
#include "test_modules.h"

namespace {

using flopsprof::FlopsProfiler;
using flopsprof::ProfileResult;
namespace nn = torch::nn;

// The same forward under both APIs.
struct Both {
  ProfileResult window;  // get_model_profile
  ProfileResult plain;   // start_profile / stop_profile around model->forward(x)
};

template <class M>
Both profile_both(M model, const torch::Tensor& x, bool grad) {
  Both b;
  {
    flopsprof::ModelProfileOptions o;
    o.print_profile = false;
    o.warm_up = 0;
    std::optional<torch::NoGradGuard> no_grad;
    if (!grad) no_grad.emplace();
    b.window = flopsprof::get_model_profile(model, std::make_tuple(x), o).result;
  }
  {
    std::optional<torch::NoGradGuard> no_grad;
    if (!grad) no_grad.emplace();
    FlopsProfiler prof(model);
    prof.start_profile();
    model->forward(x);
    prof.stop_profile();
    b.plain = prof.result();
  }
  return b;
}

using flopsprof_test::module;
using flopsprof_test::own_flops;

// One answer per model and input: every module's calls, FLOPs and MACs agree.
void expect_same(const Both& b) {
  ASSERT_EQ(b.window.modules.size(), b.plain.modules.size());
  for (size_t i = 0; i < b.plain.modules.size(); ++i) {
    const auto& w = b.window.modules[i];
    const auto& p = b.plain.modules[i];
    EXPECT_EQ(w.calls, p.calls) << "module '" << p.name << "'";
    EXPECT_EQ(w.flops, p.flops) << "module '" << p.name << "'";
    EXPECT_EQ(w.macs, p.macs) << "module '" << p.name << "'";
  }
  EXPECT_EQ(b.window.flops, b.plain.flops);
  EXPECT_EQ(b.window.macs, b.plain.macs);
}

TEST(RealShapes, BuiltinForwardsAreObservedInTheTestBinary) {
  // The tests link flopsprof the way the README says; the calls of built-ins reach flopsprof.
  EXPECT_TRUE(flopsprof::detail::builtin_calls_interposed());
  EXPECT_TRUE(flopsprof::detail::builtin_calls_observed(*nn::ReLU()));
  EXPECT_TRUE(flopsprof::detail::builtin_calls_observed(*nn::ReflectionPad2d(1)));
  // forward(input, output_size) (pytorch/examples' DCGAN generator)
  EXPECT_TRUE(flopsprof::detail::builtin_calls_observed(*nn::ConvTranspose1d(2, 2, 3)));
  EXPECT_TRUE(flopsprof::detail::builtin_calls_observed(*nn::ConvTranspose2d(2, 2, 3)));
  EXPECT_TRUE(flopsprof::detail::builtin_calls_observed(*nn::ConvTranspose3d(2, 2, 3)));
  // BatchNorm's and InstanceNorm's forwards are inline in LibTorch's headers: only the start of
  // each call is observed (the virtual input check they begin with)
  EXPECT_FALSE(flopsprof::detail::builtin_calls_observed(*nn::BatchNorm2d(4)));
  EXPECT_TRUE(flopsprof::detail::builtin_call_starts_observed(*nn::BatchNorm2d(4)));
  EXPECT_TRUE(flopsprof::detail::builtin_call_starts_observed(*nn::InstanceNorm2d(4)));
}

// (1) A Sequential's first and last parameterless children inside a parent, get_model_profile.
struct SeqNetImpl : nn::Module {
  nn::Sequential s{nn::ReLU(), nn::Linear(4, 4), nn::ReLU()};
  SeqNetImpl() { register_module("s", s); }
  torch::Tensor forward(const torch::Tensor& x) { return s->forward(x); }
};
TORCH_MODULE(SeqNet);

TEST(RealShapes, SequentialFirstAndLastParameterlessChildrenUnderBothApis) {
  for (bool grad : {false, true}) {
    torch::manual_seed(0);
    SeqNet model;
    const Both b = profile_both(model, torch::randn({2, 4}), grad);
    expect_same(b);
    for (const ProfileResult* r : {&b.window, &b.plain}) {
      // relu on [2,4]: 8; Linear(4,4) on [2,4]: 32 MACs, 64 + 8 (bias) FLOPs
      EXPECT_EQ(module(*r, "s.0").calls, 1u) << grad;
      EXPECT_EQ(module(*r, "s.0").flops, 8u) << grad;
      EXPECT_EQ(module(*r, "s.1").flops, 72u) << grad;
      EXPECT_EQ(module(*r, "s.2").calls, 1u) << grad;
      EXPECT_EQ(module(*r, "s.2").flops, 8u) << grad;
      EXPECT_EQ(own_flops(*r, ""), 0u) << grad;
      EXPECT_EQ(own_flops(*r, "s"), 0u) << grad;
      EXPECT_EQ(r->flops, 88u) << grad;
    }
  }
}

// (1) Conv2d-BatchNorm2d-ReLU stages, train and eval (BatchNorm's forward is not observable:
// it owns parameters and buffers, which place its op).
struct ConvBnNetImpl : nn::Module {
  nn::Sequential stem{nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(1)), nn::BatchNorm2d(4),
                      nn::ReLU(), nn::MaxPool2d(2)};
  ConvBnNetImpl() { register_module("stem", stem); }
  torch::Tensor forward(const torch::Tensor& x) { return stem->forward(x); }
};
TORCH_MODULE(ConvBnNet);

TEST(RealShapes, ConvBatchNormReluPoolUnderBothApis) {
  for (bool train : {false, true}) {
    torch::manual_seed(0);
    ConvBnNet model;
    model->train(train);
    const Both b = profile_both(model, torch::randn({1, 3, 8, 8}), train);
    expect_same(b);
    // conv 3->4 k3 p1 on [1,3,8,8] -> [1,4,8,8]: MACs 4*64*3*9 = 6912, FLOPs 2*6912 + 256
    const uint64_t conv = 2 * 6912 + 256;
    // batch_norm (affine) on 256 elements: training 5 x numel, eval 2 x numel
    const uint64_t bn = (train ? 5 : 2) * 256;
    const uint64_t relu = 256, pool = 256;  // relu per element; max_pool2d numel(input)
    for (const ProfileResult* r : {&b.window, &b.plain}) {
      EXPECT_EQ(module(*r, "stem.0").flops, conv);
      EXPECT_EQ(module(*r, "stem.1").flops, bn) << train;
      EXPECT_EQ(module(*r, "stem.2").calls, 1u);
      EXPECT_EQ(module(*r, "stem.2").flops, relu);
      EXPECT_EQ(module(*r, "stem.3").calls, 1u);
      EXPECT_EQ(module(*r, "stem.3").flops, pool);
      EXPECT_EQ(r->flops, conv + bn + relu + pool) << train;
      // (7) num_batches_tracked += 1 is an int64 op: no FLOP
      EXPECT_EQ(r->flops_by_dtype[static_cast<size_t>(flopsprof::DType::kInt64)], 0u) << train;
    }
  }
}

// (2) A residual block: body, a functional `out += x`, then a module after it (Sequential(ReLU)).
struct ResBlockImpl : nn::Module {
  nn::Sequential body{nn::Linear(4, 4)};
  nn::Sequential last{nn::ReLU()};
  ResBlockImpl() {
    register_module("body", body);
    register_module("last", last);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = body->forward(x);
    out += x;
    return last->forward(out);
  }
};
TORCH_MODULE(ResBlock);

struct ResNetImpl : nn::Module {
  nn::Sequential stage{ResBlock(), ResBlock()};
  ResNetImpl() { register_module("stage", stage); }
  torch::Tensor forward(const torch::Tensor& x) { return stage->forward(x); }
};
TORCH_MODULE(ResNet);

TEST(RealShapes, ResidualAddAndTrailingModuleStayInTheirBlock) {
  for (bool grad : {false, true}) {
    torch::manual_seed(0);
    ResNet model;
    const Both b = profile_both(model, torch::randn({2, 4}), grad);
    expect_same(b);
    for (const ProfileResult* r : {&b.window, &b.plain}) {
      for (const std::string blk : {"stage.0", "stage.1"}) {
        // Linear(4,4) on [2,4]: 72 FLOPs; add_ 8 (the block's own); relu 8
        EXPECT_EQ(module(*r, blk).calls, 1u) << blk;
        EXPECT_EQ(module(*r, blk).flops, 72u + 8 + 8) << blk;
        EXPECT_EQ(own_flops(*r, blk), 8u) << blk;
        EXPECT_EQ(module(*r, blk + ".last").calls, 1u) << blk;
        EXPECT_EQ(module(*r, blk + ".last.0").calls, 1u) << blk;
        EXPECT_EQ(module(*r, blk + ".last.0").flops, 8u) << blk;
      }
      EXPECT_EQ(own_flops(*r, "stage"), 0u);
      EXPECT_EQ(own_flops(*r, ""), 0u);
    }
  }
}

// (3) ReflectionPad2d before a Conv2d with padding 0 (the pix2pix / CycleGAN generator).
TEST(RealShapes, ReflectionPadBeforeAnUnpaddedConvIsThePads) {
  torch::manual_seed(0);
  nn::Sequential model(nn::ReflectionPad2d(1), nn::Conv2d(nn::Conv2dOptions(2, 2, 3)),
                       nn::InstanceNorm2d(2), nn::ReLU(), nn::ReflectionPad2d(1),
                       nn::Conv2d(nn::Conv2dOptions(2, 2, 3)), nn::Tanh());
  const Both b = profile_both(model, torch::randn({1, 2, 4, 4}), /*grad=*/false);
  expect_same(b);
  // conv 2->2 k3 on the padded [1,2,6,6] -> [1,2,4,4]: MACs 32*2*9 = 576, FLOPs 1152 + 32
  const uint64_t conv = 1152 + 32;
  for (const ProfileResult* r : {&b.window, &b.plain}) {
    for (const char* pad : {"0", "4"}) {
      EXPECT_EQ(module(*r, pad).calls, 1u) << pad;
      EXPECT_EQ(module(*r, pad).flops, 0u) << pad;  // copying is no FLOP
    }
    for (const char* conv_name : {"1", "5"}) {
      EXPECT_EQ(module(*r, conv_name).calls, 1u);
      EXPECT_EQ(module(*r, conv_name).flops, conv);
      EXPECT_EQ(module(*r, conv_name).na_ops, 0u) << "the pad op is not the conv's";
    }
    // instance_norm (no affine) on 32 elements: 4 x numel; relu 32; tanh 32
    EXPECT_EQ(module(*r, "2").calls, 1u);
    EXPECT_EQ(module(*r, "2").flops, 4u * 32);
    EXPECT_EQ(module(*r, "3").flops, 32u);
    EXPECT_EQ(module(*r, "6").calls, 1u);
    EXPECT_EQ(module(*r, "6").flops, 32u);
  }
}

// ZeroPad2d: LibTorch 2.x declares its forward in a template base (ZeroPadImpl<2, ZeroPad2dImpl>),
// 1.x in the class itself; its calls are observed on both. Two pads called out of registration
// order, each once, around a conv: exact calls, the pad ops not the conv's.
struct TwoPadsImpl : nn::Module {
  nn::ZeroPad2d p1{nn::ZeroPad2dOptions(1)}, p2{nn::ZeroPad2dOptions(1)};
  nn::Conv2d conv{nn::Conv2dOptions(2, 2, 3)};
  TwoPadsImpl() {
    register_module("p1", p1);
    register_module("p2", p2);
    register_module("conv", conv);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return p1->forward(conv->forward(p2->forward(x)));
  }
};
TORCH_MODULE(TwoPads);

TEST(RealShapes, ZeroPadCallsAreObservedOnEveryLibTorchVersion) {
  EXPECT_TRUE(flopsprof::detail::builtin_calls_observed(*nn::ZeroPad2d(1)));
  torch::manual_seed(0);
  const Both b = profile_both(TwoPads(), torch::randn({1, 2, 4, 4}), /*grad=*/false);
  expect_same(b);
  // conv 2->2 k3 on the padded [1,2,6,6] -> [1,2,4,4]: MACs 32*2*9 = 576, FLOPs 1152 + 32 (bias)
  for (const ProfileResult* r : {&b.window, &b.plain}) {
    for (const char* pad : {"p1", "p2"}) {
      EXPECT_EQ(module(*r, pad).calls, 1u) << pad;
      EXPECT_EQ(module(*r, pad).na_ops, 0u) << pad;
      EXPECT_EQ(module(*r, pad).flops, 0u) << pad;
    }
    EXPECT_EQ(module(*r, "conv").calls, 1u);
    EXPECT_EQ(module(*r, "conv").flops, 1152u + 32);
    EXPECT_EQ(module(*r, "conv").na_ops, 0u) << "a pad op is not the conv's";
    EXPECT_EQ(module(*r, "").inferred_ops, 0u);
  }
}

// InstanceNorm without affine parameters reads nothing that places it, and its forward is inline;
// the start of each call is observed, so two of them used out of registration order are exact.
struct TwoNormsImpl : nn::Module {
  nn::Conv2d down{nn::Conv2dOptions(2, 2, 2).stride(2)};
  nn::InstanceNorm2d n1{2}, n2{2};
  TwoNormsImpl() {
    register_module("down", down);
    register_module("n1", n1);
    register_module("n2", n2);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return n1->forward(down->forward(n2->forward(x)));
  }
};
TORCH_MODULE(TwoNorms);

TEST(RealShapes, InstanceNormsOutOfRegistrationOrderAreExact) {
  torch::manual_seed(0);
  TwoNorms model;
  const Both b = profile_both(model, torch::randn({1, 2, 8, 8}), /*grad=*/false);
  expect_same(b);
  for (const ProfileResult* r : {&b.window, &b.plain}) {
    // instance_norm (no affine) 4 x numel: n2 on [1,2,8,8] = 512, n1 on [1,2,4,4] = 128
    EXPECT_EQ(module(*r, "n2").flops, 4u * 128);
    EXPECT_EQ(module(*r, "n1").flops, 4u * 32);
    EXPECT_EQ(module(*r, "n1").calls, 1u);
    EXPECT_EQ(module(*r, "n2").calls, 1u);
    EXPECT_EQ(module(*r, "").inferred_ops, 0u);
  }
}

// (5) Layers kept in a ModuleList of ModuleLists, called by index with a residual add in the
// parent (the ViT): the never-called containers get no call and no FLOP of their own.
struct ListNetImpl : nn::Module {
  nn::ModuleList layers;
  ListNetImpl() {
    for (int i = 0; i < 2; ++i) {
      nn::ModuleList pair;
      pair->push_back(nn::Linear(4, 4));
      pair->push_back(nn::Linear(4, 4));
      layers->push_back(pair);
    }
    register_module("layers", layers);
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < layers->size(); ++i) {
      auto pair = layers[i]->as<nn::ModuleList>();
      x = pair->at<nn::LinearImpl>(0).forward(x) + x;
      x = pair->at<nn::LinearImpl>(1).forward(x) + x;
    }
    return x;
  }
};
TORCH_MODULE(ListNet);

TEST(RealShapes, NeverCalledModuleListsGetNoOpsOfTheirParent) {
  for (bool grad : {false, true}) {
    torch::manual_seed(0);
    ListNet model;
    const Both b = profile_both(model, torch::randn({2, 4}), grad);
    expect_same(b);
    for (const ProfileResult* r : {&b.window, &b.plain}) {
      // four Linear(4,4) on [2,4]: 72 FLOPs each; four adds of 8: the root's own
      EXPECT_EQ(r->flops, 4u * 72 + 4 * 8);
      EXPECT_EQ(own_flops(*r, ""), 4u * 8) << grad;
      for (const char* list : {"layers", "layers.0", "layers.1"}) {
        EXPECT_EQ(module(*r, list).calls, 0u) << list;
        EXPECT_EQ(own_flops(*r, list), 0u) << list;
      }
      EXPECT_EQ(module(*r, "layers.0").flops, 144u);
    }
  }
}

// (6) An op with FLOPs before the first submodule: a resize of the input in the root's forward.
struct ResizeNetImpl : nn::Module {
  nn::Conv2d conv{nn::Conv2dOptions(1, 1, 1).bias(false)};
  ResizeNetImpl() { register_module("conv", conv); }
  torch::Tensor forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    torch::Tensor y = F::interpolate(x, F::InterpolateFuncOptions()
                                            .size(std::vector<int64_t>{8, 8})
                                            .mode(torch::kBilinear)
                                            .align_corners(false));
    return conv->forward(y);
  }
};
TORCH_MODULE(ResizeNet);

TEST(RealShapes, LeadingOpOfTheRootIsTheSameUnderBothApis) {
  for (bool grad : {false, true}) {
    torch::manual_seed(0);
    ResizeNet model;
    const Both b = profile_both(model, torch::randn({1, 1, 4, 4}), grad);
    expect_same(b);
    // conv 1x1 no bias on [1,1,8,8]: 64 MACs, 128 FLOPs
    EXPECT_EQ(module(b.plain, "conv").flops, 128u);
    EXPECT_GT(own_flops(b.plain, ""), 0u) << "the resize is the root's forward";
    EXPECT_EQ(b.plain.outside.flops, 0u) << grad;
  }
}

// (6, 4) The caller's own work right before `model->forward(x)` looks like the top of the root's
// forward: op order cannot tell them apart. It is the root's (as get_model_profile sees it), and
// the report says it was inferred and what would settle it.
TEST(RealShapes, AmbiguousLeadingOpIsMarkedInferredWithTheFix) {
  torch::manual_seed(0);
  SeqNet model;  // s = Sequential(ReLU, Linear(4,4), ReLU)
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  torch::Tensor x = torch::randn({2, 4});
  model->forward(x * 2);  // the caller scales the input: 8 FLOPs just before the first module
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  EXPECT_EQ(own_flops(r, ""), 8u);
  EXPECT_EQ(module(r, "").inferred_ops, 1u);
  EXPECT_EQ(module(r, "").inferred_flops, 8u);
  EXPECT_EQ(module(r, "").inferred_bytes, 64u);
  EXPECT_EQ(module(r, "s").inferred_ops, 0u);  // every op of s ran in an observed call
  bool named = false;
  for (const std::string& p : r.problems) {
    // x * 2 on [2,4] fp32: 32 B read, 32 B written
    named = named || (p.find("placement inferred from op order: 1 op(s), 8 FLOPs, 64 B given to "
                             "the model (SeqNet);") != std::string::npos &&
                      p.find("FLOPSPROF_MODULE()") != std::string::npos);
  }
  EXPECT_TRUE(named);
  EXPECT_NE(prof.model_profile_string().find("fwd ops placed by inference (op order):"),
            std::string::npos);
  // get_model_profile's call window is evidence: the same op (now the model's input) is exact.
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  auto p = flopsprof::get_model_profile(
      model, [&] { model->forward(x * 2); }, o);
  EXPECT_EQ(module(p.result, "").inferred_ops, 0u);
  EXPECT_EQ(own_flops(p.result, ""), 8u);
}

// A tensor's object is its data's identity; once freed, the next tensor may take its address. The
// caller's ops before `model->forward(in)` read `a`, which is freed before `in` (a view) is made:
// without the profile keeping `a`'s object allocated, `in` could take its address, and the
// caller's `neg` would look like work on the model's input (attributed by the allocator).
TEST(RealShapes, ADataIdentityIsNeverAFreedTensorsAddress) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::manual_seed(0);
    SeqNet model;  // s = Sequential(ReLU, Linear(4,4), ReLU)
    std::optional<torch::NoGradGuard> no_grad;
    if (!grad) no_grad.emplace();
    torch::Tensor x = torch::randn({2, 4});
    FlopsProfiler prof(model);
    for (int run = 0; run < 3; ++run) {  // the same every time
      prof.reset_profile();
      prof.start_profile();
      torch::Tensor b;
      {
        torch::Tensor a = x.abs();
        b = a.neg();
      }
      torch::Tensor in = b.view({2, 4});
      model->forward(in);
      prof.stop_profile();
      const ProfileResult& r = prof.result();
      // abs and neg on 8 elements: 8 each, right before the forward: its head (marked)
      EXPECT_EQ(own_flops(r, ""), 8u + 8);
      EXPECT_EQ(module(r, "").inferred_flops, 8u + 8);
      EXPECT_EQ(r.outside.flops, 0u);
      // relu 8, Linear(4,4) on [2,4]: 2*32 + 8 bias, relu 8
      EXPECT_EQ(r.flops, 8u + 8 + 8 + 72 + 8);
    }
  }
}

// A residual add between observed work of the block is placed by evidence, not marked.
TEST(RealShapes, ResidualAddBetweenObservedWorkIsNotMarked) {
  torch::manual_seed(0);
  ResNet model;
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({2, 4}));
  prof.stop_profile();
  EXPECT_EQ(module(prof.result(), "").inferred_ops, 0u);
  EXPECT_EQ(own_flops(prof.result(), "stage.0"), 8u);
}

// (9) The optimizer step as people write it, with no step_scope(): the step phase all the same,
// exactly as step_scope() would give it, and not "outside the model".
ProfileResult train_two_steps(bool scoped) {
  torch::manual_seed(0);
  SeqNet model;
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  flopsprof::ProfilerOptions o;
  o.profile_step = 2;
  FlopsProfiler prof(model, o);
  for (int step = 1; step <= 2; ++step) {
    auto it = prof.iteration();
    adam.zero_grad();
    model->forward(torch::randn({2, 4})).sum().backward();
    if (scoped) {
      auto s = prof.step_scope();
      adam.step();
    } else {
      adam.step();
    }
  }
  return prof.result();
}

TEST(RealShapes, OptimizerStepWithoutStepScopeIsTheStep) {
  const ProfileResult plain = train_two_steps(false);
  const ProfileResult scoped = train_two_steps(true);
  EXPECT_TRUE(plain.has_step);
  EXPECT_GT(plain.step_flops, 0u);
  EXPECT_EQ(plain.step_flops, scoped.step_flops);
  EXPECT_GT(plain.step_latency_s, 0.0);
  // nothing of Adam's is outside the model (the loss sum reads only the model's output: by data
  // flow it continues the forward, marked as inferred)
  EXPECT_EQ(plain.outside.flops, 0u);
  EXPECT_EQ(scoped.outside.flops, 0u);
  EXPECT_EQ(plain.flops, scoped.flops);
  EXPECT_EQ(module(plain, "").inferred_ops, 1u);
}

// (4) Chained models with a profiler each, `y = B(A(x))`, B's forward starting with a functional
// tanh: op order cannot tell whether the tanh ends A's forward or starts B's. Both profiles count
// it, and both mark it as inferred, naming the fix.
struct TanhFirstImpl : nn::Module {
  nn::Linear fc{4, 4};
  TanhFirstImpl() { register_module("fc", fc); }
  torch::Tensor forward(const torch::Tensor& x) { return fc->forward(torch::tanh(x)); }
};
TORCH_MODULE(TanhFirst);

TEST(RealShapes, ChainedModelsMarkTheOpBetweenThem) {
  torch::manual_seed(0);
  SeqNet a;
  TanhFirst b;
  FlopsProfiler pa(a), pb(b);
  pa.start_profile();
  pb.start_profile();
  b->forward(a->forward(torch::randn({2, 4}))).sum().backward();
  pa.stop_profile();
  pb.stop_profile();
  // tanh on [2,4]: 8 FLOPs. Linear(4,4) on [2,4]: 72; relu 8. B's own: the tanh before its fc
  // and the loss sum after it (8, by data flow), both inferred; A's ops before the tanh ran in
  // observed calls of A's modules: not B's
  EXPECT_EQ(own_flops(pb.result(), ""), 16u);
  EXPECT_EQ(module(pb.result(), "").inferred_flops, 16u);
  EXPECT_EQ(module(pb.result(), "").inferred_ops, 2u);
  EXPECT_EQ(module(pb.result(), "fc").flops, 72u);
  // A: its own forward (88) plus B's tanh by data flow, marked
  EXPECT_EQ(module(pa.result(), "s").flops, 88u);
  EXPECT_EQ(module(pa.result(), "").inferred_flops, own_flops(pa.result(), ""));
  EXPECT_GT(module(pa.result(), "").inferred_ops, 0u);
}

// A block ending in `return x + f(x)` (YOLOv3's Darknet residuals, the CycleGAN ResNet block):
// nothing observed follows the add inside the block. In a Sequential, which runs its children
// and nothing else, the add is the block's; in a user loop over a ModuleList it may be the
// block's or the loop's: marked.
struct TailAddImpl : nn::Module {
  nn::Conv2d conv{nn::Conv2dOptions(4, 4, 3).padding(1)};
  TailAddImpl() { register_module("conv", conv); }
  torch::Tensor forward(const torch::Tensor& x) { return x + conv->forward(x); }
};
TORCH_MODULE(TailAdd);

TEST(RealShapes, BlockEndingInAResidualAddInsideASequential) {
  for (bool grad : {false, true}) {
    torch::manual_seed(0);
    nn::Sequential model{TailAdd(), TailAdd()};
    const Both b = profile_both(model, torch::randn({1, 4, 8, 8}), grad);
    expect_same(b);
    // conv 4->4 k3 p1 on [1,4,8,8]: MACs 256*4*9 = 9216, FLOPs 2*9216 + 256; the add 256
    for (const ProfileResult* r : {&b.window, &b.plain}) {
      for (const char* blk : {"0", "1"}) {
        EXPECT_EQ(module(*r, blk).flops, 2u * 9216 + 256 + 256) << blk << " grad " << grad;
        EXPECT_EQ(own_flops(*r, blk), 256u) << blk << " grad " << grad;
      }
      EXPECT_EQ(own_flops(*r, ""), 0u) << "a Sequential has no work of its own";
    }
  }
}

struct LoopNetImpl : nn::Module {
  nn::ModuleList blocks{TailAdd(), TailAdd()};
  nn::Linear head{4, 2};
  LoopNetImpl() {
    register_module("blocks", blocks);
    register_module("head", head);
  }
  torch::Tensor forward(torch::Tensor x) {
    for (const auto& blk : *blocks) x = blk->as<TailAddImpl>()->forward(x);
    return head->forward(x.mean({2, 3}));
  }
};
TORCH_MODULE(LoopNet);

TEST(RealShapes, BlockEndingInAResidualAddCalledFromALoopIsMarked) {
  torch::manual_seed(0);
  LoopNet model;
  const Both b = profile_both(model, torch::randn({1, 4, 8, 8}), /*grad=*/false);
  expect_same(b);
  for (const ProfileResult* r : {&b.window, &b.plain}) {
    // the adds (256 each) after each block's conv: the block's or the loop's, op order cannot
    // tell; wherever they went, they are marked (and so is the mean after the last block)
    EXPECT_GE(module(*r, "").inferred_flops, 512u);
    EXPECT_EQ(own_flops(*r, "blocks"), 0u);
  }
}

// Unobservable parameterless modules at the ends of a Sequential (InstanceNorm2d without affine
// parameters, a user's Swish) under get_model_profile: the window is evidence that the op is the
// model's, not of which child; the children take their ops as without the window.
struct SwishImpl : nn::Module {
  torch::Tensor forward(const torch::Tensor& x) { return x * torch::sigmoid(x); }
};
TORCH_MODULE(Swish);

struct NormResImpl : nn::Module {  // the CycleGAN ResNet block's shape
  nn::Sequential m{nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1)), nn::InstanceNorm2d(4)};
  NormResImpl() { register_module("m", m); }
  torch::Tensor forward(const torch::Tensor& x) { return x + m->forward(x); }
};
TORCH_MODULE(NormRes);

TEST(RealShapes, UnobservableParameterlessLastChildrenUnderGetModelProfile) {
  torch::manual_seed(0);
  nn::Sequential norm_blocks{NormRes(), NormRes()};
  const Both b = profile_both(norm_blocks, torch::randn({1, 4, 8, 8}), /*grad=*/false);
  expect_same(b);
  for (const char* n : {"0.m.1", "1.m.1"}) {
    EXPECT_EQ(module(b.window, n).calls, 1u) << n;
    EXPECT_EQ(module(b.window, n).flops, 4u * 256) << n;  // instance_norm, no affine: 4 x numel
  }
  for (const char* n : {"0", "1"}) EXPECT_EQ(own_flops(b.window, n), 256u) << n;  // the add
  EXPECT_EQ(own_flops(b.window, ""), 0u);
  nn::Sequential swish{nn::Linear(8, 8), Swish(), nn::Linear(8, 8), Swish()};
  const Both s = profile_both(swish, torch::randn({2, 8}), /*grad=*/false);
  expect_same(s);
  for (const char* n : {"1", "3"}) {
    EXPECT_EQ(module(s.window, n).calls, 1u) << n;
    EXPECT_EQ(module(s.window, n).flops, 32u) << n;  // sigmoid 16 + mul 16 on [2,8]
  }
}

// The model called twice in one profile with nothing between: one call or two cannot be told
// apart from op order; the call count is marked.
TEST(RealShapes, ModelCalledTwiceInARowMarksItsCallCount) {
  torch::manual_seed(0);
  SeqNet net;
  FlopsProfiler prof(net);
  prof.start_profile();
  torch::Tensor x = torch::randn({2, 4});
  net->forward(net->forward(x));
  prof.stop_profile();
  EXPECT_EQ(module(prof.result(), "s.1").calls, 2u);
  bool marked = false;
  for (const std::string& p : prof.result().problems)
    marked = marked || p.find("the model's call count") != std::string::npos;
  EXPECT_TRUE(marked);
}

// (8) A GAN-shaped loop with a profiler per model: each reports its own model's backward only.
TEST(RealShapes, SeveralProfilersEachReportTheirOwnBackward) {
  torch::manual_seed(0);
  nn::Linear gen(4, 4), disc(4, 1);
  torch::optim::SGD opt_g(gen->parameters(), 0.01), opt_d(disc->parameters(), 0.01);
  FlopsProfiler pg(gen), pd(disc);
  pg.start_profile();
  pd.start_profile();
  // discriminator step on real data: G is not involved
  opt_d.zero_grad();
  disc->forward(torch::randn({2, 4})).sum().backward();
  opt_d.step();
  pg.stop_profile();
  pd.stop_profile();
  // G ran nothing: no backward latency, no gradient accumulation, no step of its own
  EXPECT_EQ(pg.result().bwd_latency_s, 0.0);
  EXPECT_EQ(pg.result().bwd_flops, 0u);
  EXPECT_EQ(pg.result().autograd_latency_s, 0.0);
  EXPECT_FALSE(pg.result().has_step);
  EXPECT_EQ(pg.result().step_flops, 0u);
  // D: Linear(4,1) on [2,4] with an input needing no gradient: weight gradient 8 MACs = 16
  // FLOPs + bias 2
  EXPECT_GT(pd.result().bwd_latency_s, 0.0);
  EXPECT_EQ(module(pd.result(), "").bwd_macs, 8u);
  EXPECT_TRUE(pd.result().has_step);
}

// Issue 45: comparisons, logic reductions, norms (clip_grad_norm_), triangles (causal masks),
// losses and integer indexing, met in public programs, counted and their bytes written. The
// TorchScript path gives the same numbers (Cli.ComparisonsNormsLossesTrianglesAndIndex...).
struct Issue45Ops : nn::Module {
  torch::Tensor forward(torch::Tensor x, torch::Tensor ids) {
    torch::Tensor c = torch::lt(x, 0.5);                               // 32 comparisons
    torch::Tensor any_mask = torch::any(c);                            // a boolean: 0
    torch::Tensor any_x = torch::any(x);                               // 32 comparisons
    torch::Tensor t = torch::triu(x);                                  // 0; 128 B in, 128 out
    torch::Tensor n = torch::norm(x);                                  // 32 + 32 + 1
    torch::Tensor p = torch::sigmoid(x);                               // 32
    torch::Tensor b = torch::binary_cross_entropy(p, p);               // 9 x 32 (mean)
    torch::Tensor l = torch::nll_loss(torch::log_softmax(x, 1), ids);  // 4 x 2 + 1 (mean)
    torch::Tensor g = x.index({ids});                                  // 4 rows of 8
    return c.sum() + any_mask + any_x + t.sum() + n + b + l + g.sum();
  }
};

TEST(RealShapes, ComparisonsNormsLossesTrianglesAndIndexAreCounted) {
  auto model = std::make_shared<Issue45Ops>();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({4, 8}), ids = torch::tensor({1, 2, 3, 0});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x, ids);
  prof.stop_profile();
  const ProfileResult r = prof.result();
  auto row = [&](const std::string& name) -> const flopsprof::OpStats* {
    for (const auto& op : r.ops)
      if (op.name == name && op.phase == "forward") return &op;
    return nullptr;
  };
  for (const char* name : {"aten::lt", "aten::any", "aten::triu", "aten::norm",
                           "aten::binary_cross_entropy", "aten::nll_loss", "aten::index"}) {
    const flopsprof::OpStats* op = row(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->has_formula) << name;
    EXPECT_EQ(op->written_unknown, 0u) << name;
  }
  EXPECT_EQ(row("aten::lt")->flops, 32u);
  EXPECT_EQ(row("aten::lt")->bytes, 128u + 32u);  // x read, a boolean written
  EXPECT_EQ(row("aten::any")->calls, 2u);
  EXPECT_EQ(row("aten::any")->flops, 32u);  // the float one; the mask's none
  EXPECT_EQ(row("aten::triu")->flops, 0u);
  EXPECT_EQ(row("aten::triu")->bytes, 256u);
  EXPECT_EQ(row("aten::norm")->flops, 65u);
  EXPECT_EQ(row("aten::binary_cross_entropy")->flops, 288u);
  EXPECT_EQ(row("aten::nll_loss")->flops, 9u);
  // ids read (32 B), 4 rows of 8 fp32 read (128 B) and written (128 B)
  EXPECT_EQ(row("aten::index")->bytes_read, 32u + 128u);
  EXPECT_EQ(row("aten::index")->bytes_written, 128u);
}

}  // namespace

// (LibtorchSegmentation's UNet decoder) A decoder whose first child is a Sequential holding only an
// Identity (its center block switched off), then a ModuleList of blocks that each begin with an
// upsample: it runs once.
struct UpBlockImpl : nn::Module {
  nn::Conv2d conv{nn::Conv2dOptions(4, 4, 3).padding(1)};
  UpBlockImpl() { register_module("conv", conv); }
  torch::Tensor forward(torch::Tensor x) {
    namespace F = torch::nn::functional;
    x = F::interpolate(
        x,
        F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest));
    return conv(x);
  }
};
TORCH_MODULE(UpBlock);
struct CenterDecoderImpl : nn::Module {
  nn::Sequential center{nn::Identity()};
  nn::ModuleList blocks;
  CenterDecoderImpl() {
    register_module("center", center);
    blocks->push_back(UpBlock());
    blocks->push_back(UpBlock());
    register_module("blocks", blocks);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = center->forward(x);
    for (auto& b : *blocks) x = b->as<UpBlockImpl>()->forward(x);
    return x;
  }
};
TORCH_MODULE(CenterDecoder);
struct SegNetImpl : nn::Module {
  nn::Conv2d enc{nn::Conv2dOptions(3, 4, 3).padding(1)};
  CenterDecoder dec;
  SegNetImpl() {
    register_module("enc", enc);
    register_module("dec", dec);
  }
  torch::Tensor forward(const torch::Tensor& x) { return dec(enc(x)); }
};
TORCH_MODULE(SegNet);

TEST(RealShapes, ADecoderWhoseFirstChildIsAnIdentityRunsOnce) {
  torch::manual_seed(0);
  SegNet model;
  const Both b = profile_both(model, torch::randn({1, 3, 8, 8}), false);
  expect_same(b);
  for (const ProfileResult* r : {&b.window, &b.plain}) {
    EXPECT_EQ(module(*r, "dec").calls, 1u);
    EXPECT_FALSE(module(*r, "dec").calls_inferred);
    // enc: 4*8*8*3*9 = 6912 MACs, 2 x 6912 + 256 bias; the blocks: upsample to 16x16 (1,024
    // FLOPs), conv 4*16*16*4*9 = 36864 MACs (+1,024 bias); upsample to 32x32 (4,096), conv
    // 147456 MACs (+4,096 bias)
    EXPECT_EQ(r->flops,
              (2u * 6912 + 256) + 1024 + (2u * 36864 + 1024) + 4096 + (2u * 147456 + 4096));
    // the first block's leading upsample, between the Identity's empty call and its conv: op
    // order cannot tell the root's from the decoder's or the block's: marked where it goes
    EXPECT_EQ(own_flops(*r, "") + own_flops(*r, "dec") + own_flops(*r, "dec.blocks.0"),
              1024u + 4096);
    EXPECT_GE(module(*r, "").inferred_flops + module(*r, "dec").inferred_flops, 1024u + 4096);
  }
}
