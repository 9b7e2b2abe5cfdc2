// Profiler tests on real LibTorch modules: attribution rules, calls, reports, misuse, threads.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <thread>

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "capture_path.h"
#include "flopsprof/flopsprof.h"
#include "models/bert.h"
#include "models/mlp.h"

namespace {

using flopsprof::Error;
using flopsprof::FlopsProfiler;

// models::Mlp(8, 16, 4, 2) on a [3, 8] batch, counted by hand:
//   layers.0 Linear(8->16): MACs 3*16*8 = 384, FLOPs 2*384 + 3*16 (bias) = 816
//   layers.1 ReLU: 3*16 = 48 FLOPs          layers.2 Linear(16->16): 3*16*16 = 768 MACs, 1536 + 48
//   = 1584 layers.3 ReLU: 48 FLOPs                 head Linear(16->4): 3*4*16 = 192 MACs, 384 + 12
//   = 396 log_softmax: 3*4 = 12 FLOPs
constexpr uint64_t kMlpFlops = 816 + 48 + 1584 + 48 + 396 + 12;
constexpr uint64_t kMlpMacs = 384 + 768 + 192;
constexpr uint64_t kMlpParams = (8 * 16 + 16) + (16 * 16 + 16) + (16 * 4 + 4);

models::Mlp small_mlp() {
  torch::manual_seed(0);
  models::Mlp m(8, 16, 4, 2);
  m->eval();
  return m;
}

TEST(Profiler, MlpIsAttributedByParameterOwnership) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({3, 8}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
  EXPECT_EQ(prof.get_total_macs(), kMlpMacs);
  EXPECT_EQ(prof.get_total_params(), kMlpParams);
  EXPECT_EQ(prof.get_module_flops("layers.0"), 816u);
  EXPECT_EQ(prof.get_module_macs("layers.2"), 768u);
  EXPECT_EQ(prof.get_module_flops("head"), 396u);
  // The ReLUs have no parameters: each is the parameterless child of the Sequential whose type
  // runs `relu`, in registration order (layers.3 is the Sequential's last child: its call extends
  // over it). log_softmax follows the model's last module in its forward: the root's.
  EXPECT_EQ(prof.get_module_flops("layers"), 816u + 48 + 1584 + 48);
  EXPECT_EQ(prof.get_module_flops("layers.1"), 48u);
  EXPECT_EQ(prof.get_module_flops("layers.3"), 48u);
  EXPECT_EQ(prof.get_module("layers.1").calls, 1u);
  EXPECT_EQ(prof.get_module("layers.3").calls, 1u);
  EXPECT_EQ(prof.get_module("layers.0").calls, 1u);
  EXPECT_EQ(prof.get_module("layers").calls, 1u);
  EXPECT_EQ(prof.get_module("").calls, 1u);
  // torch::randn({3, 8}) ran inside the profile, before the forward: outside the model
  EXPECT_EQ(prof.result().outside.ops, 1u);
  EXPECT_EQ(prof.get_module("layers.0").params, 8u * 16 + 16);
  EXPECT_EQ(prof.get_module("").type, "Mlp");
  EXPECT_EQ(prof.get_module("layers.0").type, "Linear");
  EXPECT_GT(prof.get_total_duration(), 0.0);
  EXPECT_GE(prof.get_total_duration(), prof.get_module_duration("head"));
  EXPECT_EQ(prof.get_total_flops_string(), "2.90 K");
  EXPECT_EQ(prof.result().flops_by_dtype[static_cast<size_t>(flopsprof::DType::kFloat32)],
            kMlpFlops);
}

TEST(Profiler, Float64IsTalliedPerDtype) {
  models::Mlp model = small_mlp();
  model->to(torch::kDouble);
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({3, 8}, torch::kDouble));
  prof.stop_profile();
  EXPECT_EQ(prof.result().flops_by_dtype[static_cast<size_t>(flopsprof::DType::kFloat64)],
            kMlpFlops);
  EXPECT_EQ(prof.result().param_bytes, kMlpParams * 8);
}

