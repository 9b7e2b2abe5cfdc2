// Attribution v4: no guess is silent. Each test is our own model of a shape that public LibTorch
// programs have (PointNet, segmentation heads, hand-written norms, seq2seq Transformers, GANs,
// benchmark loops), profiled with no annotation. The reference is the same model with
// FLOPSPROF_MODULE() as the first statement of every user forward: the plain profile equals it,
// or every difference is flagged on both sides (the module that gained work counts it in
// `inferred_flops`, the one that may have lost it in `maybe_missing_flops`; calls that differ are
// `calls_inferred`), and no work leaves the model unmarked. Numbers are derived by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>

#include <torch/torch.h>

#include "flopsprof/diff.h"
#include "flopsprof/flopsprof.h"
#include "test_modules.h"

namespace {

using flopsprof::FlopsProfiler;
using flopsprof::ProfileResult;
namespace nn = torch::nn;

// FLOPSPROF_MODULE() when `on` (the reference run), nothing otherwise.
struct MaybeScope {
  MaybeScope(bool on, const nn::Module* m) {
    if (on) scope.emplace(m);
  }
  std::optional<flopsprof::ModuleScope> scope;
};

using flopsprof_test::module;
using flopsprof_test::own_flops;

bool has_problem(const ProfileResult& r, const std::string& text) {
  for (const std::string& p : r.problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string problems(const ProfileResult& r) {
  std::string s;
  for (const std::string& p : r.problems) s += "  " + p + "\n";
  return s;
}

// The rule of these tests: the plain profile equals the reference, or each difference is
// flagged on both sides, and the totals of model + outside agree.
void expect_equal_or_flagged(const ProfileResult& plain, const ProfileResult& ref) {
  ASSERT_EQ(plain.modules.size(), ref.modules.size());
  for (size_t i = 0; i < ref.modules.size(); ++i) {
    const auto& p = plain.modules[i];
    const auto& r = ref.modules[i];
    const std::string who = "module '" + p.name + "' (" + p.type + ")";
    if (p.flops > r.flops) {
      EXPECT_GE(p.inferred_flops, p.flops - r.flops)
          << who << " gained " << p.flops - r.flops << " FLOPs unmarked\n"
          << problems(plain);
    } else if (p.flops < r.flops) {
      EXPECT_GE(p.maybe_missing_flops, r.flops - p.flops)
          << who << " lost " << r.flops - p.flops << " FLOPs unmarked\n"
          << problems(plain);
    }
    if (p.calls != r.calls) {
      EXPECT_TRUE(p.calls_inferred) << who << ": " << p.calls << " call(s) where the reference has "
                                    << r.calls << ", unmarked\n"
                                    << problems(plain);
    }
  }
  if (plain.outside.flops > ref.outside.flops) {
    EXPECT_GE(plain.outside.inferred_flops, plain.outside.flops - ref.outside.flops)
        << "work left the model unmarked\n"
        << problems(plain);
  } else if (plain.outside.flops < ref.outside.flops) {
    EXPECT_GE(plain.outside.maybe_missing_flops, ref.outside.flops - plain.outside.flops)
        << "the caller's work went into the model unmarked\n"
        << problems(plain);
  }
  EXPECT_EQ(plain.flops + plain.outside.flops, ref.flops + ref.outside.flops);
}

// start_profile / stop_profile around `run`, with or without grad.
template <class M>
ProfileResult profile(M model, const std::function<void()>& run, bool grad) {
  std::optional<torch::NoGradGuard> no_grad;
  if (!grad) no_grad.emplace();
  FlopsProfiler prof(model);
  prof.start_profile();
  run();
  prof.stop_profile();
  return prof.result();
}

// get_model_profile on one forward (its call window is evidence for the root's bounds only).
template <class M, class... Args>
ProfileResult window(M model, bool grad, const Args&... args) {
  std::optional<torch::NoGradGuard> no_grad;
  if (!grad) no_grad.emplace();
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  o.warm_up = 0;
  return flopsprof::get_model_profile(model, std::make_tuple(args...), o).result;
}

// ---------------------------------------------------------------------------------------------
// (1) Modules that are in no profiled model's tree: members never passed to register_module().

// `b` is a plain member: `forward(x) { return a(b(x)); }`.
struct LeadingMemberImpl : nn::Module {
  explicit LeadingMemberImpl(bool scoped) : scoped(scoped), a(8, 16), b(8, 8) {
    register_module("a", a);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return a(b(x));
  }
  bool scoped;
  nn::Linear a, b;
};
TORCH_MODULE(LeadingMember);

// `b` is a plain member called last: `forward(x) { return b(a(x)); }`.
struct TrailingMemberImpl : nn::Module {
  explicit TrailingMemberImpl(bool scoped) : scoped(scoped), a(8, 16), b(16, 4) {
    register_module("a", a);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return b(a(x));
  }
  bool scoped;
  nn::Linear a, b;
};
TORCH_MODULE(TrailingMember);

TEST(Guesses, AnUnregisteredMemberCalledFirstOrLastIsTheModelsWorkMarked) {
  // b on [4,8]: 4*8*8 = 256 MACs, 2*256 + 4*8 = 544 FLOPs; a: 4*8*16 = 512 MACs, 1024 + 64
  const uint64_t lead_b = 2 * 256 + 32, lead_a = 2 * 512 + 64;
  // trailing: a 512 MACs, 1088 FLOPs; b on [4,16] -> 4: 4*16*4 = 256 MACs, 512 + 16 FLOPs
  const uint64_t trail_b = 2 * 256 + 16;
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::manual_seed(0);
    torch::Tensor x = torch::randn({4, 8});
    {
      LeadingMember plain(false), ref(true);
      const ProfileResult p = profile(
          plain, [&] { plain->forward(x); }, grad);
      const ProfileResult r = profile(
          ref, [&] { ref->forward(x); }, grad);
      EXPECT_EQ(r.flops, lead_a + lead_b);
      EXPECT_EQ(own_flops(r, ""), lead_b);
      expect_equal_or_flagged(p, r);
      EXPECT_EQ(p.flops, lead_a + lead_b) << problems(p);
      EXPECT_GE(module(p, "").inferred_flops, lead_b);
      EXPECT_TRUE(has_problem(p, "register_module")) << problems(p);
      // get_model_profile's call window is evidence: exact, unmarked
      flopsprof::ModelProfileOptions o;
      o.print_profile = false;
      std::optional<torch::NoGradGuard> ng;
      if (!grad) ng.emplace();
      auto w = flopsprof::get_model_profile(plain, std::make_tuple(x), o);
      EXPECT_EQ(w.flops, lead_a + lead_b);
      EXPECT_EQ(module(w.result, "").inferred_flops, 0u);
      // ... but b's parameters (8*8 + 8) are in no count, and the problems say so: only a's
      // (8*16 + 16) are the model's (found on a timm port's EfficientNet, whose SE blocks are
      // plain members)
      EXPECT_EQ(w.params, 8u * 16 + 16);
      EXPECT_TRUE(has_problem(w.result,
                              "1 call(s) of modules that are in no profiled model's "
                              "tree"))
          << problems(w.result);
      EXPECT_TRUE(has_problem(w.result, "parameters are not in the parameter count"))
          << problems(w.result);
    }
    {
      TrailingMember plain(false), ref(true);
      const ProfileResult p = profile(
          plain, [&] { plain->forward(x); }, grad);
      const ProfileResult r = profile(
          ref, [&] { ref->forward(x); }, grad);
      EXPECT_EQ(own_flops(r, ""), trail_b);
      expect_equal_or_flagged(p, r);
      EXPECT_EQ(p.flops, lead_a + trail_b) << problems(p);
    }
  }
}

// PointNet's shape: an input transform net kept as a plain member (its own layers registered in
// it), run first; its 3x3 matrix multiplies the points, then the registered layers run.
struct TNetImpl : nn::Module {
  explicit TNetImpl(bool scoped) : scoped(scoped) {
    conv = register_module("conv", nn::Conv1d(nn::Conv1dOptions(3, 16, 1)));
    fc = register_module("fc", nn::Linear(16, 9));
  }
  torch::Tensor forward(const torch::Tensor& x) {  // [B,3,N] -> [B,3,3]
    MaybeScope s(scoped, this);
    torch::Tensor h = torch::relu(conv(x));
    h = std::get<0>(torch::max(h, 2));
    torch::Tensor iden = torch::eye(3).view({1, 9}).repeat({x.size(0), 1});
    return (fc(h) + iden).view({-1, 3, 3});
  }
  bool scoped;
  nn::Conv1d conv{nullptr};
  nn::Linear fc{nullptr};
};
TORCH_MODULE(TNet);

// The model around it: the transform `Stn` (a plain member) first, then its registered layers.
template <class Stn>
struct PointNetOfImpl : nn::Module {
  PointNetOfImpl(bool scoped, int64_t width) : scoped(scoped), stn(scoped) {
    conv = register_module("conv", nn::Conv1d(nn::Conv1dOptions(3, width, 1)));
    head = register_module("head", nn::Linear(width, 5));
  }
  torch::Tensor forward(const torch::Tensor& x) {  // [B,3,N]
    MaybeScope s(scoped, this);
    torch::Tensor trans = stn(x);
    torch::Tensor y = torch::bmm(x.transpose(2, 1), trans).transpose(2, 1);
    y = torch::relu(conv(y));
    y = std::get<0>(torch::max(y, 2));
    return torch::log_softmax(head(y), 1);
  }
  bool scoped;
  Stn stn;  // not registered
  nn::Conv1d conv{nullptr};
  nn::Linear head{nullptr};
};
template <class Stn>
using PointNetOf = nn::ModuleHolder<PointNetOfImpl<Stn>>;

// Two iterations of a training loop (or of forwards without grad), the second one profiled.
template <class Stn>
ProfileResult train_pointnet(bool scoped, int64_t width, bool grad = true) {
  torch::manual_seed(0);
  PointNetOf<Stn> model(scoped, width);
  torch::optim::Adam adam(model->parameters(), 1e-3);
  flopsprof::ProfilerOptions o;
  o.profile_step = 2;
  FlopsProfiler prof(model, o);
  for (int step = 1; step <= 2; ++step) {
    auto it = prof.iteration();
    torch::Tensor points = torch::randn({2, 3, 10});
    torch::Tensor target = torch::randint(0, 5, {2});
    if (grad) {
      adam.zero_grad();
      torch::nll_loss(model->forward(points), target).backward();
      adam.step();
    } else {
      torch::NoGradGuard ng;
      torch::nll_loss(model->forward(points), target);
    }
  }
  return prof.result();
}

TEST(Guesses, AnUnregisteredSubmodelRunFirstStaysInTheModelUnderTheTrainingLoop) {
  const ProfileResult p = train_pointnet<TNet>(false, 32);
  const ProfileResult r = train_pointnet<TNet>(true, 32);
  // B=2, N=10. stn.conv 3->16 k1: 2*16*10*3 = 960 MACs; stn.fc [2,16]x[16,9]: 288 MACs;
  // bmm [2,10,3]x[2,3,3]: 2*10*3*3 = 180 MACs; conv 3->32: 2*32*10*3 = 1920; head 2*32*5 = 320
  const uint64_t stn_macs = 960 + 288, model_macs = stn_macs + 180 + 1920 + 320;
  EXPECT_EQ(r.macs, model_macs);
  EXPECT_EQ(p.macs, model_macs) << problems(p);
  expect_equal_or_flagged(p, r);
  EXPECT_EQ(p.outside.macs, 0u);
  // its backward is the model's too: stn.conv's input is the data (weight gradient only,
  // 960), stn.fc both (2*288)
  EXPECT_EQ(module(r, "").bwd_macs, module(p, "").bwd_macs);
}

// PointNet's input transform as its public ports write it: conv, BatchNorm1d (a start-only call
// record), relu, max-pool, a Linear, and an identity built with `torch::zeros` before the model's
// registered layers run. `zeros` looks like the caller's data, so the transform stays outside
// under the training loop: all of it, its free ops between its layers' calls included, must be
// marked, and its backward too.
struct TNetZImpl : nn::Module {
  explicit TNetZImpl(bool scoped) : scoped(scoped) {
    conv = register_module("conv", nn::Conv1d(nn::Conv1dOptions(3, 8, 1)));
    bn = register_module("bn", nn::BatchNorm1d(8));
    fc = register_module("fc", nn::Linear(8, 9));
  }
  torch::Tensor forward(const torch::Tensor& x) {  // [B,3,N] -> [B,3,3]
    MaybeScope s(scoped, this);
    torch::Tensor h = torch::relu(bn(conv(x)));
    h = std::get<0>(torch::max(h, 2));
    h = fc(h);
    torch::Tensor iden = torch::zeros({x.size(0), 9});
    return (h + iden).view({-1, 3, 3});
  }
  bool scoped;
  nn::Conv1d conv{nullptr};
  nn::BatchNorm1d bn{nullptr};
  nn::Linear fc{nullptr};
};
TORCH_MODULE(TNetZ);

TEST(Guesses, AnUnregisteredSubmodelThatBuildsATensorLeavesNoWorkOutsideUnmarked) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    const ProfileResult p = train_pointnet<TNetZ>(false, 16, grad);
    const ProfileResult r = train_pointnet<TNetZ>(true, 16, grad);
    // B=2, N=10. stn.conv 3->8 k1: 2*8*10*3 = 480 MACs; stn.fc [2,8]x[8,9]: 144;
    // bmm [2,10,3]x[2,3,3]: 180; conv 3->16: 2*16*10*3 = 960; head [2,16]x[16,5]: 160
    EXPECT_EQ(r.macs, 480u + 144 + 180 + 960 + 160);
    // the transform's free ops: batch_norm on [2,8,10] (training, affine: 5 per element, 800),
    // relu 160, max over N 160, the identity's add 18 (zeros and view: 0)
    const uint64_t stn_free = 5 * 160 + 160 + 160 + 18;
    // stn's layers: conv 2*480 + 160 (bias), fc 2*144 + 18 (bias)
    const uint64_t stn_flops = 2 * 480 + 160 + 2 * 144 + 18 + stn_free;
    // the reference's root: stn (unregistered: the root's own), bmm 2*180, relu and max on
    // [2,16,10] 320 each, log_softmax on [2,5] 10
    EXPECT_EQ(own_flops(r, ""), stn_flops + 2 * 180 + 320 + 320 + 10);
    expect_equal_or_flagged(p, r);
    // the transform went outside (zeros looks like the caller's), all of it marked but its
    // identity's add: right before the model's first op, that add is taken in as the head of
    // the model's forward (marked on the caller's side)
    EXPECT_EQ(p.outside.inferred_flops, stn_flops - 18) << problems(p);
    EXPECT_GE(module(p, "").maybe_missing_flops, stn_flops - 18) << problems(p);
    if (grad) {
      // its backward too: stn.conv's weight gradient (480 MACs, its input is the data) and
      // stn.fc's two (2*144), at 2 FLOPs per MAC, are among the backward counted outside
      EXPECT_GE(p.outside.inferred_bwd_flops, 2u * (480 + 2 * 144)) << problems(p);
      EXPECT_EQ(p.outside.bwd_flops - p.outside.inferred_bwd_flops,
                r.outside.bwd_flops - r.outside.inferred_bwd_flops);
    }
  }
}

