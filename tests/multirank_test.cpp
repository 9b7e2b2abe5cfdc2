// Multi-rank profiles end to end: the data-parallel example (N forked processes, TCPStore on
// 127.0.0.1, ProcessGroupGloo) run with 2 and 4 ranks, one rank slowed inside a scoped module;
// mismatched ranks; a rank that never gathers; the store's host killed while the others gather;
// the per-rank traces against HTA's parsing rules, and Holistic Trace Analysis itself run on a
// 3-rank job's traces. No torch here: the test reads what the processes wrote.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
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
};

JobRun run_example(const std::string& args) {
  JobRun r;
  FILE* p = popen((std::string(FLOPSPROF_DDP_EXAMPLE) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The milliseconds rank `rank` spent in gather_profile before its flopsprof::Error (the example
// prints them); INT_MAX when it printed none.
int error_after_ms(const std::string& output, int rank) {
  std::smatch m;
  const std::regex line("rank " + std::to_string(rank) + " \\(flopsprof::Error after (\\d+) ms\\)");
  return std::regex_search(output, m, line) ? std::stoi(m[1]) : INT_MAX;
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

// Rank 1 sleeps 300 ms in block's forward. What the gather computes (min, mean, max, slowest rank,
// excess) is checked against the ranks' own latencies, whatever the scheduler made of them; the
// sleep only has to dwarf what a loaded machine adds to another rank's few-microsecond forward.
void check_job(int world, const std::string& name) {
  const fs::path out = scratch(name);
  JobRun r = run_example("--world-size " + std::to_string(world) +
                         " --slow-rank 1 --slow-ms 300 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<json> own(world);
  for (int k = 0; k < world; ++k) {
    own[k] = json::parse(read(out / ("rank" + std::to_string(k) + ".json")));
    EXPECT_EQ(own[k]["summary"]["fwd_flops"].get<uint64_t>(), kFlops) << "rank " << k;
    EXPECT_EQ(own[k]["summary"]["world_size"].get<int>(), world)
        << "rank " << k << ": every rank's summary shows the job's size";
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
  std::vector<double> block(world);
  for (const json& m : ranks["modules"]) {
    double mn = 1e300, mx = -1, sum = 0, slowest_total = -1;
    int slowest = -1;
    for (int k = 0; k < world; ++k) {
      const json* mine = module_named(own[k]["modules"], m["name"]);
      ASSERT_NE(mine, nullptr) << m["name"];
      const double v = (*mine)["latency_s"].get<double>();
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      sum += v;
      // the slowest rank and the stragglers' excess go by forward + backward time
      const double total = v + mine->value("bwd_latency_s", 0.0);
      if (total > slowest_total) slowest_total = total, slowest = k;
      if (m["name"] == "block") block[k] = total;
    }
    EXPECT_NEAR(m["fwd_min_s"].get<double>(), mn, 1e-12) << m["name"];
    EXPECT_NEAR(m["fwd_max_s"].get<double>(), mx, 1e-12) << m["name"];
    EXPECT_NEAR(m["fwd_mean_s"].get<double>(), sum / world, 1e-12) << m["name"];
    if (m["name"] == "block") {
      EXPECT_EQ(m["slowest_rank"].get<int>(), slowest);
      EXPECT_GE(block[1], 0.300) << "rank 1 slept 300 ms in block's forward";
      EXPECT_EQ(slowest, 1) << "another rank's block took longer than 300 ms";
    }
  }
  // the straggler: rank 1, caused by block; its excess over the ranks' (lower) median block time
  // (forward + backward)
  std::vector<double> sorted = block;
  std::sort(sorted.begin(), sorted.end());
  const double excess = block[1] - sorted[(world - 1) / 2];
  bool named = false;
  for (const json& s : ranks["stragglers"]) {
    if (s["rank"] == 1 && s["what"] == "iteration") {
      named = true;
      ASSERT_FALSE(s["modules"].empty());
      EXPECT_EQ(s["modules"][0]["name"], "block");
      EXPECT_NEAR(s["modules"][0]["excess_s"].get<double>(), excess, 1e-12);
      EXPECT_GE(excess, 0.150) << "the other ranks' block took more than 150 ms";
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
  const int timeout_ms = 60000;
  JobRun r = run_example("--world-size 2 --mismatch-rank 1 --timeout-ms " +
                         std::to_string(timeout_ms) + " --out " + out.string());
  EXPECT_NE(r.code, 0);
  for (int k = 0; k < 2; ++k) {
    EXPECT_NE(r.output.find("rank " + std::to_string(k) + " exit 3"), std::string::npos)
        << r.output;
    // the header exchange fails at once, not at the timeout (timed inside the rank, from its call
    // of gather_profile: the processes' start-up on a loaded machine is not counted)
    EXPECT_LT(error_after_ms(r.output, k), timeout_ms / 2) << r.output;
  }
  EXPECT_NE(r.output.find("profiled a different model"), std::string::npos) << r.output;
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
  // it waited for the timeout, then gave up (timed inside the rank; an upper bound that only a
  // wait without end would reach)
  const int ms = error_after_ms(r.output, 0);
  EXPECT_GE(ms, 3000) << r.output;
  EXPECT_LT(ms, 60000) << r.output;
}

// The store's host (rank 0, TCPStore's server) is killed once ranks 1 and 2 have sent their
// headers: each of them fails at once with a flopsprof::Error saying so, in one paragraph.
TEST(MultiRank, ALostStoreIsAnErrorOnEverySurvivingRankAtOnce) {
  const fs::path out = scratch("store_lost");
  const int timeout_ms = 60000;  // the survivors' time includes the others' start-up
  JobRun r = run_example("--world-size 3 --store-host-dies 1 --timeout-ms " +
                         std::to_string(timeout_ms) + " --out " + out.string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("rank 0 exit 137"), std::string::npos) << "killed\n" << r.output;
  for (int k = 1; k < 3; ++k) {
    EXPECT_NE(r.output.find("rank " + std::to_string(k) + " exit 3"), std::string::npos)
        << "a flopsprof::Error, not another exception\n"
        << r.output;
    // (each rank writes its line in one write: ranks' lines never interleave)
    std::smatch m;
    const std::regex line("rank " + std::to_string(k) +
                          " \\(flopsprof::Error after (\\d+) ms\\): ");
    ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.output;
    EXPECT_LT(std::stoi(m[1]), timeout_ms / 2) << "at once, not at the timeout: " << m[0];
    // The message itself, from the rank's own file: LibTorch 2.x's TCPStore also logs its own
    // warning with a backtrace to the shared stderr, in pieces, from every rank at once.
    const std::string what = read(out / ("rank" + std::to_string(k) + ".error"));
    EXPECT_NE(what.find("gather_profile: store connection lost on rank " + std::to_string(k)),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("did not send"), std::string::npos) << "no false timeout: " << what;
    EXPECT_LT(what.size(), 600u) << "the store's first line, not LibTorch's backtrace: " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one paragraph, one line: " << what;
    EXPECT_EQ(what.find("Exception raised from"), std::string::npos) << what;
  }
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

// Holistic Trace Analysis (the pinned copy in shared/tools/hta, Debian's Python) on a 3-rank job
// with a slow rank (1 sleeps 40 ms in block.forward), a late one (2 starts the profiled iteration
// 1000 ms after the others: far more than a loaded machine delays the others) and the all-reduce
// in backward (gradient hooks, as DDP).
TEST(MultiRank, HolisticTraceAnalysisSeesStepsOffsetsAndCollectives) {
  if (!fs::exists(fs::path(FLOPSPROF_HTA_DIR) / "hta" / "trace_analysis.py")) {
    GTEST_SKIP() << "HTA not found at " << FLOPSPROF_HTA_DIR
                 << " (configure with -DFLOPSPROF_HTA_DIR=<dir holding hta/>)";
  }
  if (std::system("/usr/bin/python3 -c 'import pandas, plotly, ijson, yaml, psutil, networkx' "
                  "> /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "HTA's Python packages are missing: run scripts/install_deps.sh --browser";
  }
  const fs::path out = scratch("hta");
  JobRun r = run_example(
      "--world-size 3 --slow-rank 1 --slow-ms 40 --late-rank 2 --late-ms 1000 "
      "--allreduce-in-backward 1 --out " +
      out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path traces = out / "traces";
  fs::create_directories(traces);
  for (int k = 0; k < 3; ++k) {
    const std::string f = "rank" + std::to_string(k) + ".pt.trace.json";
    fs::copy_file(out / f, traces / f);
  }
  const fs::path result = out / "hta.json";
  const std::string cmd = "PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=" + std::string(FLOPSPROF_HTA_DIR) +
                          " /usr/bin/python3 " + FLOPSPROF_HTA_CHECK + " " + traces.string() +
                          " > " + result.string() + " 2> " + (out / "hta.err").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read(out / "hta.err");
  const json h = json::parse(read(result));
  std::cout << "HTA: " << h.dump() << "\n";
  EXPECT_EQ(h["ranks"], json::parse("[0, 1, 2]"));
  EXPECT_EQ(h["steps"], json::parse("[2]")) << "kineto's ProfilerStep#2 annotation";

  // Start offsets: HTA's (one time base for all ranks) against the ranks' own wall clocks. Each
  // rank read its clock just before and just after its profile started (the example's files), so
  // rank k's start minus rank 0's lies in [before_k - after_0, after_k - before_0] however the
  // machine scheduled the ranks; 0.01 ms of slack for the trace's microsecond rounding.
  std::vector<int64_t> start_ns(3), started_ns(3);
  for (int k = 0; k < 3; ++k) {
    start_ns[k] = std::stoll(read(out / ("rank" + std::to_string(k) + ".start_ns")));
    started_ns[k] = std::stoll(read(out / ("rank" + std::to_string(k) + ".started_ns")));
    ASSERT_LE(start_ns[k], started_ns[k]);
  }
  for (int k = 1; k < 3; ++k) {
    const double hta_ms = (h["step_start_us"][std::to_string(k)].get<double>() -
                           h["step_start_us"]["0"].get<double>()) *
                          1e-3;
    const double lo_ms = static_cast<double>(start_ns[k] - started_ns[0]) * 1e-6;
    const double hi_ms = static_cast<double>(started_ns[k] - start_ns[0]) * 1e-6;
    std::cout << "rank " << k << " starts " << lo_ms << " to " << hi_ms
              << " ms after rank 0 (measured), " << hta_ms << " ms (HTA)\n";
    EXPECT_GE(hta_ms, lo_ms - 0.01) << "rank " << k;
    EXPECT_LE(hta_ms, hi_ms + 0.01) << "rank " << k;
  }
  EXPECT_GE(static_cast<double>(start_ns[2] - start_ns[0]) * 1e-6, 200.0)
      << "rank 2 slept 1000 ms before its profiled iteration; rank 0 did not";

  // Collectives: one all-reduce per parameter (6) per rank, issued in backward.
  for (int k = 0; k < 3; ++k) {
    const std::string rk = std::to_string(k);
    EXPECT_EQ(h["collectives"][rk].get<int>(), 6) << "rank " << k;
    EXPECT_EQ(h["collective_names"][rk], json::parse("[\"gloo:all_reduce\"]"));
    const json& b = h["breakdown"][rk];
    EXPECT_GT(b["compute_us"].get<int64_t>(), 0);
    EXPECT_LE(b["cpu_busy_us"].get<int64_t>(), b["step_us"].get<int64_t>());
    const json own = json::parse(read(out / ("rank" + rk + ".json")));
    uint64_t calls = 0;
    for (const json& c : own["collectives"]) {
      EXPECT_EQ(c["phase"], "backward") << c.dump();
      calls += c["calls"].get<uint64_t>();
    }
    EXPECT_EQ(calls, 6u) << own["collectives"].dump();
  }
  // Rank 0 waits in its first all-reduce for rank 2, which starts 1000 ms late; rank 2 does not.
  EXPECT_GT(h["breakdown"]["0"]["collective_us"].get<int64_t>(),
            h["breakdown"]["2"]["collective_us"].get<int64_t>());
  // HTA's straggler analysis with its late-start metric over the collectives names rank 2, the
  // one the others wait for. (Its default metric reads GPU communication kernels: on a CPU-only
  // job it raises, as it does on HTA's own CPU-only sample trace.)
  EXPECT_EQ(h["stragglers_cpu_collectives"], json::parse("[2]"));
  if (h.contains("stragglers_error")) {
    std::cout << "HTA's default straggler metric: " << h["stragglers_error"] << "\n";
  }
}

}  // namespace