// A scoped block that runs its child twice and does a GEMM of its own.
struct BlockImpl : torch::nn::Module {
  BlockImpl() : fc(register_module("fc", torch::nn::Linear(4, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    FLOPSPROF_MODULE();
    x = fc(x);
    x = torch::relu(x);
    x = fc(x);                       // the same Linear again: a second call
    return torch::matmul(x, x.t());  // no owner: the scope (Block)
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(Block);

struct TwoBlocksImpl : torch::nn::Module {
  TwoBlocksImpl() : block(register_module("block", Block())) {}
  torch::Tensor forward(torch::Tensor x) {
    FLOPSPROF_MODULE();
    return block(block(x).slice(1, 0, 4));
  }
  Block block;
};
TORCH_MODULE(TwoBlocks);

// The C++ frontend's mse_loss broadcasts its operands (aten::broadcast_tensors) before the loss
// op: views, a known 0, not an op without a formula (found on pytorch-cpp's style transfer).
TEST(Profiler, CppFrontendMseLossHasNoOpWithoutAFormula) {
  torch::manual_seed(0);
  torch::nn::Linear model(4, 4);
  FlopsProfiler prof(model);
  prof.start_profile();
  torch::Tensor y = model->forward(torch::randn({2, 4}));
  torch::Tensor loss = torch::nn::functional::mse_loss(y, torch::randn({2, 4}));
  prof.stop_profile();
  const auto& r = prof.result();
  bool broadcast_seen = false;
  for (const auto& op : r.ops) {
    EXPECT_TRUE(op.has_formula) << op.name;
    broadcast_seen = broadcast_seen || op.name == "aten::broadcast_tensors";
  }
  EXPECT_TRUE(broadcast_seen)
      << "the frontend no longer broadcasts first: the test needs another op";
  EXPECT_EQ(r.no_formula_s, 0.0);
}

TEST(Profiler, ScopesCountCallsAndOwnUnownedOps) {
  TwoBlocks model;
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({4, 4}));
  prof.stop_profile();
  // per block call: 2 x Linear(4->4) on [4,4]: 2 * (2*64 + 16) = 288; relu 16;
  // matmul [4,4]x[4,4]: 2*64 = 128 -> 432 per call, two calls
  EXPECT_EQ(prof.get_module("block").calls, 2u);
  EXPECT_TRUE(prof.get_module("block").scoped);
  EXPECT_EQ(prof.get_module_flops("block"), 2u * 432);
  EXPECT_EQ(prof.get_module("block.fc").calls, 4u);  // split by the relu in between
  EXPECT_EQ(prof.get_module_flops("block.fc"), 4u * 144);
  EXPECT_EQ(prof.get_total_flops(), 2u * 432);
  EXPECT_EQ(prof.get_module("").calls, 1u);
}

TEST(Profiler, TiedDecoderBelongsToTheHeadThatRunsIt) {
  models::BertConfig c;
  c.vocab_size = 50;
  c.hidden = 8;
  c.layers = 1;
  c.heads = 2;
  c.intermediate = 16;
  c.max_positions = 16;
  models::BertForMaskedLM model(c);
  model->eval();
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randint(0, 50, {1, 6}));
  prof.stop_profile();
  // decoder: linear([1,6,8], W[50,8], b[50]): MACs 6*50*8 = 2400; FLOPs 4800 + 6*50 = 5100
  EXPECT_EQ(prof.get_module_flops("cls.predictions.decoder"), 5100u);
  EXPECT_EQ(prof.get_module_flops("bert.embeddings.word_embeddings"), 0u);
  // the shared matrix is counted once in the model, in both modules' own counts
  EXPECT_EQ(prof.get_module_params("cls.predictions.decoder"), 50u * 8 + 50);
  uint64_t embeddings = 50 * 8 + 16 * 8 + 2 * 8 + 2 * 8;
  uint64_t layer = 4 * (8 * 8 + 8) + 2 * 8 + (8 * 16 + 16) + (16 * 8 + 8) + 2 * 8;
  uint64_t head = (8 * 8 + 8) + 2 * 8 + 50;
  EXPECT_EQ(prof.get_total_params(), embeddings + layer + head);
}

struct SharedImpl : torch::nn::Module {
  SharedImpl() {
    torch::nn::Linear fc(3, 3);
    a = register_module("a", fc);
    b = register_module("b", fc);  // the same module under two names
  }
  torch::Tensor forward(const torch::Tensor& x) { return b(a(x)); }
  torch::nn::Linear a{nullptr}, b{nullptr};
};
TORCH_MODULE(Shared);

TEST(Profiler, SharedModuleParametersAreCountedOnce) {
  Shared model;
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({2, 3}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_params(), 12u);
  EXPECT_EQ(prof.get_module_params("a"), 12u);
  EXPECT_EQ(prof.get_module_params("b"), 12u);
  // both calls: 2 * (2*2*3*3 + 2*3) = 2 * 42
  EXPECT_EQ(prof.get_total_flops(), 84u);
}

TEST(Profiler, IgnoredModuleTypesFoldIntoTheirParent) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile({"Linear"});
  model->forward(torch::randn({3, 8}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
  EXPECT_THROW(prof.get_module("head"), Error);
  EXPECT_EQ(prof.get_module_flops("layers"), 816u + 48 + 1584 + 48);
  EXPECT_EQ(prof.get_module_flops(""), kMlpFlops);
  prof.end_profile();
  try {
    prof.start_profile({"Conv9d"});
    FAIL() << "an unknown type must be rejected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Conv9d"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Linear"), std::string::npos);  // lists the types present
  }
  EXPECT_FALSE(prof.is_running());
}

TEST(Profiler, TextReportOfARealModelMatchesLineByLine) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  flopsprof::ProfilerOptions options;
  options.timer = flopsprof::make_step_timer(0);  // every timestamp 0: the report is deterministic
  options.roofline.set_peak_flops(100e9);         // so are given ceilings (ridge: 10 FLOP/B)
  options.roofline.peak_bandwidth = 10e9;
  FlopsProfiler prof(model, options);
  prof.start_profile();
  model->forward(torch::randn({3, 8}));
  prof.stop_profile();
  std::string text = prof.model_profile_string(1, -1, 1, true);
  std::string tree = text.substr(text.find("\nMlp(\n") + 1);
  // Bytes (fp32): layers.0 reads b 16 + x 24 + W 128, writes 48: 864 B (816 FLOPs: 0.94 FLOP/B);
  // a ReLU reads 48 and writes 48: 384 B (48 FLOPs: 0.12); layers.2 reads 16 + 48 + 256, writes
  // 48: 1,472 B (1,584 FLOPs: 1.08); head reads 4 + 48 + 64, writes 12: 512 B (396: 0.77);
  // log_softmax 12 + 12: 96 B. All memory-bound; no time has passed: no share (n/a), not 0%.
  std::vector<std::string> expected = {
      "Mlp(",
      // the final log_softmax: the model's or the caller's (no grad: op order decides), marked
      // with its FLOPs and its 96 bytes
      "  484 = 100.00% Params, 1.34 KMACs = 100.00% MACs, 0.00 us = 0.00% latency, n/a, ~ +12 "
      "FLOPs +96 B by op order, 3.71 KB moved, 0.78 FLOP/B memory n/a",
      "  (layers): Sequential(",
      "    416 = 85.95% Params, 1.15 KMACs = 85.71% MACs, 0.00 us = 0.00% latency, n/a, 3.10 KB "
      "moved, 0.80 FLOP/B memory n/a",
      "    (0): Linear(144 = 29.75% Params, 384 MACs = 28.57% MACs, 0.00 us = 0.00% latency, n/a, "
      "864 B moved, 0.94 FLOP/B memory n/a)",
      "    (1): ReLU(0 = 0.00% Params, 0 MACs = 0.00% MACs, 0.00 us = 0.00% latency, n/a, 384 B "
      "moved, 0.12 FLOP/B memory n/a)",
      "    (2): Linear(272 = 56.20% Params, 768 MACs = 57.14% MACs, 0.00 us = 0.00% latency, n/a, "
      "1.47 KB moved, 1.08 FLOP/B memory n/a)",
      "    (3): ReLU(0 = 0.00% Params, 0 MACs = 0.00% MACs, 0.00 us = 0.00% latency, n/a, 384 B "
      "moved, 0.12 FLOP/B memory n/a)",
      "  )",
      "  (head): Linear(68 = 14.05% Params, 192 MACs = 14.29% MACs, 0.00 us = 0.00% latency, n/a, "
      "512 B moved, 0.77 FLOP/B memory n/a)",
      ")",
  };
  std::istringstream in(tree.substr(0, tree.find("\n\n---")));  // the tree, to the op table
  std::string line;
  size_t i = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(i, expected.size()) << line;
    EXPECT_EQ(line, expected[i]) << "line " << i;
    ++i;
  }
  EXPECT_EQ(i, expected.size());
  EXPECT_NE(text.find("fwd flops per device:                                         2.90 K\n"),
            std::string::npos);
  // module_depth = 1 prints the tree down to depth 1 only
  std::string shallow = prof.model_profile_string(1, 1, 1, true);
  EXPECT_EQ(shallow.find("(0): Linear"), std::string::npos);
  EXPECT_NE(shallow.find("  (layers): Sequential(416 = 85.95% Params"), std::string::npos);
}

TEST(Profiler, JsonIsParseableAndConsistent) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({3, 8}));
  prof.stop_profile();
  std::string path = ::testing::TempDir() + "flopsprof_profile.json";
  prof.save_json(path);
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["schema_version"], 2);
  // What ran, for comparisons (flopsprof/diff.h): no inputs given to a hand-started profile, so
  // the data its first op read (the MLP's input [3, 8])
  const nlohmann::json& w = j["workload"];
  EXPECT_EQ(w["inputs"], nlohmann::json::array({"fp32[3, 8]"}));
  EXPECT_EQ(w["inputs_source"], "the model's first op");
  EXPECT_EQ(w["iterations"], 1);
  EXPECT_EQ(w["intra_op_threads"], at::get_num_threads());
  EXPECT_EQ(w["libtorch_version"], TORCH_VERSION);
  EXPECT_EQ(w["flopsprof_version"], FLOPSPROF_VERSION);
  EXPECT_FALSE(w["device"].get<std::string>().empty());
  EXPECT_FALSE(j["summary"].contains("fwd_spread"));  // one iteration: no spread
  EXPECT_EQ(j["summary"]["fwd_flops"], kMlpFlops);
  EXPECT_EQ(j["summary"]["fwd_macs"], kMlpMacs);
  EXPECT_EQ(j["summary"]["params"], kMlpParams);
  EXPECT_GT(j["summary"]["fwd_latency_s"].get<double>(), 0.0);
  ASSERT_EQ(j["modules"].size(), 7u);
  EXPECT_EQ(j["modules"][0]["name"], "");
  EXPECT_EQ(j["modules"][0]["flops"], kMlpFlops);
  for (const auto& m : j["modules"]) {
    for (const char* key : {"name", "type", "depth", "calls", "params", "macs", "flops",
                            "latency_s", "flops_by_dtype"}) {
      EXPECT_TRUE(m.contains(key)) << key;
    }
  }
  uint64_t op_flops = 0;
  for (const auto& op : j["ops"]) op_flops += op["flops"].get<uint64_t>();
  EXPECT_EQ(op_flops, kMlpFlops);
}