// A segmentation head whose last Upsample is a plain member.
struct SegHeadImpl : nn::Module {
  explicit SegHeadImpl(bool scoped)
      : scoped(scoped),
        up(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest)) {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(4, 3, 1)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return up(conv(x));
  }
  bool scoped;
  nn::Conv2d conv{nullptr};
  nn::Upsample up;
};
TORCH_MODULE(SegHead);

TEST(Guesses, AnUnregisteredUpsampleAtTheEndIsTheModelsWork) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({1, 4, 4, 4});
    SegHead plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    expect_equal_or_flagged(p, r);
    EXPECT_EQ(p.outside.ops, 0u) << problems(p);
    // conv 4->3 k1 on [1,4,4,4]: 3*16*4 = 192 MACs, 384 + 48 (bias); nearest x2: 3*8*8 = 192
    EXPECT_EQ(p.flops, 384u + 48 + 192);
    const ProfileResult w = window(plain, grad, x);
    EXPECT_EQ(w.flops, 384u + 48 + 192);
    expect_equal_or_flagged(w, r);
  }
}

// A language model's forward that makes its position ids first and casts its logits last (as
// Hugging Face's LLaMA and its C++ ports do): both ops sit at the ends of the root's forward, where
// op order cannot tell them from the caller's; left outside, they are marked on both sides.
struct CastLogitsImpl : nn::Module {
  explicit CastLogitsImpl(bool scoped)
      : scoped(scoped),
        wte(register_module("wte", nn::Embedding(32, 8))),
        wpe(register_module("wpe", nn::Embedding(16, 8))),
        head(register_module("head", nn::Linear(8, 32))) {}
  torch::Tensor forward(const torch::Tensor& ids) {
    MaybeScope s(scoped, this);
    // Position ids, then a cast between them and the first layer (a print's, in the LLaMA port).
    auto positions = torch::arange(ids.size(1), ids.options()).unsqueeze(0).to(torch::kLong);
    auto logits = head(wte(ids) + wpe(positions));
    return logits.to(torch::kFloat64);
  }
  bool scoped;
  nn::Embedding wte, wpe;
  nn::Linear head;
};
TORCH_MODULE(CastLogits);

TEST(Guesses, PositionIdsFirstAndALogitsCastLastAreMarkedWhenLeftOutside) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor ids = torch::randint(0, 32, {2, 5}, torch::kLong);
    CastLogits plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(ids); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(ids); }, grad);
    expect_equal_or_flagged(p, r);
    // The reference runs everything in the model; whatever the plain profile left outside is
    // marked as possibly the model's, and the root says it may lack that many ops.
    EXPECT_EQ(r.outside.ops, 0u);
    EXPECT_EQ(p.outside.inferred_ops, p.outside.ops) << problems(p);
    EXPECT_GE(module(p, "").maybe_missing_ops, p.outside.ops) << problems(p);
    if (!grad) EXPECT_GE(p.outside.ops, 1u);  // the cast: a copy looks like the caller's
  }
}

