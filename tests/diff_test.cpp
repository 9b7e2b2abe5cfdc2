// The profile diff on hand-made profiles (torch-free): matching (added, removed, renamed, type
// changes), exact deltas, noise from spreads, unknown quantities never taken as 0, workload
// warnings, the JSON read back (old schema, corrupt and foreign files), the gate and the command's
// exit codes, and the three renderings.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

ModuleStats mod(const std::string& name, const std::string& type, int depth, int parent,
                uint64_t flops, uint64_t params, double latency_s) {
  ModuleStats m;
  m.name = name;
  m.type = type;
  m.depth = depth;
  m.parent = parent;
  m.calls = 1;
  m.flops = flops;
  m.macs = flops / 2;
  m.params = params;
  m.latency_s = latency_s;
  return m;
}

void finish(ProfileResult& r) {
  for (size_t i = 0; i < r.modules.size(); ++i) {
    r.modules[i].children.clear();
    if (r.modules[i].parent >= 0) r.modules[r.modules[i].parent].children.push_back(int(i));
  }
  r.flops = r.modules[0].flops;
  r.macs = r.modules[0].macs;
  r.params = r.modules[0].params;
  r.duration_s = r.modules[0].latency_s;
}

// Net
//   enc: Encoder          (fc: Linear)
//   dec: Linear
//   drop: Dropout
ProfileResult base_profile() {
  ProfileResult r;
  r.modules.push_back(mod("", "Net", 0, -1, 3000, 300, 10e-3));
  r.modules.push_back(mod("enc", "Encoder", 1, 0, 2000, 200, 6e-3));
  r.modules.push_back(mod("enc.fc", "Linear", 2, 1, 2000, 200, 5e-3));
  r.modules.push_back(mod("dec", "Linear", 1, 0, 1000, 100, 3e-3));
  r.modules.push_back(mod("drop", "Dropout", 1, 0, 0, 0, 1e-3));
  OpStats mm;
  mm.name = "aten::addmm";
  mm.calls = 2;
  mm.flops = 3000;
  mm.macs = 1500;
  mm.latency_s = 8e-3;
  mm.has_formula = true;
  r.ops.push_back(mm);
  r.batch_size = 4;
  finish(r);
  return r;
}

// The same model with the encoder renamed "encoder", its Linear widened (2000 -> 3000 FLOPs,
// 200 -> 300 params), `drop` gone, a GELU `act` added, and `dec` unchanged.
ProfileResult new_profile() {
  ProfileResult r;
  r.modules.push_back(mod("", "Net", 0, -1, 4000 + 50, 400, 12e-3));
  r.modules.push_back(mod("encoder", "Encoder", 1, 0, 3000, 300, 8e-3));
  r.modules.push_back(mod("encoder.fc", "Linear", 2, 1, 3000, 300, 7e-3));
  r.modules.push_back(mod("dec", "Linear", 1, 0, 1000, 100, 3e-3));
  r.modules.push_back(mod("act", "GELU", 1, 0, 50, 0, 0.5e-3));
  OpStats mm = base_profile().ops[0];
  mm.flops = 4000;
  mm.macs = 2000;
  mm.latency_s = 10e-3;
  OpStats gelu;
  gelu.name = "aten::gelu";
  gelu.calls = 1;
  gelu.flops = 50;
  gelu.latency_s = 0.5e-3;
  r.ops = {mm, gelu};
  r.batch_size = 4;
  finish(r);
  return r;
}

TEST(Diff, MatchesByNameAndComputesExactDeltas) {
  const ProfileDiff d = diff(base_profile(), new_profile());
  // Without a rename the encoder is one module removed and one added.
  const ModuleDiff* root = d.module("");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->status, ModuleDiff::Status::kChanged);
  EXPECT_EQ(root->flops.delta(), 4050 - 3000);
  EXPECT_EQ(root->params.delta(), 100);
  EXPECT_NEAR(root->latency.delta(), 2e-3, 1e-12);
  EXPECT_NEAR(root->flops.percent(), 100.0 * 1050 / 3000, 1e-9);
  EXPECT_EQ(d.module("encoder")->status, ModuleDiff::Status::kAdded);
  EXPECT_EQ(d.module("encoder.fc")->status, ModuleDiff::Status::kAdded);
  EXPECT_EQ(d.module("enc")->status, ModuleDiff::Status::kRemoved);
  EXPECT_EQ(d.module("enc.fc")->status, ModuleDiff::Status::kRemoved);
  EXPECT_EQ(d.module("drop")->status, ModuleDiff::Status::kRemoved);
  EXPECT_EQ(d.module("act")->status, ModuleDiff::Status::kAdded);
  EXPECT_EQ(d.module("act")->flops.delta(), 50);
  const ModuleDiff* dec = d.module("dec");
  EXPECT_EQ(dec->status, ModuleDiff::Status::kSame);
  EXPECT_EQ(dec->flops.delta(), 0);
  EXPECT_EQ(dec->latency.delta(), 0);
  // Order: the new tree, each removed module after its base parent's subtree.
  std::vector<std::string> names;
  for (const ModuleDiff& m : d.modules) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"", "encoder", "encoder.fc", "dec", "act", "enc",
                                             "enc.fc", "drop"}));
  // Totals and ops.
  EXPECT_EQ(d.total("fwd_flops")->count.delta(), 1050);
  EXPECT_FALSE(d.total("memory.peak_bytes")->count.known);  // tracked in neither
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[0].name, "aten::addmm");  // the largest latency delta first (+2 ms)
  EXPECT_EQ(d.ops[0].status, ModuleDiff::Status::kChanged);
  EXPECT_EQ(d.ops[0].flops.delta(), 1000);
  EXPECT_EQ(d.ops[1].status, ModuleDiff::Status::kAdded);
  // Shares of the root's latency delta (2 ms): dec 0, act +0.5 ms = 25%.
  EXPECT_NEAR(d.module("act")->share_of_delta, 0.25, 1e-9);
  EXPECT_NEAR(d.module("drop")->share_of_delta, -0.5, 1e-9);
}

TEST(Diff, RenamesCarrySubmodulesAndTypeChangesShowBoth) {
  DiffOptions o;
  o.renames = {{"enc", "encoder"}};
  ProfileResult next = new_profile();
  next.modules[3].type = "Bilinear";  // dec: the same path, another type
  const ProfileDiff d = diff(base_profile(), next, o);
  const ModuleDiff* enc = d.module("encoder");
  ASSERT_NE(enc, nullptr);
  EXPECT_EQ(enc->base_name, "enc");
  EXPECT_EQ(enc->status, ModuleDiff::Status::kChanged);
  EXPECT_EQ(enc->flops.delta(), 1000);
  EXPECT_EQ(d.module("encoder.fc")->base_name, "enc.fc");
  EXPECT_EQ(d.module("enc"), nullptr);
  const ModuleDiff* dec = d.module("dec");
  EXPECT_EQ(dec->status, ModuleDiff::Status::kChanged);
  EXPECT_EQ(dec->base_type, "Linear");
  EXPECT_EQ(dec->new_type, "Bilinear");
  EXPECT_NE(format_diff_text(d).find("Linear -> Bilinear"), std::string::npos);
  o.renames = {{"nope", "x"}};
  EXPECT_THROW(diff(base_profile(), next, o), Error);
}

