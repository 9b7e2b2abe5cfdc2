// The `flopsprof` command (tools/flopsprof_main.cpp) run as a user runs it: reports, files, errors.
// Models are TorchScript modules built here in C++ (Module::define) and saved, so this test needs
// no Python and runs on every LibTorch.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>
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
// `head_out` widens the head (the diff tests' variant, saved under another `name`).
std::string save_net(int64_t head_out = 4, const std::string& name = "net") {
  const std::string path = dir() + "/" + name + ".pt";
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
  net.register_module("head", proj("Head", 16, head_out));
  net.define(
      "def forward(self, x):\n  return self.head.forward(torch.relu(self.enc.forward(x)))\n");
  net.save(path);
  return path;
}

// Two arguments: `Pair` with `a` (a `Proj`, 16 -> 8) and `b` (4 -> 8):
// forward(x[B,16], y[B,4]) = a(x) + b(y).
std::string save_pair() {
  const std::string path = dir() + "/pair.pt";
  if (exists(path)) return path;
  torch::NoGradGuard no_grad;
  auto proj = [](int64_t in, int64_t out) {
    torch::jit::Module m("Proj");
    m.register_parameter("weight", torch::randn({out, in}).requires_grad_(), false);
    m.register_parameter("bias", torch::randn({out}).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.addmm(self.bias, x, self.weight.t())\n");
    return m;
  };
  torch::jit::Module pair("Pair");
  pair.register_module("a", proj(16, 8));
  pair.register_module("b", proj(4, 8));
  pair.define("def forward(self, x, y):\n  return self.a.forward(x) + self.b.forward(y)\n");
  pair.save(path);
  return path;
}

// Writes `value` as torch.save does (the zip format; torch::pickle_save), returns the path.
std::string save_value(const std::string& name, const c10::IValue& value) {
  const std::string path = dir() + "/" + name;
  const std::vector<char> data = torch::pickle_save(value);
  std::ofstream(path, std::ios::binary)
      .write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

std::map<std::string, nlohmann::json> modules_of(const nlohmann::json& j) {
  std::map<std::string, nlohmann::json> m;
  for (const auto& x : j["modules"]) m[x["name"].get<std::string>()] = x;
  return m;
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

TEST(Cli, PeakFlagsGiveTheRooflineItsCeilings) {
  const std::string model = save_net(), json = dir() + "/peaks.json";
  CliRun r = run(model + " --input 3x16 --peak-flops 100G --peak-bandwidth 10G --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("machine peak FLOPS (fp32):                                    100.00 "
                       "GFLOPS (given)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("10.00 GB/s (given)"), std::string::npos) << r.out;
  const nlohmann::json j = read_json(json);
  EXPECT_EQ(j["machine"]["flops_source"], "given");
  EXPECT_EQ(j["machine"]["peak_bytes_per_s"].get<double>(), 10e9);
  auto m = modules_of(j);
  // Bytes (fp32, batch 3): proj's addmm reads bias 16 + x 48 + W 256 and writes 48 floats:
  // 1,472 B; enc's add reads 48 + 48 and writes 48: 576 B; head's addmm reads 4 + 48 + 64 and
  // writes 12: 512 B; the root's relu reads 48 and writes 48: 384 B
  EXPECT_EQ(m["enc.proj"]["bytes"], 1472);
  EXPECT_EQ(m["enc"]["bytes"], 1472 + 576);
  EXPECT_EQ(m["head"]["bytes"], 512);
  EXPECT_EQ(m[""]["bytes"], 1472 + 576 + 512 + 384);
  // proj: 2*768 + 48 = 1,584 FLOPs over 1,472 B = 1.08 FLOP/B, below the ridge (10): memory
  EXPECT_NEAR(m["enc.proj"]["intensity"].get<double>(), 1584.0 / 1472.0, 1e-9);
  EXPECT_EQ(m["enc.proj"]["bound"], "memory");
  // A value that is not a number: exit 2, naming the flag and the form expected
  CliRun bad = run(model + " --input 3x16 --peak-flops fast");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--peak-flops: peak FLOP/s 'fast' is not a number"), std::string::npos)
      << bad.out;
  // --no-roofline: nothing measured, no roofline columns; the bytes stay in the JSON
  const std::string plain = dir() + "/plain.json";
  CliRun off = run(model + " --input 3x16 --no-roofline --json " + plain);
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_EQ(off.out.find(" moved, "), std::string::npos) << off.out;
  const nlohmann::json p = read_json(plain);
  EXPECT_EQ(p["machine"]["flops_source"], "");
  EXPECT_EQ(modules_of(p)["enc.proj"]["bytes"], 1472);
}

TEST(Cli, InputsFileHoldingOneTensor) {
  const std::string inputs = save_value("one.pt", torch::randn({3, 16}));
  const std::string json = dir() + "/one.json";
  CliRun r = run(save_net() + " --inputs " + inputs + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("batch size per device:"), std::string::npos) << r.out;
  const nlohmann::json j = read_json(json);
  EXPECT_EQ(j["summary"]["batch_size"], 3);  // the tensor's first dimension
  auto m = modules_of(j);
  // as with --input 3x16: addmm(bias, x[3,16], w^T[16,out]): MACs = 3*16*out
  EXPECT_EQ(m["enc.proj"]["macs"], 3 * 16 * 16);  // 768
  EXPECT_EQ(m["head"]["macs"], 3 * 16 * 4);       // 192
  EXPECT_EQ(m[""]["macs"], 3 * 16 * 16 + 3 * 16 * 4);
}

TEST(Cli, InputsFileHoldingATupleOrAListIsOneArgumentEach) {
  const torch::Tensor x = torch::randn({5, 16}), y = torch::randn({5, 4});
  c10::List<at::Tensor> list;
  list.push_back(x);
  list.push_back(y);
  const std::string tuple_file =
      save_value("tuple.pt", c10::ivalue::Tuple::create(std::vector<c10::IValue>{x, y}));
  const std::string list_file = save_value("list.pt", list);
  const std::string shapes_json = dir() + "/pair_shapes.json";
  CliRun by_shape = run(save_pair() + " --input 5x16 --input 5x4 --json " + shapes_json);
  ASSERT_EQ(by_shape.code, 0) << by_shape.out;
  for (const std::string& file : {tuple_file, list_file}) {
    const std::string json = file + ".json";
    CliRun r = run(save_pair() + " --inputs " + file + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = read_json(json);
    EXPECT_EQ(j["summary"]["batch_size"], 5) << file;
    auto m = modules_of(j);
    // a: addmm(bias, x[5,16], w^T[16,8]): 5*16*8 = 640 MACs; b: y[5,4] x [4,8]: 5*4*8 = 160
    EXPECT_EQ(m["a"]["macs"], 5 * 16 * 8) << file;
    EXPECT_EQ(m["b"]["macs"], 5 * 4 * 8) << file;
    EXPECT_EQ(m[""]["macs"], 5 * 16 * 8 + 5 * 4 * 8) << file;
    // FLOPs: 2*MACs + the bias adds (5*8 each) + the root's sum of the two (5*8)
    EXPECT_EQ(m[""]["flops"], 2 * (640 + 160) + 3 * 5 * 8) << file;
    // the same counts as random inputs of the same shapes
    const auto by = modules_of(read_json(shapes_json));
    for (const auto& [name, mod] : m) {
      EXPECT_EQ(mod["macs"], by.at(name)["macs"]) << file << " " << name;
      EXPECT_EQ(mod["flops"], by.at(name)["flops"]) << file << " " << name;
    }
  }
}

TEST(Cli, BackwardAndRuns) {
  CliRun r = run(save_net() + " --input 2x16 --backward --runs 3 --warmup 2 --depth 1 --top 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("median latency of 3 training steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warm-up 2/2"), std::string::npos) << r.out;
}

// Two profiles of the command compared by `flopsprof diff`: the head widened from 4 to 8 outputs
// names exactly the head and the root, with deltas from the shapes; repeated runs give medians; a
// batch change is a workload warning; --fail-if gates with exit 1, bad input exits 2.
TEST(Cli, DiffOfTwoProfiles) {
  const std::string base = dir() + "/diff_base.json", wide = dir() + "/diff_wide.json",
                    batch = dir() + "/diff_batch.json", out = dir() + "/diff.json";
  CliRun r = run(save_net() + " --input 4x16 --profile-runs 3 --quiet --json " + base);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run(save_net(8, "net_wide") + " --input 4x16 --profile-runs 3 --quiet --json " + wide);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run(save_net() + " --input 8x16 --quiet --json " + batch);
  ASSERT_EQ(r.code, 0) << r.out;
  {
    std::ifstream f(base);
    nlohmann::json j = nlohmann::json::parse(f);
    EXPECT_EQ(j["workload"]["runs"], 3);
    EXPECT_EQ(j["workload"]["inputs"], nlohmann::json::array({"fp32[4, 16]"}));
    EXPECT_EQ(j["modules"][1]["fwd_spread"]["samples"], 3);
  }
  r = run("diff " + base + " " + wide + " --json " + out + " --fail-if 'flops<0'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("single samples"), std::string::npos) << r.out;  // both repeated
  EXPECT_EQ(r.out.find("workload differs"), std::string::npos) << r.out;
  std::ifstream f(out);
  nlohmann::json j = nlohmann::json::parse(f);
  std::map<std::string, nlohmann::json> m;
  for (const auto& x : j["modules"]) m[x["name"].get<std::string>()] = x;
  ASSERT_EQ(m.size(), 4u);
  // head: addmm(bias, x[4,16], w^T[16,out]) = 2*4*16*out + 4*out FLOPs, 16*out + out params:
  // out 4 -> 8 adds 2*4*16*4 + 4*4 = 528 FLOPs, 4*16*4 = 256 MACs, 68 params.
  EXPECT_EQ(m["head"]["status"], "changed");
  EXPECT_EQ(m["head"]["delta"]["flops"], 528);
  EXPECT_EQ(m["head"]["delta"]["macs"], 256);
  EXPECT_EQ(m["head"]["delta"]["params"], 68);
  EXPECT_EQ(m[""]["status"], "changed");
  EXPECT_EQ(m[""]["delta"]["flops"], 528);
  for (const char* same : {"enc", "enc.proj"}) {
    EXPECT_EQ(m[same]["status"], "same") << same;
    EXPECT_EQ(m[same]["delta"]["flops"], 0) << same;
    EXPECT_EQ(m[same]["delta"]["params"], 0) << same;
  }
  EXPECT_EQ(j["summary"]["fwd_latency_s"]["medians"], true);
  r = run("diff " + base + " " + wide + " --fail-if 'flops>0' --fail-if 'module=enc:params!=0'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("BROKEN: flops>0:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("BROKEN: module=enc"), std::string::npos) << r.out;
  r = run("diff " + base + " " + batch);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("workload differs: batch_size: 4 (base) vs 8 (new)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("inputs: fp32[4, 16] (base) vs fp32[8, 16] (new)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("single samples"), std::string::npos) << r.out;
  r = run("diff " + base + " " + dir() + "/no_such.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no_such.json"), std::string::npos) << r.out;
  r = run("diff " + base + " " + save_net());  // a model, not a profile
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("net.pt: not JSON"), std::string::npos) << r.out;
}

void expect_error(const std::string& args, const std::string& message,
                  const std::string& not_written = "") {
  CliRun r = run(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find("flopsprof: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << "expected '" << message << "' in:\n"
                                                    << r.out;
  if (!not_written.empty()) EXPECT_FALSE(exists(not_written)) << not_written;
}

TEST(Cli, ClearErrorsAndNothingWritten) {
  const std::string model = save_net();
  const std::string json = dir() + "/never.json";
  expect_error(dir() + "/missing.pt --input 1x16 --json " + json, "No such file or directory",
               json);
  { std::ofstream(dir() + "/corrupt.pt") << "not a zip archive"; }
  expect_error(dir() + "/corrupt.pt --input 1x16 --json " + json,
               "cannot read MODEL '" + dir() + "/corrupt.pt': not a readable zip archive", json);
  expect_error(model + " --input 1x16:complex7 --json " + json, "unknown dtype 'complex7'", json);
  expect_error(model + " --input 1xx16 --json " + json, "bad size '' in the shape", json);
  expect_error(model + " --input 1x-3 --json " + json, "bad size '-3'", json);
  expect_error(model + " --input 3x5 --json " + json, "rejected the inputs", json);
  expect_error(model + " --input 3x5", "forward(__torch__.Net self, Tensor x) -> Tensor");
  expect_error(model + " --input 3x16 --input 3x16", "takes 1 argument, 2 --input given");
  expect_error(model, "no --input given");
  expect_error(model + " --input 3x16 --bogus", "unknown option '--bogus'");
  expect_error(model + " --input 3x16 --runs x", "--runs: 'x' is not an integer");
  if (!torch::cuda::is_available()) {
    expect_error(model + " --input 3x16 --device cuda", "no CUDA device");
  }
  expect_error(model + " --input 3x16 --json " + dir() + "/no/such/dir/x.json",
               "cannot write the JSON profile");
}

TEST(Cli, InputsFileErrorsSayWhatIsAcceptedAndWriteNothing) {
  const std::string model = save_net();
  const std::string json = dir() + "/never_inputs.json";
  const std::string how = "torch.save((x, y), \"inputs.pt\")";
  const std::string end = " --json " + json;
  expect_error(model + " --inputs " + dir() + "/missing_inputs.pt" + end,
               "cannot read --inputs '" + dir() + "/missing_inputs.pt': No such file", json);
  expect_error(model + " --inputs " + dir() + "/missing_inputs.pt", how);
  { std::ofstream(dir() + "/corrupt_inputs.pt") << "not a zip archive"; }
  expect_error(model + " --inputs " + dir() + "/corrupt_inputs.pt" + end,
               "cannot read --inputs '" + dir() + "/corrupt_inputs.pt': not a readable zip archive",
               json);
  expect_error(model + " --inputs " + dir() + "/corrupt_inputs.pt", how);
  // torch.save(x, f, _use_new_zipfile_serialization=False) starts with pickle protocol 2 and
  // this magic number; LibTorch reads only the zip format
  {
    const unsigned char legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                    0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
    std::ofstream(dir() + "/legacy_inputs.pt", std::ios::binary)
        .write(reinterpret_cast<const char*>(legacy), sizeof legacy);
  }
  expect_error(model + " --inputs " + dir() + "/legacy_inputs.pt" + end,
               "legacy format (_use_new_zipfile_serialization=False)", json);
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("x", torch::randn({3, 16}));
  const std::string dict_file = save_value("dict.pt", dict);
  expect_error(model + " --inputs " + dict_file + end, "holds a dict; pass a tensor, or a tuple",
               json);
  expect_error(model + " --inputs " + dict_file, how);
  const std::string ints = save_value("ints.pt", c10::List<int64_t>({3, 16}));
  expect_error(model + " --inputs " + ints + end, "element 0 of the list is an int, not a tensor",
               json);
  // A list of one element as Python pickles it (EMPTY_LIST, BININT1 1, APPEND): LibTorch 1.x's
  // unpickler has no APPEND; 2.x reads a list of an int
  {
    const char list_of_one[] =
        "\x80\x02]q\x00K\x01"
        "a.";  // split: "\x01a" would be one escape
    caffe2::serialize::PyTorchStreamWriter writer(dir() + "/list_of_one.pt");
    writer.writeRecord("data.pkl", list_of_one, sizeof list_of_one - 1);
    writer.writeEndOfFile();
  }
  const std::string list_of_one = dir() + "/list_of_one.pt";
  expect_error(model + " --inputs " + list_of_one + end, how, json);
#if TORCH_VERSION_MAJOR < 2
  expect_error(model + " --inputs " + list_of_one,
               "(LibTorch 1.x: a list of one element or a dict of one key)");
#else
  expect_error(model + " --inputs " + list_of_one, "element 0 of the list is an int");
#endif
  const std::string empty =
      save_value("empty.pt", c10::ivalue::Tuple::create(std::vector<c10::IValue>{}));
  expect_error(model + " --inputs " + empty + end, "holds an empty tuple", json);
  const std::string two = save_value("two.pt", c10::ivalue::Tuple::create(std::vector<c10::IValue>{
                                                   torch::randn({3, 16}), torch::randn({3, 16})}));
  expect_error(model + " --inputs " + two + end, "takes 1 argument, 2 tensors in --inputs", json);
  const std::string narrow = save_value("narrow.pt", torch::randn({3, 5}));
  expect_error(model + " --inputs " + narrow + end, "rejected the inputs (3x5 from ", json);
  const std::string one = save_value("one_more.pt", torch::randn({3, 16}));
  expect_error(model + " --input 3x16 --inputs " + one + end, "--inputs and --input both given",
               json);
  expect_error(model + " --inputs " + one + " --inputs " + one, "--inputs given twice");
  expect_error(model + " --inputs", "--inputs needs a value");
}

// Issue 45's ops on the TorchScript path: the numbers of the C++ path
// (RealShapes.ComparisonsNormsLossesTrianglesAndIndexAreCounted).
TEST(Cli, ComparisonsNormsLossesTrianglesAndIndexOnTheTorchScriptPath) {
  const std::string path = dir() + "/issue45_ops.pt";
  {
    torch::jit::Module m("Ops45");
    m.define(
        "def forward(self, x, ids):\n"
        "  c = torch.lt(x, 0.5)\n"
        "  any_mask = torch.any(c)\n"
        "  any_x = torch.any(x)\n"
        "  t = torch.triu(x)\n"
        "  n = torch.norm(x)\n"
        "  p = torch.sigmoid(x)\n"
        "  b = torch.binary_cross_entropy(p, p)\n"
        "  l = torch.nll_loss(torch.log_softmax(x, 1), ids)\n"
        "  g = x[ids]\n"
        "  return c.sum() + any_mask + any_x + t.sum() + n + b + l + g.sum()\n");
    m.save(path);
  }
  const std::string json = dir() + "/issue45_ops.json";
  const std::string ids =
      save_value("issue45_ids.pt", c10::ivalue::Tuple::create(std::vector<c10::IValue>{
                                       torch::randn({4, 8}), torch::tensor({1, 2, 3, 0})}));
  CliRun r = run(path + " --inputs " + ids + " --quiet --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  std::map<std::string, nlohmann::json> rows;
  const nlohmann::json profile = read_json(json);
  for (const auto& op : profile["ops"]) {
    if (op["phase"] == "forward") rows[op["name"].get<std::string>()] = op;
  }
  for (const char* name : {"aten::lt", "aten::any", "aten::triu", "aten::norm",
                           "aten::binary_cross_entropy", "aten::nll_loss", "aten::index"}) {
    ASSERT_TRUE(rows.count(name)) << name;
    EXPECT_EQ(rows[name]["has_formula"], true) << name;
  }
  EXPECT_EQ(rows["aten::lt"]["flops"], 32);
  EXPECT_EQ(rows["aten::lt"]["bytes"], 160);
  EXPECT_EQ(rows["aten::any"]["flops"], 32);
  EXPECT_EQ(rows["aten::triu"]["bytes"], 256);
  EXPECT_EQ(rows["aten::norm"]["flops"], 65);
  EXPECT_EQ(rows["aten::binary_cross_entropy"]["flops"], 288);
  EXPECT_EQ(rows["aten::nll_loss"]["flops"], 9);
  EXPECT_EQ(rows["aten::index"]["bytes_read"], 160);
  EXPECT_EQ(rows["aten::index"]["bytes_written"], 128);
}

// Outputs (issue 49): checked before the model runs, written all or none at the end, never over a
// device, a link or an input of the run.
TEST(Cli, OutputsNeverReplaceDevicesLinksOrInputs) {
  const std::string model = save_net();
  const std::string before = [&] {
    std::ifstream f(model, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }();
  CliRun r = run(model + " --input 3x16 --quiet --json /dev/null --html /dev/null");
  EXPECT_EQ(r.code, 0) << r.out;
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  expect_error(model + " --input 3x16 --json " + model, "it is MODEL '" + model + "'");
  {
    std::ifstream f(model, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()),
              before);
  }
  const std::string inputs = save_value("out_inputs.pt", torch::randn({3, 16}));
  expect_error(model + " --inputs " + inputs + " --trace " + inputs, "it is the --inputs file");
  expect_error(model + " --input 3x16 --json ''", "the path is empty");
  expect_error(model + " --input 3x16 --json " + dir() + " --quiet", "it is a folder");
  expect_error(model + " --input 3x16 --json " + dir() + "/a.json --html " + dir() + "/a.json",
               "the JSON profile goes there too");
  // A link is followed, and stays a link.
  const std::string target = dir() + "/link_target.json", link = dir() + "/link.json";
  std::ofstream(target) << "old";
  std::remove(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  r = run(model + " --input 3x16 --quiet --json " + link);
  EXPECT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read_json(target)["schema_version"], 2);
  // Standard output takes the JSON alone; the text report goes to standard error.
  const std::string cmd =
      std::string(FLOPSPROF_CLI) + " " + model + " --input 3x16 --quiet --json -";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string json;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) json.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(nlohmann::json::parse(json)["modules"][1]["name"], "enc");
}

TEST(Cli, NothingIsLeftWhenALaterOutputFails) {
  const std::string model = save_net();
  const std::string json = dir() + "/later_fails.json", html = dir() + "/later_fails.html";
  // The HTML's device is full: the JSON, written first before, is not left behind.
  expect_error(model + " --input 3x16 --quiet --json " + json + " --html /dev/full",
               "cannot write the HTML report to '/dev/full' (No space left on device); what "
               "reached it may be cut short; no output file was written",
               json);
  // A file-size limit (ulimit -f 8: 8 KB): the OS's reason, nothing left (it left 8,192 bytes of
  // JSON and said "check that its folder exists" before).
  {
    const std::string cmd = "ulimit -f 8; " + std::string(FLOPSPROF_CLI) + " " + model +
                            " --input 3x16 --quiet --json " + json + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << out;
    EXPECT_NE(out.find("cannot write the JSON profile to '" + json +
                       "' (File too large); no output "
                       "file was written"),
              std::string::npos)
        << out;
    EXPECT_FALSE(exists(json));
  }
  // A missing folder is found before the model runs (no profile taken).
  CliRun r = run(model + " --input 3x16 --json " + json + " --trace " + dir() + "/no/such/t.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.out.find("its folder '" + dir() + "/no/such' cannot be used (No such file or directory)"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("profiled in"), std::string::npos) << r.out;
  EXPECT_FALSE(exists(json));
}

// Runs `shell` (sh -c), stdout and stderr together; its exit code (-1 for a signal: +signal
// number in `*signal`).
CliRun shell(const std::string& cmd, int* signal = nullptr) {
  CliRun r;
  FILE* p = popen(("(" + cmd + ") 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (signal != nullptr) *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return r;
}

// Copies the TorchScript or saved-tensors archive `from` to `to`, record by record, with record
// `name` given `data` instead (a truncated weight, edited code): a valid zip (stored members, right
// CRCs) whose content lies, as a crafted or damaged file does.
void rewrite_archive(const std::string& from, const std::string& to, const std::string& name,
                     const std::string& data) {
  caffe2::serialize::PyTorchStreamReader reader(from);
  caffe2::serialize::PyTorchStreamWriter writer(to);
  for (const std::string& r : reader.getAllRecords()) {
    if (r == "version" || r == ".data/version" || r.rfind(".data/serialization_id", 0) == 0)
      continue;  // the writer writes its own
    if (r == name) {
      writer.writeRecord(r, data.data(), data.size());
      continue;
    }
    auto [ptr, size] = reader.getRecord(r);
    writer.writeRecord(r, ptr.get(), size);
  }
  writer.writeEndOfFile();
}

std::string record_of(const std::string& archive, const std::string& name) {
  caffe2::serialize::PyTorchStreamReader reader(archive);
  auto [ptr, size] = reader.getRecord(name);
  return std::string(static_cast<const char*>(ptr.get()), size);
}

// Tensors whose storage claims more data than the archive holds: LibTorch 1.13 built them over
// the short record and the forward read past it (SIGSEGV on a large claim). Refused, naming the
// file and the tensor, for --inputs and for MODEL.
TEST(Cli, TensorsThatReachPastTheirDataAreRefused) {
  const std::string model = save_net();
  const std::string inputs = save_value("whole_inputs.pt", torch::randn({3, 16}));
  const std::string short_inputs = dir() + "/short_inputs.pt";
  rewrite_archive(inputs, short_inputs, "data/0", std::string(8, '\0'));  // 192 bytes claimed
  expect_error(model + " --quiet --inputs " + short_inputs,
               "--inputs '" + short_inputs +
                   "': element 0 claims 192 bytes of data, but its record "
                   "in the archive holds 8");
  const std::string short_model = dir() + "/short_net.pt";
  rewrite_archive(model, short_model, "data/0", std::string(4, '\0'));
  CliRun r = run(short_model + " --quiet --input 3x16");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("MODEL '" + short_model + "': parameter '"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("but its record in the archive holds 4"), std::string::npos) << r.out;
  // A TorchScript compile error says its cause (its first line is empty) and where.
  const std::string code = record_of(model, "code/__torch__.py");
  std::string bad = code;
  const size_t at = bad.find("torch.relu");
  ASSERT_NE(at, std::string::npos) << code;
  bad.replace(at, 10, "torch.no_such_op");
  const std::string bad_model = dir() + "/bad_code_net.pt";
  rewrite_archive(model, bad_model, "code/__torch__.py", bad);
  expect_error(bad_model + " --quiet --input 3x16", "aten::no_such_op");
}

// Outputs through descriptors and standard streams: never an input, never one stream twice, and
// a text report that cannot be written is an error, not a silent exit 0.
TEST(Cli, DescriptorsStreamsAndTheTextReportFollowTheOutputPolicy) {
  const std::string model = save_net();
  const std::string copy = dir() + "/descriptor_net.pt";
  std::remove(copy.c_str());
  rewrite_archive(model, copy, "", "");
  const std::string cli = std::string(FLOPSPROF_CLI) + " " + copy + " --input 3x16 --quiet ";
  const std::string before = record_of(copy, "code/__torch__.py");
  CliRun r = shell(cli + "--json /dev/fd/3 3<>" + copy);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("it is MODEL '" + copy + "', which this run reads"), std::string::npos)
      << r.out;
  r = shell(cli + "--json - 1<>" + copy);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(record_of(copy, "code/__torch__.py"), before);  // still the model
  const std::string json = dir() + "/same_as_stdout.json";
  r = shell(cli + "--json " + json + " > " + json);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write the text report to '-': the JSON profile goes there too"),
            std::string::npos)
      << r.out;
  r = shell(cli + "--json - --html /dev/stdout | cat > /dev/null");
  EXPECT_NE(r.out.find("cannot write the HTML report to '/dev/stdout': the JSON profile goes "
                       "there too"),
            std::string::npos)
      << r.out;
  r = shell(cli + "> /dev/full");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write the text report to '-' (No space left on device)"),
            std::string::npos)
      << r.out;
  r = shell(cli + ">&-");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("descriptor 1 is not open"), std::string::npos) << r.out;
  r = shell(std::string(FLOPSPROF_CLI) + " diff /dev/null /dev/null > /dev/full");
  EXPECT_EQ(r.code, 2) << r.out;
  // A reader that goes away: the process ends on SIGPIPE (or, with SIGPIPE ignored, says so),
  // and no temporary of the file outputs is left behind.
  const std::string html = dir() + "/piped.html";
  int sig = 0;
  r = shell(cli + "--json - --html " + html + " | true", &sig);
  r = shell("trap '' PIPE; " + cli + "--json - --html " + html + " | true");
  const CliRun left = shell("ls -a " + dir() + " | grep -c 'flopsprof-' || true");
  EXPECT_EQ(left.out, "0\n");
  // A 254-character file name: its temporary's name stays within the file system's limit.
  const std::string long_name = dir() + "/" + std::string(249, 'n') + ".json";
  r = run(copy + " --input 3x16 --quiet --json " + long_name);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(exists(long_name));
}

// The peaks cache is read only when it is a regular file (a FIFO there hung the command) and a
// link to one is followed, not replaced.
TEST(Cli, APeaksCacheThatIsNotAFileIsLeftAlone) {
  const std::string model = save_net();
  const std::string cache = dir() + "/fifo_cache";
  mkdir(cache.c_str(), 0755);
  const std::string fifo = cache + "/machine-peaks.txt";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = shell("FLOPSPROF_CACHE_DIR=" + cache + " timeout 120 " + FLOPSPROF_CLI + " " + model +
                   " --input 3x16 --quiet");
  EXPECT_EQ(r.code, 0) << r.out;
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  const std::string linked = dir() + "/link_cache";
  mkdir(linked.c_str(), 0755);
  const std::string target = dir() + "/peaks_target.txt";
  std::remove(target.c_str());
  std::ofstream(target) << "";
  const std::string link = linked + "/machine-peaks.txt";
  std::remove(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  r = shell("FLOPSPROF_CACHE_DIR=" + linked + " " + FLOPSPROF_CLI + " " + model +
            " --input 3x16 --quiet");
  EXPECT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  std::ifstream f(target);
  std::string line;
  EXPECT_TRUE(std::getline(f, line) && line.find("bandwidth=") != std::string::npos) << line;
}

// The most common error first: LibTorch's cause, then the inputs, then what to do.
TEST(Cli, ARejectedForwardSaysTheCauseFirst) {
  const std::string model = save_net();
  CliRun r = run(model + " --input 3x5 --quiet");
  EXPECT_EQ(r.code, 2);
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(first.find("flopsprof: error: "), std::string::npos) << r.out;
  EXPECT_NE(first.find("mat1 and mat2 shapes cannot be multiplied (3x5 and 16x16): the model's "
                       "forward rejected the inputs (--input 3x5); its schema is "
                       "forward(__torch__.Net self, Tensor x) -> Tensor"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Traceback"), std::string::npos) << r.out;
  r = run(model + " --input 3x16:int64 --quiet");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("rejected the inputs (--input 3x16:int64)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Traceback"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(Cli, IntegerOptionsAreRangeCheckedNeverWrapped) {
  const std::string model = save_net() + " --input 3x16 ";
  expect_error(model + "--profile-runs 4294967296",
               "--profile-runs: '4294967296' is out of range; give an integer from 1 to 10000");
  expect_error(model + "--depth 2147483648", "--depth: '2147483648' is out of range");
  expect_error(model + "--warmup 2147483648", "--warmup: '2147483648' is out of range");
  expect_error(model + "--threads 4294967297", "--threads: '4294967297' is out of range");
  expect_error(model + "--threads 100000", "CPUs this process may run on");
  expect_error(model + "--runs -1", "--runs: '-1' is out of range");
  expect_error(model + "--depth -2", "--depth: '-2' is out of range");
  expect_error(save_net() + " --input 99999999x99999999",
               "--input 99999999x99999999: the tensor would take 39999999200000004 bytes");
  expect_error(save_net() + " --input 99999999999x99999999999x99999999999",
               "would take over 2^64 bytes");
}

// --inputs: a zip archive checked whole before LibTorch 1.13's reader (which overran its buffer on
// such files, under ASan) sees it; truncated files and random bytes of 4 KB to 64 KB.
TEST(Cli, InputsFileIsCheckedAsAZipArchiveFirst) {
  const std::string model = save_net();
  const std::string good = save_value("zip_good.pt", torch::randn({3, 16}));
  std::string bytes;
  {
    std::ifstream f(good, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  const std::string bad = dir() + "/zip_bad.pt";
  for (size_t n : {size_t{0}, size_t{30}, bytes.size() / 2, bytes.size() - 22, bytes.size() - 1}) {
    std::ofstream(bad, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(n));
    expect_error(model + " --quiet --inputs " + bad, "not a readable zip archive");
  }
  // A flipped byte in the tensor's data: its CRC-32 no longer matches.
  const size_t data_at = caffe2::serialize::PyTorchStreamReader(good).getRecordOffset("data/0");
  std::string flipped = bytes;
  flipped[data_at + 1] = static_cast<char>(flipped[data_at + 1] ^ 0xff);
  std::ofstream(bad, std::ios::binary)
      .write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
  expect_error(model + " --quiet --inputs " + bad, "member 'archive/data/0' is corrupt");
  std::srand(49);
  for (size_t size : {4096, 16384, 65536}) {
    std::string junk(size, '\0');
    for (char& c : junk) c = static_cast<char>(std::rand());
    std::ofstream(bad, std::ios::binary).write(junk.data(), static_cast<std::streamsize>(size));
    expect_error(model + " --quiet --inputs " + bad, "not a readable zip archive");
  }
  expect_error(model + " --quiet --inputs /dev/zero", "character device, not a regular file");
}

// ---- Exported programs (.pt2): counted from the graph, not run -------------------------------

const std::string kPt2 = FLOPSPROF_EXPORTED_DIR;

TEST(Cli, ExportedProgramIsCountedWithoutTime) {
  const std::string json = dir() + "/llama.json";
  const CliRun r = run(kPt2 + "/llama.pt2 --quiet --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("fwd latency:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("n/a (not run: an exported program counted from its graph)"),
            std::string::npos);
  EXPECT_EQ(r.out.find("0.00 us"), std::string::npos) << "a time shown for a program not run";
  EXPECT_NE(r.out.find("(layers): Module("), std::string::npos) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_FALSE(j["summary"]["timed"].get<bool>());
  EXPECT_TRUE(j["summary"]["fwd_latency_s"].is_null());
  EXPECT_TRUE(j["modules"][0]["latency_s"].is_null());
  EXPECT_GT(j["summary"]["fwd_macs"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["workload"]["capture"], "exported");
  // FLOPs per token per module: the embedding's indices (2 x 16), or --tokens.
  EXPECT_EQ(j["regions"][0]["tokens"], 32);
  const CliRun t = run(kPt2 + "/llama.pt2 --quiet --tokens 16 --depth 1");
  ASSERT_EQ(t.code, 0) << t.out;
  // output: Linear(64, 256) on 32 rows over 16 tokens: 2 x 2 x 64 x 256 FLOPs per token.
  std::istringstream lines(t.out);
  std::string line, output_row;
  while (std::getline(lines, line)) {
    if (line.rfind("      output ", 0) == 0) output_row = line;  // the region's module table
  }
  EXPECT_NE(output_row.find(" 65.54 K "), std::string::npos) << t.out;
}

TEST(Cli, ExportedProgramSymbolsAndOptionsThatDoNotApply) {
  // --dim: a value for the symbol, or a clear error.
  const std::string a = dir() + "/dyn16.json", b = dir() + "/dyn32.json";
  ASSERT_EQ(run(kPt2 + "/llama_dynamic.pt2 --quiet --json " + a).code, 0);
  ASSERT_EQ(run(kPt2 + "/llama_dynamic.pt2 --quiet --dim s0=32 --json " + b).code, 0);
  const CliRun bad = run(kPt2 + "/llama_dynamic.pt2 --dim seq=32");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--dim seq=32 names no symbol of the program (its symbols: s0)"),
            std::string::npos)
      << bad.out;
  EXPECT_NE(run(kPt2 + "/llama_dynamic.pt2 --dim s0").out.find("give NAME=VALUE"),
            std::string::npos);
  // flopsprof diff on two exports: counts compared, latencies not.
  const CliRun d = run("diff " + a + " " + b + " --fail-if 'flops>0'");
  EXPECT_EQ(d.code, 1) << d.out;
  EXPECT_NE(d.out.find("both profiles have no time"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find(" us "), std::string::npos)
      << "a latency shown for programs not run: " << d.out;
  const CliRun lat = run("diff " + a + " " + b + " --fail-if 'latency>+5%'");
  EXPECT_EQ(lat.code, 2) << lat.out;
  // Options of a run are refused, each by name.
  for (const char* opt : {"--input 1x16:int64", "--backward", "--runs 3", "--profile-runs 2",
                          "--read-masks", "--warmup 2", "--threads 1", "--device cuda"}) {
    const CliRun r = run(kPt2 + "/llama.pt2 " + opt);
    EXPECT_EQ(r.code, 2) << opt;
    EXPECT_NE(r.out.find("does not apply to an exported program"), std::string::npos)
        << opt << ": " << r.out;
  }
  const CliRun trace = run(kPt2 + "/llama.pt2 --trace " + dir() + "/t.json");
  EXPECT_NE(trace.out.find("--trace does not apply"), std::string::npos) << trace.out;
  EXPECT_FALSE(exists(dir() + "/t.json"));
  // A damaged .pt2 gets its reader's error, not the TorchScript path's.
  {
    std::ifstream in(kPt2 + "/llama.pt2", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir() + "/cut.pt2", std::ios::binary) << bytes.substr(0, 5000);
  }
  const CliRun cut = run(dir() + "/cut.pt2");
  EXPECT_EQ(cut.code, 2);
  EXPECT_NE(cut.out.find("not a readable zip archive"), std::string::npos) << cut.out;
  // --dim on a TorchScript model.
  EXPECT_NE(
      run(save_net() + " --input 2x16 --tokens 4").out.find("--tokens applies to an exported"),
      std::string::npos);
  const CliRun ts = run(save_net() + " --input 2x16 --dim s0=4");
  EXPECT_EQ(ts.code, 2);
  EXPECT_NE(ts.out.find("--dim applies to an exported program"), std::string::npos) << ts.out;
}

}  // namespace
