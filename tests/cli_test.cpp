// The `flopsprof` command (tools/flopsprof_main.cpp) run as a user runs it: reports, files, errors.
// Models are TorchScript modules built here in C++ (Module::define) and saved, so this test needs
// no Python and runs on every LibTorch.
#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#ifndef FLOPSPROF_CLI
#error "FLOPSPROF_CLI: path of the flopsprof command"
#endif

namespace {

struct CliRun {
  int code = -1;
  std::string out;  // stdout and stderr
};

std::string dir() {
  static const std::string d = [] {
    std::string base = ::testing::TempDir() + "flopsprof_cli_test_XXXXXX";
    char* made = mkdtemp(base.data());
    return std::string(made != nullptr ? made : ::testing::TempDir().c_str());
  }();
  return d;
}

CliRun run(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(FLOPSPROF_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// A two-level model: root `Net` with `enc` (a `Block`, holding `proj`, a `Proj`) and `head` (a
// `Head`): forward(x[B,16]) = head(relu(enc(x))), enc(x) = proj(x) + x.
std::string save_net() {
  const std::string path = dir() + "/net.pt";
  if (exists(path)) return path;
  torch::NoGradGuard no_grad;
  auto proj = [](const std::string& cls, int64_t in, int64_t out) {
    torch::jit::Module m(cls);
    m.register_parameter("weight", torch::randn({out, in}).requires_grad_(), false);
    m.register_parameter("bias", torch::randn({out}).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.addmm(self.bias, x, self.weight.t())\n");
    return m;
  };
  torch::jit::Module block("Block");
  block.register_module("proj", proj("Proj", 16, 16));
  block.define("def forward(self, x):\n  return self.proj.forward(x) + x\n");
  torch::jit::Module net("Net");
  net.register_module("enc", block);
  net.register_module("head", proj("Head", 16, 4));
  net.define(
      "def forward(self, x):\n  return self.head.forward(torch.relu(self.enc.forward(x)))\n");
  net.save(path);
  return path;
}

TEST(Cli, HelpSaysWhatIsDisabled) {
  CliRun r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: flopsprof MODEL"), std::string::npos);
  EXPECT_NE(r.out.find("setTensorExprFuserEnabled(false)"), std::string::npos);
  EXPECT_NE(r.out.find("setGraphExecutorOptimize(false)"), std::string::npos);
  EXPECT_NE(r.out.find("examples:"), std::string::npos);
}

TEST(Cli, PerModuleMacsParamsAndFiles) {
  const std::string model = save_net();
  const std::string json = dir() + "/net.json", html = dir() + "/net.html",
                    trace = dir() + "/net.trace.json";
  CliRun r = run(model + " --input 3x16 --json " + json + " --html " + html + " --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Flops Profiler"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(proj): Proj("), std::string::npos) << r.out;
  EXPECT_TRUE(exists(html));
  EXPECT_TRUE(exists(trace));
  std::ifstream f(json);
  nlohmann::json j = nlohmann::json::parse(f);
  std::map<std::string, nlohmann::json> m;
  for (const auto& x : j["modules"]) m[x["name"].get<std::string>()] = x;
  ASSERT_EQ(m.size(), 4u);
  // addmm(bias, x[3,16], w^T[16,out]): MACs = 3*16*out
  EXPECT_EQ(m["enc.proj"]["macs"], 3 * 16 * 16);
  EXPECT_EQ(m["enc"]["macs"], 3 * 16 * 16);
  EXPECT_EQ(m["head"]["macs"], 3 * 16 * 4);
  EXPECT_EQ(m[""]["macs"], 3 * 16 * 16 + 3 * 16 * 4);
  EXPECT_EQ(m["enc.proj"]["type"], "Proj");
  EXPECT_EQ(m["enc"]["type"], "Block");
  EXPECT_EQ(m[""]["type"], "Net");
  EXPECT_EQ(m["enc"]["params"], 16 * 16 + 16);
  EXPECT_EQ(m["head"]["params"], 16 * 4 + 4);
  EXPECT_EQ(m[""]["params"], 16 * 16 + 16 + 16 * 4 + 4);
  // enc's own add (3x16 FLOPs, no MACs) is enc's, not its child's
  EXPECT_EQ(m["enc"]["flops"].get<uint64_t>() - m["enc.proj"]["flops"].get<uint64_t>(), 3u * 16u);
  EXPECT_EQ(m["enc"]["calls"], 1);
  EXPECT_EQ(m["enc.proj"]["calls"], 1);
  // the root's own relu (3x16 FLOPs): the interpreter says the root ran it, evidence as for
  // every other module, never "placed by inference"
  EXPECT_EQ(m[""]["flops"].get<uint64_t>() - m["enc"]["flops"].get<uint64_t>() -
                m["head"]["flops"].get<uint64_t>(),
            3u * 16u);
  EXPECT_EQ(m[""]["calls"], 1);
  EXPECT_EQ(m[""]["inferred_ops"], 0);
  EXPECT_EQ(r.out.find("placement inferred"), std::string::npos) << r.out;
}

TEST(Cli, BackwardAndRuns) {
  CliRun r = run(save_net() + " --input 2x16 --backward --runs 3 --warmup 2 --depth 1 --top 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("median latency of 3 training steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warm-up 2/2"), std::string::npos) << r.out;
}

void expect_error(const std::string& args, const std::string& message,
                  const std::string& not_written = "") {
  CliRun r = run(args);
  EXPECT_NE(r.code, 0) << args << "\n" << r.out;
  EXPECT_NE(r.out.find("flopsprof: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << "expected '" << message << "' in:\n"
                                                    << r.out;
  if (!not_written.empty()) EXPECT_FALSE(exists(not_written)) << not_written;
}

TEST(Cli, ClearErrorsAndNothingWritten) {
  const std::string model = save_net();
  const std::string json = dir() + "/never.json";
  expect_error(dir() + "/missing.pt --input 1x16 --json " + json, "no such file", json);
  { std::ofstream(dir() + "/corrupt.pt") << "not a zip archive"; }
  expect_error(dir() + "/corrupt.pt --input 1x16 --json " + json, "cannot load MODEL", json);
  expect_error(model + " --input 1x16:complex7 --json " + json, "unknown dtype 'complex7'", json);
  expect_error(model + " --input 1xx16 --json " + json, "bad size '' in the shape", json);
  expect_error(model + " --input 1x-3 --json " + json, "bad size '-3'", json);
  expect_error(model + " --input 3x5 --json " + json, "rejected the inputs", json);
  expect_error(model + " --input 3x5", "forward(__torch__.Net self, Tensor x) -> Tensor");
  expect_error(model + " --input 3x16 --input 3x16", "takes 1 arguments, 2 --input given");
  expect_error(model, "no --input given");
  expect_error(model + " --input 3x16 --bogus", "unknown option '--bogus'");
  expect_error(model + " --input 3x16 --runs x", "--runs: 'x' is not an integer");
  if (!torch::cuda::is_available()) {
    expect_error(model + " --input 3x16 --device cuda", "no CUDA device");
  }
  expect_error(model + " --input 3x16 --json " + dir() + "/no/such/dir/x.json",
               "cannot write the JSON profile");
}

}  // namespace
