// The two capture paths (ProfilerOptions::capture, docs/cost.md "Capture paths"): the dispatcher
// interceptor and RecordFunction give the same records, so the same FLOPs, MACs, bytes,
// placements and marks; the path is chosen, shared and reported as documented; the interceptor
// covers the threads it says and leaves none behind.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capture/interceptor.h"
#include "capture_path.h"
#include "flopsprof/flopsprof.h"
#include "flopsprof/jit.h"

namespace {

using flopsprof::FlopsProfiler;
using flopsprof::ProfileResult;
using flopsprof::ProfilerOptions;
using Capture = ProfilerOptions::Capture;

std::string message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const flopsprof::Error& e) {
    return e.what();
  }
  return "no error";
}

ProfilerOptions options_for(Capture capture) {
  ProfilerOptions o;
  o.capture = capture;
  o.roofline.enabled = false;  // counts only: no peaks to measure
  return o;
}

// Every count the two paths must agree on, module by module and op by op (times left out).
void expect_same_counts(const ProfileResult& a, const ProfileResult& b) {
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.macs, b.macs);
  EXPECT_EQ(a.fwd_bytes, b.fwd_bytes);
  EXPECT_EQ(a.bwd_flops, b.bwd_flops);
  EXPECT_EQ(a.bwd_bytes, b.bwd_bytes);
  EXPECT_EQ(a.recompute_flops, b.recompute_flops);
  EXPECT_EQ(a.autograd_flops, b.autograd_flops);
  EXPECT_EQ(a.step_flops, b.step_flops);
  EXPECT_EQ(a.step_bytes, b.step_bytes);
  EXPECT_EQ(a.outside.flops, b.outside.flops);
  EXPECT_EQ(a.outside.bytes, b.outside.bytes);
  EXPECT_EQ(a.has_backward, b.has_backward);
  EXPECT_EQ(a.has_step, b.has_step);
  ASSERT_EQ(a.modules.size(), b.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    const auto& x = a.modules[i];
    const auto& y = b.modules[i];
    SCOPED_TRACE("module '" + x.name + "'");
    EXPECT_EQ(x.calls, y.calls);
    EXPECT_EQ(x.calls_inferred, y.calls_inferred);
    EXPECT_EQ(x.scoped, y.scoped);
    EXPECT_EQ(x.flops, y.flops);
    EXPECT_EQ(x.macs, y.macs);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.bwd_flops, y.bwd_flops);
    EXPECT_EQ(x.bwd_bytes, y.bwd_bytes);
    EXPECT_EQ(x.inferred_ops, y.inferred_ops);
    EXPECT_EQ(x.inferred_flops, y.inferred_flops);
    EXPECT_EQ(x.inferred_bytes, y.inferred_bytes);
    EXPECT_EQ(x.inferred_bwd_flops, y.inferred_bwd_flops);
    EXPECT_EQ(x.maybe_missing_flops, y.maybe_missing_flops);
    EXPECT_EQ(x.maybe_missing_bytes, y.maybe_missing_bytes);
    EXPECT_EQ(x.na_ops, y.na_ops);
  }
  // The op table: every op name and phase with its calls, counts and bytes.
  auto key = [](const flopsprof::OpStats& o) { return o.name + " / " + o.phase; };
  std::map<std::string, const flopsprof::OpStats*> ops;
  for (const auto& o : a.ops) ops[key(o)] = &o;
  EXPECT_EQ(a.ops.size(), b.ops.size());
  for (const auto& y : b.ops) {
    SCOPED_TRACE("op " + key(y));
    auto it = ops.find(key(y));
    if (it == ops.end()) {
      ADD_FAILURE() << "only on one path";
      continue;
    }
    const auto& x = *it->second;
    EXPECT_EQ(x.calls, y.calls);
    EXPECT_EQ(x.flops, y.flops);
    EXPECT_EQ(x.macs, y.macs);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.bytes_read, y.bytes_read);
    EXPECT_EQ(x.bytes_written, y.bytes_written);
    EXPECT_EQ(x.written_unknown, y.written_unknown);
    EXPECT_EQ(x.dtype, y.dtype);
  }
  // Placements and their marks: the problems that name guesses (times are in no such line).
  auto guesses = [](const ProfileResult& r) {
    std::vector<std::string> g;
    for (const std::string& p : r.problems) {
      if (p.find("placement") != std::string::npos || p.find("inferred") != std::string::npos)
        g.push_back(p);
    }
    return g;
  };
  EXPECT_EQ(guesses(a), guesses(b));
}