// Several iterations in one profile: each module's forward latency per root call, the backward
// per pass, the step per step; their sums are the totals, so the spread brackets the mean.
TEST(Profiler, LatencySpreadPerIteration) {
  models::Mlp model = small_mlp();
  torch::optim::SGD opt(model->parameters(), 0.01);
  FlopsProfiler prof(model);
  prof.start_profile();
  for (int i = 0; i < 3; ++i) {
    model->forward(torch::randn({3, 8})).sum().backward();
    auto s = prof.step_scope();
    opt.step();
  }
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  auto brackets = [](const flopsprof::LatencySpread& s, double total, const std::string& what) {
    ASSERT_EQ(s.samples, 3u) << what;
    EXPECT_LE(s.min_s, s.median_s) << what;
    EXPECT_LE(s.median_s, s.max_s) << what;
    EXPECT_LE(s.min_s * 3, total * (1 + 1e-9)) << what;  // three samples summing to the total
    EXPECT_GE(s.max_s * 3, total * (1 - 1e-9)) << what;
  };
  brackets(r.fwd_spread, r.duration_s, "forward");
  brackets(r.bwd_spread, r.bwd_latency_s, "backward");
  brackets(r.step_spread, r.step_latency_s, "step");
  for (const flopsprof::ModuleStats& m : r.modules) {
    brackets(m.fwd_spread, m.latency_s, "forward of '" + m.name + "'");
    brackets(m.bwd_spread, m.bwd_latency_s, "backward of '" + m.name + "'");
  }
  nlohmann::json j = nlohmann::json::parse(prof.to_json());
  EXPECT_EQ(j["workload"]["iterations"], 3);
  EXPECT_EQ(j["summary"]["fwd_spread"]["samples"], 3);
  EXPECT_DOUBLE_EQ(j["modules"][1]["bwd_spread"]["max_s"].get<double>(),
                   r.modules[1].bwd_spread.max_s);
}