// A forward that begins with ops on its input before its first module (dorado's read-pileup model:
// a mask `x.sum(-1) != 0` and the embedding ids `x.select(-1, 0).to(kLong)`): under start/stop
// they look like the caller's preparation of its batch. Left outside, they are marked on both
// sides with their bytes, and the inputs recorded from the model's first op say that the forward
// may have read others.
struct MaskFirstImpl : nn::Module {
  explicit MaskFirstImpl(bool scoped)
      : scoped(scoped),
        emb(register_module("emb", nn::Embedding(6, 8))),
        lin(register_module("lin", nn::Linear(8, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) {  // x: [B, T, 2], ids in its first feature
    MaybeScope s(scoped, this);
    auto mask = x.sum(-1) != 0;
    auto ids = x.select(-1, 0).to(torch::kLong);
    return lin(emb(ids)) * mask.unsqueeze(-1);
  }
  bool scoped;
  nn::Embedding emb;
  nn::Linear lin;
};
TORCH_MODULE(MaskFirst);

TEST(Guesses, AForwardsLeadingOpsOnItsInputAreMarkedWhenLeftOutside) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::manual_seed(0);
    torch::Tensor x =
        torch::stack({torch::randint(0, 6, {2, 50}), torch::randint(0, 6, {2, 50})}, -1)
            .to(torch::kFloat);
    MaskFirst plain(false), ref(true);
    torch::randn({1});  // the caller's data: random data stays the caller's, unmarked
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    expect_equal_or_flagged(p, r);
    // sum over the 2 features: 2*50*2 = 200 FLOPs (the numel it reads); != 0: 2*50 = 100. In
    // grad mode the last `* mask` reads the mask, which has no history, with the model's result:
    // it ends the forward as a hand-written loss would, outside, marked: [2,50,4] 400 FLOPs.
    const uint64_t lead = 200 + 100, tail = grad ? 2 * 50 * 4 : 0;
    EXPECT_EQ(r.flops - p.flops, lead + tail) << problems(p);
    // sum, ne, select, to (and the mul): outside, every one marked, bytes too
    EXPECT_EQ(p.outside.ops, grad ? 5u : 4u) << problems(p);
    EXPECT_EQ(p.outside.inferred_ops, p.outside.ops) << problems(p);
    EXPECT_EQ(p.outside.inferred_bytes, p.outside.bytes);
    EXPECT_GT(p.outside.bytes, 0u);
    EXPECT_GE(module(p, "").maybe_missing_ops, 4u);
    EXPECT_GE(module(p, "").maybe_missing_bytes, p.outside.bytes);
    EXPECT_TRUE(has_problem(p, "counted outside the model though its forward may have run them"))
        << problems(p);
    // The inputs: the ids the Embedding read, said to be perhaps not the forward's.
    EXPECT_EQ(p.workload.inputs, std::vector<std::string>{"int64[2, 50]"});
    EXPECT_NE(p.workload.inputs_source.find("4 op(s) before it may be its forward's"),
              std::string::npos)
        << p.workload.inputs_source;
    // get_model_profile knows the inputs: against it, the diff says the recording differs.
    const ProfileResult w = window(plain, grad, x);
    EXPECT_EQ(w.flops, r.flops);
    EXPECT_EQ(w.workload.inputs, std::vector<std::string>{"fp32[2, 50, 2]"});
    std::string warnings;
    for (const std::string& s : flopsprof::diff(w, p).warnings) warnings += s + "\n";
    EXPECT_NE(warnings.find("workload may differ: inputs: fp32[2, 50, 2] (base, given) vs "
                            "int64[2, 50] (new, the model's first op"),
              std::string::npos)
        << warnings;
    EXPECT_EQ(warnings.find("workload differs: inputs"), std::string::npos) << warnings;
  }
}

// A parameterless user module followed by a wrapper whose forward begins with its own op
// (dorado's ReversibleLSTM flips its input): rule 8 gives the flip to the parameterless module
// before it; the wrapper is the other side of that guess, and the problems line names it.
struct ScaleImpl : nn::Module {
  torch::Tensor forward(const torch::Tensor& x) { return x * 2; }
};
TORCH_MODULE(Scale);
struct FlipLinImpl : nn::Module {
  explicit FlipLinImpl(bool scoped)
      : scoped(scoped), lin(register_module("lin", nn::Linear(8, 8))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return lin(x.flip(1));
  }
  bool scoped;
  nn::Linear lin;
};
TORCH_MODULE(FlipLin);
struct ScaleThenFlipImpl : nn::Module {
  explicit ScaleThenFlipImpl(bool scoped)
      : a(register_module("a", nn::Linear(8, 8))),
        s(register_module("s", Scale())),
        f(register_module("f", FlipLin(scoped))) {}
  torch::Tensor forward(const torch::Tensor& x) { return f(s(a(x))); }
  nn::Linear a;
  Scale s;
  FlipLin f;
};
TORCH_MODULE(ScaleThenFlip);

TEST(Guesses, AWrappersLeadingOpGivenToTheSiblingBeforeItMarksTheWrapper) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({2, 50, 8});
    ScaleThenFlip plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    expect_equal_or_flagged(p, r);
    // the flip: [2, 50, 8] fp32 read and written, 0 FLOPs: 2 x 3,200 B
    EXPECT_EQ(module(r, "f").bytes - module(r, "f.lin").bytes, 2u * 2 * 50 * 8 * 4);
    EXPECT_EQ(module(p, "f").bytes, module(p, "f.lin").bytes);  // plain: s took it
    EXPECT_GE(module(p, "f").maybe_missing_ops, 1u) << problems(p);
    EXPECT_GE(module(p, "f").maybe_missing_bytes, 2u * 2 * 50 * 8 * 4) << problems(p);
    EXPECT_TRUE(has_problem(p,
                            "given to 's' (Scale); op order cannot tell whether they are its "
                            "own or the work of 'f' (FlipLin)"))
        << problems(p);
  }
}

// A model whose forward is the user's own code (a Sequential inside): it may run ops
// before and after its layers, as far as op order can tell.
struct UserDImpl : nn::Module {
  nn::Sequential s;
  explicit UserDImpl(nn::Sequential layers) : s(register_module("s", std::move(layers))) {}
  torch::Tensor forward(const torch::Tensor& x) { return s->forward(x); }
};
TORCH_MODULE(UserD);

// Another profiled model's modules are evidence of another model: its work is outside, certain.
// A model that no profiler knows, run on the model's output, may be an unregistered member: the
// guess is marked whichever way it goes.
TEST(Guesses, AnotherModelsCallIsOutsideAndAnUnknownOneIsMarked) {
  torch::manual_seed(0);
  nn::Sequential g(nn::Linear(4, 8), nn::ReLU());
  nn::Sequential d(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 1));
  torch::Tensor z = torch::randn({2, 4});
  // D: 2*8*16 + 2*16*1 = 288 MACs, FLOPs 2*288 + 32 + 2 (biases) + 32 (relu)
  const uint64_t d_flops = 2 * 288 + 32 + 2 + 32;
  {
    FlopsProfiler pg(g), pd(d);
    pg.start_profile();
    pd.start_profile();
    d->forward(g->forward(z)).sum().backward();
    pd.stop_profile();
    pg.stop_profile();
    EXPECT_EQ(pg.result().macs, 2u * 4 * 8);
    EXPECT_GE(pg.result().outside.flops, d_flops);
    EXPECT_EQ(pg.result().outside.inferred_flops, 0u) << problems(pg.result());
    EXPECT_EQ(pd.result().macs, 288u);
  }
  {
    // G the user's module around its layers: D's work is G's (an unregistered member?) or another
    // model's: marked either way
    UserD user_g(g);
    FlopsProfiler pg(user_g);
    pg.start_profile();
    d->forward(user_g->forward(z)).sum().backward();
    pg.stop_profile();
    const ProfileResult& r = pg.result();
    const uint64_t marked = module(r, "").inferred_flops + r.outside.inferred_flops;
    EXPECT_GE(marked, d_flops) << problems(r);
  }
  {
    // G a Sequential of LibTorch modules runs its registered children only: D's work is not G's,
    // and nothing says it may be (marked before 2026-11-29)
    FlopsProfiler pg(g);
    pg.start_profile();
    d->forward(g->forward(z)).sum().backward();
    pg.stop_profile();
    const ProfileResult& r = pg.result();
    EXPECT_EQ(module(r, "").inferred_flops + r.outside.inferred_flops, 0u) << problems(r);
    EXPECT_GE(r.outside.flops, d_flops);
  }
}

