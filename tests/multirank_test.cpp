// Multi-rank profiles end to end: the data-parallel example (N forked processes, TCPStore on
// 127.0.0.1, ProcessGroupGloo) run with 2 and 4 ranks, one rank slowed inside a scoped module;
// mismatched ranks; a rank that never gathers; the per-rank traces against HTA's parsing rules.
// No torch here: the test reads what the processes wrote.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct JobRun {
  int code = -1;
  std::string output;
  double seconds = 0;
};

JobRun run_example(const std::string& args) {
  const auto t0 = std::chrono::steady_clock::now();
  JobRun r;
  FILE* p = popen((std::string(FLOPSPROF_DDP_EXAMPLE) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("flopsprof_multirank_" + name);
  fs::remove_all(d);
  return d;
}

// Forward FLOPs of the example's model at batch 16 (fc1 Linear(32,64), ReLU, block.fc
// Linear(64,64), ReLU, head Linear(64,1)); addmm: 2*b*in*out + b*out; relu: one per element.
constexpr uint64_t kBatch = 16;
constexpr uint64_t kFlops = (2 * kBatch * 32 * 64 + kBatch * 64) + kBatch * 64 +
                            (2 * kBatch * 64 * 64 + kBatch * 64) + kBatch * 64 +
                            (2 * kBatch * 64 * 1 + kBatch * 1);

const json* module_named(const json& modules, const std::string& name) {
  for (const json& m : modules) {
    if (m["name"] == name) return &m;
  }
  return nullptr;
}

void check_job(int world, const std::string& name) {
  const fs::path out = scratch(name);
  JobRun r = run_example("--world-size " + std::to_string(world) +
                         " --slow-rank 1 --slow-ms 60 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<json> own(world);
  for (int k = 0; k < world; ++k) {
    own[k] = json::parse(read(out / ("rank" + std::to_string(k) + ".json")));
    EXPECT_EQ(own[k]["summary"]["fwd_flops"].get<uint64_t>(), kFlops) << "rank " << k;
  }
  const json& ranks = own[0]["ranks"];
  ASSERT_TRUE(ranks.is_object()) << "rank 0 has the combined profile";
  EXPECT_FALSE(own[1].contains("ranks")) << "only the gathering rank by default";
  EXPECT_EQ(ranks["world_size"].get<int>(), world);
  EXPECT_EQ(own[0]["summary"]["world_size"].get<int>(), world) << "filled in by the gather";
  EXPECT_EQ(ranks["backend"], "gloo");
  ASSERT_EQ(ranks["per_rank"].size(), static_cast<size_t>(world));
  for (int k = 0; k < world; ++k) {
    const json& pr = ranks["per_rank"][k];
    EXPECT_EQ(pr["rank"].get<int>(), k);
    EXPECT_EQ(pr["flops"].get<uint64_t>(), kFlops);
    EXPECT_NEAR(pr["fwd_latency_s"].get<double>(), own[k]["summary"]["fwd_latency_s"].get<double>(),
                1e-12);
  }
  // per module: min / mean / max of the ranks' own values, the slowest rank
  for (const json& m : ranks["modules"]) {
    double mn = 1e300, mx = -1, sum = 0;
    for (int k = 0; k < world; ++k) {
      const json* mine = module_named(own[k]["modules"], m["name"]);
      ASSERT_NE(mine, nullptr) << m["name"];
      const double v = (*mine)["latency_s"].get<double>();
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      sum += v;
    }
    EXPECT_NEAR(m["fwd_min_s"].get<double>(), mn, 1e-12) << m["name"];
    EXPECT_NEAR(m["fwd_max_s"].get<double>(), mx, 1e-12) << m["name"];
    EXPECT_NEAR(m["fwd_mean_s"].get<double>(), sum / world, 1e-12) << m["name"];
    if (m["name"] == "block") {
      EXPECT_EQ(m["slowest_rank"].get<int>(), 1);
      EXPECT_GE(mx, 0.060) << "rank 1 slept 60 ms in block's forward";
    }
  }
  // the straggler: rank 1, caused by block
  bool named = false;
  for (const json& s : ranks["stragglers"]) {
    if (s["rank"] == 1 && s["what"] == "iteration") {
      named = true;
      ASSERT_FALSE(s["modules"].empty());
      EXPECT_EQ(s["modules"][0]["name"], "block");
      EXPECT_GE(s["modules"][0]["excess_s"].get<double>(), 0.050);
    }
  }
  EXPECT_TRUE(named) << ranks["stragglers"].dump();
  EXPECT_NE(r.output.find("Ranks (gloo, world size " + std::to_string(world) + ")"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 1: iteration"), std::string::npos) << r.output;
}

TEST(MultiRank, TwoRanksNameTheSlowRankAndItsModule) { check_job(2, "two"); }
TEST(MultiRank, FourRanksNameTheSlowRankAndItsModule) { check_job(4, "four"); }

TEST(MultiRank, ADifferentModelOnOneRankIsAnErrorOnEveryRank) {
  const fs::path out = scratch("mismatch");
  JobRun r =
      run_example("--world-size 2 --mismatch-rank 1 --timeout-ms 20000 --out " + out.string());
  EXPECT_NE(r.code, 0);
  for (int k = 0; k < 2; ++k) {
    EXPECT_NE(r.output.find("rank " + std::to_string(k) + " exit 3"), std::string::npos)
        << r.output;
  }
  EXPECT_NE(r.output.find("profiled a different model"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 15.0) << "the header exchange fails at once, not at the timeout";
}

TEST(MultiRank, ARankThatNeverGathersIsAnErrorWithinTheTimeout) {
  const fs::path out = scratch("missing");
  JobRun r =
      run_example("--world-size 2 --skip-gather-rank 1 --timeout-ms 3000 --out " + out.string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("rank 0 exit 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1 exit 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank(s) 1 did not send their header within 3000 ms"), std::string::npos)
      << r.output;
  EXPECT_LT(r.seconds, 30.0);
}

TEST(MultiRank, AllRanksGetTheCombinedProfileWhenAsked) {
  const fs::path out = scratch("all");
  JobRun r = run_example("--world-size 2 --all-ranks 1 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  for (int k = 0; k < 2; ++k) {
    json j = json::parse(read(out / ("rank" + std::to_string(k) + ".json")));
    ASSERT_TRUE(j.contains("ranks")) << "rank " << k;
    EXPECT_EQ(j["ranks"]["per_rank"].size(), 2u);
    EXPECT_EQ(j["summary"]["world_size"].get<int>(), 2);
  }
}

// HTA (hta/common/trace_file.py, hta/configs/parser_config.py) reads the metadata before
// "traceEvents", finds the rank with "rank":\s+(\d+), and keys on kineto's categories and args.
TEST(MultiRank, PerRankTracesFollowHtaRules) {
  const fs::path out = scratch("traces");
  JobRun r = run_example("--world-size 2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  for (int k = 0; k < 2; ++k) {
    const fs::path file = out / ("rank" + std::to_string(k) + ".pt.trace.json");
    ASSERT_EQ(file.extension(), ".json");
    const std::string text = read(file);
    const size_t events = text.find("\"traceEvents\"");
    ASSERT_NE(events, std::string::npos);
    size_t last = 0;
    for (const char* key : {"\"schemaVersion\"", "\"deviceProperties\"", "\"distributedInfo\"",
                            "\"baseTimeNanoseconds\""}) {
      const size_t at = text.find(key);
      ASSERT_NE(at, std::string::npos) << key;
      EXPECT_LT(at, events) << key << " must come before traceEvents";
      EXPECT_GE(at, last) << key << " out of kineto's order";
      last = at;
    }
    std::smatch m;
    const std::string head = text.substr(0, events);
    ASSERT_TRUE(std::regex_search(head, m, std::regex("\"rank\":\\s+(\\d+)")));
    EXPECT_EQ(std::stoi(m[1]), k);
    json t = json::parse(text);
    EXPECT_EQ(t["distributedInfo"]["world_size"].get<int>(), 2);
    EXPECT_EQ(t["distributedInfo"]["backend"], "gloo");
    EXPECT_GT(t["baseTimeNanoseconds"].get<int64_t>(), 1600000000LL * 1000000000LL);
    std::map<std::string, int> cats;
    bool op_args = false, node_args = false, module_span = false;
    for (const json& e : t["traceEvents"]) {
      if (e.value("ph", "") != "X") continue;
      const std::string cat = e["cat"];
      ++cats[cat];
      const json& a = e["args"];
      if (cat == "cpu_op" && a.contains("Input Dims")) {
        op_args = op_args || (a.contains("External id") && a.contains("Sequence number") &&
                              a.contains("Input type") && a["Input Dims"].is_array());
      }
      if (cat == "cpu_op" && a.contains("Fwd thread id")) node_args = true;
      if (cat == "user_annotation" && e["name"] == "Block block") module_span = true;
    }
    EXPECT_GT(cats["cpu_op"], 0);
    EXPECT_GT(cats["user_annotation"], 0);
    for (const auto& [cat, n] : cats) {
      EXPECT_TRUE(cat == "cpu_op" || cat == "user_annotation" || cat == "kernel" ||
                  cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "gpu_user_annotation" ||
                  cat == "flopsprof")
          << "not a kineto category: " << cat;
    }
    EXPECT_TRUE(op_args) << "ops carry External id, Sequence number, Input Dims, Input type";
    EXPECT_TRUE(node_args) << "autograd nodes carry Fwd thread id";
    EXPECT_TRUE(module_span);
  }
}

}  // namespace