TEST(Profiler, OpsWithoutFormulaAreListedWithTheirTime) {
  struct CumImpl : torch::nn::Module {
    torch::Tensor forward(const torch::Tensor& x) { return torch::cumsum(x, 1); }
  };
  auto model = std::make_shared<CumImpl>();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({64, 256});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x);
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  EXPECT_EQ(r.flops, 0u);
  bool found = false;
  for (const auto& op : r.ops) {
    if (op.name == "aten::cumsum") {
      found = true;
      EXPECT_FALSE(op.has_formula);
      EXPECT_EQ(op.calls, 1u);
      EXPECT_GT(op.latency_s, 0.0);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_GT(r.no_formula_s, 0.0);
  std::string text = prof.model_profile_string();
  EXPECT_NE(text.find("aten::cumsum"), std::string::npos);
  EXPECT_NE(text.find("1 op(s), 1 call(s)"), std::string::npos) << text;

  // A user formula makes the same op counted (registered before start_profile).
  flopsprof::register_formula(
      "aten::cumsum", [](const flopsprof::OpInputs& in) -> std::optional<flopsprof::FlopCount> {
        return flopsprof::FlopCount{in.numel(0), 0};  // one add per element
      });
  prof.start_profile();
  model->forward(x);
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), 64u * 256);
  flopsprof::unregister_formula("aten::cumsum");
}