// Runs `work` on a fresh model from `make` (seeded the same) under each path, one after the
// other, and compares the counts.
template <class Make, class Work>
void expect_paths_agree(Make make, Work work) {
  FLOPSPROF_SKIP_IF_PINNED("compares capture = dispatch with record_function");
  ProfileResult results[2];
  const Capture paths[2] = {Capture::kRecordFunction, Capture::kDispatch};
  for (int k = 0; k < 2; ++k) {
    torch::manual_seed(0);
    auto model = make();
    FlopsProfiler prof(model, options_for(paths[k]));
    prof.start_profile();
    work(model);
    prof.stop_profile();
    results[k] = prof.result();
    EXPECT_EQ(results[k].workload.capture, k == 0 ? "record_function" : "dispatch");
  }
  expect_same_counts(results[0], results[1]);
}

// Every op the interceptor reads unboxed, with the argument forms its kernels meet (optional
// tensors given and None, Scalars as ints, doubles and bools, int lists, strings, dtypes, a
// non-contiguous, a broadcast and a repeated tensor): its typed reading must be what its boxed
// form gives RecordFunction, which the op table's FLOPs and bytes (read, written) show.
void every_unboxed_op(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  auto w = torch::randn({6, 8}), b = torch::randn({6});
  auto xt = x.t();                                 // non-contiguous, [8, 4]
  auto nc = torch::randn({8, 4}).t();              // non-contiguous, [4, 8]
  auto row = torch::randn({1, 8}).expand({4, 8});  // broadcast: stride 0
  at::linear(x, w, b);
  at::linear(x, w);
  at::addmm(b, x, w.t());
  at::addmm(b, x, w.t(), 0.5, 2);
  at::mm(x, w.t());
  auto a3 = torch::randn({2, 4, 8}), b3 = torch::randn({2, 8, 3}), c3 = torch::randn({2, 4, 3});
  at::bmm(a3, b3);
  at::matmul(x, w.t());
  at::baddbmm(c3, a3, b3, 1, 0.5);
  auto s1 = torch::randn({2, 3, 16}), k1 = torch::randn({4, 3, 3});
  at::conv1d(s1, k1, {}, {2}, {1}, {1}, 1);
  auto img = torch::randn({1, 4, 8, 8}), k2 = torch::randn({4, 2, 3, 3}), kb = torch::randn({4});
  at::conv2d(img, k2, kb, {1, 1}, {1, 1}, {1, 1}, 2);
  at::relu(nc);
  auto r = x.clone();
  at::relu_(r);
  at::gelu(x, "tanh");
  at::gelu(x);
  at::silu(x);
  at::sigmoid(row);
  at::tanh(x);
  at::add(x, row, 2);
  at::add(x, x, 0.5);  // repeated
  r.add_(x, 3);
  at::sub(x, row);
  at::mul(x, nc);
  r.mul_(x);
  at::mul(x, at::Scalar(2));
  at::mul(x, at::Scalar(true));
  at::div(x, row);
  at::div(x, at::Scalar(4.0));
  at::neg(x);
  at::exp(x);
  at::rsqrt(x.abs() + 1);
  at::sqrt(x.abs());
  at::pow(x, 2);
  at::pow(x, 0.5);
  at::layer_norm(x, {8}, b.new_ones({8}), b.new_zeros({8}), 1e-5);
  at::layer_norm(x, {8});
  at::softmax(x, 1);
  at::softmax(x, 0, at::kDouble);
  at::log_softmax(x, -1);
  at::dropout(x, 0.5, false);
  auto table = torch::randn({10, 4});
  auto ids = torch::tensor({1, 2, 0, 7});
  at::embedding(table, ids, 0);
  auto bn_in = torch::randn({4, 3, 2, 2});
  at::batch_norm(bn_in, torch::ones({3}), torch::zeros({3}), torch::zeros({3}), torch::ones({3}),
                 false, 0.1, 1e-5, false);
  at::batch_norm(bn_in, {}, {}, torch::zeros({3}), torch::ones({3}), true, 0.1, 1e-5, false);
  at::max_pool2d(img, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true);
  at::adaptive_avg_pool2d(img, {2, 2});
  at::mean(x, {1}, true);
  at::mean(x, {0}, false, at::kDouble);
  at::sum(x);
  at::sum(x, at::kDouble);
  at::sum(x, {0});
  x.view({8, 4});
  x.reshape({2, 16});
  xt.reshape({32});  // a copy: non-contiguous
  x.transpose(0, 1);
  img.permute({0, 2, 3, 1});
  xt.contiguous();
  x.t();
  img.flatten(1);
  x.select(0, 2);
  x.slice(1, 2, 6, 2);
  x.slice(1);
  x.unsqueeze(0);
  x.unsqueeze(0).squeeze(0);
  torch::randn({1, 8}).expand({4, 8}, false);
  xt.clone();
  x.clone(at::MemoryFormat::Contiguous);
  r.zero_();
  r.copy_(nc);
  x.masked_fill(x > 0, 1.5);
  at::where(x > 0, x, row);
  x.split(2);
  x.chunk(3, 1);
  table.index_select(0, ids);
  x.to(at::kDouble);
  x.to(at::kHalf, false, true);
  r.addcmul_(x, row, 0.5);
  r.addcdiv_(x, x.abs() + 1, 2);
  r.lerp_(x, 0.25);
  r.mul_(at::Scalar(3));
  r.div_(x.abs() + 1);
  r.abs_().sqrt_();
  r.add_(at::Scalar(1), 2);
}