// A GAN step profiled on D alone (public GAN tutorials' loop): G's forward right before D's joins
// D's call (an unknown model's call, rule 9), marked; the backward of that work is D's root's too,
// and marked as well (`inferred_bwd_flops`, "(+C bwd)"): it equals G's own backward, as a profiler
// of G running at the same time measures it, and what is left is D's own (less the loss's mean,
// placed in D by op order in both runs, marked). D is the user's module around its layers: a
// Sequential root of LibTorch modules runs nothing before or after them
// (Guesses.ASequentialOfLibTorchModulesRunsNothingAtItsEnds).
TEST(Guesses, TheBackwardOfWorkPlacedByOpOrderIsMarkedToo) {
  torch::manual_seed(0);
  nn::Sequential g(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 6), nn::Tanh());
  UserD d(nn::Sequential(nn::Linear(6, 8), nn::LeakyReLU(), nn::Linear(8, 1), nn::Sigmoid()));
  torch::Tensor z = torch::randn({5, 4});
  auto step = [&] { d->forward(g->forward(z)).mean().backward(); };
  uint64_t g_bwd = 0, d_bwd = 0, g_fwd = 0, mean_fwd = 0, mean_bwd = 0;
  uint64_t g_bytes = 0, g_bwd_bytes = 0, mean_bytes = 0, mean_bwd_bytes = 0;
  {
    FlopsProfiler pg(g), pd(d);
    pg.start_profile();
    pd.start_profile();
    step();
    pd.stop_profile();
    pg.stop_profile();
    g_bwd = module(pg.result(), "").bwd_flops;
    g_fwd = module(pg.result(), "").flops;
    d_bwd = module(pd.result(), "").bwd_flops;
    // The loss's mean over D's output [5, 1] is placed in D by op order (it reads only D's
    // result), marked: 5 FLOPs forward, and its backward with it.
    mean_fwd = module(pd.result(), "").inferred_flops;
    mean_bwd = module(pd.result(), "").inferred_bwd_flops;
    g_bytes = module(pg.result(), "").bytes;
    g_bwd_bytes = module(pg.result(), "").bwd_bytes;
    mean_bytes = module(pd.result(), "").inferred_bytes;
    mean_bwd_bytes = module(pd.result(), "").inferred_bwd_bytes;
    EXPECT_EQ(mean_bytes, 5u * 4 + 4);  // the mean reads D's [5,1] output, writes a scalar
    EXPECT_EQ(mean_fwd, 5u);
    EXPECT_LE(mean_bwd, 5u);
  }
  // G's forward by hand: 2*5*8*4 + 5*8 (bias) + 40 (relu) + 2*5*6*8 + 30 (bias) + 30 (tanh).
  EXPECT_EQ(g_fwd, 320u + 40 + 40 + 480 + 30 + 30);
  ASSERT_GT(g_bwd, 0u);
  FlopsProfiler pd(d);
  pd.start_profile();
  step();
  pd.stop_profile();
  const flopsprof::ModuleStats& root = module(pd.result(), "");
  EXPECT_EQ(root.inferred_flops, g_fwd + mean_fwd) << problems(pd.result());
  EXPECT_EQ(root.inferred_bwd_flops, g_bwd + mean_bwd);
  EXPECT_EQ(root.bwd_flops - root.inferred_bwd_flops, d_bwd - mean_bwd);
  // Their bytes on both sides of the guess, as a profiler of G measures G's.
  EXPECT_EQ(root.inferred_bytes, g_bytes + mean_bytes);
  EXPECT_EQ(root.inferred_bwd_bytes, g_bwd_bytes + mean_bwd_bytes);
  const std::string text = pd.model_profile_string();
  EXPECT_NE(text.find(fmt::format("(+{} FLOPs +", flopsprof::number_to_string(static_cast<double>(
                                                      root.inferred_bwd_flops)))),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" bwd) by op order"), std::string::npos);
  EXPECT_NE(text.find("; their backward"), std::string::npos);
  EXPECT_TRUE(has_problem(pd.result(),
                          fmt::format("(and their backward, {} FLOPs, {} B) given to the model",
                                      root.inferred_bwd_flops, root.inferred_bwd_bytes)))
      << problems(pd.result());
  EXPECT_NE(pd.to_json().find(fmt::format("\"inferred_bwd_flops\": {}", root.inferred_bwd_flops)),
            std::string::npos);
}

// The same step profiled on a discriminator that is a Sequential of LibTorch modules (the DCGAN
// example's, pytorch/examples): its forward runs its children and nothing else, so G's forward
// right before it and the loss's mean after it are the caller's, not marked as possibly its own
// (marked before 2026-11-29). The mean over D's [5, 1] output: 5 FLOPs, outside.
TEST(Guesses, ASequentialOfLibTorchModulesRunsNothingAtItsEnds) {
  torch::manual_seed(0);
  nn::Sequential g(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 6), nn::Tanh());
  nn::Sequential d(nn::Linear(6, 8), nn::LeakyReLU(), nn::Linear(8, 1), nn::Sigmoid());
  torch::Tensor z = torch::randn({5, 4});
  for (bool grad : {true, false}) {
    torch::AutoGradMode mode(grad);
    FlopsProfiler pd(d);
    pd.start_profile();
    d->forward(g->forward(z)).mean();
    pd.stop_profile();
    const ProfileResult& r = pd.result();
    // D by hand: 2*5*6*8 + 5*8 (bias) + 40 (leaky_relu) + 2*5*8*1 + 5 (bias) + 5 (sigmoid)
    EXPECT_EQ(r.flops, 480u + 40 + 40 + 80 + 5 + 5) << grad;
    EXPECT_EQ(module(r, "").inferred_ops, 0u) << grad << problems(r);
    EXPECT_EQ(module(r, "").maybe_missing_ops, 0u) << grad << problems(r);
    EXPECT_EQ(r.outside.inferred_ops, 0u) << grad << problems(r);
    EXPECT_EQ(r.outside.maybe_missing_ops, 0u) << grad << problems(r);
    // G's forward (320 + 40 + 40 + 480 + 30 + 30) and the mean (5) are outside
    EXPECT_EQ(r.outside.flops, 940u + 5) << grad;
  }
}

// PyTorch's FlopCounterMode test: free matmuls, then the model's child called directly. The free
// ops neither feed the model nor read from it.
struct HolderImpl : nn::Module {
  HolderImpl() { mod = register_module("mod", nn::Linear(9, 10)); }
  torch::Tensor forward(const torch::Tensor& x) { return mod(x); }
  nn::Linear mod{nullptr};
};
TORCH_MODULE(Holder);

TEST(Guesses, FreeOpsBeforeAChildCalledDirectlyAreNotTheModels) {
  Holder root;
  torch::Tensor a = torch::randn({4, 5}), b = torch::randn({5, 6}), c = torch::randn({4, 6});
  torch::Tensor d = torch::randn({5, 6}), e = torch::randn({6, 7}), f = torch::randn({6, 7});
  torch::Tensor g = torch::randn({7, 8}), x = torch::randn({8, 9});
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(root);
  prof.start_profile();
  torch::mm(a, b);
  torch::addmm(c, a, b, 0.5, 0.5);
  torch::matmul(d, e);
  torch::einsum("ab,bc->ac", {f, g});
  root->mod(x);
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  // Linear(9,10) on [8,9]: 2*8*9*10 = 1440 + bias 80
  EXPECT_EQ(module(r, "mod").flops, 1440u + 80);
  // the free ops: mm 2*4*5*6 = 240, addmm 240 + scaling, matmul 2*5*6*7 = 420, einsum
  // 2*6*7*8 = 672: outside, or given to the root marked on both sides
  const uint64_t root_own = own_flops(r, "");
  if (root_own > 0) {
    EXPECT_GE(module(r, "").inferred_flops, root_own) << problems(r);
    EXPECT_GE(r.outside.maybe_missing_flops, root_own) << problems(r);
  }
}

// ---------------------------------------------------------------------------------------------
// (2) The module that may have lost work is flagged.

