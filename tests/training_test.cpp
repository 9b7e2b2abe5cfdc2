// Training-loop tests: measured backward per module, phases, step scope, recompute, profile_step.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "flopsprof/flopsprof.h"

namespace {

using flopsprof::FlopsProfiler;

// fc1: Linear(8 -> 16), relu, fc2: Linear(16 -> 4); batch 3; the input does not require grad.
struct TwoLayerImpl : torch::nn::Module {
  TwoLayerImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(TwoLayer);

TEST(Training, LinearBackwardIsMeasuredPerModule) {
  torch::manual_seed(0);
  TwoLayer model;
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x).sum().backward();
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  ASSERT_TRUE(r.has_backward);
  // fc1 is the first layer and x does not require grad: only the weight gradient,
  // grad[3,16]^T @ x[3,8] = 16*8*3 = 384 MACs = 1 x its forward MACs (3*16*8), not 2 x;
  // plus the bias gradient, a sum over the batch of grad[3,16]: 48 FLOPs.
  EXPECT_EQ(prof.get_module("fc1").macs, 384u);
  EXPECT_EQ(prof.get_module("fc1").bwd_macs, 384u);
  EXPECT_EQ(prof.get_module("fc1").bwd_flops, 2u * 384 + 48);
  // fc2 is inner: input gradient grad[3,4] @ W[4,16] (3*16*4 = 192 MACs) and weight gradient
  // (4*16*3 = 192 MACs) = 2 x its forward MACs (3*4*16 = 192); bias: 12 FLOPs.
  EXPECT_EQ(prof.get_module("fc2").macs, 192u);
  EXPECT_EQ(prof.get_module("fc2").bwd_macs, 384u);
  EXPECT_EQ(prof.get_module("fc2").bwd_flops, 2u * 384 + 12);
  // relu backward (threshold_backward, 48 FLOPs) belongs to the relu's module: the root.
  EXPECT_EQ(prof.get_module("").bwd_flops, (2u * 384 + 48) + (2u * 384 + 12) + 48);
  EXPECT_EQ(r.bwd_flops, prof.get_module("").bwd_flops + r.autograd_flops);
  EXPECT_GT(prof.get_module("fc1").bwd_latency_s, 0.0);
  EXPECT_GT(r.bwd_latency_s, 0.0);
  // the forward side is unchanged by the backward (+ 12 for the loss: sum of a [3,4] output)
  EXPECT_EQ(r.flops, (2u * 384 + 48) + 48 + (2u * 192 + 12) + 12);
  EXPECT_EQ(r.estimated_bwd_flops(), 2 * r.flops);
}

struct ConvNetImpl : torch::nn::Module {
  ConvNetImpl()
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).padding(1)))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 4, 3).padding(1)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return conv2(torch::relu(conv1(x))); }
  torch::nn::Conv2d conv1, conv2;
};
TORCH_MODULE(ConvNet);

TEST(Training, Conv2dBackwardComputesInputAndWeightGradients) {
  ConvNet model;
  torch::Tensor x = torch::randn({1, 3, 8, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x).sum().backward();
  prof.stop_profile();
  // forward MACs: conv1 1*4*8*8*3*9 = 6912; conv2 1*4*8*8*4*9 = 9216
  EXPECT_EQ(prof.get_module("conv1").macs, 6912u);
  EXPECT_EQ(prof.get_module("conv2").macs, 9216u);
  // conv1 (input needs no grad): weight gradient only: 1 x 6912 MACs, + bias 1*4*8*8 = 256
  EXPECT_EQ(prof.get_module("conv1").bwd_macs, 6912u);
  EXPECT_EQ(prof.get_module("conv1").bwd_flops, 2u * 6912 + 256);
  // conv2: input and weight gradients: 2 x 9216 MACs, + bias 256
  EXPECT_EQ(prof.get_module("conv2").bwd_macs, 2u * 9216);
  EXPECT_EQ(prof.get_module("conv2").bwd_flops, 2u * 2 * 9216 + 256);
}

// A tensor used twice: h = pre(x); a(h) + b(h) (LibtorchSegmentation's UNet, its skip connections
// and SCSE gates). The engine adds h's two gradients (InputBuffer's accumulation, an aten::add in
// the evaluate_function of the node that produced the second one, after that node): gradient
// accumulation, "(autograd)" (docs/attribution.md, rule 6), not that node's conv, which a
// LibtorchSegmentation UNet showed at 2.5 x its forward.
struct ForkImpl : torch::nn::Module {
  ForkImpl()
      : pre(register_module("pre", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 1)))),
        a(register_module("a", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 1)))),
        b(register_module("b", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 1)))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = pre(x);
    return a(h) + b(h);
  }
  torch::nn::Conv2d pre, a, b;
};
TORCH_MODULE(Fork);

