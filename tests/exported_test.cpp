// Exported programs (.pt2) profiled from their graph (flopsprof/exported.h), against
// FlopCounterMode's counts of the same programs (tests/exported/make_programs.py wrote both).
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "flopsprof/flopsprof.h"
#include "io/exported_program.h"
#include "profiler/exported.h"
#include "zip_writer.h"

namespace {

const std::string kDir = FLOPSPROF_EXPORTED_DIR;

nlohmann::json fcm(const std::string& name) {
  std::ifstream f(kDir + "/" + name + ".fcm.json");
  EXPECT_TRUE(f.good()) << name;
  return nlohmann::json::parse(f);
}

const flopsprof::ModuleStats* module(const flopsprof::ProfileResult& r, const std::string& name) {
  for (const auto& m : r.modules) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// The program JSON of a fixture, and a profile of a JSON put in an archive of its own.
std::string program_json(const std::string& name) {
  std::ifstream f(kDir + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string pt2 = ss.str();
  for (const auto& e : flopsprof::detail::read_zip_directory(pt2, name)) {
    if (e.name.find("serialized_exported_program.json") != std::string::npos)
      return flopsprof::detail::stored_member(flopsprof::detail::MemoryZipSource(pt2), e, name);
  }
  return "";
}

flopsprof::ProfileResult profile_json(const std::string& json) {
  const std::string z =
      flopsprof::testing::make_zip({{"serialized_exported_program.json", json}}, false);
  return flopsprof::detail::profile_program(
      flopsprof::detail::read_exported_program(flopsprof::detail::MemoryZipSource(z), "m.pt2", {}),
      "m.pt2", {});
}

// 2 x MACs is FlopCounterMode's count (it counts matrix products, convolutions and attention).
void expect_fcm_counts(const std::string& program, const std::string& counts,
                       const flopsprof::ExportedOptions& o = {}) {
  SCOPED_TRACE(program);
  const flopsprof::ProfileResult r = flopsprof::profile_exported(kDir + "/" + program + ".pt2", o);
  const nlohmann::json f = fcm(counts);
  EXPECT_EQ(2 * r.macs, f["total"].get<uint64_t>());
  EXPECT_EQ(r.params, f["params"].get<uint64_t>());
  for (const auto& [path, flops] : f["modules"].items()) {
    const flopsprof::ModuleStats* m = module(r, path);
    ASSERT_NE(m, nullptr) << path;
    EXPECT_EQ(2 * m->macs, flops.get<uint64_t>()) << path;
  }
  EXPECT_FALSE(r.timed);
  EXPECT_EQ(r.duration_s, 0);
}

TEST(Exported, CountsEqualFlopCounterModePerModule) {
  for (const char* p : {"mlp", "cnn", "cnn_core_aten", "llama", "gpt2", "tied"})
    expect_fcm_counts(p, p);
}

TEST(Exported, DynamicSizesTakeTheirHintOrTheGivenValue) {
  // llama_dynamic is llama exported with its sequence length symbolic (hint 16).
  expect_fcm_counts("llama_dynamic", "llama");
  flopsprof::ExportedOptions o;
  o.dims["s0"] = 32;
  const flopsprof::ProfileResult r = flopsprof::profile_exported(kDir + "/llama_dynamic.pt2", o);
  // By hand (make_programs.py's Llama: d 64, 2 layers, 4 heads over 2 KV heads of 16, SwiGLU 172,
  // vocab 256), batch 2, 32 tokens: each token's linear MACs, then the dense attention's
  // 2 x (Q K^T and P V) = 2 x b x heads x t^2 x 16 MACs per layer.
  const uint64_t per_layer = 64 * 64 + 64 * 32 + 64 * 32 + 64 * 64 + 3 * 64 * 172;
  const uint64_t tokens = 2 * 32;
  const uint64_t linear = tokens * (2 * per_layer + 64 * 256);
  const uint64_t attention = 2 * (2ull * 2 * 4 * 32 * 32 * 16);
  EXPECT_EQ(r.macs, linear + attention);
  EXPECT_EQ(r.workload.inputs, std::vector<std::string>{"int64[2, 32]"});
}

TEST(Exported, TiedWeightsCountedOnceAtTheRootAndInEachHolder) {
  // tied.pt2: gpt2.pt2 with lm_head.weight = wte.weight (300 x 64): the model's parameters are
  // gpt2's less that matrix; each of the two modules holds it.
  const flopsprof::ProfileResult tied = flopsprof::profile_exported(kDir + "/tied.pt2");
  const flopsprof::ProfileResult untied = flopsprof::profile_exported(kDir + "/gpt2.pt2");
  EXPECT_EQ(tied.params, untied.params - 300 * 64);
  EXPECT_EQ(module(tied, "wte")->params, 300u * 64);
  EXPECT_EQ(module(tied, "lm_head")->params, 300u * 64);
  EXPECT_EQ(tied.param_bytes, untied.param_bytes - 300 * 64 * 4);
}

TEST(Exported, ParametersFromTheSignatureWithoutWeights) {
  const flopsprof::ProfileResult r = flopsprof::profile_exported(kDir + "/cnn.pt2");
  // Conv2d(3, 16, 3): 16 x 3 x 9 + 16; BatchNorm2d(16): 32 (its 3 buffers are no parameters);
  // Conv2d(16, 32, 3, groups 2): 32 x 8 x 9 + 32; Linear(32, 5): 165.
  EXPECT_EQ(r.params, 448u + 32 + 2336 + 165);
  EXPECT_EQ(module(r, "features.1")->params, 32u);
  EXPECT_EQ(module(r, "head")->params, 165u);
  EXPECT_EQ(r.modules[0].type, "SmallCNN");
  EXPECT_EQ(module(r, "features.0")->type, "Conv2d");
}

TEST(Exported, OpsWithoutAFormulaAndHigherOrderOpsAreListed) {
  // llama's GQA repeats keys and values with repeat_interleave, which has no formula (FCM counts
  // it 0 too): listed by name and calls, n/a.
  const flopsprof::ProfileResult r = flopsprof::profile_exported(kDir + "/llama.pt2");
  bool listed = false;
  for (const auto& op : r.ops) {
    if (op.name != "aten::repeat_interleave") continue;
    listed = true;
    EXPECT_FALSE(op.has_formula);
    EXPECT_EQ(op.calls, 4u);  // keys and values, 2 layers
  }
  EXPECT_TRUE(listed);
  // torch.cond: its branches are subgraphs, not counted; the op is listed and the problems say so.
  const flopsprof::ProfileResult c = flopsprof::profile_exported(kDir + "/cond.pt2");
  bool cond = false;
  for (const auto& op : c.ops) cond = cond || (op.name == "higher_order::cond" && !op.has_formula);
  EXPECT_TRUE(cond);
  bool said = false;
  for (const std::string& p : c.problems) {
    said = said || p.find(
                       "the higher-order op higher_order::cond (1 call(s)): the ops of its "
                       "subgraphs are not counted") != std::string::npos;
    EXPECT_EQ(p.find("FLOPSPROF_MODULE()"), std::string::npos)
        << "a fix that does not apply: " << p;
  }
  EXPECT_TRUE(said);
  // What is counted: the head, Linear(16, 4) on 2 rows: 2 x 16 x 4 MACs.
  EXPECT_EQ(c.macs, 2u * 16 * 4);
}

TEST(Exported, FlopsPerTokenPerModule) {
  // The whole graph is the region "forward"; its tokens the embedding's indices, 2 x 16 (or
  // given).
  const flopsprof::ProfileResult r = flopsprof::profile_exported(kDir + "/llama.pt2");
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.regions[0].tokens, 32u);
  EXPECT_EQ(r.regions[0].tokens_source, "embedding indices");
  EXPECT_DOUBLE_EQ(r.regions[0].flops_per_token, static_cast<double>(r.flops) / 32);
  const flopsprof::ModuleStats* out = module(r, "output");
  ASSERT_NE(out, nullptr);
  // output: Linear(64, 256, bias=False): 2 x 64 x 256 FLOPs per token.
  EXPECT_DOUBLE_EQ(out->regions[0].flops_per_token, 2.0 * 64 * 256);
  flopsprof::ExportedOptions o;
  o.tokens = 16;
  const flopsprof::ProfileResult g = flopsprof::profile_exported(kDir + "/llama.pt2", o);
  EXPECT_EQ(g.regions[0].tokens_source, "given");
  EXPECT_DOUBLE_EQ(module(g, "output")->regions[0].flops_per_token, 2.0 * 2 * 64 * 256);
}

// A node naming an op no registry knows (a custom op, a later PyTorch's): listed by name with its
// calls, n/a, as a run lists an op without a formula, and named in the problems; the rest counted.
TEST(Exported, AnUnknownOpIsListedAndNamed) {
  const std::string json = program_json("llama.pt2");
  std::string changed = json;
  size_t at = 0, replaced = 0;
  const std::string from = "torch.ops.aten.silu.default", to = "torch.ops.mylib.frobnicate.default";
  while ((at = changed.find(from, at)) != std::string::npos) {
    changed.replace(at, from.size(), to);
    ++replaced;
  }
  ASSERT_EQ(replaced, 2u);  // one SwiGLU per layer
  const flopsprof::ProfileResult base = profile_json(json);
  const flopsprof::ProfileResult r = profile_json(changed);
  bool listed = false;
  for (const auto& op : r.ops) {
    if (op.name != "mylib::frobnicate") continue;
    listed = true;
    EXPECT_FALSE(op.has_formula);
    EXPECT_EQ(op.calls, 2u);
  }
  EXPECT_TRUE(listed);
  bool named = false;
  for (const std::string& p : r.problems)
    named =
        named || p.find("mylib::frobnicate (2 call(s)) is not in this LibTorch's op registry") !=
                     std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_EQ(r.macs, base.macs);  // silu has no MACs; every matrix product still counted
}

// Every truncation and byte flip of a real program's JSON that still reads as a program goes
// through the whole pipeline: a profile or an Error, never a crash (ASan in the sanitizer job).
TEST(Exported, MutatedProgramsProfileOrFailClearly) {
  const std::string json = program_json("llama.pt2");
  ASSERT_GT(json.size(), 10000u);
  size_t profiled = 0, refused = 0;
  auto attempt = [&](const std::string& j) {
    try {
      profile_json(j);
      ++profiled;
    } catch (const flopsprof::Error&) {
      ++refused;
    }
  };
  attempt(json);
  EXPECT_EQ(profiled, 1u);
  std::mt19937 rng(7);
  for (int k = 0; k < 400; ++k) {
    std::string j = json;
    j[rng() % j.size()] = "0123456789-.,:{}[]\"ae"[rng() % 21];
    attempt(j);
  }
  for (size_t n = 0; n < json.size(); n += json.size() / 50) attempt(json.substr(0, n));
  EXPECT_GT(refused, 0u);
  EXPECT_GT(profiled, 1u);
}

}  // namespace