// A hand-written LayerNorm: its parameters are read only by its last two ops.
struct MyLayerNormImpl : nn::Module {
  MyLayerNormImpl(int64_t d, bool scoped) : scoped(scoped) {
    gamma = register_parameter("gamma", torch::ones({d}));
    beta = register_parameter("beta", torch::zeros({d}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    torch::Tensor mean = x.mean(-1, true);
    torch::Tensor var = (x - mean).pow(2).mean(-1, true);
    torch::Tensor y = (x - mean) / torch::sqrt(var + 1e-5);
    return y * gamma + beta;
  }
  bool scoped;
  torch::Tensor gamma, beta;
};
TORCH_MODULE(MyLayerNorm);

struct NormBlockImpl : nn::Module {
  explicit NormBlockImpl(bool scoped, int64_t width = 16) : scoped(scoped), ln(width, scoped) {
    fc = register_module("fc", nn::Linear(16, width));
    register_module("ln", ln);
    out = register_module("out", nn::Linear(width, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return out(ln(fc(x)));
  }
  bool scoped;
  nn::Linear fc{nullptr}, out{nullptr};
  MyLayerNorm ln;
};
TORCH_MODULE(NormBlock);

TEST(Guesses, AHandWrittenNormThatReadsItsParametersLastIsFlagged) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({4, 16});
    NormBlock plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    expect_equal_or_flagged(p, r);
    // the reference's norm on [4,16]: mean 64, sub 64, pow 64, mean 64, sub 64, add 4, sqrt 4,
    // div 64, mul 64, add 64 (one FLOP per output element, reductions per input element)
    const uint64_t norm = 64 + 64 + 64 + 64 + 64 + 4 + 4 + 64 + 64 + 64;
    EXPECT_EQ(module(r, "ln").flops, norm);
    // plain: only the last two ops read its parameters; the other 392 may be its own
    EXPECT_EQ(module(p, "ln").flops, 64u + 64);
    EXPECT_EQ(module(p, "ln").maybe_missing_flops, norm - 128);
    EXPECT_TRUE(has_problem(p, "'ln' (MyLayerNorm) (which may show too little)")) << problems(p);
    expect_equal_or_flagged(window(plain, grad, x), r);
    // what a reader sees: the marker on the norm's line, the legend, the JSON field
    FlopsProfiler prof(plain);
    std::optional<torch::NoGradGuard> ng;
    if (!grad) ng.emplace();
    prof.start_profile();
    plain->forward(x);
    prof.stop_profile();
    const std::string text = prof.model_profile_string();
    const size_t at = text.find("(ln): MyLayerNorm(");
    ASSERT_NE(at, std::string::npos) << text;
    // and its 2,704 bytes (fp32, [4,16] = 256 B, [4,1] = 16 B): mean 256 + 16, x - mean twice
    // 2 x (272 + 256), pow 512, mean 272, + eps 32, sqrt 32, divide 272 + 256
    EXPECT_NE(text.substr(at, text.find('\n', at) - at).find("~ -392 FLOPs -2.70 KB by op order"),
              std::string::npos)
        << text;
    EXPECT_EQ(module(p, "ln").maybe_missing_bytes, 272u + 2 * 528 + 512 + 272 + 32 + 32 + 528);
    EXPECT_NE(text.find("3. '~ +A / -B by op order' marks"), std::string::npos);
    nlohmann::json j = nlohmann::json::parse(prof.to_json());
    for (const auto& m : j["modules"]) {
      if (m["name"] == "ln") EXPECT_EQ(m["maybe_missing_flops"], norm - 128);
    }
  }
}

// Every guess is in the JSON's problems, however many; the text shows the first ones.
struct ManyBlocksImpl : nn::Module {
  // `distinct`: each block a width of its own (16 + i), so no two guesses are the same.
  explicit ManyBlocksImpl(bool distinct = false) {
    for (int i = 0; i < 15; ++i)
      blocks.push_back(
          register_module("b" + std::to_string(i), NormBlock(false, distinct ? 16 + i : 16)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = blocks[0](x);
    for (int i = 1; i < 15; ++i) y = y + blocks[i](x);
    return y;
  }
  std::vector<NormBlock> blocks;
};
TORCH_MODULE(ManyBlocks);

TEST(Guesses, EveryGuessIsInTheJsonAndTheTextSaysHowManyMore) {
  ManyBlocks model;
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({4, 16}));
  prof.stop_profile();
  nlohmann::json j = nlohmann::json::parse(prof.to_json());
  // each block receives its norm's first ops by op order: the same guess in 15 blocks, one line
  // for them all (six near-identical lines, one per layer, before), naming them and the first's
  // norm; all 15 norms flagged, each in its own module
  int lines = 0, flagged = 0;
  for (const auto& p : j["problems"]) {
    lines +=
        p.get<std::string>().find("(MyLayerNorm) (which may show too little)") != std::string::npos;
  }
  EXPECT_EQ(lines, 1) << j["problems"];
  bool grouped = false;
  for (const auto& p : j["problems"]) {
    grouped = grouped ||
              p.get<std::string>().find(
                  "the same in 15 modules of type NormBlock ('b0', 'b1', 'b2', 'b3' "
                  "and 11 more): each was given 8 op(s), 392 FLOPs, 2704 B") != std::string::npos;
  }
  EXPECT_TRUE(grouped) << j["problems"];
  int blocks = 0;
  for (const auto& m : j["modules"]) {
    const bool lacks = m["maybe_missing_flops"].get<uint64_t>() > 0;
    flagged += lacks && m["type"] == "MyLayerNorm";
    // and the root's `y + b_i(x)` after b1 ... b14: each may be that block's last op
    blocks += lacks && m["type"] == "NormBlock";
  }
  EXPECT_EQ(flagged, 15);
  EXPECT_EQ(blocks, 14);
  // Blocks of 15 widths: 15 guesses that differ, a line each; the text shows 12 and says how many
  // more the JSON holds
  ManyBlocks distinct(true);
  FlopsProfiler dprof(distinct);
  dprof.start_profile();
  distinct->forward(torch::randn({4, 16}));
  dprof.stop_profile();
  j = nlohmann::json::parse(dprof.to_json());
  lines = 0;
  for (const auto& p : j["problems"]) {
    lines +=
        p.get<std::string>().find("(MyLayerNorm) (which may show too little)") != std::string::npos;
  }
  EXPECT_EQ(lines, 15) << j["problems"];
  ASSERT_GT(j["problems"].size(), 12u);
  const std::string text = dprof.model_profile_string();
  EXPECT_NE(text.find(fmt::format("... and {} more (all of them in the JSON's \"problems\")",
                                  j["problems"].size() - 12)),
            std::string::npos)
      << text;
}

// A residual add that op order gives two levels up, and a parameterless merge module.
namespace residual {  // a namespace of its own: the test binary's unity build has other ResBlocks
struct ResBlockImpl : nn::Module {
  explicit ResBlockImpl(bool scoped) : scoped(scoped) {
    fc1 = register_module("fc1", nn::Linear(8, 8));
    fc2 = register_module("fc2", nn::Linear(8, 8));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return x + fc2(torch::relu(fc1(x)));
  }
  bool scoped;
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(ResBlock);
}  // namespace residual

struct StageImpl : nn::Module {
  explicit StageImpl(bool scoped) : scoped(scoped), block(scoped) {
    register_module("block", block);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return block(x);
  }
  bool scoped;
  residual::ResBlock block;
};
TORCH_MODULE(Stage);

struct MergeBlockImpl : nn::Module {  // no parameters, no submodules
  explicit MergeBlockImpl(bool scoped) : scoped(scoped) {}
  torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
    MaybeScope s(scoped, this);
    return torch::cat({a, b}, 1) * 0.5;
  }
  bool scoped;
};
TORCH_MODULE(MergeBlock);

struct ResMergeNetImpl : nn::Module {
  explicit ResMergeNetImpl(bool scoped) : scoped(scoped), stage(scoped), merge(scoped) {
    stem = register_module("stem", nn::Linear(4, 8));
    register_module("stage", stage);
    side = register_module("side", nn::Linear(4, 8));
    register_module("merge", merge);
    head = register_module("head", nn::Linear(16, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    torch::Tensor a = stage(stem(x));
    torch::Tensor b = side(x);
    return head(merge(a, b));
  }
  bool scoped;
  nn::Linear stem{nullptr}, side{nullptr}, head{nullptr};
  Stage stage;
  MergeBlock merge;
};
TORCH_MODULE(ResMergeNet);

TEST(Guesses, AResidualAddGivenTwoLevelsUpAndAParameterlessMergeAreFlagged) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({2, 4});
    ResMergeNet plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    // reference: the block's relu and add, 2*8 = 16 FLOPs each; the merge's cat 0 + mul 2*16
    EXPECT_EQ(own_flops(r, "stage.block"), 16u + 16);
    EXPECT_EQ(module(r, "merge").flops, 32u);
    EXPECT_EQ(module(r, "merge").calls, 1u);
    expect_equal_or_flagged(p, r);
    expect_equal_or_flagged(window(plain, grad, x), r);
  }
}

// GPT's and LoRA's blocks, written by hand: a LayerNorm first in each block, reading its
// parameters only in its last two ops, the blocks in a Sequential. The norm statistics of block i
// come after block i-1's last evidence: a Sequential runs nothing of its own, so op order gives
// them to block i-1. Both sides must be marked: block i-1 gained them, block i and its norm may
// have run them.
struct SeqLayerNormImpl : nn::Module {
  SeqLayerNormImpl(int64_t d, bool scoped) : scoped(scoped) {
    scale = register_parameter("scale", torch::ones({d}));
    shift = register_parameter("shift", torch::zeros({d}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    torch::Tensor mean = x.mean(-1, true);
    torch::Tensor var = x.var({-1}, /*unbiased=*/false, /*keepdim=*/true);
    torch::Tensor n = (x - mean) / torch::sqrt(var + 1e-5);
    return scale * n + shift;
  }
  bool scoped;
  torch::Tensor scale, shift;
};
TORCH_MODULE(SeqLayerNorm);

struct PreNormBlockImpl : nn::Module {
  explicit PreNormBlockImpl(bool scoped) : scoped(scoped), ln(8, scoped) {
    register_module("ln", ln);
    lin = register_module("lin", nn::Linear(8, 8));
  }
  torch::Tensor forward(torch::Tensor x) {
    MaybeScope s(scoped, this);
    torch::Tensor res = x;
    x = lin(ln(x));
    return x + res;
  }
  bool scoped;
  SeqLayerNorm ln;
  nn::Linear lin{nullptr};
};
TORCH_MODULE(PreNormBlock);

struct PreNormNetImpl : nn::Module {
  explicit PreNormNetImpl(bool scoped) : scoped(scoped) {
    blocks = register_module(
        "blocks", nn::Sequential(PreNormBlock(scoped), PreNormBlock(scoped), PreNormBlock(scoped)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return blocks->forward(x);
  }
  bool scoped;
  nn::Sequential blocks{nullptr};
};
TORCH_MODULE(PreNormNet);

TEST(Guesses, ANormFirstInEachBlockOfASequentialIsFlaggedOnBothSides) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({2, 4, 8});
    PreNormNet plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    // the norm on [2,4,8] (N = 64 elements, R = 8 rows): mean N, var 4N + R, sub N, add R,
    // sqrt R, div N; then scale * n and + shift, N each
    const uint64_t stats = 64 + (4 * 64 + 8) + 64 + 8 + 8 + 64, norm = stats + 2 * 64;
    for (const char* ln : {"blocks.0.ln", "blocks.1.ln", "blocks.2.ln"}) {
      EXPECT_EQ(module(r, ln).flops, norm) << ln;
      EXPECT_EQ(module(p, ln).flops, norm - stats) << ln;  // its parameter reads only
      EXPECT_GE(module(p, ln).maybe_missing_flops, stats) << ln << "\n" << problems(p);
    }
    // the block before gained them, marked
    EXPECT_GE(module(p, "blocks.0").inferred_flops, stats) << problems(p);
    EXPECT_TRUE(has_problem(p, "'blocks.1.ln' (SeqLayerNorm)")) << problems(p);
    expect_equal_or_flagged(p, r);
    expect_equal_or_flagged(window(plain, grad, x), r);
  }
}

// CycleGAN's and ResNet's shape: residual blocks `x + f(x)` in a Sequential. Each add comes after
// its block's last evidence; the Sequential runs nothing of its own, so op order gives it to the
// block before, rightly. The next block could have run it only if it read nothing older than the
// block before's call: in grad mode data flow shows the add reads that block's input, so the next
// block is not flagged; without grad op order cannot tell, and it is.
struct PlainResImpl : nn::Module {
  explicit PlainResImpl(bool scoped) : scoped(scoped) {
    lin = register_module("lin", nn::Linear(8, 8));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return x + lin(x);
  }
  bool scoped;
  nn::Linear lin{nullptr};
};
TORCH_MODULE(PlainRes);

struct ResStackImpl : nn::Module {
  explicit ResStackImpl(bool scoped) : scoped(scoped) {
    stem = register_module("stem", nn::Linear(8, 8));
    blocks = register_module("blocks",
                             nn::Sequential(PlainRes(scoped), PlainRes(scoped), PlainRes(scoped)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return blocks->forward(stem(x));
  }
  bool scoped;
  nn::Linear stem{nullptr};
  nn::Sequential blocks{nullptr};
};
TORCH_MODULE(ResStack);

TEST(Guesses, AResidualAddInASequentialFlagsTheNextBlockOnlyWhereDataFlowCannotTell) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({2, 8});
    ResStack plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    // each block: Linear 2*8*8 = 128 MACs, 256 + 16 FLOPs; the add 16
    const uint64_t block = 256 + 16 + 16;
    for (const char* b : {"blocks.0", "blocks.1", "blocks.2"}) EXPECT_EQ(module(r, b).flops, block);
    // op order gives blocks 0 and 1 their adds; the last add comes after the Sequential's last
    // evidence and goes to the model (marked on both sides)
    EXPECT_EQ(module(p, "blocks.0").flops, block) << problems(p);
    EXPECT_EQ(module(p, "blocks.1").flops, block) << problems(p);
    EXPECT_EQ(module(p, "blocks.2").flops, block - 16) << problems(p);
    expect_equal_or_flagged(p, r);
    // the next block may have run blocks.0's and blocks.1's adds only where data flow cannot say
    // they read their block's input; blocks.2 also lost its own add to the model
    EXPECT_EQ(module(p, "blocks.1").maybe_missing_flops, grad ? 0u : 16u) << problems(p);
    EXPECT_EQ(module(p, "blocks.2").maybe_missing_flops, grad ? 16u : 32u) << problems(p);
  }
}

// ---------------------------------------------------------------------------------------------
// (3) Call counts from evidence.

struct Seq2SeqImpl : nn::Module {
  explicit Seq2SeqImpl(bool scoped)
      : scoped(scoped), tr(nn::TransformerOptions(16, 2, 1, 1).dim_feedforward(32).dropout(0.0)) {
    register_module("tr", tr);
  }
  // The encoder once, the decoder per step: the Transformer's own forward never runs.
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt) {
    MaybeScope s(scoped, this);
    torch::Tensor memory = tr->encoder.forward(src);
    torch::Tensor out = tr->decoder.forward(tgt, memory);
    return tr->decoder.forward(out, memory);
  }
  bool scoped;
  nn::Transformer tr;
};
TORCH_MODULE(Seq2Seq);

TEST(Guesses, AContainerWhoseChildrenAreCalledDirectlyShowsTheCallsItHad) {
  torch::manual_seed(0);
  torch::Tensor src = torch::randn({5, 1, 16}), tgt = torch::randn({3, 1, 16});
  Seq2Seq plain(false), ref(true);
  plain->eval();
  ref->eval();
  const ProfileResult p = profile(
      plain, [&] { plain->forward(src, tgt); }, false);
  const ProfileResult r = profile(
      ref, [&] { ref->forward(src, tgt); }, false);
  const auto& tr = module(p, "tr");
  EXPECT_TRUE(tr.calls == 0 || tr.calls_inferred) << tr.calls << "\n" << problems(p);
  EXPECT_EQ(module(p, "tr.encoder").calls, 1u);
  EXPECT_EQ(module(p, "tr.decoder").calls, 2u);
  expect_equal_or_flagged(p, r);
}

// An encoder of which only a features() method runs.
struct FeatEncoderImpl : nn::Module {
  FeatEncoderImpl() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 4, 3)));
    fc = register_module("fc", nn::Linear(4 * 4 * 4, 10));
  }
  torch::Tensor features(const torch::Tensor& x) { return torch::relu(conv(x)); }
  torch::Tensor forward(const torch::Tensor& x) { return fc(features(x).flatten(1)); }
  nn::Conv2d conv{nullptr};
  nn::Linear fc{nullptr};
};
TORCH_MODULE(FeatEncoder);