TEST(Training, AGradientAccumulatedFromTwoUsesIsTheEnginesNotAConsumers) {
  Fork model;
  torch::Tensor x = torch::randn({1, 3, 16, 16});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x).sum().backward();
  prof.stop_profile();
  // a and b: 1x1 convs 8 -> 8 over 16x16: 256*8*8 = 16384 MACs; backward input and weight
  // gradients 2 x 16384 MACs, bias 8*256 = 2048 FLOPs: the same for both
  const uint64_t conv_bwd = 2u * 2 * 16384 + 2048;
  EXPECT_EQ(prof.get_module("a").bwd_flops, conv_bwd);
  EXPECT_EQ(prof.get_module("b").bwd_flops, conv_bwd);
  // h's two gradients [1,8,16,16] added once: 2048 FLOPs, the engine's
  EXPECT_EQ(prof.result().autograd_flops, 2048u);
  // pre (its input needs no gradient): weight 256*3*8 = 6144 MACs, bias 2048
  EXPECT_EQ(prof.get_module("pre").bwd_flops, 2u * 6144 + 2048);
}

// A GAN's discriminator step (koba-jon/pytorch_cpp's pix2pix): D(real) and D(fake), their losses
// summed, one backward: both forwards had a backward (it was said "1 of the 2 forward calls had
// no backward": calls minus passes). An evaluation under no_grad in the window has none.
TEST(Training, ForwardsWhoseLossesShareOneBackwardEachHadOne) {
  torch::manual_seed(0);
  torch::nn::Linear d(32, 1);
  FlopsProfiler prof(d);
  prof.start_profile();
  torch::Tensor loss = d(torch::rand({64, 32})).mean() - d(torch::rand({64, 32})).mean();
  loss.backward();
  prof.stop_profile();
  EXPECT_EQ(prof.result().modules[0].calls, 2u);
  EXPECT_EQ(prof.result().forwards_without_backward, 0u);
  prof.start_profile();
  d(torch::rand({64, 32})).sum().backward();
  {
    torch::NoGradGuard no_grad;
    d(torch::rand({64, 32}));
  }
  prof.stop_profile();
  EXPECT_EQ(prof.result().modules[0].calls, 2u);
  EXPECT_EQ(prof.result().forwards_without_backward, 1u);
}

// A generator step: one backward through D and G, each with its own profiler (D's gradients
// exist from its own step). The engine's work is each model's own: G's accumulation of h's two
// gradients (64 x 32 adds) is G's "(autograd)", D's weight and bias gradients added to the
// existing ones (32 + 1 adds) D's; each was counted by both profilers.
struct LinearForkImpl : torch::nn::Module {
  LinearForkImpl()
      : pre(register_module("pre", torch::nn::Linear(16, 32))),
        a(register_module("a", torch::nn::Linear(32, 32))),
        b(register_module("b", torch::nn::Linear(32, 32))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = pre(x);
    return a(h) + b(h);
  }
  torch::nn::Linear pre, a, b;
};
TORCH_MODULE(LinearFork);