TEST(CapturePaths, EveryUnboxedOpRecordsWhatItsBoxedFormDoes) {
  expect_paths_agree([] { return torch::nn::Identity(); },
                     [](torch::nn::Identity&) {
                       every_unboxed_op(torch::randn({4, 8}));
                     });
}

struct PathsBlock : torch::nn::Module {
  PathsBlock() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 32));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::gelu(norm(fc1(x)));  // built-in modules and a functional op
    h = h + h.mean(-1, true);            // ops of this module's own
    return fc2(h).log_softmax(-1);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};

// Forward, backward (a Linear's bias gradient is reduced by the engine after its node: the
// dispatch path records the engine's wrapper itself) and Adam's step, over two iterations.
TEST(CapturePaths, TrainingStepsAgreeModuleByModule) {
  expect_paths_agree([] { return std::make_shared<PathsBlock>(); },
                     [](std::shared_ptr<PathsBlock>& model) {
                       torch::optim::Adam adam(model->parameters(), 1e-3);
                       auto x = torch::randn({8, 16});
                       auto y = torch::randint(0, 4, {8});
                       for (int i = 0; i < 2; ++i) {
                         adam.zero_grad();
                         torch::nll_loss(model->forward(x), y).backward();
                         adam.step();
                       }
                     });
}

TEST(CapturePaths, ConvolutionsBatchNormAndATransformerLayerAgree) {
  expect_paths_agree(
      [] {
        torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
                                  torch::nn::BatchNorm2d(8), torch::nn::ReLU(),
                                  torch::nn::MaxPool2d(2), torch::nn::Flatten(),
                                  torch::nn::Linear(8 * 4 * 4, 10));
        return net;
      },
      [](torch::nn::Sequential& net) {
        net->train();
        net->forward(torch::randn({2, 3, 8, 8})).sum().backward();
      });
  expect_paths_agree(
      [] {
        return torch::nn::TransformerEncoderLayer(
            torch::nn::TransformerEncoderLayerOptions(16, 2).dim_feedforward(32).dropout(0.0));
      },
      [](torch::nn::TransformerEncoderLayer& layer) {
        layer->forward(torch::randn({5, 2, 16})).sum().backward();
      });
}