struct FeatNetImpl : nn::Module {
  FeatNetImpl() {
    enc = register_module("enc", FeatEncoder());
    head = register_module("head", nn::Linear(64, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) { return head(enc->features(x).flatten(1)); }
  FeatEncoder enc{nullptr};
  nn::Linear head{nullptr};
};
TORCH_MODULE(FeatNet);

TEST(Guesses, ACallThatRunsOnlySomeOfAModulesLayersIsMarked) {
  FeatNet net;
  torch::Tensor x = torch::randn({2, 1, 6, 6});
  const ProfileResult p = profile(
      net, [&] { net->forward(x); }, false);
  const auto& enc = module(p, "enc");
  EXPECT_TRUE(enc.calls == 0 || enc.calls_inferred) << enc.calls << "\n" << problems(p);
  EXPECT_EQ(module(p, "enc.fc").calls, 0u);
}

TEST(Guesses, ASequentialWhoseOnlyChildIsAnIdentityHasItsCall) {
  nn::Sequential seq{nn::Identity()};
  torch::Tensor x = torch::randn({2, 3});
  const ProfileResult p = profile(
      seq, [&] { seq->forward(x); }, false);
  EXPECT_EQ(module(p, "0").calls, 1u);
  EXPECT_EQ(module(p, "").calls, 1u) << problems(p);
}

namespace back_to_back {  // of its own: the test binary's unity build has another TwoLayer
struct TwoLayerImpl : nn::Module {
  TwoLayerImpl() {
    a = register_module("a", nn::Linear(4, 4));
    b = register_module("b", nn::Linear(4, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return b(torch::relu(a(x))); }
  nn::Linear a{nullptr}, b{nullptr};
};
TORCH_MODULE(TwoLayer);
}  // namespace back_to_back

TEST(Guesses, BackToBackForwardsAreCountedFromTheirChildren) {
  back_to_back::TwoLayer net;
  torch::Tensor x = torch::randn({2, 4});
  {
    const ProfileResult p = profile(
        net,
        [&] {
          for (int i = 0; i < 41; ++i) net->forward(x);
        },
        false);
    EXPECT_EQ(module(p, "").calls, 41u) << problems(p);
    EXPECT_EQ(module(p, "a").calls, 41u);
  }
  for (bool grad : {false, true}) {
    const ProfileResult p = profile(
        net,
        [&] {
          net->forward(net->forward(x));
          net->forward(x);
        },
        grad);
    EXPECT_EQ(module(p, "").calls, 3u) << problems(p);
  }
}

// A segmentation head's attention block switched off: its forward returns its input, no op, no
// parameter read. Whether it ran cannot be seen; its 0 calls are marked, and stay unmarked when
// every user forward is scoped (then a module with no record did not run).
struct PassThroughImpl : nn::Module {
  explicit PassThroughImpl(bool scoped) : scoped(scoped) {
    unused = register_module("unused", nn::Linear(8, 8));  // the switched-off layer
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return x;
  }
  bool scoped;
  nn::Linear unused{nullptr};
};
TORCH_MODULE(PassThrough);

struct WithPassThroughImpl : nn::Module {
  explicit WithPassThroughImpl(bool scoped) : scoped(scoped), attention(scoped), spare(scoped) {
    a = register_module("a", nn::Linear(8, 8));
    register_module("attention", attention);
    b = register_module("b", nn::Linear(8, 8));
    register_module("spare", spare);  // never called
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    return b(attention(a(x)));
  }
  bool scoped;
  nn::Linear a{nullptr}, b{nullptr};
  PassThrough attention, spare;
};
TORCH_MODULE(WithPassThrough);

TEST(Guesses, AModuleThatMayHaveRunWithoutAnOpIsMarked) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    torch::Tensor x = torch::randn({2, 8});
    WithPassThrough plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    EXPECT_EQ(module(r, "attention").calls, 1u);
    EXPECT_EQ(module(r, "spare").calls, 0u);
    EXPECT_FALSE(module(r, "spare").calls_inferred) << "every user forward is scoped";
    // a and b: 2*8*8 = 128 MACs each, 256 + 16 FLOPs
    EXPECT_EQ(r.flops, 2u * (256 + 16));
    expect_equal_or_flagged(p, r);
    for (const char* m : {"attention", "spare"}) {
      EXPECT_EQ(module(p, m).calls, 0u) << m;
      EXPECT_TRUE(module(p, m).calls_inferred) << m << "\n" << problems(p);
    }
    EXPECT_FALSE(module(p, "attention.unused").calls_inferred) << "a built-in's calls are seen";
    // one line names them all
    EXPECT_TRUE(has_problem(p, "'attention' (PassThrough), 'spare' (PassThrough) show no call"))
        << problems(p);
    expect_equal_or_flagged(window(plain, grad, x), r);
  }
}

// ---------------------------------------------------------------------------------------------
// (4) Each model's backward latency is its own nodes' time, whatever the other models' size.

double generator_backward(int d_layers) {
  torch::manual_seed(0);
  nn::Sequential g(nn::Linear(4, 8), nn::ReLU());
  nn::Sequential d;
  for (int i = 0; i < d_layers; ++i) {
    d->push_back(nn::Linear(8, 8));
    d->push_back(nn::ReLU());
  }
  d->push_back(nn::Linear(8, 1));
  nn::Linear c(8, 1);
  flopsprof::ProfilerOptions o;
  o.timer = flopsprof::make_step_timer(1000);
  FlopsProfiler pg(g, o), pd(d, o), pc(c, o);
  pg.start_profile();
  pd.start_profile();
  pc.start_profile();
  torch::Tensor fake = g->forward(torch::randn({2, 4}));
  (d->forward(fake).sum() + c->forward(fake).sum()).backward();
  pc.stop_profile();
  pd.stop_profile();
  pg.stop_profile();
  EXPECT_GT(pd.result().bwd_latency_s, pg.result().bwd_latency_s);
  return pg.result().bwd_latency_s;
}

TEST(Guesses, EachModelsBackwardLatencyIsItsOwnNodesTime) {
  // A deterministic clock (one step per timestamp): G's backward time depends on G's nodes only,
  // not on how many nodes the discriminator's part of the shared backward pass has.
  EXPECT_EQ(generator_backward(1), generator_backward(6));
}

// A scoped parent's own op between two scoped children (a residual add between two blocks,
// every forward with FLOPSPROF_MODULE(), as in a Llama port annotated throughout): the
// children's scope records bound their calls exactly, so the add is the parent's, certain. It
// was marked as placed by op order, the children as maybe missing it, and the message asked
// for the FLOPSPROF_MODULE() that was there.
struct ScopedScaleImpl : nn::Module {
  ScopedScaleImpl() { w = register_parameter("w", torch::ones({64})); }
  torch::Tensor forward(torch::Tensor x) {
    FLOPSPROF_MODULE();
    return torch::relu(x) * w;
  }
  torch::Tensor w;
};
TORCH_MODULE(ScopedScale);

struct ScopedPairImpl : nn::Module {
  ScopedPairImpl() {
    a = register_module("a", ScopedScale());
    b = register_module("b", ScopedScale());
  }
  torch::Tensor forward(torch::Tensor x) {
    FLOPSPROF_MODULE();
    torch::Tensor y = a(x);
    y = y + x;
    return b(y);
  }
  ScopedScale a{nullptr}, b{nullptr};
};
TORCH_MODULE(ScopedPair);

TEST(Guesses, AScopedParentsOpBetweenScopedChildrenIsItsOwnCertain) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "grad" : "no grad");
    ScopedPair m;
    torch::Tensor x = torch::randn({8, 64});
    const ProfileResult p = profile(
        m, [&] { m->forward(x); }, grad);
    // Each child: relu (8 x 64 = 512 FLOPs) and the mul by w (512); the parent's own add: 512.
    EXPECT_EQ(module(p, "a").flops, 512u + 512u);
    EXPECT_EQ(module(p, "b").flops, 512u + 512u);
    EXPECT_EQ(module(p, "").flops, 2 * (512u + 512u) + 512u);
    for (const auto& mod : p.modules) {
      EXPECT_EQ(mod.inferred_ops, 0u) << mod.name << "\n" << problems(p);
      EXPECT_EQ(mod.maybe_missing_ops, 0u) << mod.name << "\n" << problems(p);
    }
    EXPECT_FALSE(has_problem(p, "op order")) << problems(p);
  }
}