TEST(Training, ABackwardThroughTwoProfiledModelsGivesEachItsOwnEngineWork) {
  torch::manual_seed(0);
  LinearFork g;
  torch::nn::Linear d(32, 1);
  d(torch::rand({64, 32})).sum().backward();  // D's gradients defined, as after its step
  FlopsProfiler pg(g), pd(d);
  pg.start_profile();
  pd.start_profile();
  d(g(torch::rand({64, 16}))).sum().backward();
  pd.stop_profile();
  pg.stop_profile();
  EXPECT_EQ(pg.result().autograd_flops, 64u * 32);
  EXPECT_EQ(pd.result().autograd_flops, 32u + 1);
}

TEST(Training, LayerNormBackward) {
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({6}));
  torch::Tensor x = torch::randn({2, 5, 6}, torch::requires_grad());
  FlopsProfiler prof(ln);
  prof.start_profile();
  ln->forward(x).sum().backward();
  prof.stop_profile();
  // forward: 5 x 60 (affine); the loss sum (60) is the caller's: the LayerNorm's call is
  // observed and ends before it. Backward with all three gradients: (5 + 2 + 1) x 60
  EXPECT_EQ(prof.get_total_flops(), 5u * 60);
  EXPECT_EQ(prof.result().outside.flops, 60u);
  EXPECT_EQ(prof.get_module("").bwd_flops, 8u * 60);
}

TEST(Training, PhasesAndTheOptimizerStep) {
  torch::manual_seed(0);
  TwoLayer model;
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  torch::Tensor loss = model->forward(x).sum();
  loss.backward();
  {
    auto step = prof.step_scope();
    sgd.step();
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  // forward identical to an inference profile: the step's ops are not forward ops
  EXPECT_EQ(r.flops, (2u * 384 + 48) + 48 + (2u * 192 + 12) + 12 /* the loss sum */);
  // plain SGD: p.add_(grad, -lr) once per parameter: one FLOP per parameter element
  EXPECT_EQ(r.step_flops, prof.get_total_params());
  EXPECT_TRUE(r.has_step);
  EXPECT_GT(r.duration_s, 0.0);
  EXPECT_GT(r.bwd_latency_s, 0.0);
  EXPECT_GT(r.step_latency_s, 0.0);
  EXPECT_DOUBLE_EQ(r.iteration_latency_s(), r.duration_s + r.bwd_latency_s + r.step_latency_s);
  for (const auto& op : r.ops) {
    if (op.phase == "step") EXPECT_NE(op.name, "aten::addmm");  // no forward op leaked in
  }
  // a step scope outside a profile is inert
  auto inert = prof.step_scope();
  sgd.step();
  inert.end();
  std::string text = prof.model_profile_string();
  EXPECT_NE(text.find("step latency:"), std::string::npos);
  EXPECT_NE(text.find("bwd flops per device (measured):"), std::string::npos);
  EXPECT_NE(text.find("bwd flops, DeepSpeed's estimate (2 * fwd flops + recompute):"),
            std::string::npos);
}

// The summary's rates are computed once (aggregation) from the profile's own totals, and the text
// and the JSON show those numbers: each rate is its FLOPs over its latency, by hand.
TEST(Training, SummaryRatesAreOneNumberInTheTextAndTheJson) {
  torch::manual_seed(0);
  TwoLayer model;
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor x = torch::randn({3, 8});
  flopsprof::ProfilerOptions o;
  o.batch_size = 3;
  FlopsProfiler prof(model, o);
  prof.start_profile();
  model->forward(x).sum().backward();
  {
    auto step = prof.step_scope();
    sgd.step();
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  ASSERT_GT(r.bwd_latency_s, 0.0);
  ASSERT_GT(r.step_latency_s, 0.0);
  const double fwd_bwd = static_cast<double>(r.flops + r.bwd_flops + r.recompute_flops);
  const double iter = r.duration_s + r.bwd_latency_s + r.step_latency_s;
  EXPECT_DOUBLE_EQ(r.fwd_flops_per_s, static_cast<double>(r.flops) / r.duration_s);
  EXPECT_DOUBLE_EQ(r.bwd_flops_per_s,
                   static_cast<double>(r.bwd_flops + r.recompute_flops) / r.bwd_latency_s);
  EXPECT_DOUBLE_EQ(r.fwd_bwd_flops_per_s, fwd_bwd / (r.duration_s + r.bwd_latency_s));
  EXPECT_DOUBLE_EQ(r.iter_flops_per_s, fwd_bwd / iter);
  EXPECT_DOUBLE_EQ(r.samples_per_s, 3.0 / iter);
  // The JSON carries the same numbers.
  const nlohmann::json j = nlohmann::json::parse(prof.to_json());
  const nlohmann::json& s = j["summary"];
  EXPECT_DOUBLE_EQ(s["fwd_flops_per_s"].get<double>(), r.fwd_flops_per_s);
  EXPECT_DOUBLE_EQ(s["bwd_flops_per_s"].get<double>(), r.bwd_flops_per_s);
  EXPECT_DOUBLE_EQ(s["fwd_bwd_flops_per_s"].get<double>(), r.fwd_bwd_flops_per_s);
  EXPECT_DOUBLE_EQ(s["iter_flops_per_s"].get<double>(), r.iter_flops_per_s);
  EXPECT_DOUBLE_EQ(s["samples_per_s"].get<double>(), r.samples_per_s);
  // The text formats them: each line ends in the number the JSON holds.
  const std::string text = prof.model_profile_string();
  auto value_of = [&](const std::string& label) {
    const size_t at = text.find(label + ":");
    if (at == std::string::npos) return std::string("(no line '" + label + "')");
    size_t from = text.find_first_not_of(' ', at + label.size() + 1);
    return text.substr(from, text.find('\n', from) - from);
  };
  using flopsprof::flops_per_second_to_string;
  EXPECT_EQ(value_of("fwd FLOPS per device = fwd flops per device / fwd latency"),
            flops_per_second_to_string(s["fwd_flops_per_s"].get<double>()));
  EXPECT_EQ(value_of("bwd FLOPS per device = bwd flops per device / bwd latency"),
            flops_per_second_to_string(s["bwd_flops_per_s"].get<double>()));
  EXPECT_EQ(value_of("fwd+bwd FLOPS per device = (fwd + bwd flops) / (fwd + bwd latency)"),
            flops_per_second_to_string(s["fwd_bwd_flops_per_s"].get<double>()));
  EXPECT_EQ(value_of("FLOPS per device = (fwd + bwd flops) / iter latency"),
            flops_per_second_to_string(s["iter_flops_per_s"].get<double>()));
  EXPECT_EQ(value_of("samples/second"), fmt::format("{:.2f}", s["samples_per_s"].get<double>()));
}

// A profile over several forwards sums them in its fwd lines, as DeepSpeed's does; the summary
// says how many it summed, with the per-call spread (found on a timm port's EfficientNet profiled
// over 3 forwards: the summary read as one forward's).
TEST(Training, TheSummarySaysHowManyForwardsItsFwdLinesSum) {
  TwoLayer model;
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  for (int i = 0; i < 3; ++i) model->forward(x);
  prof.stop_profile();
  const std::string text = prof.model_profile_string();
  const std::string label = "fwd calls of the model (the fwd lines sum them):";
  const size_t at = text.find(label);
  ASSERT_NE(at, std::string::npos) << text;
  const std::string value = text.substr(at + label.size(), text.find('\n', at) - at - label.size());
  EXPECT_NE(value.find(" 3"), std::string::npos) << value;
  EXPECT_NE(value.find("per call min / median / max"), std::string::npos) << value;
  // 3 forwards x 3 x (8 x 16 + 16 x 4) MACs
  EXPECT_EQ(prof.result().macs, 3u * 3 * (8 * 16 + 16 * 4));
  EXPECT_NE(text.find("fwd MACs per device:"), std::string::npos);
  // One forward: no such line.
  FlopsProfiler one(model);
  one.start_profile();
  model->forward(x);
  one.stop_profile();
  EXPECT_EQ(one.model_profile_string().find("fwd calls of the model"), std::string::npos);
}

// Activation checkpointing by hand: the forward runs without saving activations; backward runs
// the Linear again (with grad enabled) and differentiates the recomputed graph.
struct CheckpointedLinear : torch::autograd::Function<CheckpointedLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor w, torch::Tensor b) {
    ctx->save_for_backward({x, w, b});
    return torch::linear(x, w, b);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    torch::AutoGradMode enable(true);
    torch::Tensor y = torch::linear(saved[0], saved[1], saved[2]);  // the recomputation
    auto g = torch::autograd::grad({y}, {saved[1], saved[2]}, {grads[0]});
    return {torch::Tensor(), g[0], g[1]};
  }
};