TEST(Misuse, ClearErrors) {
  models::Mlp model = small_mlp();
  FlopsProfiler prof(model);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { prof.stop_profile(); }).find("call start_profile() first"),
            std::string::npos);
  EXPECT_NE(message([&] { prof.get_total_flops(); }).find("no profile has been collected"),
            std::string::npos);
  prof.start_profile();
  EXPECT_NE(message([&] { prof.start_profile(); }).find("call stop_profile() first"),
            std::string::npos);
  {  // several profilers may run at once, up to 4 in a process (the record_function run's pin
     // holds one: tests/capture_path.h)
    std::vector<std::unique_ptr<FlopsProfiler>> others;
    for (int i = 0; i < flopsprof_test::free_profile_slots() - 1; ++i) {
      others.push_back(std::make_unique<FlopsProfiler>(model));
      EXPECT_NO_THROW(others.back()->start_profile());
    }
    FlopsProfiler fifth(model);
    EXPECT_NE(message([&] { fifth.start_profile(); }).find("already running"), std::string::npos);
  }
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::randn({3, 8}));
  }
  prof.stop_profile();
  EXPECT_NE(message([&] { prof.get_module("nope"); }).find("unknown module 'nope'"),
            std::string::npos);
  EXPECT_NE(message([&] { prof.print_model_profile(1, -5); }).find("module_depth"),
            std::string::npos);
  EXPECT_NE(message([&] { prof.print_model_profile(1, -1, 0); }).find("top_modules"),
            std::string::npos);
  std::string bad = "/nonexistent-dir/x/profile.txt";
  EXPECT_NE(message([&] { prof.print_model_profile(1, -1, 1, true, bad); }).find("cannot write"),
            std::string::npos);
  // the profile is kept and can be written elsewhere
  std::string good = ::testing::TempDir() + "flopsprof_profile.txt";
  prof.print_model_profile(1, -1, 1, true, good);
  std::ifstream f(good);
  std::string first;
  std::getline(f, first);
  EXPECT_NE(first.find("flopsprof"), std::string::npos);
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
  EXPECT_THROW(FlopsProfiler(std::shared_ptr<torch::nn::Module>()), Error);
  prof.end_profile();
  EXPECT_THROW(prof.get_total_flops(), Error);
}

struct ThrowingImpl : torch::nn::Module {
  ThrowingImpl() : fc(register_module("fc", torch::nn::Linear(4, 4))) {}
  torch::Tensor forward(const torch::Tensor& x, bool fail) {
    FLOPSPROF_MODULE();
    auto y = fc(x);
    if (fail) throw std::runtime_error("boom");
    return torch::relu(y);
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(Throwing);

TEST(Profiler, ExceptionInForwardLeavesProfilerReusable) {
  Throwing model;
  torch::NoGradGuard no_grad;
  // no roofline: the problems checked below are the profile's, not this machine's peaks (three
  // threads on a 2-core machine measure its caches below DRAM, which the peaks say)
  flopsprof::ProfilerOptions options;
  options.roofline.enabled = false;
  FlopsProfiler prof(model, options);
  prof.start_profile();
  EXPECT_THROW(model->forward(torch::randn({2, 4}), true), std::runtime_error);
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), 2u * 2 * 4 * 4 + 2 * 4);  // the Linear ran, the relu did not
  EXPECT_TRUE(prof.result().problems.empty()) << ::testing::PrintToString(prof.result().problems);
  prof.start_profile();
  model->forward(torch::randn({2, 4}), false);
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), 2u * 2 * 4 * 4 + 2 * 4 + 2 * 4);
  EXPECT_EQ(prof.get_module("").calls, 1u);
}

TEST(Profiler, OutputsAreBitIdenticalAndCountsRepeatable) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({3, 8});
  torch::Tensor reference = model->forward(x);
  FlopsProfiler prof(model);
  for (int round = 0; round < 3; ++round) {
    prof.start_profile();
    torch::Tensor y = model->forward(x);
    prof.stop_profile();
    EXPECT_TRUE(torch::equal(y, reference));
    EXPECT_EQ(prof.get_total_flops(), kMlpFlops) << "round " << round;
    EXPECT_EQ(prof.get_module("head").calls, 1u);
    prof.reset_profile();
    EXPECT_THROW(prof.get_total_flops(), Error);
  }
  // reset while running restarts from zero
  prof.start_profile();
  model->forward(x);
  prof.reset_profile();
  model->forward(x);
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);  // snapshot while running
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
}

// While running, readers share one analysis per state of the records: reads with nothing recorded
// in between agree, and each new record is seen by the next read.
TEST(Profiler, ReadsWhileRunningFollowTheRecords) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({3, 8});
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(x);
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
  const flopsprof::ProfileResult first = prof.result();
  EXPECT_EQ(prof.get_total_macs(), first.macs);
  EXPECT_EQ(prof.get_module("head").calls, 1u);
  model->forward(x);  // new op records: the next read sees them
  EXPECT_EQ(prof.get_total_flops(), 2 * kMlpFlops);
  EXPECT_EQ(prof.get_module("head").calls, 2u);
  EXPECT_EQ(prof.result().step_flops, 0u);
  torch::Tensor w = torch::ones({8, 2});
  {
    auto step = prof.step_scope();
    torch::mm(x, w);
  }
  EXPECT_EQ(prof.result().step_flops, 2u * 3 * 8 * 2);  // [3, 8] x [8, 2]
  EXPECT_EQ(prof.get_total_flops(), 2 * kMlpFlops);
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), 2 * kMlpFlops);
}

TEST(Profiler, NothingStaysRegisteredAfterEndProfile) {
  FLOPSPROF_SKIP_IF_PINNED("checks that nothing stays registered: the run pins a running profile");
  ASSERT_FALSE(at::hasCallbacks());
  models::Mlp model = small_mlp();
  {
    FlopsProfiler prof(model);
    prof.start_profile();
    EXPECT_TRUE(at::hasCallbacks());
    prof.end_profile();
    EXPECT_FALSE(at::hasCallbacks());
    prof.start_profile();  // the destructor ends a running profile
  }
  EXPECT_FALSE(at::hasCallbacks());
  EXPECT_EQ(flopsprof::detail::g_scope_demand.load(), 0);
}

TEST(Profiler, ForwardsOnTwoThreadsAreAttributed) {
  models::Mlp model = small_mlp();
  FlopsProfiler prof(model);
  prof.start_profile();
  auto work = [&] {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < 5; ++i) model->forward(torch::randn({3, 8}));
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), 10 * kMlpFlops);
  EXPECT_EQ(prof.get_module_flops("head"), 10u * 396);
  EXPECT_EQ(prof.get_module_flops("layers.2"), 10u * 1584);
  EXPECT_EQ(prof.get_module("layers.0").calls, 10u);
  EXPECT_GE(prof.result().threads, 2u);
}

TEST(Profiler, CallingThreadModeIgnoresOtherThreads) {
  models::Mlp model = small_mlp();
  flopsprof::ProfilerOptions options;
  options.threads = flopsprof::ProfilerOptions::Threads::kCallingThread;
  FlopsProfiler prof(model, options);
  prof.start_profile();
  torch::NoGradGuard no_grad;
  std::thread other([&] {
    torch::NoGradGuard g;
    model->forward(torch::randn({3, 8}));
  });
  other.join();
  model->forward(torch::randn({3, 8}));
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
}

TEST(Hooks, PreAndPostHooksFireAroundScopedForwards) {
  FLOPSPROF_SKIP_IF_PINNED("checks that nothing stays registered: the run pins a running profile");
  Block block;
  int pre = 0, post = 0;
  auto h1 = flopsprof::register_forward_pre_hook(block.ptr(), [&](torch::nn::Module& m) {
    ++pre;
    EXPECT_EQ(&m, block.ptr().get());
  });
  auto h2 = flopsprof::register_forward_hook(block.ptr(), [&](torch::nn::Module&) { ++post; });
  torch::NoGradGuard no_grad;
  block->forward(torch::randn({4, 4}));  // no profile needed
  EXPECT_EQ(pre, 1);
  EXPECT_EQ(post, 1);
  EXPECT_TRUE(h1.remove());
  EXPECT_FALSE(h1.remove());
  block->forward(torch::randn({4, 4}));
  EXPECT_EQ(pre, 1);
  EXPECT_EQ(post, 2);
  auto h3 = flopsprof::register_forward_pre_hook(
      block.ptr(), [](torch::nn::Module&) { throw std::runtime_error("refused"); });
  EXPECT_THROW(block->forward(torch::randn({4, 4})), std::runtime_error);
  EXPECT_EQ(post, 2);  // the forward did not run
  h3.remove();
  h2.remove();
  EXPECT_EQ(flopsprof::detail::g_scope_demand.load(), 0);
}

TEST(ModelProfile, OverloadsAndOptions) {
  models::Mlp model = small_mlp();
  torch::NoGradGuard no_grad;
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  o.as_string = true;
  flopsprof::ModelProfile a = flopsprof::get_model_profile(model, std::vector<int64_t>{3, 8}, o);
  EXPECT_EQ(a.flops, kMlpFlops);
  EXPECT_EQ(a.macs, kMlpMacs);
  EXPECT_EQ(a.params, kMlpParams);
  EXPECT_EQ(a.flops_string, "2.90 K");
  EXPECT_EQ(a.macs_string, "1.34 KMACs");
  torch::Tensor x = torch::randn({6, 8});
  flopsprof::ModelProfile b = flopsprof::get_model_profile(model, std::make_tuple(x), o);
  EXPECT_EQ(b.flops, 2 * kMlpFlops);
  flopsprof::ModelProfile c = flopsprof::get_model_profile(
      model, [&] { model->forward(x); }, o);
  EXPECT_EQ(c.flops, 2 * kMlpFlops);
  o.print_profile = true;
  o.output_file = ::testing::TempDir() + "flopsprof_model_profile.txt";
  o.module_depth = 0;
  flopsprof::get_model_profile(model, std::vector<int64_t>{3, 8}, o);
  std::ifstream f(o.output_file);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("Mlp(484 = 100.00% Params"), std::string::npos);
  o.top_modules = 0;
  EXPECT_THROW(flopsprof::get_model_profile(model, std::vector<int64_t>{3, 8}, o), Error);
  EXPECT_FALSE(at::hasCallbacks());
}