// A TorchScript model: the interpreter calls ops boxed, with its whole stack.
TEST(CapturePaths, ATorchScriptModelAgrees) {
  FLOPSPROF_SKIP_IF_PINNED("compares capture = dispatch with record_function");
  ProfileResult results[2];
  const Capture paths[2] = {Capture::kRecordFunction, Capture::kDispatch};
  for (int k = 0; k < 2; ++k) {
    torch::manual_seed(0);
    torch::jit::Module m("Net");
    m.register_parameter("w", torch::randn({8, 4}), false);
    m.define(R"(
      def forward(self, x):
          h = torch.matmul(x, self.w)
          return torch.relu(h).sum(dim=1)
    )");
    flopsprof::JitModel jm(m);
    auto observer = jm.observe();
    FlopsProfiler prof(jm.tree(), options_for(paths[k]));
    prof.start_profile();
    jm.forward({torch::randn({3, 8})});
    prof.stop_profile();
    results[k] = prof.result();
  }
  expect_same_counts(results[0], results[1]);
  // matmul [3,8] x [8,4]: 3*8*4 = 96 MACs, 192 FLOPs; relu 12, sum over dim 1: 12 - 3 = 9 adds
  EXPECT_EQ(results[1].macs, 96u);
}

TEST(CapturePaths, AutoTakesTheInterceptorAndSaysWhich) {
  torch::nn::Linear lin(4, 4);
  FlopsProfiler prof(lin);
  prof.start_profile();
  lin->forward(torch::randn({2, 4}));
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  EXPECT_EQ(r.workload.capture, flopsprof_test::expected_capture());
  const std::string text = prof.model_profile_string();
  EXPECT_NE(text.find(std::string("capture:")), std::string::npos);
  EXPECT_NE(text.find(flopsprof_test::expected_capture()), std::string::npos);
  if (flopsprof_test::record_function_run()) {
    EXPECT_NE(r.workload.capture_note.find("share one capture path"), std::string::npos)
        << r.workload.capture_note;
  } else {
    EXPECT_EQ(r.workload.capture_note, "");
  }
  EXPECT_NE(prof.to_json().find("\"capture\""), std::string::npos);
}

TEST(CapturePaths, OverlappingProfilesShareOnePath) {
  FLOPSPROF_SKIP_IF_PINNED("starts a profile of each path");
  torch::nn::Linear lin(4, 4);
  FlopsProfiler first(lin, options_for(Capture::kRecordFunction));
  first.start_profile();
  FlopsProfiler follows(lin, options_for(Capture::kAuto));
  follows.start_profile();
  FlopsProfiler differs(lin, options_for(Capture::kDispatch));
  const std::string error = message([&] { differs.start_profile(); });
  EXPECT_NE(error.find("capture = dispatch"), std::string::npos) << error;
  EXPECT_NE(error.find("share one capture path"), std::string::npos) << error;
  EXPECT_FALSE(differs.is_running());
  lin->forward(torch::randn({2, 4}));
  follows.stop_profile();
  first.stop_profile();
  EXPECT_EQ(follows.result().workload.capture, "record_function");
  EXPECT_NE(follows.result().workload.capture_note.find("share one capture path"),
            std::string::npos);
  EXPECT_EQ(follows.result().flops, first.result().flops);
  // The other way round, and each alone once both stopped.
  differs.start_profile();
  FlopsProfiler refused(lin, options_for(Capture::kRecordFunction));
  EXPECT_NE(message([&] { refused.start_profile(); }).find("capture = record_function"),
            std::string::npos);
  differs.stop_profile();
  EXPECT_EQ(differs.result().workload.capture, "dispatch");
  refused.start_profile();
  refused.stop_profile();
  EXPECT_EQ(refused.result().workload.capture, "record_function");
}