TEST(Diff, LatencyAgainstTheRunToRunSpread) {
  ProfileResult b = base_profile(), n = base_profile();
  auto spread = [](double lo, double med, double hi) {
    LatencySpread s;
    s.samples = 5;
    s.min_s = lo;
    s.median_s = med;
    s.max_s = hi;
    return s;
  };
  b.fwd_spread = b.modules[0].fwd_spread = spread(9e-3, 10e-3, 11e-3);
  n.fwd_spread = n.modules[0].fwd_spread = spread(10.5e-3, 10.8e-3, 12e-3);  // overlaps: noise
  b.modules[3].fwd_spread = spread(2.9e-3, 3e-3, 3.1e-3);
  n.modules[3].fwd_spread = spread(3.5e-3, 3.6e-3, 3.7e-3);  // dec: apart, 20% slower
  ProfileDiff d = diff(b, n);
  const TimeDelta& root = d.module("")->latency;
  EXPECT_TRUE(root.repeated);
  EXPECT_TRUE(root.noise);
  EXPECT_DOUBLE_EQ(root.base, 10e-3);  // medians, not totals
  EXPECT_DOUBLE_EQ(root.next, 10.8e-3);
  const TimeDelta& dec = d.module("dec")->latency;
  EXPECT_FALSE(dec.noise);
  EXPECT_NEAR(dec.percent(), 20.0, 1e-9);
  // No "single samples" warning when both sides repeated.
  for (const std::string& w : d.warnings)
    EXPECT_EQ(w.find("single samples"), std::string::npos) << w;
  // The gate: the root's +8% is noise and breaks nothing; dec's +20% is news.
  GateResult g =
      check_gate(d, {parse_gate_rule("latency>+5%"), parse_gate_rule("module=dec:latency>+10%")});
  EXPECT_EQ(g.broken.size(), 1u);
  EXPECT_EQ(g.noise.size(), 1u);
  EXPECT_TRUE(g.unknown.empty());
  ASSERT_FALSE(g.broken.empty());
  EXPECT_NE(g.broken[0].find("module=dec:latency>+10%"), std::string::npos);
  // Without repeats: single samples, said.
  d = diff(base_profile(), base_profile());
  bool said = false;
  for (const std::string& w : d.warnings)
    said = said || w.find("single samples") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE(d.module("")->latency.repeated);
}

// Issue 45: one latency statistic in a diff. Matched modules showed per-call medians and added
// ones their totals; a profile with regions showed one decode step's median as its total.
LatencySpread spread_of3(double lo, double med, double hi) {
  LatencySpread s;
  s.samples = 3;
  s.min_s = lo;
  s.median_s = med;
  s.max_s = hi;
  return s;
}