// A forward returning a tuple (an embedding model's (logits, embedding), TiTaNet's): backward =
// true ran nothing, silently (run_forward ran backward only from a tensor). It now runs backward
// from the sum of each output tensor that requires grad; with none, it says so.
struct TwoHeadsImpl : torch::nn::Module {
  TwoHeadsImpl() : fc(register_module("fc", torch::nn::Linear(8, 4))) {}
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x) {
    torch::Tensor y = fc(x);
    return {y, torch::relu(y)};
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(TwoHeads);

TEST(ModelProfile, BackwardRunsFromEveryOutputTensorOfATuple) {
  TwoHeads model;
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  o.warm_up = 0;
  o.backward = true;
  torch::Tensor x = torch::randn({2, 8});  // no grad: the input's gradient is not computed
  flopsprof::ModelProfile p = flopsprof::get_model_profile(model, std::make_tuple(x), o);
  // forward: Linear(8, 4) on 2 rows, 2*4*8 = 64 MACs; backward: the weight's gradient,
  // grad_y^T [4, 2] x x [2, 8] = 4*2*8 = 64 MACs (relu's, the sums' and the bias's have none)
  EXPECT_EQ(p.macs, 2u * 4 * 8);
  EXPECT_EQ(p.result.bwd_macs, 4u * 2 * 8);
  EXPECT_EQ(p.result.modules[1].bwd_macs, 4u * 2 * 8);  // fc's
  // gradients off: nothing to run backward from, said, not skipped
  torch::NoGradGuard no_grad;
  try {
    flopsprof::get_model_profile(model, std::make_tuple(x), o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backward = true, but no tensor of the forward's output "
                                         "requires grad (2 tensor(s) found"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(at::hasCallbacks());
}

struct MemNetImpl : torch::nn::Module {
  MemNetImpl() : fc(register_module("fc", torch::nn::Linear(8, 16))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    FLOPSPROF_MODULE();
    torch::Tensor h = fc(x);  // addmm output: 3 x 16 fp32 = 192 bytes, on fc
    return torch::relu(h);    // relu output: 192 bytes, on MemNet; h is freed on return
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(MemNet);

TEST(Memory, AllocationsAreAttributedToOpsAndModules) {
  MemNet model;
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({3, 8});
  flopsprof::ProfilerOptions options;
  options.track_memory = true;
  FlopsProfiler prof(model, options);
  prof.start_profile();
  torch::Tensor y = model->forward(x);
  prof.stop_profile();
  const flopsprof::MemoryStats& m = prof.result().memory;
  ASSERT_TRUE(m.tracked);
  EXPECT_EQ(prof.get_module("fc").fwd_alloc_bytes, 192);
  EXPECT_EQ(prof.get_module("fc").fwd_held_bytes, 192);  // its output outlives its op
  EXPECT_EQ(prof.get_module("").fwd_alloc_bytes, 384);
  EXPECT_EQ(prof.get_module("").fwd_held_bytes, 192);  // h freed, y kept
  EXPECT_EQ(m.peak_bytes, 384);
  EXPECT_EQ(m.peak_op, "aten::relu");
  EXPECT_EQ(m.peak_module, "");
  EXPECT_EQ(m.fwd_peak_bytes, 384);
  EXPECT_EQ(m.final_bytes, 192);
  EXPECT_EQ(m.allocations, 2u);
  EXPECT_EQ(m.frees, 1u);
  ASSERT_EQ(m.trace.size(), 3u);
  EXPECT_EQ(m.trace[0].op, "aten::addmm");
  EXPECT_EQ(m.trace[0].module, "fc");
  EXPECT_EQ(m.trace[0].bytes, 192);
  EXPECT_EQ(m.trace[2].bytes, 192);
  EXPECT_LE(m.trace[0].time_s, m.trace[2].time_s);
  nlohmann::json j = nlohmann::json::parse(prof.to_json());
  EXPECT_EQ(j["memory"]["peak_bytes"], 384);
  EXPECT_EQ(j["memory"]["trace"].size(), 3u);
  EXPECT_NE(prof.model_profile_string().find("384 B at aten::relu in (root) (forward)"),
            std::string::npos);
  EXPECT_TRUE(torch::equal(y, torch::relu(model->fc(x))));
}

TEST(Memory, TrainingPeakExceedsForwardPeak) {
  torch::manual_seed(0);
  models::Mlp model(64, 256, 10, 2);
  torch::Tensor x = torch::randn({32, 64});
  flopsprof::ProfilerOptions options;
  options.track_memory = true;
  FlopsProfiler prof(model, options);
  prof.start_profile();
  model->forward(x).sum().backward();
  prof.stop_profile();
  const flopsprof::MemoryStats& m = prof.result().memory;
  // forward keeps the activations for backward: each hidden Linear holds its [32,256] output
  EXPECT_GE(prof.get_module("layers.0").fwd_held_bytes, 32 * 256 * 4);
  EXPECT_GT(m.fwd_peak_bytes, 0);
  EXPECT_GE(m.peak_bytes, m.fwd_peak_bytes);
  EXPECT_NE(m.peak_phase, "");
  // gradients of all parameters are allocated by the end of backward
  EXPECT_GE(m.final_bytes, static_cast<int64_t>(prof.get_total_params() * 4) - 32 * 256 * 4 * 4);
}

// LibTorch's own profiler, started as its C++ API wants: prepareProfiler, then enableProfiler. In
// 2.x, enableProfiler without prepareProfiler dereferences a null kineto activity profiler when
// nothing initialised kineto before (a CPU-only LibTorch such as Debian's 2.6); it crashes the same
// way in a program without flopsprof, and in Python through torch.autograd._enable_profiler.
namespace {
void start_libtorch_profiler() {
  using namespace torch::profiler::impl;
  ProfilerConfig config(ProfilerState::KINETO, true, false, false, true);
  torch::autograd::profiler::prepareProfiler(config, {ActivityType::CPU});
  torch::autograd::profiler::enableProfiler(config, {ActivityType::CPU});
}
}  // namespace

TEST(Memory, SlotTakenByLibTorchProfilerIsAClearError) {
  models::Mlp model = small_mlp();
  start_libtorch_profiler();
  flopsprof::ProfilerOptions options;
  options.track_memory = true;
  FlopsProfiler prof(model, options);
  try {
    prof.start_profile();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory-reporting slot"), std::string::npos);
  }
  EXPECT_FALSE(prof.is_running());
  torch::autograd::profiler::disableProfiler();
  EXPECT_FALSE(at::hasCallbacks());
  prof.start_profile();  // works once the slot is free
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::randn({3, 8}));
  }
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
  EXPECT_GT(prof.result().memory.allocations, 0u);
}

// The other order: flopsprof tracks memory first, then LibTorch's profiler starts on that thread.
// It finds the slot taken and refuses with its own error; flopsprof's profile goes on unharmed.
TEST(Memory, LibTorchProfilerStartedWhileTrackingMemoryIsRefused) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << "LibTorch 1.13's enableProfiler casts whatever holds the slot to its own state "
                  "type and reads it (profilerEnabled): undefined behaviour, not a clear error; "
                  "2.x only checks the slot is empty";
#endif
  models::Mlp model = small_mlp();
  flopsprof::ProfilerOptions options;
  options.track_memory = true;
  FlopsProfiler prof(model, options);
  prof.start_profile();
  EXPECT_THROW(start_libtorch_profiler(), c10::Error);
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::randn({3, 8}));
  }
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), kMlpFlops);
  EXPECT_GT(prof.result().memory.allocations, 0u);
  EXPECT_FALSE(at::hasCallbacks());
}