// A detection head's shape (YOLOv3's DetectionLayer, walktree/libtorch-yolov3): a parameterless
// module that reshapes the features, squashes some channels in place and adds a grid made with
// `arange` in its forward; registered placeholders (a route or shortcut layer whose forward never
// runs) beside it. Called last, without grad, the head's `arange` looks like the caller's new
// data: the ops from it on left the model unmarked.
struct YoloHeadImpl : nn::Module {
  explicit YoloHeadImpl(bool scoped) : scoped(scoped) {}
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    auto r = x.view({x.size(0), x.size(1), -1}).transpose(1, 2).contiguous();  // [1,64,16]
    r.select(2, 0).sigmoid_();
    auto g = torch::arange(r.size(1)).to(torch::kFloat).view({1, -1});
    r.select(2, 1).add_(g);
    r.slice(2, 2, r.size(2)).sigmoid_();
    return r;
  }
  bool scoped;
};
TORCH_MODULE(YoloHead);
struct PlaceholderImpl : nn::Module {  // registered, never called
  torch::Tensor forward(const torch::Tensor& x) { return x; }
};
TORCH_MODULE(Placeholder);
struct YoloLikeImpl : nn::Module {
  YoloLikeImpl(bool scoped, bool head_last) : scoped(scoped), head_last(head_last) {
    c1 = register_module("c1", nn::Conv2d(nn::Conv2dOptions(3, 16, 3).padding(1)));
    head = register_module("head", YoloHead(scoped));
    route = register_module("route", Placeholder());
    c2 = register_module("c2", nn::Conv2d(nn::Conv2dOptions(16, 16, 3).padding(1)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    auto y = c1(x);
    if (head_last) return head(c2(y));
    auto h = head(y);
    return torch::cat({c2(y).flatten(2).transpose(1, 2), h}, 1);
  }
  bool scoped, head_last;
  nn::Conv2d c1{nullptr}, c2{nullptr};
  YoloHead head{nullptr};
  Placeholder route{nullptr};
};
TORCH_MODULE(YoloLike);

// YOLOv3's own layout: every layer a Sequential in a ModuleList, the head last in its own.
struct YoloListImpl : nn::Module {
  explicit YoloListImpl(bool scoped) : scoped(scoped) {
    layers = register_module("layers", nn::ModuleList());
    layers->push_back(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 16, 3).padding(1))));
    layers->push_back(nn::Sequential(YoloHead(scoped)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    auto y = layers[0]->as<nn::Sequential>()->forward(x);
    return layers[1]->as<nn::Sequential>()->forward(y);
  }
  bool scoped;
  nn::ModuleList layers{nullptr};
};
TORCH_MODULE(YoloList);

TEST(Guesses, ADetectionHeadThatMakesItsGridWithArangeIsTheModelsOrMarked) {
  // The head on [1,16,8,8] -> r [1,64,16]: sigmoid_ on 64 + add_ 64 + sigmoid_ on 64 x 14 = 896:
  // 1024 FLOPs.
  const uint64_t head = 64 + 64 + 64 * 14;
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({1, 3, 8, 8});
  for (bool head_last : {true, false}) {
    for (bool grad : {false, true}) {
      SCOPED_TRACE(std::string(head_last ? "head last, " : "head between the convs, ") +
                   (grad ? "grad" : "no grad"));
      YoloLike plain(false, head_last), ref(true, head_last);
      const ProfileResult p = profile(
          plain, [&] { plain->forward(x); }, grad);
      const ProfileResult r = profile(
          ref, [&] { ref->forward(x); }, grad);
      EXPECT_EQ(module(r, "head").flops, head);
      expect_equal_or_flagged(p, r);
      // Both are leaves: no line names a submodule of theirs as the other side.
      EXPECT_FALSE(has_problem(p, "a submodule's")) << problems(p);
      // The never-called placeholder given the head's ops shows a call op order alone made.
      if (!head_last) {
        EXPECT_TRUE(has_problem(p, "'route' (Placeholder) (1)")) << problems(p);
        EXPECT_TRUE(module(p, "route").calls_inferred);
      }
    }
  }
  for (bool grad : {false, true}) {  // the head in a Sequential at the end of a ModuleList
    SCOPED_TRACE(grad ? "ModuleList, grad" : "ModuleList, no grad");
    YoloList plain(false), ref(true);
    const ProfileResult p = profile(
        plain, [&] { plain->forward(x); }, grad);
    const ProfileResult r = profile(
        ref, [&] { ref->forward(x); }, grad);
    EXPECT_EQ(module(r, "layers.1.0").flops, head);
    expect_equal_or_flagged(p, r);
  }
}

// A model that is a built-in Sequential, applied twice in a row (`model(model(x))`, as
// weight-shared refinement loops do): op order cannot tell two calls from one forward that runs
// its layers twice. Its forward is LibTorch's (inline: no call observed), so the line's fix is a
// ModuleScope around each call, never FLOPSPROF_MODULE() "as the first line of its forward";
// with the scopes, the count is exact.
TEST(Guesses, ABuiltInModelCalledTwiceInARowGetsAScopeAroundItsCallsAsItsFix) {
  torch::Tensor x = torch::randn({2, 8});
  nn::Sequential plain(nn::Linear(8, 8), nn::ReLU()), ref(nn::Linear(8, 8), nn::ReLU());
  const ProfileResult p = profile(
      plain, [&] { plain->forward(plain->forward(x)); }, false);
  const ProfileResult r = profile(
      ref,
      [&] {
        torch::Tensor y;
        {
          flopsprof::ModuleScope scope(ref.get());
          y = ref->forward(x);
        }
        flopsprof::ModuleScope scope(ref.get());
        ref->forward(y);
      },
      false);
  EXPECT_EQ(module(r, "").calls, 2u);
  EXPECT_FALSE(module(r, "").calls_inferred) << problems(r);
  // 2 calls x Linear(8, 8) on 2 rows: 2*8*8 = 128 MACs, 256 + 16 (bias) FLOPs; ReLU 16
  EXPECT_EQ(r.flops, 2u * (256 + 16 + 16));
  expect_equal_or_flagged(p, r);
  EXPECT_TRUE(module(p, "").calls_inferred) << problems(p);
  EXPECT_TRUE(has_problem(p,
                          "`flopsprof::ModuleScope scope(model.get());` right before each call "
                          "in the program (include/flopsprof/scope.h) makes it exact"))
      << problems(p);
  for (const std::string& line : p.problems) {
    if (line.find("call count") != std::string::npos)
      EXPECT_EQ(line.find("FLOPSPROF_MODULE()"), std::string::npos) << line;
  }
}

// TiTaNet's attention pooling (rahimkhan76270/libtorch-titanet): a child whose own work follows
// its last submodule's call (`a = lin(x).softmax(-1); return (a * x).sum(-1);`). Op order gives
// the softmax, mul and sum to the parent, marked. The line must name the child's forward as the
// place for FLOPSPROF_MODULE(): a scope in the parent, which the old text ("as the first line of
// its forward") pointed at, leaves the same guess; a scope in the child makes it exact.
struct PooledImpl : nn::Module {
  explicit PooledImpl(int scoped) : scoped(scoped) {
    lin = register_module("lin", nn::Linear(16, 16));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s((scoped & 2) != 0, this);
    torch::Tensor a = lin(x).softmax(-1);
    return (a * x).sum(-1);
  }
  int scoped;
  nn::Linear lin{nullptr};
};
TORCH_MODULE(Pooled);

struct PoolingHeadImpl : nn::Module {
  explicit PoolingHeadImpl(int scoped) : scoped(scoped) {
    pool = register_module("pool", Pooled(scoped));
    out = register_module("out", nn::Linear(4, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s((scoped & 1) != 0, this);
    return out(pool(x));
  }
  int scoped;
  Pooled pool{nullptr};
  nn::Linear out{nullptr};
};
TORCH_MODULE(PoolingHead);

TEST(Guesses, ALinesFixNamesTheInnerModuleWhoseEndOpOrderCannotSee) {
  torch::Tensor x = torch::randn({2, 4, 16});
  PoolingHead plain(0), parent_only(1), child_only(2);
  const ProfileResult p = profile(
      plain, [&] { plain->forward(x); }, false);
  const ProfileResult pp = profile(
      parent_only, [&] { parent_only->forward(x); }, false);
  const ProfileResult c = profile(
      child_only, [&] { child_only->forward(x); }, false);
  EXPECT_EQ(module(c, "pool").inferred_ops, 0u) << problems(c);
  EXPECT_EQ(module(c, "").inferred_ops, 0u) << problems(c);
  EXPECT_TRUE(c.problems.empty()) << problems(c);
  // with the child's scope, its softmax, mul and sum move from the model to it: the same FLOPs in
  // all, and at least mul 2*4*16 = 128 and sum 2*4*(16 - 1) = 120 of them (softmax's besides)
  EXPECT_EQ(p.flops, c.flops);
  const uint64_t moved = own_flops(p, "") - own_flops(c, "");
  EXPECT_EQ(own_flops(c, "pool") - own_flops(p, "pool"), moved);
  EXPECT_GE(moved, 128u + 120u);
  for (const ProfileResult* r : {&p, &pp}) {
    EXPECT_GT(module(*r, "").inferred_ops, 0u) << problems(*r);
    EXPECT_TRUE(has_problem(*r,
                            "FLOPSPROF_MODULE() as the first line of the forward of 'pool' "
                            "(Pooled) makes them exact (a scope in the model (PoolingHead) "
                            "alone does not)"))
        << problems(*r);
  }
}

}  // namespace

// A user module deriving from a built-in and calling the base's forward inside its own
// (divideconcept/PyTorch-libtorch-U-Net's PartialConv2d: a mask convolution before
// Conv2dImpl::forward, the bias taken off and put back after it). The base's forward was observed
// as the module's call: its record covered the base's convolution only, so the ops before and
// after it went to the parent, the root or outside the model unmarked, a FLOPSPROF_MODULE() in the
// subclass made two calls of one, and its Sequential counted two. A call of a built-in's forward
// is that module's only when the instance is of that type.
struct MaskedConvImpl : nn::Conv2dImpl {
  MaskedConvImpl(nn::Conv2dOptions o, bool scoped) : nn::Conv2dImpl(o), scoped(scoped) {}
  torch::Tensor forward(const torch::Tensor& x) {
    MaybeScope s(scoped, this);
    torch::Tensor ratio;
    {
      torch::NoGradGuard ng;
      ratio = 9.0 / torch::conv2d(torch::ones({1, 1, x.size(2), x.size(3)}),
                                  torch::ones({1, 1, 3, 3}), {}, options.stride(), 1);
    }
    torch::Tensor raw = nn::Conv2dImpl::forward(x);
    torch::Tensor b = bias.view({1, -1, 1, 1});
    return (raw - b) * ratio + b;
  }
  bool scoped;
};
TORCH_MODULE(MaskedConv);

struct MaskedNetImpl : nn::Module {
  explicit MaskedNetImpl(bool scoped) {
    block = register_module(
        "block",
        nn::Sequential(MaskedConv(nn::Conv2dOptions(3, 8, 3).padding(1), scoped), nn::ReLU()));
    down = register_module("down", nn::Sequential(MaskedConv(
                                       nn::Conv2dOptions(8, 8, 3).padding(1).stride(2), scoped)));
  }
  torch::Tensor forward(const torch::Tensor& x) { return down->forward(block->forward(x)); }
  nn::Sequential block{nullptr}, down{nullptr};
};
TORCH_MODULE(MaskedNet);

TEST(Guesses, ASubclassOfABuiltInCallingItsBaseForwardIsAUserModule) {
  torch::Tensor x = torch::randn({1, 3, 32, 32});
  MaskedNet plain(false), ref(true);
  const ProfileResult p = profile(
      plain, [&] { plain->forward(x); }, false);
  const ProfileResult r = profile(
      ref, [&] { ref->forward(x); }, false);
  // With FLOPSPROF_MODULE() in the subclass: one call each, exact. block.0 on 32 x 32: its conv
  // 8 x 32 x 32 x (3 x 3 x 3) = 221,184 MACs and the mask's 1 x 32 x 32 x 9 = 9,216; down.0 at
  // stride 2 on 16 x 16: 8 x 16 x 16 x (8 x 3 x 3) = 147,456 and 16 x 16 x 9 = 2,304.
  for (const char* name : {"block", "block.0", "down", "down.0"}) {
    EXPECT_EQ(module(r, name).calls, 1u) << name << "\n" << problems(r);
    EXPECT_EQ(module(p, name).calls, 1u) << name << "\n" << problems(p);
  }
  EXPECT_FALSE(module(r, "block.0").calls_inferred) << problems(r);
  EXPECT_EQ(module(r, "block.0").macs, 221184u + 9216u) << problems(r);
  EXPECT_EQ(module(r, "down.0").macs, 147456u + 2304u) << problems(r);
  EXPECT_EQ(module(r, "block.0").inferred_ops, 0u) << problems(r);
  EXPECT_EQ(r.outside.flops, 0u);
  // A module's span holds its ops: never longer than its parent's.
  EXPECT_LE(module(r, "block.0").latency_raw_s, module(r, "block").latency_raw_s);
  EXPECT_LE(module(r, "block").latency_raw_s, module(r, "").latency_raw_s);
  // Without it, under get_model_profile (the model's call bounds known): the same totals, and
  // whatever op order placed is marked.
  const ProfileResult w = window(plain, false, x);
  for (const char* name : {"block", "block.0", "down", "down.0"})
    EXPECT_EQ(module(w, name).calls, 1u) << name << "\n" << problems(w);
  EXPECT_EQ(w.flops, r.flops);
  expect_equal_or_flagged(w, r);
  // Under start/stop the model's own total is the same with what went outside it: block.0's mask
  // ops come first and read nothing of the model's, so nothing tells them from the program's
  // work before the call (they go outside, not yet marked; a CallWindow or the scope decides).
  EXPECT_EQ(p.flops + p.outside.flops, r.flops + r.outside.flops);
}