struct CkptImpl : torch::nn::Module {
  CkptImpl() : fc(register_module("fc", torch::nn::Linear(8, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return CheckpointedLinear::apply(x, fc->weight, fc->bias);
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(Ckpt);

TEST(Training, RecomputeInsideBackwardIsCountedAndLabelled) {
  Ckpt model;
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x).sum().backward();
  prof.stop_profile();
  // linear(x[3,8], W[4,8], b[4]): 3*4*8 = 96 MACs, 2*96 + 12 = 204 FLOPs, run twice. fc's
  // forward never runs (its calls are observed): the checkpointed linear reads fc's weights from
  // Ckpt's forward, so it is Ckpt's own work, as a forward hook would see it.
  EXPECT_EQ(prof.get_module("fc").calls, 0u);
  EXPECT_EQ(prof.get_module("fc").flops, 0u);
  EXPECT_EQ(prof.get_module("").flops, 204u + 12);  // + the loss sum, by data flow
  EXPECT_EQ(prof.get_module("").recompute_flops, 204u);
  EXPECT_EQ(prof.result().recompute_flops, 204u);
  // backward of the recomputed graph: weight gradient 96 MACs + bias 12 FLOPs
  EXPECT_EQ(prof.get_module("").bwd_flops, 2u * 96 + 12);
  // DeepSpeed's estimate: 2 x forward + the recomputation. The loss `sum()` reads the model's
  // output: it stays in the model's forward by data flow (README: "Outside the model").
  EXPECT_EQ(prof.result().estimated_bwd_flops(), 2u * (204 + 12) + 204);
  bool labelled = false;
  for (const auto& op : prof.result().ops)
    labelled = labelled || (op.phase == "recompute" && op.name == "aten::linear");
  EXPECT_TRUE(labelled);
  EXPECT_NE(prof.model_profile_string().find("204 recompute flops"), std::string::npos);
}

TEST(Training, ProfileStepProfilesExactlyThatIteration) {
  torch::manual_seed(0);
  TwoLayer model;
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01));
  flopsprof::ProfilerOptions options;
  options.profile_step = 3;
  options.batch_size = 3;
  FlopsProfiler prof(model, options);
  for (int step = 1; step <= 5; ++step) {
    auto it = prof.iteration();
    EXPECT_EQ(it.profiling(), step == 3);
    EXPECT_EQ(prof.is_running(), step == 3);
    torch::Tensor x = torch::randn({step, 8});  // the batch size tells the steps apart
    model->forward(x).sum().backward();
    {
      auto s = prof.step_scope();
      sgd.step();
    }
    sgd.zero_grad();
  }
  EXPECT_FALSE(prof.is_running());
  EXPECT_EQ(prof.iteration_count(), 5);
  // forward of batch 3: fc1 2*3*16*8 + 48, relu 48, fc2 2*3*4*16 + 12, sum 12
  EXPECT_EQ(prof.get_total_flops(), (2u * 384 + 48) + 48 + (2u * 192 + 12) + 12);
  EXPECT_EQ(prof.result().step_flops, prof.get_total_params());
  EXPECT_EQ(prof.result().batch_size, 3);
  EXPECT_NE(prof.model_profile_string(7).find("Profile Summary at step 7:"), std::string::npos);
  // by default the header names the iteration profiled
  EXPECT_NE(prof.model_profile_string().find("Profile Summary at step 3:"), std::string::npos);
  EXPECT_NE(prof.model_profile_string(3).find("samples/second:"), std::string::npos);
}

TEST(Training, JsonBackwardFieldsAreConsistent) {
  torch::manual_seed(0);
  TwoLayer model;
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x).sum().backward();
  prof.stop_profile();
  nlohmann::json j = nlohmann::json::parse(prof.to_json());
  for (const char* key :
       {"bwd_flops", "bwd_macs", "bwd_latency_s", "recompute_flops", "step_latency_s",
        "iter_latency_s", "bwd_flops_estimate", "autograd_flops"}) {
    EXPECT_TRUE(j["summary"].contains(key)) << key;
  }
  uint64_t module_sum =
      j["modules"][0]["bwd_flops"].get<uint64_t>() + j["summary"]["autograd_flops"].get<uint64_t>();
  EXPECT_EQ(module_sum, j["summary"]["bwd_flops"].get<uint64_t>());
  uint64_t children = 0;
  for (const auto& m : j["modules"]) {
    EXPECT_TRUE(m.contains("bwd_flops") && m.contains("bwd_latency_s") &&
                m.contains("recompute_flops"));
    if (m["depth"] == 1) children += m["bwd_flops"].get<uint64_t>();
  }
  EXPECT_EQ(children + 48 /* relu backward, on the root */,
            j["modules"][0]["bwd_flops"].get<uint64_t>());
  uint64_t op_bwd = 0;
  for (const auto& op : j["ops"]) {
    if (op["phase"] == "backward") op_bwd += op["flops"].get<uint64_t>();
  }
  EXPECT_EQ(op_bwd, j["summary"]["bwd_flops"].get<uint64_t>());
}

// ---- Chrome trace ---------------------------------------------------------------------------

struct Span {
  std::string name, cat, module;
  double ts, end;
  int64_t tid;
  nlohmann::json args;
};

std::vector<Span> spans_of(const nlohmann::json& trace) {
  std::vector<Span> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    Span s{e["name"],
           e["cat"],
           e["args"].value("module", ""),
           e["ts"].get<double>(),
           e["ts"].get<double>() + e["dur"].get<double>(),
           e["tid"].get<int64_t>(),
           e["args"]};
    out.push_back(s);
  }
  return out;
}

bool inside(const Span& inner, const Span& outer) {
  return inner.tid == outer.tid && inner.ts >= outer.ts - 1e-6 && inner.end <= outer.end + 1e-6;
}

TEST(ChromeTrace, ModulesOpsPhasesAndFlows) {
  torch::manual_seed(0);
  TwoLayer model;
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x).sum().backward();
  {
    auto s = prof.step_scope();
    sgd.step();
  }
  prof.stop_profile();
  std::string path = ::testing::TempDir() + "flopsprof_trace.json";
  prof.export_chrome_trace(path);
  std::ifstream f(path);
  nlohmann::json trace = nlohmann::json::parse(f);
  std::vector<Span> spans = spans_of(trace);
  ASSERT_FALSE(spans.empty());
  bool named_thread = false;
  for (const auto& e : trace["traceEvents"])
    named_thread = named_thread || e["name"] == "thread_name";
  EXPECT_TRUE(named_thread);

  const Span* fwd = nullptr;
  const Span* bwd = nullptr;
  const Span* step = nullptr;
  for (const Span& s : spans) {
    // kineto's categories: phases and module spans are user annotations (phases without a
    // module), ops and autograd nodes cpu_op
    const bool phase = s.cat == "user_annotation" && !s.args.contains("module");
    if (phase && s.name == "forward" && !fwd) fwd = &s;
    if (phase && s.name == "backward") bwd = &s;
    if (phase && s.name == "step") step = &s;
  }
  ASSERT_TRUE(fwd && bwd && step);
  EXPECT_LE(fwd->end, bwd->ts + 1e-6);  // phases in order
  EXPECT_LE(bwd->end, step->ts + 1e-6);
  double last_ts = -1;
  int64_t last_tid = -1;
  int addmm = 0;
  for (const Span& s : spans) {
    EXPECT_GE(s.end, s.ts);
    if (s.tid == last_tid) EXPECT_GE(s.ts, last_ts);  // sorted per thread
    last_ts = s.ts;
    last_tid = s.tid;
    if (s.cat != "cpu_op" || s.name != "aten::addmm") continue;
    if (s.args.value("phase", "") != "forward") continue;
    ++addmm;
    // nested in its module's span and in the forward phase
    bool in_module = false;
    for (const Span& m : spans)
      in_module = in_module || (m.cat == "user_annotation" && m.args.contains("module") &&
                                m.module == s.module && inside(s, m));
    EXPECT_TRUE(in_module) << s.module;
    EXPECT_TRUE(inside(s, *fwd));
    if (s.module == "fc1") {
      EXPECT_EQ(s.args["flops"], 2 * 3 * 16 * 8 + 3 * 16);
      EXPECT_EQ(s.args["inputs"], "T<16xfp32>, T<3x8xfp32>, T<8x16xfp32>, 1, 1");
    }
  }
  EXPECT_EQ(addmm, 2);
  // flows: each starts inside a forward op and ends inside an autograd node
  int starts = 0, ends = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s") {
      ++starts;
      bool ok = false;
      for (const Span& s : spans)
        ok = ok ||
             (s.cat == "cpu_op" && s.args.value("phase", "") != "backward" && s.tid == e["tid"] &&
              s.ts <= e["ts"].get<double>() + 1e-6 && e["ts"].get<double>() <= s.end + 1e-6);
      EXPECT_TRUE(ok);
    } else if (e["ph"] == "f") {
      ++ends;
      bool ok = false;
      for (const Span& s : spans)
        ok = ok ||
             (s.cat == "cpu_op" && s.args.value("phase", "") == "backward" && s.tid == e["tid"] &&
              s.ts <= e["ts"].get<double>() + 1e-6 && e["ts"].get<double>() <= s.end + 1e-6);
      EXPECT_TRUE(ok);
    }
  }
  EXPECT_GT(starts, 0);
  EXPECT_EQ(starts, ends);
  // level 1 has no memory counter and no internal timing
  for (const auto& e : trace["traceEvents"]) {
    EXPECT_NE(e["ph"], "C");
    EXPECT_NE(e.value("cat", ""), "flopsprof");
  }
}

TEST(ChromeTrace, LevelTwoAddsMemoryAndInternalTiming) {
  TwoLayer model;
  flopsprof::ProfilerOptions options;
  options.track_memory = true;
  FlopsProfiler prof(model, options);
  EXPECT_THROW(prof.chrome_trace(), flopsprof::Error);  // nothing collected yet
  prof.start_profile();
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::randn({3, 8}));
  }
  prof.stop_profile();
  nlohmann::json trace = nlohmann::json::parse(prof.chrome_trace(2));
  int counters = 0, internal = 0;
  int64_t last = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "memory");
      EXPECT_TRUE(e["args"].contains("bytes"));
      last = e["args"]["bytes"];
    }
    if (e.value("cat", "") == "flopsprof") ++internal;
  }
  EXPECT_EQ(counters, static_cast<int>(prof.result().memory.trace.size()));
  EXPECT_EQ(last, prof.result().memory.final_bytes);
  EXPECT_GE(internal, 1);
  EXPECT_THROW(prof.chrome_trace(3), flopsprof::Error);
  EXPECT_THROW(prof.export_chrome_trace("/nonexistent-dir/t.json"), flopsprof::Error);
  prof.export_chrome_trace(::testing::TempDir() + "flopsprof_trace2.json",
                           2);  // the profile is kept
}

}  // namespace