TEST(Memory, BatchSizeSweepTableCsvAndPlot) {
  torch::nn::Linear fc(8, 16);
  auto forward = [&](int64_t b) { return fc->forward(torch::randn({b, 8})); };
  flopsprof::BatchSweep sweep = flopsprof::sweep_batch_sizes(fc.ptr(), {1, 2, 4}, forward);
  ASSERT_EQ(sweep.rows.size(), 3u);
  for (const auto& r : sweep.rows) {
    // the [b,8] input (32b bytes) and the [b,16] output (64b bytes) are alive together
    EXPECT_EQ(r.fwd_peak_bytes, 96 * r.batch_size);
    EXPECT_EQ(r.fwd_flops, static_cast<uint64_t>(2 * r.batch_size * 16 * 8 + r.batch_size * 16));
    EXPECT_GE(r.train_peak_bytes, r.fwd_peak_bytes);  // gradients and saved tensors on top
  }
  EXPECT_FALSE(fc->weight.grad().defined());  // gradients released after each training run
  std::string csv = sweep.csv();
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "batch_size,fwd_peak_bytes,train_peak_bytes,fwd_flops,fwd_latency_s");
  EXPECT_NE(csv.find("\n4,384,"), std::string::npos);
  EXPECT_NE(sweep.table().find("fwd peak MiB"), std::string::npos);
  std::string svg = sweep.svg();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("training (forward + backward)"), std::string::npos);
  sweep.save_svg(::testing::TempDir() + "flopsprof_sweep.svg");
  EXPECT_THROW(sweep.save_csv("/nonexistent-dir/s.csv"), Error);
  EXPECT_THROW(flopsprof::sweep_batch_sizes(fc.ptr(), {}, forward), Error);
  EXPECT_THROW(flopsprof::sweep_batch_sizes(fc.ptr(), {0}, forward), Error);
}

}  // namespace