TEST(Diff, OneLatencyStatisticForEveryModule) {
  ProfileResult b = base_profile(), n = new_profile();
  for (ProfileResult* p : {&b, &n}) {
    for (ModuleStats& m : p->modules)  // 3 iterations: a median of a third of the total
      m.fwd_spread = spread_of3(m.latency_s / 3 * 0.9, m.latency_s / 3, m.latency_s / 3 * 1.1);
    p->fwd_spread = p->modules[0].fwd_spread;
  }
  const ProfileDiff d = diff(b, n);
  EXPECT_EQ(d.statistic, "median per iteration");
  // matched, added and removed alike: medians (act: 0.5 ms in all, 1/6 ms an iteration)
  EXPECT_DOUBLE_EQ(d.module("dec")->latency.next, 3e-3 / 3);
  EXPECT_DOUBLE_EQ(d.module("act")->latency.next, 0.5e-3 / 3);
  EXPECT_DOUBLE_EQ(d.module("act")->latency.base, 0.0);
  EXPECT_DOUBLE_EQ(d.module("drop")->latency.base, 1e-3 / 3);
  EXPECT_NE(format_diff_text(d).find("latency: median per iteration"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(diff_to_json(d))["latency_statistic"], "median per iteration");
  // a profile with regions: whole-profile totals, said
  ProfileResult rb = b, rn = n;
  RegionStats g;
  g.name = "decode";
  g.windows = 3;
  rb.regions = rn.regions = {g};
  const ProfileDiff t = diff(rb, rn);
  EXPECT_EQ(t.statistic, "total");
  EXPECT_DOUBLE_EQ(t.total("fwd_latency_s")->time.base, 10e-3);  // the whole profile's
  EXPECT_DOUBLE_EQ(t.module("act")->latency.next, 0.5e-3);
  bool said = false;
  for (const std::string& w : t.warnings)
    said = said || w.find("latencies are whole-profile totals") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Diff, SharesOnlyWhenTheRootsDeltaIsOutsideTheNoise) {
  // single samples: the root +2 ms (20%): shares of it (act +0.5 ms: 25%)
  ProfileDiff d = diff(base_profile(), new_profile());
  EXPECT_TRUE(d.module("act")->share_known);
  EXPECT_NEAR(d.module("act")->share_of_delta, 0.25, 1e-9);
  // the root +1 us on 10 ms (0.01%): a delta of noise, no shares (it made -144,779%)
  ProfileResult b = base_profile(), n = new_profile();
  n.modules[0].latency_s = b.modules[0].latency_s + 1e-6;
  d = diff(b, n);
  EXPECT_FALSE(d.module("act")->share_known);
  EXPECT_FALSE(d.module("")->share_known);
  EXPECT_TRUE(nlohmann::json::parse(diff_to_json(d))["modules"][1]["share_of_delta"].is_null());
  // repeated, the root's ranges overlapping: noise, no shares
  for (ProfileResult* p : {&b, &n}) {
    for (ModuleStats& m : p->modules)
      m.fwd_spread = spread_of3(m.latency_s * 0.8, m.latency_s, m.latency_s * 1.2);
    p->fwd_spread = p->modules[0].fwd_spread;
  }
  d = diff(b, n);
  EXPECT_TRUE(d.module("")->latency.noise);
  EXPECT_FALSE(d.module("dec")->share_known);
}

TEST(DiffRegions, PerWindowAndPerTokenFromTheSameSamples) {
  ProfileResult b = base_profile(), n = base_profile();
  RegionStats g;
  g.name = "decode";
  g.windows = 4;
  g.tokens = 8;  // 2 tokens a window
  g.duration_s = 4e-3;
  g.latency_per_token_s = g.duration_s / 8;
  g.spread = spread_of3(0.9e-3, 1e-3, 1.1e-3);
  g.spread.samples = 4;
  b.regions = {g};
  // new: one slow window (the total rises), the median window falls
  g.duration_s = 6e-3;
  g.latency_per_token_s = g.duration_s / 8;
  g.spread = spread_of3(0.8e-3, 0.9e-3, 3.3e-3);
  g.spread.samples = 4;
  n.regions = {g};
  const ProfileDiff d = diff(b, n);
  ASSERT_EQ(d.regions.size(), 1u);
  const RegionDiff& r = d.regions[0];
  EXPECT_TRUE(r.latency.repeated);
  EXPECT_DOUBLE_EQ(r.latency.next, 0.9e-3);
  // per token from the median window over its 2 tokens: both fall together
  EXPECT_DOUBLE_EQ(r.latency_per_token.base, 1e-3 / 2);
  EXPECT_DOUBLE_EQ(r.latency_per_token.next, 0.9e-3 / 2);
  EXPECT_LT(r.latency.delta(), 0);
  EXPECT_LT(r.latency_per_token.delta(), 0);
}

// Issue 45: two runs of one program read "0 changed ... 70 same" while module latencies moved by
// -30% to +12% in single samples. 'same' is said to be about the counts, and how many of them
// moved in latency, with what that is worth; the hint names what a C++ user can do.
TEST(Diff, SameCountsThatMovedInLatencyAreSaid) {
  ProfileResult b = base_profile(), n = base_profile();
  n.modules[3].latency_s *= 1.3;   // dec: +30%
  n.modules[4].latency_s *= 0.7;   // drop: -30%
  n.modules[2].latency_s *= 1.05;  // enc.fc: +5%, under 10%
  const ProfileDiff d = diff(b, n);
  const std::string text = format_diff_text(d);
  EXPECT_NE(text.find("0 changed, 0 added, 0 removed, 5 same in their counts (2 of them moved "
                      "over 10% in latency: single samples, noise unknown)"),
            std::string::npos)
      << text;
  std::string warnings;
  for (const std::string& w : d.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("FlopsProfiler::iteration()"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("flopsprof::combine_runs"), std::string::npos) << warnings;
}

TEST(Diff, EveryModuleScaledByOneFactorIsAWorkloadWarning) {
  ProfileResult b = base_profile(), n = base_profile();
  for (ModuleStats& m : n.modules) m.flops *= 2;  // batch 2 -> 4, inputs not recorded
  const ProfileDiff d = diff(b, n);
  bool said = false;
  for (const std::string& w : d.warnings)
    said = said || w.find(
                       "workload probably differs: every module's FLOPs changed by the same "
                       "factor (x2)") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(d.warnings);
  // one module changed alone: no such warning
  ProfileResult one = base_profile();
  one.modules[3].flops *= 2;
  for (const std::string& w : diff(b, one).warnings)
    EXPECT_EQ(w.find("probably differs"), std::string::npos) << w;
}

TEST(Diff, WorkloadDifferencesAreWarnings) {
  ProfileResult b = base_profile(), n = base_profile();
  b.workload.inputs = {"fp32[4, 8]"};
  n.workload.inputs = {"fp32[2, 8]"};
  n.batch_size = 2;
  n.workload.intra_op_threads = 3;
  n.workload.libtorch_version = "2.6.0";
  const ProfileDiff d = diff(b, n);
  auto has = [&](const std::string& s) {
    for (const std::string& w : d.warnings) {
      if (w.find(s) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("workload differs: batch_size: 4 (base) vs 2 (new)"));
  EXPECT_TRUE(has("inputs: fp32[4, 8] (base) vs fp32[2, 8] (new)"));
  EXPECT_TRUE(has("intra-op threads: 0 (base) vs 3 (new)"));
  EXPECT_TRUE(has("LibTorch:  (base) vs 2.6.0 (new)"));
  EXPECT_FALSE(has("build type"));
  nlohmann::json j = nlohmann::json::parse(diff_to_json(d));
  EXPECT_EQ(j["warnings"].size(), d.warnings.size());
}

// Both renderings on the same diff: JSON fields as documented, text lines, HTML rows escaped.
TEST(Diff, JsonTextAndHtml) {
  ProfileResult b = base_profile(), n = new_profile();
  b.memory.tracked = true;
  b.memory.peak_bytes = 1000;  // n: not tracked -> unknown, null, never 0
  const ProfileDiff d = diff(b, n);
  nlohmann::json j = nlohmann::json::parse(diff_to_json(d));
  EXPECT_EQ(j["summary"]["fwd_flops"]["delta"], 1050);
  EXPECT_TRUE(j["summary"]["memory.peak_bytes"]["delta"].is_null());
  EXPECT_TRUE(j["summary"]["memory.peak_bytes"]["base"].is_null());
  const nlohmann::json& mods = j["modules"];
  ASSERT_EQ(mods.size(), d.modules.size());
  EXPECT_EQ(mods[0]["status"], "changed");
  EXPECT_EQ(mods[0]["delta"]["flops"], 1050);
  EXPECT_EQ(mods[0]["base"]["params"], 300);
  EXPECT_EQ(mods[0]["new"]["params"], 400);
  EXPECT_EQ(mods[4]["name"], "act");
  EXPECT_EQ(mods[4]["status"], "added");
  EXPECT_TRUE(mods[4]["base"].is_null());
  EXPECT_EQ(mods[7]["status"], "removed");
  EXPECT_TRUE(mods[7]["new"].is_null());
  EXPECT_EQ(j["ops"][1]["status"], "added");
  const std::string text = format_diff_text(d);
  EXPECT_NE(text.find("Modules: 1 changed, 3 added, 3 removed, 1 same"), std::string::npos) << text;
  EXPECT_NE(text.find("memory.peak_bytes                 n/a"), std::string::npos) << text;
  DiffTextOptions top;
  top.top = 2;
  const std::string t2 = format_diff_text(d, top);
  EXPECT_NE(t2.find("(the 2 largest deltas)"), std::string::npos);
  ProfileResult hostile = base_profile();
  hostile.modules[1].name = "<script>alert(1)</script>";
  const std::string html = diff_to_html(diff(hostile, n));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

// A module's own ops, matched by name: shown under it with --ops, in the JSON always; a side
// from a file without per-module ops leaves them out rather than calling every op added.
TEST(Diff, OpsWithinAModule) {
  ProfileResult b = base_profile(), n = base_profile();
  OpStats addmm;
  addmm.name = "aten::addmm";
  addmm.calls = 1;
  addmm.flops = 1000;
  addmm.latency_s = 2e-3;
  b.modules[3].ops = {addmm};
  addmm.flops = 1600;
  OpStats gelu;
  gelu.name = "aten::gelu";
  gelu.calls = 1;
  gelu.flops = 40;
  n.modules[3].ops = {addmm, gelu};
  const ProfileDiff d = diff(b, n);
  const ModuleDiff* dec = d.module("dec");
  ASSERT_EQ(dec->ops.size(), 2u);
  EXPECT_EQ(dec->ops[0].name, "aten::addmm");  // +0 latency each: name order kept
  EXPECT_EQ(dec->ops[0].status, DiffStatus::kChanged);
  EXPECT_EQ(dec->ops[0].flops.delta(), 600);
  EXPECT_EQ(dec->ops[1].status, DiffStatus::kAdded);
  DiffTextOptions o;
  o.module_ops = true;
  const std::string text = format_diff_text(d, o);
  EXPECT_NE(text.find("aten::gelu"), std::string::npos) << text;
  EXPECT_EQ(format_diff_text(d).find("aten::gelu"), std::string::npos);  // model table: none
  nlohmann::json j = nlohmann::json::parse(diff_to_json(d));
  EXPECT_EQ(j["modules"][3]["ops"][1]["status"], "added");
  EXPECT_EQ(j["modules"][3]["ops"][0]["delta"]["flops"], 600);
  // Read back: the slim per-module rows survive; a file without them gives no op deltas.
  const LoadedProfile lb = profile_from_json(to_json(b)), ln = profile_from_json(to_json(n));
  EXPECT_EQ(diff(lb, ln).module("dec")->ops.size(), 2u);
  nlohmann::json old = nlohmann::json::parse(to_json(b));
  for (auto& m : old["modules"]) m.erase("ops");
  const LoadedProfile lo = profile_from_json(old.dump());
  EXPECT_NE(std::find(lo.missing.begin(), lo.missing.end(), "module_ops"), lo.missing.end());
  EXPECT_TRUE(diff(lo, ln).module("dec")->ops.empty());
}

TEST(Diff, ThresholdHidesSmallChanges) {
  ProfileResult b = base_profile(), n = base_profile();
  n.modules[3].latency_s = 3.03e-3;  // dec +1%
  n.modules[2].latency_s = 6e-3;     // enc.fc +20%
  DiffTextOptions o;
  o.threshold_percent = 5;
  o.ops = false;
  const std::string t = format_diff_text(diff(b, n), o);
  EXPECT_NE(t.find("enc.fc (Linear)"), std::string::npos) << t;
  EXPECT_EQ(t.find("dec (Linear)"), std::string::npos) << t;
}

// A profile's JSON read back: what diff() compares survives, and every problem names the file.
TEST(ProfileJson, ReadsBackWhatDiffCompares) {
  ProfileResult r = new_profile();
  r.workload.inputs = {"fp32[4, 8]"};
  r.workload.libtorch_version = "1.13.0";
  r.modules[1].fwd_spread.samples = 3;
  r.modules[1].fwd_spread.min_s = 1e-3;
  r.modules[1].fwd_spread.median_s = 2e-3;
  r.modules[1].fwd_spread.max_s = 4e-3;
  const LoadedProfile lp = profile_from_json(to_json(r), "new.json");
  EXPECT_EQ(lp.schema_version, 2);
  EXPECT_EQ(lp.source, "new.json");
  EXPECT_EQ(lp.missing, (std::vector<std::string>{"memory"}));
  ASSERT_EQ(lp.result.modules.size(), r.modules.size());
  for (size_t i = 0; i < r.modules.size(); ++i) {
    EXPECT_EQ(lp.result.modules[i].name, r.modules[i].name);
    EXPECT_EQ(lp.result.modules[i].flops, r.modules[i].flops);
    EXPECT_EQ(lp.result.modules[i].parent, r.modules[i].parent);
    EXPECT_DOUBLE_EQ(lp.result.modules[i].latency_s, r.modules[i].latency_s);
  }
  EXPECT_EQ(lp.result.modules[1].fwd_spread.samples, 3u);
  EXPECT_DOUBLE_EQ(lp.result.modules[1].fwd_spread.max_s, 4e-3);
  EXPECT_EQ(lp.result.workload.inputs, r.workload.inputs);
  EXPECT_EQ(lp.result.ops.size(), 2u);
  // The diff of the files equals the diff of the results.
  const ProfileDiff a = diff(base_profile(), r);
  const ProfileDiff b = diff(profile_from_json(to_json(base_profile())), lp);
  ASSERT_EQ(a.modules.size(), b.modules.size());
  for (size_t i = 0; i < a.modules.size(); ++i) {
    EXPECT_EQ(a.modules[i].status, b.modules[i].status);
    EXPECT_EQ(a.modules[i].flops.delta(), b.modules[i].flops.delta());
  }
}

TEST(ProfileJson, OldSchemaIsReadAndWhatItLacksIsSaid) {
  nlohmann::json j = nlohmann::json::parse(to_json(base_profile()));
  j["schema_version"] = 1;
  j.erase("workload");
  j["summary"].erase("fwd_bytes");
  const LoadedProfile old = profile_from_json(j.dump(), "old.json");
  EXPECT_EQ(old.schema_version, 1);
  EXPECT_NE(std::find(old.missing.begin(), old.missing.end(), "workload"), old.missing.end());
  EXPECT_NE(std::find(old.missing.begin(), old.missing.end(), "bytes"), old.missing.end());
  const ProfileDiff d = diff(old, profile_from_json(to_json(base_profile()), "new.json"));
  bool said = false;
  for (const std::string& w : d.warnings)
    said = said ||
           w.find("base (old.json) records no workload (schema_version 1)") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE(d.total("fwd_bytes")->count.known);  // unknown, not 0
  EXPECT_FALSE(d.module("")->bytes.known);
  GateResult g = check_gate(d, {parse_gate_rule("bytes>0")});
  EXPECT_EQ(g.unknown.size(), 1u);
}

TEST(ProfileJson, CorruptOrForeignFilesAreRefusedByName) {
  auto message = [](const std::string& text) {
    try {
      profile_from_json(text, "x.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string good = to_json(base_profile());
  EXPECT_NE(message(good.substr(0, good.size() / 2)).find("x.json: not JSON"), std::string::npos);
  EXPECT_NE(message("{\"traceEvents\": []}").find("x.json: no \"schema_version\""),
            std::string::npos);
  EXPECT_NE(message("[1, 2]").find("not a JSON object"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(good);
  j["modules"][1].erase("flops");
  EXPECT_NE(message(j.dump()).find("modules[1] has no \"flops\""), std::string::npos);
  j = nlohmann::json::parse(good);
  j["modules"][2]["flops"] = -5;
  EXPECT_NE(message(j.dump()).find("modules[2]: \"flops\" is not a count"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["schema_version"] = 99;
  EXPECT_NE(message(j.dump()).find("schema_version 99 is newer"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["modules"][2]["depth"] = 5;
  EXPECT_NE(message(j.dump()).find("does not follow the tree order"), std::string::npos);
  EXPECT_THROW(load_profile_json("/nonexistent/profile.json"), Error);
}

TEST(Gate, RulesParseOrSayWhatIsWrong) {
  GateRule r = parse_gate_rule("module=encoder.fc:latency>=+12.5%");
  EXPECT_EQ(r.module, "encoder.fc");
  EXPECT_EQ(r.field, "latency");
  EXPECT_EQ(r.op, ">=");
  EXPECT_DOUBLE_EQ(r.value, 12.5);
  EXPECT_TRUE(r.percent);
  r = parse_gate_rule("params!=0");
  EXPECT_EQ(r.op, "!=");
  EXPECT_FALSE(r.percent);
  for (const char* bad : {"latency", "speed>1", "flops=1", "flops>abc", "module=x:memory.peak>1",
                          "calls>0", "flops>5%%"}) {
    EXPECT_THROW(parse_gate_rule(bad), Error) << bad;
  }
}

TEST(Gate, ExactFieldsAndModulesInOneProfileOnly) {
  const ProfileDiff d = diff(base_profile(), new_profile());
  GateResult g =
      check_gate(d, {parse_gate_rule("flops>0"), parse_gate_rule("params==100"),
                     parse_gate_rule("module=dec:flops!=0"), parse_gate_rule("flops>+50%")});
  EXPECT_EQ(g.broken.size(), 2u);  // +1050 FLOPs > 0; params +100 == 100; 35% is not > 50%
  g = check_gate(d, {parse_gate_rule("module=act:flops>0"), parse_gate_rule("module=zzz:flops>0"),
                     parse_gate_rule("memory.peak>+10%"), parse_gate_rule("module=drop:calls<0")});
  // An added module had none of it in the base (0 -> 50 FLOPs), a removed one none in the new
  // (calls 1 -> 0): both checked. No such module, memory not tracked: cannot be checked.
  ASSERT_EQ(g.broken.size(), 2u);
  EXPECT_NE(g.broken[0].find("module=act:flops>0: 0 -> 50 (+50, +inf%)"), std::string::npos)
      << g.broken[0];
  EXPECT_NE(g.broken[1].find("module=drop:calls<0: 1 -> 0 (-1, -100.00%)"), std::string::npos)
      << g.broken[1];
  EXPECT_EQ(g.unknown.size(), 2u);
}

// Regions (FlopsProfiler::region()): matched by name, per-window medians against their spread,
// rates compared where both sides know them, gated with region=NAME:, read back from the JSON.
RegionStats region(const std::string& name, uint64_t windows, uint64_t tokens, double median_s,
                   double spread_s, double mfu) {
  RegionStats g;
  g.name = name;
  g.windows = windows;
  g.tokens = tokens;
  g.tokens_source = tokens > 0 ? "given" : "";
  g.duration_s = median_s * static_cast<double>(windows);
  g.first_s = median_s;
  if (windows >= 2) g.spread = {windows, median_s - spread_s, median_s, median_s + spread_s};
  g.flops = 1000 * windows;
  g.macs = 500 * windows;
  g.bytes = 4000 * windows;
  if (tokens > 0) {
    g.tokens_per_s = static_cast<double>(tokens) / g.duration_s;
    g.latency_per_token_s = g.duration_s / static_cast<double>(tokens);
    g.flops_per_token = static_cast<double>(g.flops) / static_cast<double>(tokens);
  }
  g.mfu = mfu;
  g.mbu = 2 * mfu;
  return g;
}

TEST(DiffRegions, MatchedByNameWithRatesAndAGate) {
  ProfileResult b = base_profile(), n = base_profile();
  // prefill: one window of 128 tokens, the same on both sides. decode: 32 windows of one token,
  // 5 ms +- 0.5 ms per window in the base, 6 ms +- 0.6 ms in the new (ranges [4.5, 5.5] and
  // [5.4, 6.6] overlap: noise), then 6.5 ms +- 0.4 (apart: a real change). tokens/s: 32 / 0.16 s
  // = 200 -> 32 / 0.192 s = 166.7, -16.7%. "sample" only in the new profile, with no tokens.
  b.regions = {region("prefill", 1, 128, 64e-3, 0, 0.6),
               region("decode", 32, 32, 5e-3, 0.5e-3, 0.05)};
  n.regions = {region("prefill", 1, 128, 64e-3, 0, 0.6),
               region("decode", 32, 32, 6e-3, 0.6e-3, 0.04),
               region("sample", 32, 0, 1e-3, 0.1e-3, 0)};
  ProfileDiff d = diff(b, n);
  ASSERT_EQ(d.regions.size(), 3u);
  EXPECT_EQ(d.regions[0].name, "prefill");
  EXPECT_EQ(d.regions[0].status, DiffStatus::kSame);
  const RegionDiff* decode = d.region("decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->status, DiffStatus::kSame);  // same windows, tokens, FLOPs and bytes
  EXPECT_TRUE(decode->latency.repeated);
  EXPECT_DOUBLE_EQ(decode->latency.base, 5e-3);
  EXPECT_DOUBLE_EQ(decode->latency.next, 6e-3);
  EXPECT_TRUE(decode->latency.noise);
  EXPECT_NEAR(decode->tokens_per_s.percent(), 100.0 * (32 / 0.192 - 32 / 0.160) / (32 / 0.160),
              1e-9);
  EXPECT_NEAR(decode->latency_per_token.delta(), 1e-3, 1e-12);
  const RegionDiff* sample = d.region("sample");
  ASSERT_NE(sample, nullptr);
  EXPECT_EQ(sample->status, DiffStatus::kAdded);
  EXPECT_FALSE(sample->tokens_per_s.known());
  EXPECT_FALSE(sample->latency_per_token.known);

  // The gate: tokens/s -16.7% breaks a -5% floor; MFU 0.05 -> 0.04 breaks "< -0.005" (fractions);
  // the latency delta is inside the spread (noise, not broken); an added region's FLOPs are
  // checked against 0; a region with no tokens cannot be judged per token; no such region.
  GateResult g = check_gate(
      d, {parse_gate_rule("region=decode:tokens_per_s<-5%"),
          parse_gate_rule("region=decode:mfu<-0.005"), parse_gate_rule("region=decode:latency>+5%"),
          parse_gate_rule("region=prefill:latency>+5%"), parse_gate_rule("region=sample:flops>0"),
          parse_gate_rule("region=sample:latency_per_token>0"),
          parse_gate_rule("region=nope:flops>0")});
  ASSERT_EQ(g.broken.size(), 3u);
  EXPECT_NE(g.broken[0].find("region=decode:tokens_per_s<-5%: 200 -> 166.7"), std::string::npos)
      << g.broken[0];
  EXPECT_NE(g.broken[1].find("region=decode:mfu<-0.005: 0.05 -> 0.04"), std::string::npos)
      << g.broken[1];
  EXPECT_NE(g.broken[2].find("region=sample:flops>0: 0 -> 32000"), std::string::npos)
      << g.broken[2];
  ASSERT_EQ(g.noise.size(), 1u);
  EXPECT_NE(g.noise[0].find("region=decode:latency"), std::string::npos);
  ASSERT_EQ(g.unknown.size(), 2u);
  EXPECT_NE(g.unknown[0].find("no tokens, or no peaks"), std::string::npos) << g.unknown[0];
  EXPECT_NE(g.unknown[1].find("no region 'nope'"), std::string::npos) << g.unknown[1];
  for (const char* bad : {"region=decode:params>0", "region=:flops>0", "tokens_per_s<0",
                          "module=enc:mfu<0", "region=decode"}) {
    EXPECT_THROW(parse_gate_rule(bad), Error) << bad;
  }

  // Apart: the new decode at 6.5 ms +- 0.4 ([6.1, 6.9] vs [4.5, 5.5]) is a change, and a different
  // window count is a workload difference, warned.
  n.regions[1] = region("decode", 64, 64, 6.5e-3, 0.4e-3, 0.04);
  d = diff(b, n);
  EXPECT_FALSE(d.region("decode")->latency.noise);
  EXPECT_EQ(d.region("decode")->status, DiffStatus::kChanged);
  bool warned = false;
  for (const std::string& w : d.warnings) warned = warned || w.find("region 'decode'") != w.npos;
  EXPECT_TRUE(warned);

  // The renderings, and the regions read back from the profiles' JSON.
  const std::string text = format_diff_text(d);
  EXPECT_NE(text.find("\nRegions"), std::string::npos) << text;
  EXPECT_NE(text.find("decode"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(diff_to_json(d));
  ASSERT_EQ(j["regions"].size(), 3u);
  EXPECT_EQ(j["regions"][1]["name"], "decode");
  EXPECT_EQ(j["regions"][1]["delta"]["windows"], 32);
  EXPECT_TRUE(j["regions"][2]["base"].is_null());  // "sample": added
  EXPECT_TRUE(j["regions"][2]["new"]["tokens_per_s"].is_null());
  EXPECT_NE(diff_to_html(d).find("id=\"regions\""), std::string::npos);
  const LoadedProfile lb = profile_from_json(to_json(b)), ln = profile_from_json(to_json(n));
  ASSERT_EQ(ln.result.regions.size(), 3u);
  EXPECT_EQ(ln.result.regions[1].windows, 64u);
  EXPECT_EQ(ln.result.regions[1].spread.samples, 64u);
  EXPECT_EQ(ln.result.regions[2].tokens, 0u);
  EXPECT_DOUBLE_EQ(lb.result.regions[1].mfu, 0.05);
  const ProfileDiff from_files = diff(lb, ln);
  EXPECT_DOUBLE_EQ(from_files.region("decode")->tokens_per_s.percent(),
                   d.region("decode")->tokens_per_s.percent());
}

// The command: text on stdout, exit 0 / 1 / 2 as documented, files written.
TEST(DiffCommand, ExitCodesAndFiles) {
  const std::string dir = ::testing::TempDir();
  const std::string b = dir + "diff_base.json", n = dir + "diff_new.json",
                    bad = dir + "diff_bad.json";
  std::ofstream(b) << to_json(base_profile());
  std::ofstream(n) << to_json(new_profile());
  std::ofstream(bad) << "{\"schema_version\": 2, \"summary\": ";
  std::string out, err;
  EXPECT_EQ(diff_command({b, n}, out, err), 0) << err;
  EXPECT_NE(out.find("flopsprof diff: " + b + " (base) -> " + n + " (new)"), std::string::npos);
  out.clear();
  EXPECT_EQ(diff_command(
                {b, n, "--fail-if", "flops>0", "--json", dir + "d.json", "--html", dir + "d.html"},
                out, err),
            1);
  EXPECT_NE(out.find("BROKEN: flops>0: 3000 -> 4050 (+1050, +35.00%)"), std::string::npos) << out;
  std::ifstream jf(dir + "d.json");
  EXPECT_EQ(nlohmann::json::parse(jf)["summary"]["fwd_flops"]["delta"], 1050);
  std::ifstream hf(dir + "d.html");
  EXPECT_TRUE(hf.good());
  out.clear();
  EXPECT_EQ(
      diff_command({b, n, "--fail-if", "flops<0", "--fail-if", "module=dec:params!=0"}, out, err),
      0);
  EXPECT_NE(out.find("2 rule(s) checked, none broken"), std::string::npos);
  err.clear();
  EXPECT_EQ(diff_command({b, bad}, out, err), 2);
  EXPECT_NE(err.find(bad + ": not JSON"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(diff_command({b}, out, err), 2);
  EXPECT_EQ(diff_command({b, n, "--fail-if", "speed>1"}, out, err), 2);
  EXPECT_EQ(diff_command({b, n, "--fail-if", "memory.peak>0"}, out, err), 2);
  EXPECT_EQ(diff_command({b, n, "--top", "0"}, out, err), 2);
  EXPECT_EQ(diff_command({b, n, "--threshold", "abc"}, out, err), 2);
  EXPECT_EQ(diff_command({b, n, "--rename", "enc=encoder", "--threshold", "0.5ms", "--depth", "1"},
                         out, err),
            0);
  std::remove(b.c_str());
  std::remove(n.c_str());
  std::remove(bad.c_str());
}

// Bad input to the reader (issue 49): every case a clear error naming the file and the field,
// never a crash, a hang, a wrong number or a megabyte pasted into the message.
std::string reader_error(const std::string& text) {
  try {
    profile_from_json(text, "x.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProfileJson, DeepNestingIsRefusedBeforeParsing) {
  // "params" holding an array nested 100,000 deep (200 KB): dump() in the message recursed
  // 100,000 frames deep (SIGSEGV) before.
  nlohmann::json j = nlohmann::json::parse(to_json(base_profile()));
  std::string text = j.dump();
  const std::string key = "\"params\":";
  const size_t at = text.find(key) + key.size();
  const size_t end = text.find_first_of(",}", at);
  text =
      text.substr(0, at) + std::string(100000, '[') + std::string(100000, ']') + text.substr(end);
  const std::string e = reader_error(text);
  EXPECT_NE(e.find("x.json: it nests arrays and objects more than 64 levels deep"),
            std::string::npos)
      << e.substr(0, 300);
  // Brackets inside strings are not nesting.
  j["modules"][1]["name"] = std::string(1000, '[');
  EXPECT_EQ(reader_error(j.dump()).find("levels deep"), std::string::npos);
}

TEST(ProfileJson, ABadValueIsQuotedShort) {
  nlohmann::json j = nlohmann::json::parse(to_json(base_profile()));
  j["modules"][1]["flops"] = std::string(1 << 20, 'x');  // a 1 MB string where a count goes
  const std::string e = reader_error(j.dump());
  EXPECT_NE(e.find("modules[1]: \"flops\" is not a count (\"xxxx"), std::string::npos)
      << e.substr(0, 300);
  EXPECT_NE(e.find("... (1048578 characters)"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), 400u);
}

TEST(ProfileJson, SchemaVersionIsAnIntegerOfItsRange) {
  nlohmann::json j = nlohmann::json::parse(to_json(base_profile()));
  auto with = [&](const std::string& v) {
    std::string text = j.dump();
    const std::string key = "\"schema_version\":2";
    const size_t at = text.find(key);
    return reader_error(text.substr(0, at) + "\"schema_version\":" + v +
                        text.substr(at + key.size()));
  };
  EXPECT_NE(with("\"2\"").find("\"schema_version\" is \"2\", not an integer (1 to 2)"),
            std::string::npos)
      << with("\"2\"");
  EXPECT_NE(with("2.0").find("\"schema_version\" is 2.0, not an integer"), std::string::npos);
  EXPECT_NE(with("1e30").find("not an integer"), std::string::npos);
  EXPECT_NE(with("18446744073709551615").find("schema_version 18446744073709551615 is newer"),
            std::string::npos);
  EXPECT_NE(with("4294967298").find("schema_version 4294967298 is newer"), std::string::npos);
  EXPECT_NE(with("0").find("schema_version 0 is not one flopsprof writes"), std::string::npos);
  EXPECT_NE(with("-1").find("schema_version -1 is not one"), std::string::npos);
  EXPECT_EQ(with("2"), "(no error)");
}

TEST(ProfileJson, DepthsAndNumbersOutsideTheirRangeAreNamed) {
  const std::string good = to_json(base_profile());
  nlohmann::json j = nlohmann::json::parse(good);
  j["modules"][1]["depth"] = -1;
  EXPECT_NE(reader_error(j.dump()).find("modules[1]: \"depth\" is -1, outside [0, 2147483647]"),
            std::string::npos)
      << reader_error(j.dump());
  j["modules"][1]["depth"] = 4294967297ULL;  // 2^32 + 1: would wrap to 1 as an int
  EXPECT_NE(reader_error(j.dump()).find("\"depth\" is 4294967297, outside"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["modules"][2]["latency_s"] = -1.0;
  EXPECT_NE(
      reader_error(j.dump()).find("modules[2]: \"latency_s\" is -1.0, not a number from 0 to 1e9"),
      std::string::npos)
      << reader_error(j.dump());
  j = nlohmann::json::parse(good);
  j["modules"][2]["flops"] = 18446744073709551615ULL;  // the largest count reads exactly
  EXPECT_EQ(profile_from_json(j.dump()).result.modules[2].flops, 18446744073709551615ULL);
}

TEST(ProfileJson, FoldersDevicesAndFifosAreNamedNotParsed) {
  auto e = [](const std::string& path) {
    try {
      load_profile_json(path);
    } catch (const Error& x) {
      return std::string(x.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(e(::testing::TempDir()).find("it is a folder"), std::string::npos);
  EXPECT_NE(e("/dev/zero").find("character device, not a regular file"), std::string::npos);
}

// A profile whose parsed document would not fit what the process may allocate is refused before
// parsing (a parser out of memory ended in terminate(): nlohmann's document allocates while it is
// destroyed). Checked in a child process under an address-space limit 64 MB above its use.
TEST(ProfileJson, AProfileTooLargeForTheMemoryLeftIsRefusedBeforeParsing) {
  const std::string path = ::testing::TempDir() + "large_profile.json";
  {
    std::ofstream f(path);
    f << "{\"schema_version\": 2, \"pad\": \"" << std::string(16 << 20, 'x') << "\"}";
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    uint64_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t used = pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
    const struct rlimit limit = {used + (64 << 20), used + (64 << 20)};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    try {
      load_profile_json(path);
    } catch (const Error& e) {
      const std::string m = e.what();
      _exit(m.find("of JSON need about 192.00 MiB of memory to read, and this process may "
                   "allocate") != std::string::npos
                ? 0
                : 1);
    } catch (...) {
      _exit(2);
    }
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::remove(path.c_str());
}

// 10,000 sibling modules and 10,000 regions per side: matched by hash and parents found by a stack
// (a nested loop took 443 s for 100,000 regions, the parent scan 45 s for 100,000 modules).
// bench/diff_scale.sh times 100,000 of each; here the result is checked.
TEST(DiffScale, TenThousandSiblingsAndRegions) {
  constexpr int kN = 10000;
  ProfileResult r;
  r.modules.push_back(mod("", "Net", 0, -1, kN, 0, 1.0));
  for (int i = 0; i < kN; ++i) {
    r.modules.push_back(mod("m" + std::to_string(i), "Linear", 1, 0, 1, 0, 1e-5));
    RegionStats g;
    g.name = "region" + std::to_string(i);
    g.windows = 1;
    g.duration_s = 1e-5;
    r.regions.push_back(g);
  }
  finish(r);
  const LoadedProfile lp = profile_from_json(to_json(r));
  ASSERT_EQ(lp.result.modules.size(), static_cast<size_t>(kN + 1));
  EXPECT_EQ(lp.result.modules[0].children.size(), static_cast<size_t>(kN));
  EXPECT_EQ(lp.result.modules[kN].parent, 0);
  const ProfileDiff d = diff(lp, lp);
  ASSERT_EQ(d.modules.size(), static_cast<size_t>(kN + 1));
  ASSERT_EQ(d.regions.size(), static_cast<size_t>(kN));
  for (const RegionDiff& g : d.regions) ASSERT_EQ(g.status, DiffStatus::kSame) << g.name;
  for (const ModuleDiff& m : d.modules) ASSERT_EQ(m.status, DiffStatus::kSame) << m.name;
}

// A 10,000-deep chain: the text indents at most 32 levels (it grew with the square of the depth:
// 2 x depth spaces a line, 3.6 GB for 60,000; bad_alloc under a memory limit).
TEST(DiffScale, ADeepChainsTextGrowsWithItsModules) {
  constexpr int kDepth = 10000;
  ProfileResult r;
  r.modules.push_back(mod("", "Net", 0, -1, 1, 0, 1.0));
  for (int i = 1; i <= kDepth; ++i)
    r.modules.push_back(mod("m" + std::to_string(i), "Block", i, i - 1, 1, 0, 1e-5));
  finish(r);
  const LoadedProfile lp = profile_from_json(to_json(r));
  EXPECT_EQ(lp.result.modules[kDepth].depth, kDepth);
  const std::string text = format_diff_text(diff(lp, lp));
  EXPECT_LT(text.size(), 300u * kDepth);
  EXPECT_NE(text.find("[depth 10000] m10000 (Block)"), std::string::npos);
}

TEST(Gate, CountsOfTheWholeUint64RangeAreExact) {
  ProfileResult b = base_profile(), n = base_profile();
  b.modules[2].flops = 0;
  n.modules[2].flops = 18446744073709551615ULL;  // 2^64 - 1
  const ProfileDiff d = diff(b, n);
  const GateResult g = check_gate(d, {parse_gate_rule("module=enc.fc:flops>0")});
  ASSERT_EQ(g.broken.size(), 1u);
  EXPECT_NE(g.broken[0].find("0 -> 18446744073709551615 (+18446744073709551615, +inf%)"),
            std::string::npos)
      << g.broken[0];
  // The text's delta: 18,446.74 P (it read +9223.37 P, the int64 saturation, before).
  EXPECT_NE(format_diff_text(d).find("+18446.74 P"), std::string::npos);
  // An integer rule value compares exactly with the exact delta (as doubles, 2^64 - 2, 2^64 - 1
  // and 2^64 are one number).
  auto broken = [&](const char* rule) {
    return !check_gate(d, {parse_gate_rule(rule)}).broken.empty();
  };
  EXPECT_TRUE(broken("module=enc.fc:flops>18446744073709551614"));
  EXPECT_FALSE(broken("module=enc.fc:flops>18446744073709551615"));
  EXPECT_TRUE(broken("module=enc.fc:flops==18446744073709551615"));
  EXPECT_FALSE(broken("module=enc.fc:flops==18446744073709551616"));  // beyond any delta
  EXPECT_TRUE(broken("module=enc.fc:flops<18446744073709551616"));
  const ProfileDiff back = diff(n, b);  // the delta -(2^64 - 1)
  EXPECT_TRUE(!check_gate(back, {parse_gate_rule("module=enc.fc:flops<-18446744073709551614")})
                   .broken.empty());
  EXPECT_TRUE(check_gate(back, {parse_gate_rule("module=enc.fc:flops<-18446744073709551615")})
                  .broken.empty());
}

// Files whose module names cannot identify modules, or whose numbers no profile has.
TEST(ProfileJson, NamesIdentifyModulesAndLatenciesArePlausible) {
  const std::string good = to_json(base_profile());
  nlohmann::json j = nlohmann::json::parse(good);
  j["modules"][1]["name"] = "";  // a child named as the root: it was matched with the root
  EXPECT_NE(reader_error(j.dump()).find("modules[1] has the root's name \"\" but is not the root"),
            std::string::npos)
      << reader_error(j.dump());
  j = nlohmann::json::parse(good);
  j["modules"][3]["name"] = "enc";
  EXPECT_NE(reader_error(j.dump()).find("modules[3]: \"enc\" is the name of modules[1] too"),
            std::string::npos)
      << reader_error(j.dump());
  j = nlohmann::json::parse(good);
  j["modules"][2]["parent"] = "dec";  // its depth places it under enc
  EXPECT_NE(reader_error(j.dump()).find("modules[2]: \"parent\" is \"dec\", but its depth places "
                                        "it under \"enc\""),
            std::string::npos)
      << reader_error(j.dump());
  j = nlohmann::json::parse(good);
  j["modules"][2]["latency_s"] = 1e308;
  EXPECT_NE(reader_error(j.dump()).find("not a number from 0 to 1e9"), std::string::npos);
}

TEST(DiffCommand, OptionsAreDecimalWithUnitsAndRenamesUnique) {
  const std::string dir = ::testing::TempDir();
  const std::string b = dir + "opt_base.json";
  std::ofstream(b) << to_json(base_profile());
  std::string out, err;
  for (const char* t : {"nan%", "inf%", "5", "1e400ms", "-5%", "0x10%"}) {
    err.clear();
    EXPECT_EQ(diff_command({b, b, "--threshold", t}, out, err), 2) << t;
    EXPECT_NE(err.find("write a percent (5%) or a latency with its unit"), std::string::npos)
        << err;
  }
  err.clear();
  EXPECT_EQ(diff_command({b, b, "--rename", "enc=a", "--rename", "enc=b"}, out, err), 2);
  EXPECT_NE(err.find("'enc' is renamed twice (to 'a' already)"), std::string::npos) << err;
  std::remove(b.c_str());
}

TEST(Gate, RuleValuesAreDecimalNumbers) {
  for (const char* bad : {"flops>0x10", "flops>inf", "flops>nan", "flops> 5", "flops>1e", "flops>.",
                          "flops>+", "flops>1e999"}) {
    EXPECT_THROW(parse_gate_rule(bad), Error) << bad;
  }
  EXPECT_DOUBLE_EQ(parse_gate_rule("flops>-2.5e3").value, -2500);
  EXPECT_DOUBLE_EQ(parse_gate_rule("flops>.5").value, 0.5);
}

TEST(DiffText, ControlCharactersInNamesReachNoTerminal) {
  ProfileResult b = base_profile();
  b.modules[3].name = "dec\x1b[2J\nfake line";
  b.modules[3].type =
      "Lin\x07"
      "ear";
  b.ops[0].name = "aten::\x1b]0;title\x07mm";
  const std::string text = format_diff_text(diff(b, b));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_NE(text.find("dec\\x1b[2J\\nfake line (Lin\\x07ear)"), std::string::npos) << text;
  // The workloads a file records: one line each in the header, whatever they hold.
  ProfileResult w = base_profile();
  w.workload.device = "cpu\x1b[2J\nFAKE LINE";
  w.workload.inputs = {"fp32[1]"};
  const std::string header = format_diff_text(diff(w, w));
  EXPECT_NE(header.find("cpu\\x1b[2J\\nFAKE LINE"), std::string::npos) << header;
  EXPECT_EQ(header.find("\nFAKE LINE"), std::string::npos) << header;
  const std::string report = format_text_report(b, ReportOptions{});
  EXPECT_EQ(report.find('\x1b'), std::string::npos);
  EXPECT_NE(report.find("(dec\\x1b[2J\\nfake line): Lin\\x07ear"), std::string::npos) << report;
}

// Outputs: checked before the profiles are read, written only when the diff finished, never over
// an input, and none when a rule cannot be checked.
TEST(DiffCommand, OutputsAreAllOrNoneAndNeverAnInput) {
  const std::string dir = ::testing::TempDir();
  const std::string b = dir + "diff_out_base.json", n = dir + "diff_out_new.json";
  std::ofstream(b) << to_json(base_profile());
  std::ofstream(n) << to_json(new_profile());
  const std::string json = dir + "diff_out.json", html = dir + "diff_out.html";
  std::remove(json.c_str());
  std::remove(html.c_str());
  std::string out, err;
  // memory.peak: neither profile tracked memory, so the rule cannot be checked
  EXPECT_EQ(
      diff_command({b, n, "--json", json, "--html", html, "--fail-if", "memory.peak>0"}, out, err),
      2);
  EXPECT_NE(err.find("cannot check memory.peak>0"), std::string::npos) << err;
  EXPECT_NE(err.find("no output file was written"), std::string::npos) << err;
  EXPECT_FALSE(std::ifstream(json).good());
  EXPECT_FALSE(std::ifstream(html).good());
  err.clear();
  EXPECT_EQ(diff_command({b, n, "--json", b}, out, err), 2);
  EXPECT_NE(err.find("it is BASE '" + b + "', which this run reads"), std::string::npos) << err;
  EXPECT_EQ(profile_from_json(to_json(base_profile())).result.flops,
            load_profile_json(b).result.flops);
  err.clear();
  EXPECT_EQ(diff_command({b, n, "--json", json, "--html", "/dev/full"}, out, err), 2);
  EXPECT_NE(err.find("(No space left on device); what reached it may be cut short; no output file "
                     "was written"),
            std::string::npos)
      << err;
  EXPECT_FALSE(std::ifstream(json).good());
  err.clear();
  EXPECT_EQ(diff_command({b, n, "--json", ""}, out, err), 2);
  EXPECT_NE(err.find("the path is empty"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(diff_command({b, n, "--depth", "2147483648"}, out, err), 2);
  EXPECT_NE(err.find("--depth '2147483648': give an integer from -1 to 1000000"), std::string::npos)
      << err;
  std::remove(b.c_str());
  std::remove(n.c_str());
}

TEST(CombineRuns, SpreadsOverRepeatedProfiles) {
  std::vector<ProfileResult> runs(3, base_profile());
  runs[1].modules[3].latency_s = 5e-3;
  runs[2].modules[3].latency_s = 4e-3;
  runs[1].modules[0].latency_s = 12e-3;
  const ProfileResult r = combine_runs(runs);
  EXPECT_EQ(r.workload.runs, 3u);
  EXPECT_EQ(r.modules[3].fwd_spread.samples, 3u);
  EXPECT_DOUBLE_EQ(r.modules[3].fwd_spread.min_s, 3e-3);
  EXPECT_DOUBLE_EQ(r.modules[3].fwd_spread.median_s, 4e-3);
  EXPECT_DOUBLE_EQ(r.modules[3].fwd_spread.max_s, 5e-3);
  EXPECT_DOUBLE_EQ(r.fwd_spread.median_s, 10e-3);
  EXPECT_DOUBLE_EQ(r.modules[3].latency_s, 3e-3);  // the first run's numbers
  runs[2].modules[4].name = "other";
  EXPECT_THROW(combine_runs(runs), Error);
  EXPECT_THROW(combine_runs({}), Error);
}

}  // namespace
}  // namespace flopsprof