// The mode key is on the starting thread while the profile runs and gone after; a thread that
// joined (its first built-in module call, under Threads::kAll) drops it at its next op once no
// profile needs it, so no thread keeps paying the interceptor's pass-through.
TEST(CapturePaths, NoThreadKeepsTheKeyAfterTheProfile) {
  FLOPSPROF_SKIP_IF_PINNED("checks the dispatch capture's key");
  namespace d = flopsprof::detail;
  torch::nn::Linear lin(4, 4);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({2, 4});
  EXPECT_FALSE(d::mode_key_included());
  FlopsProfiler prof(lin, options_for(Capture::kDispatch));
  prof.start_profile();
  EXPECT_TRUE(d::mode_key_included());
  bool joined = false, dropped = true;
  std::mutex mu;
  std::condition_variable cv;
  int stage = 0;
  std::thread worker([&] {
    torch::NoGradGuard ng;
    lin->forward(x);  // the Linear's observed call joins this thread
    {
      std::unique_lock<std::mutex> lock(mu);
      joined = d::mode_key_included();
      stage = 1;
      cv.notify_all();
      cv.wait(lock, [&] { return stage == 2; });
    }
    (void)torch::relu(x);  // the first op after the profile: drops the key
    dropped = !d::mode_key_included();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return stage == 1; });
  }
  prof.stop_profile();
  EXPECT_FALSE(d::mode_key_included()) << "the starting thread drops the key at the stop";
  {
    std::lock_guard<std::mutex> lock(mu);
    stage = 2;
  }
  cv.notify_all();
  worker.join();
  EXPECT_TRUE(joined);
  EXPECT_TRUE(dropped);
  // The worker's Linear call is in the profile (addmm: 2 x 4 x 4 MACs), and the problems say
  // that a thread joined late.
  EXPECT_EQ(prof.result().macs, 2u * 4 * 4);
  bool said = false;
  for (const std::string& p : prof.result().problems)
    said |= p.find("1 thread(s) other than the profiling one joined") != std::string::npos;
  EXPECT_TRUE(said);
}

// A thread the program started that never calls a built-in module is found by the sampled check
// (one op in kSampledCheckEvery) and covered from then on; the problems count it. With
// Threads::kCallingThread it is never covered, as documented for both paths.
TEST(CapturePaths, AThreadWithoutModuleCallsIsFoundBySampling) {
  FLOPSPROF_SKIP_IF_PINNED("checks the dispatch capture's threads");
  torch::nn::Linear lin(4, 4);
  FlopsProfiler prof(lin, options_for(Capture::kDispatch));
  prof.start_profile();
  std::thread worker([] {
    torch::NoGradGuard ng;
    auto t = torch::ones({2});
    for (int i = 0; i < 20 * flopsprof::detail::kSampledCheckEvery; ++i) t = torch::relu(t);
  });
  worker.join();
  prof.stop_profile();
  const ProfileResult& r = prof.result();
  bool said = false;
  for (const std::string& p : r.problems)
    said |= p.find("joined the dispatch capture late") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_GT(r.outside.flops, 0u) << "the relus after the thread was found are outside the model";
  EXPECT_LT(r.outside.flops, 2u * 20 * flopsprof::detail::kSampledCheckEvery)
      << "those before were not seen";
}

// The starting thread loses the key when a thread-state guard opened before start_profile()
// ends during the profile (c10::InferenceMode restores the whole key set); its next built-in
// module call takes it back and the problems say what was missed.
TEST(CapturePaths, AStartingThreadThatLostTheKeyIsSaid) {
  FLOPSPROF_SKIP_IF_PINNED("checks the dispatch capture's key");
  torch::nn::Linear lin(4, 4);
  auto x = torch::randn({2, 4});
  FlopsProfiler prof(lin, options_for(Capture::kDispatch));
  {
    c10::InferenceMode guard;
    prof.start_profile();
  }  // restores the key set it saw: without the mode key
  EXPECT_FALSE(flopsprof::detail::mode_key_included());
  lin->forward(x);  // joins again at the Linear's call: its ops are seen
  prof.stop_profile();
  EXPECT_EQ(prof.result().macs, 2u * 4 * 4);
  bool said = false;
  for (const std::string& p : prof.result().problems)
    said |= p.find("lost the dispatch capture's key 1 time(s)") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace
