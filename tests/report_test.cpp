// Aggregation and report tests on synthetic events: attribution rules, calls, latency, ignored
// modules, the text report line by line, and the JSON schema.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

#include "aggregation/aggregate.h"
#include "flopsprof/report.h"
#include "records/gpu.h"
#include "reports/report_sweep.h"
#include "reports/trace.h"
#include "test_names.h"

namespace flopsprof::detail {
namespace {

using testing::Names;

// Net
//   enc: Encoder
//     fc1: Linear (10 params)
//     fc2: Linear (20 params)
//   head: Linear (5 params)
ModuleTree make_tree() {
  ModuleTree t;
  auto add = [&](std::string name, std::string type, int parent, uint64_t params) {
    ModuleNode n;
    n.name = std::move(name);
    n.type = std::move(type);
    n.parent = parent;
    n.params = params;
    n.tensors = params;  // any non-zero count: the module holds parameters
    t.nodes.push_back(n);
  };
  add("", "Net", -1, 35);
  add("enc", "Encoder", 0, 30);
  add("enc.fc1", "Linear", 1, 10);
  add("enc.fc2", "Linear", 1, 20);
  add("head", "Linear", 0, 5);
  t.params = 35;
  t.owner_sets = {{2}, {3}, {4}, {2, 4}};  // owner set 3: a weight tied between fc1 and head
  t.finalize();
  return t;
}

struct Builder {
  Names& names;
  ThreadEvents th;
  int64_t clock = 0;

  // An mm of [m,k] x [k,n] (2*m*n*k FLOPs) taking `dur` ns.
  int mm(int64_t m, int64_t k, int64_t n, int owner = -1, int scope = -1, int parent = -1,
         int64_t dur = 10) {
    RawEvent e;
    e.name_id = names.id("aten::mm");
    e.flags = kCounted;
    e.owner = owner;
    e.scope = scope;
    e.parent = parent;
    e.args_begin = static_cast<uint32_t>(th.args.size());
    e.args_count = 2;
    for (auto [a, b] : {std::pair{m, k}, std::pair{k, n}}) {
      ArgRecord r;
      r.kind = ArgKind::kTensor;
      r.dtype = DType::kFloat32;
      r.count = 2;
      r.offset = th.dims.size();
      th.dims.push_back(a);
      th.dims.push_back(b);
      th.args.push_back(r);
    }
    return push(e, dur);
  }
  // An op with no formula (or `flags` as given).
  int op(const std::string& name, int owner = -1, int scope = -1, int parent = -1, int64_t dur = 10,
         uint8_t flags = 0) {
    RawEvent e;
    e.name_id = names.id(name);
    e.flags = flags;
    e.owner = owner;
    e.scope = scope;
    e.parent = parent;
    return push(e, dur);
  }
  int push(RawEvent e, int64_t dur) {
    e.start_tick = clock;
    e.end_tick = clock + dur;
    clock += dur;
    th.events.push_back(e);
    return static_cast<int>(th.events.size() - 1);
  }
  int scope(int module, int64_t enter, int64_t exit, int parent = -1) {
    th.scopes.push_back(ScopeRecord{module, parent, enter, exit, false});
    return static_cast<int>(th.scopes.size() - 1);
  }
};

AggregateInput input_of(const ModuleTree& tree, std::vector<const ThreadEvents*> threads,
                        Names& names, const MachinePeaks& machine = {},
                        int64_t stop_tick = 1000000) {
  AggregateInput in;
  in.machine = machine;
  in.tree = &tree;
  in.threads = std::move(threads);
  in.names = &names;
  in.stop_tick = stop_tick;
  in.timer = "test";
  return in;
}

ProfileResult run(const ModuleTree& tree, std::vector<const ThreadEvents*> threads, Names& names,
                  const MachinePeaks& machine = {}) {
  return aggregate(input_of(tree, std::move(threads), names, machine));
}

const ModuleStats& mod(const ProfileResult& r, const std::string& name) {
  for (const ModuleStats& m : r.modules) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no module " + name);
}

TEST(Attribution, OwnershipAttributesToOwnerAndItsAncestors) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(2, 3, 4, /*owner=*/0);  // fc1: 2*2*4*3 = 48 FLOPs
  b.mm(1, 5, 5, /*owner=*/2);  // head: 2*1*5*5 = 50 FLOPs
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(mod(r, "enc.fc1").flops, 48u);
  EXPECT_EQ(mod(r, "enc.fc1").macs, 24u);
  EXPECT_EQ(mod(r, "enc").flops, 48u);
  EXPECT_EQ(mod(r, "head").flops, 50u);
  EXPECT_EQ(mod(r, "").flops, 98u);
  EXPECT_EQ(r.flops, 98u);
  EXPECT_EQ(r.flops_by_dtype[static_cast<size_t>(DType::kFloat32)], 98u);
}

TEST(Attribution, ExplicitScopeWinsOverAnOwnerOutsideIt) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int head_scope = b.scope(/*module=*/4, 0, 100);
  b.mm(1, 5, 5, /*owner=*/0 /* fc1's weight */, head_scope);   // fc1 is not inside head: head
  b.mm(1, 5, 5, /*owner=*/3 /* tied fc1+head */, head_scope);  // head owns it too, inside: head
  int enc_scope = b.scope(/*module=*/1, 100, 200);
  b.mm(1, 5, 5, /*owner=*/0, enc_scope);   // fc1 is inside enc: fc1
  b.mm(1, 5, 5, /*owner=*/-1, enc_scope);  // no owner: the scope
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(mod(r, "head").flops, 100u);
  EXPECT_EQ(mod(r, "enc.fc1").flops, 50u);
  EXPECT_EQ(mod(r, "enc").flops, 100u);
}

TEST(Attribution, TiedWeightWithoutScopeGoesToTheFirstOwner) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(1, 5, 5, /*owner=*/3);
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(mod(r, "enc.fc1").flops, 50u);
  EXPECT_EQ(mod(r, "head").flops, 0u);
}

TEST(Attribution, UnownedOpsGoToTheCommonAncestorOfTheirNeighbours) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(1, 1, 1, /*owner=*/0);  // fc1
  b.op("aten::cumsum");        // between fc1 and fc2 -> enc
  b.mm(1, 1, 1, /*owner=*/1);  // fc2
  b.op("aten::cumsum");        // between fc2 and head -> root
  b.mm(1, 1, 1, /*owner=*/2);  // head
  b.op("aten::cumsum");        // nothing after -> root
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(mod(r, "enc").na_ops, 1u);
  EXPECT_EQ(mod(r, "enc.fc1").na_ops, 0u);
  EXPECT_EQ(mod(r, "").na_ops, 3u);
}

TEST(Attribution, NestedOpsInheritTheirParentsModuleAndAreNotCountedTwice) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int outer = b.mm(2, 2, 2, /*owner=*/2, -1, -1, 100);
  b.th.events[outer].end_tick = 100;
  b.clock = 10;
  b.mm(2, 2, 2, -1, -1, outer, 20);  // nested inside a counted op
  b.th.events.back().flags = kUnderCounted;
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(r.flops, 16u);  // 2*2*2*2 once
  EXPECT_EQ(mod(r, "head").flops, 16u);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].calls, 1u);
}

TEST(Attribution, OpsWithoutFormulaAreListedWithTimeNeverAsZero) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int lstm = b.op("aten::lstm", /*owner=*/0, -1, -1, 100);  // no formula, 100 ns
  b.clock = 0;
  b.mm(1, 1, 1, -1, -1, lstm, 30);  // a counted child: 30 ns of the 100 are covered
  b.clock = 100;
  ProfileResult r = run(tree, {&b.th}, names);
  const OpStats* lstm_stats = nullptr;
  for (const OpStats& op : r.ops) {
    if (op.name == "aten::lstm") lstm_stats = &op;
  }
  ASSERT_NE(lstm_stats, nullptr);
  EXPECT_FALSE(lstm_stats->has_formula);
  EXPECT_EQ(lstm_stats->calls, 1u);
  EXPECT_DOUBLE_EQ(lstm_stats->latency_s, 100e-9);
  EXPECT_DOUBLE_EQ(lstm_stats->uncovered_s, 70e-9);
  EXPECT_DOUBLE_EQ(r.no_formula_s, 70e-9);
  EXPECT_EQ(mod(r, "enc.fc1").flops, 2u);  // the child inherits the lstm's owner
}

TEST(Calls, RunsOfConsecutiveOpsCountAsCallsAndSpansAsLatency) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.op("aten::t", 0, -1, -1, 5);  // fc1 call 1: 0..5
  b.mm(1, 1, 1, 0, -1, -1, 10);   // fc1: 5..15
  b.mm(1, 1, 1, 1, -1, -1, 10);   // fc2: 15..25
  b.mm(1, 1, 1, 0, -1, -1, 20);   // fc1 call 2: 25..45
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(mod(r, "enc.fc1").calls, 2u);
  EXPECT_DOUBLE_EQ(mod(r, "enc.fc1").latency_s, 35e-9);  // 15 + 20
  EXPECT_EQ(mod(r, "enc.fc2").calls, 1u);
  // enc's first child ran again: a new call of enc, 0..25 and 25..45. The root goes on: nothing
  // between shows that its forward returned.
  EXPECT_EQ(mod(r, "enc").calls, 2u);
  EXPECT_DOUBLE_EQ(mod(r, "enc").latency_s, 45e-9);
  EXPECT_EQ(mod(r, "").calls, 1u);
  EXPECT_DOUBLE_EQ(r.duration_s, 45e-9);
}

TEST(Calls, ScopedModulesCountScopeEntries) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int s1 = b.scope(1, 0, 30);
  b.mm(1, 1, 1, 0, s1);
  int s2 = b.scope(1, 40, 100);
  b.mm(1, 1, 1, 0, s2);
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(mod(r, "enc").calls, 2u);
  EXPECT_TRUE(mod(r, "enc").scoped);
  EXPECT_DOUBLE_EQ(mod(r, "enc").latency_s, 90e-9);
}

TEST(Calls, ThreadsAreProcessedIndependently) {
  Names names;
  ModuleTree tree = make_tree();
  Builder a{names}, b{names};
  a.mm(1, 1, 1, 0);
  b.mm(2, 2, 2, 2);
  ProfileResult r = run(tree, {&a.th, &b.th}, names);
  EXPECT_EQ(r.threads, 2u);
  EXPECT_EQ(mod(r, "enc.fc1").flops, 2u);
  EXPECT_EQ(mod(r, "head").flops, 16u);
  EXPECT_EQ(mod(r, "").calls, 2u);  // one run per thread
}

TEST(Ignore, IgnoredModulesFoldIntoTheirParent) {
  Names names;
  ModuleTree tree = make_tree();
  tree.nodes[3].ignored = true;  // enc.fc2
  tree.finalize();
  Builder b{names};
  b.mm(1, 1, 1, /*owner=*/1);
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(r.modules.size(), 4u);
  for (const ModuleStats& m : r.modules) EXPECT_NE(m.name, "enc.fc2");
  EXPECT_EQ(mod(r, "enc").flops, 2u);
  EXPECT_EQ(mod(r, "enc").children.size(), 1u);
}

TEST(Aggregate, FormulaOverflowIsReportedNotWrapped) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(1ll << 22, 1ll << 22, 1ll << 22, 0);
  ProfileResult r = run(tree, {&b.th}, names);
  EXPECT_EQ(r.flops, 0u);
  bool reported = false;
  for (const std::string& p : r.problems)
    reported = reported || p.find("overflows 64 bits") != std::string::npos;
  EXPECT_TRUE(reported);
}

// ---- Formatting and the text report ---------------------------------------------------------

TEST(Format, NumbersWithUnits) {
  EXPECT_EQ(number_to_string(8.21e9), "8.21 G");
  EXPECT_EQ(macs_to_string(4090000000ull), "4.09 GMACs");
  EXPECT_EQ(macs_to_string(512), "512 MACs");
  EXPECT_EQ(flops_to_string(8210000000ull), "8.21 G");
  EXPECT_EQ(params_to_string(109514298), "109.51 M");
  EXPECT_EQ(duration_to_string(0.12053), "120.53 ms");
  EXPECT_EQ(duration_to_string(2.5), "2.50 s");
  EXPECT_EQ(duration_to_string(42e-6), "42.00 us");
  EXPECT_EQ(flops_per_second_to_string(1.2345e12), "1.23 TFLOPS");
  // A count followed by its unit: no space after a scale letter, one after a plain number.
  EXPECT_EQ(number_to_string(1.5e9, "B/s"), "1.50 GB/s");
  EXPECT_EQ(number_to_string(12.0, "FLOPs"), "12 FLOPs");
  EXPECT_EQ(number_to_string(12.0, ""), "12");
  EXPECT_EQ(number_to_string(2.5, "B"), "2.50 B");
}

ProfileResult small_result() {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int s = b.scope(0, 0, 4000000);
  b.clock = 0;
  b.mm(100, 100, 100, 0, s, -1, 1000000);   // fc1: 2e6 FLOPs in 1 ms
  b.mm(100, 100, 50, 1, s, -1, 2000000);    // fc2: 1e6 FLOPs in 2 ms
  b.op("aten::cumsum", -1, s, -1, 500000);  // root, no formula, 0.5 ms
  b.mm(10, 100, 10, 2, s, -1, 500000);      // head: 2e4 FLOPs in 0.5 ms
  // Ceilings: 100 GFLOP/s and 10 GB/s (ridge point 10 FLOP/B), as a user would give them.
  MachinePeaks m;
  m.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 100e9;
  m.bytes_per_s = 10e9;
  m.flops_source = m.bandwidth_source = "given";
  ProfileResult r = run(tree, {&b.th}, names, m);
  r.param_bytes_by_dtype[static_cast<size_t>(DType::kFloat32)] = 140;
  r.trainable_params = 35;
  return r;
}

// A module above the peak while the op rows are not (koba-jon/pytorch_cpp's YOLOv3: fast 3x3
// convolutions in one layer, slow ones elsewhere, so aten::conv2d's row averaged 33-57% while
// layers showed 256%): the problem names the module.
TEST(Problems, AModuleAboveThePeakIsSaidWhenNoOpRowIs) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(1000, 1000, 1000, /*owner=*/0, -1, -1, 1200000);  // fc1: 2e9 FLOPs in 1.2 ms: 1.67 TFLOP/s
  for (int i = 0; i < 9; ++i)
    b.mm(1, 1, 1, /*owner=*/1, -1, -1, 1000000);  // fc2: 9 x 2 FLOPs, 9 ms
  // 1 TFLOP/s and 100 GB/s (ridge 10 FLOP/B): the mm row, 2e9 + 18 FLOPs in 10.2 ms (196 GFLOP/s,
  // 20%), and fc1 (2e9 FLOPs over 12 MB: 167 FLOP/B) are compute-bound; fc1 at 167%.
  MachinePeaks m;
  m.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 1e12;
  m.bytes_per_s = 100e9;
  m.flops_source = m.bandwidth_source = "given";
  const ProfileResult r = run(tree, {&b.th}, names, m);
  std::string said;
  for (const std::string& p : r.problems) {
    if (p.rfind("roofline: ", 0) == 0) said += p;
  }
  EXPECT_EQ(said,
            "roofline: 1 module(s) ran above the peak FLOP/s (more than 10% over; marked "
            "above_ceiling): the worst, 'enc.fc1' (Linear) in its forward at 167% of the peak "
            "FLOP/s (1000 GFLOP/s, given); the likely causes: the peak given is lower than this "
            "machine reaches");
  // marked in the module's roofline point (the JSON's above_ceiling), not in the mm row's
  EXPECT_TRUE(r.modules[2].roofline.above_ceiling) << r.modules[2].name;
  for (const OpStats& op : r.ops) EXPECT_FALSE(op.roofline.above_ceiling) << op.name;
  // The same work at a peak it cannot beat: nothing said
  m.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 10e12;
  for (const std::string& p : run(tree, {&b.th}, names, m).problems) {
    EXPECT_EQ(p.rfind("roofline: ", 0), std::string::npos) << p;
  }
}

// The HTML page's own data (report_html_data.cpp), as its script reads it.
nlohmann::json page_data(const ProfileResult& r) {
  const std::string html = to_html(r);
  const std::string open = "<script type=\"application/json\" id=\"flopsprof-page\">";
  const size_t a = html.find(open);
  if (a == std::string::npos) return nullptr;
  std::string data = html.substr(a + open.size(), html.find("</script>", a) - a - open.size());
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"\\u003c", "<"}, {"\\u003e", ">"}, {"\\u0026", "&"}}) {
    for (size_t k; (k = data.find(from)) != std::string::npos;) data.replace(k, from.size(), to);
  }
  return nlohmann::json::parse(data);
}

// Issue 45: the numbers on top of the counts come from one place (the aggregation); the text, the
// JSON and the HTML page show them, never recompute them. For every module of one profile, each
// number the text's tree line shows is the JSON's value in the text's format, and the HTML page's
// data is that JSON.
TEST(Reports, TextJsonAndHtmlShowTheSameNumbersForEveryModule) {
  const ProfileResult r = small_result();
  const std::string text = format_text_report(r, ReportOptions{});
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  auto traffic = [](uint64_t b) {  // the text's bytes: decimal units, as bandwidth is
    const std::string s = number_to_string(static_cast<double>(b));
    return s + (s.back() >= 'A' && s.back() <= 'Z' ? "B" : " B");
  };
  size_t checked = 0;
  for (const auto& m : j["modules"]) {
    const std::string name = m["name"];
    const std::string head = name.empty() ? m["type"].get<std::string>() + "("
                                          : "(" + name.substr(name.rfind('.') + 1) +
                                                "): " + m["type"].get<std::string>() + "(";
    const size_t at = text.find(head, text.find("Detailed Profile"));
    ASSERT_NE(at, std::string::npos) << head;
    // a parent's numbers are on the line after its head
    size_t from = at + head.size();
    if (text[from] == '\n') ++from;
    const std::string line = text.substr(from, text.find('\n', from) - from);
    const std::vector<std::string> want = {
        params_to_string(m["params"].get<uint64_t>()) + " = ",
        macs_to_string(m["macs"].get<uint64_t>()) + " = ",
        duration_to_string(m["latency_s"].get<double>()) + " = ",
        flops_per_second_to_string(m["achieved_flops_per_s"].get<double>()),
        traffic(m["bytes"].get<uint64_t>()) + " moved",
        fmt::format("{:.2f} FLOP/B", m["intensity"].get<double>()),
        fmt::format("{} {:.1f}%", m["bound"].get<std::string>(),
                    100 * m["roofline_share"].get<double>())};
    for (const std::string& w : want)
      EXPECT_NE(line.find(w), std::string::npos) << w << " in\n" << line;
    ++checked;
  }
  EXPECT_EQ(checked, r.modules.size());
  // The HTML page's data: each module's cells are the JSON's values and their texts in the same
  // formatters (its script formats nothing but axis ticks), and each summary box names the JSON
  // key of its value.
  const nlohmann::json page = page_data(r);
  std::map<std::string, size_t> col;
  for (size_t c = 0; c < page["columns"].size(); ++c) col[page["columns"][c]["id"]] = c;
  ASSERT_EQ(page["modules"].size(), j["modules"].size());
  for (size_t i = 0; i < j["modules"].size(); ++i) {
    const auto& m = j["modules"][i];
    const auto& cells = page["modules"][i]["cells"];
    auto shows = [&](const char* id, const nlohmann::json& value, const std::string& shown) {
      EXPECT_EQ(cells[col.at(id)][0], value) << id << " of " << m["name"];
      EXPECT_EQ(cells[col.at(id)][1], shown) << id << " of " << m["name"];
    };
    shows("params", m["params"], params_to_string(m["params"].get<uint64_t>()));
    shows("macs", m["macs"], number_to_string(m["macs"].get<double>()));
    shows("flops", m["flops"], number_to_string(m["flops"].get<double>()));
    shows("latency_s", m["latency_s"], duration_to_string(m["latency_s"].get<double>()));
    shows("rate", m["achieved_flops_per_s"],
          number_to_string(m["achieved_flops_per_s"].get<double>()));
    shows("bytes", m["bytes"], traffic(m["bytes"].get<uint64_t>()));
    shows("intensity", m["intensity"], fmt::format("{:.2f}", m["intensity"].get<double>()));
    shows("bound", m["bound"], m["bound"].get<std::string>());
    shows("roofline_share", m["roofline_share"],
          fmt::format("{:.1f}%", 100 * m["roofline_share"].get<double>()));
  }
  size_t keyed = 0;
  for (const auto& item : page["summary"]) {
    const std::string key = item["key"];
    if (key.empty()) continue;
    nlohmann::json at = j;  // a summary key, or a path from the top ("machine.peak_bytes_per_s")
    if (key.find('.') == std::string::npos) at = at["summary"];
    for (size_t from = 0, dot; from <= key.size(); from = dot + 1) {
      dot = std::min(key.find('.', from), key.size());
      at = at.at(key.substr(from, dot - from));
    }
    EXPECT_EQ(item["value"], at) << key;
    ++keyed;
  }
  EXPECT_GE(keyed, 8u);
}

// A bf16 model on a machine with an fp32 peak only (a GPU's device properties give fp32's): the
// page's peak box stands for the fp32 peak the JSON lists, not for a bf16 key it does not have.
TEST(Reports, ThePagesPeakBoxNamesAKeyTheJsonHas) {
  ProfileResult r = small_result();
  r.dtype = DType::kBFloat16;
  r.machine.flops_per_s = {};
  r.machine.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 50e12;
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  const nlohmann::json page = page_data(r);
  size_t peaks = 0;
  for (const auto& item : page["summary"]) {
    const std::string key = item["key"];
    if (key.rfind("machine.peak_flops_per_s.", 0) != 0) continue;
    ++peaks;
    const std::string dtype = key.substr(key.rfind('.') + 1);
    ASSERT_TRUE(j["machine"]["peak_flops_per_s"].contains(dtype)) << key;
    EXPECT_EQ(item["value"], j["machine"]["peak_flops_per_s"][dtype]);
    EXPECT_EQ(item["value"].get<double>(), 50e12);
  }
  EXPECT_EQ(peaks, 1u);
}

// The shares the text shows are the aggregation's, each computed once: by hand from make_tree()
// and small_result() (params 35, 30, 10, 20, 5; MACs fc1 100x100x100, fc2 100x100x50, head
// 10x100x10; latencies 4, 3, 1, 2, 0.5 ms; cumsum, no formula, 0.5 ms of the root's 4), and the
// JSON carries the same numbers (the text's lines: TextReport.MatchesLineByLine).
TEST(Reports, SharesAreComputedOnceInAggregation) {
  const ProfileResult r = small_result();
  ASSERT_EQ(r.modules.size(), 5u);  // "", enc, enc.fc1, enc.fc2, head
  const double macs[5] = {1e6 + 5e5 + 1e4, 1e6 + 5e5, 1e6, 5e5, 1e4};
  const double params[5] = {35, 30, 10, 20, 5};
  const double latency_ms[5] = {4, 3, 1, 2, 0.5};
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  for (size_t m = 0; m < 5; ++m) {
    const ModuleStats& x = r.modules[m];
    EXPECT_NEAR(x.params_share, params[m] / 35, 1e-12) << x.name;
    EXPECT_NEAR(x.macs_share, macs[m] / macs[0], 1e-12) << x.name;
    EXPECT_NEAR(x.latency_share, latency_ms[m] / 4, 1e-9) << x.name;
    EXPECT_DOUBLE_EQ(j["modules"][m]["params_share"].get<double>(), x.params_share);
    EXPECT_DOUBLE_EQ(j["modules"][m]["macs_share"].get<double>(), x.macs_share);
    EXPECT_DOUBLE_EQ(j["modules"][m]["latency_share"].get<double>(), x.latency_share);
  }
  EXPECT_EQ(r.no_formula_ops, 1u);
  EXPECT_EQ(r.no_formula_calls, 1u);
  EXPECT_EQ(r.no_formula_ops_elsewhere, 0u);
  EXPECT_NEAR(r.no_formula_share, 0.5 / 4, 1e-9);
  EXPECT_DOUBLE_EQ(j["summary"]["no_formula_share"].get<double>(), r.no_formula_share);
  EXPECT_EQ(r.inferred_flops_share, 0.0);  // every op placed by evidence
  // 2*100*100*100 + 2*100*100*50 + 2*10*100*10 FLOPs in 4 ms, over 100 GFLOP/s
  EXPECT_NEAR(r.fwd_flops_of_peak, (2e6 + 1e6 + 2e4) / 4e-3 / 100e9, 1e-12);
  EXPECT_NEAR(r.fwd_bytes_of_peak, static_cast<double>(r.fwd_bytes) / 4e-3 / 10e9, 1e-12);
  EXPECT_DOUBLE_EQ(j["summary"]["fwd_flops_of_peak"].get<double>(), r.fwd_flops_of_peak);
  EXPECT_TRUE(j["summary"]["bwd_flops_of_peak"].is_null());  // no backward: no rate
  // The op rows' share of their phase's time (the page's column): the three mm calls' 3.5 ms and
  // the cumsum's 0.5 ms of the forward's 4.
  for (const OpStats& op : r.ops) {
    EXPECT_NEAR(op.phase_share, op.name == "aten::mm" ? 3.5 / 4 : 0.5 / 4, 1e-9) << op.name;
  }
  ASSERT_EQ(r.ops.size(), 2u);
}

// The modules summed by depth and type are computed in aggregation; the JSON carries them and the
// text's aggregated profile only picks the top ones. By hand from make_tree() and small_result():
// fc1 100x100x100 = 1e6 MACs in 1 ms, fc2 100x100x50 = 5e5 in 2 ms, head 10x100x10 = 1e4 in 0.5 ms.
TEST(TextReport, ModuleTypesAreSummedInAggregation) {
  const ProfileResult r = small_result();
  struct Row {
    int depth;
    std::string type;
    uint64_t modules, params, macs;
    double latency_s;
  };
  const std::vector<Row> expected = {
      {0, "Net", 1, 35, 1000000 + 500000 + 10000, 4e-3},
      {1, "Encoder", 1, 30, 1000000 + 500000, 3e-3},             // first at depth 1 in tree order
      {1, "Linear", 1, 5, 10000, 0.5e-3},                        // head
      {2, "Linear", 2, 10 + 20, 1000000 + 500000, 1e-3 + 2e-3},  // fc1 and fc2
  };
  ASSERT_EQ(r.module_types.size(), expected.size());
  const nlohmann::json j = nlohmann::json::parse(to_json(r))["module_types"];
  ASSERT_EQ(j.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const ModuleTypeStats& g = r.module_types[i];
    EXPECT_EQ(g.depth, expected[i].depth) << i;
    EXPECT_EQ(g.type, expected[i].type) << i;
    EXPECT_EQ(g.modules, expected[i].modules) << i;
    EXPECT_EQ(g.params, expected[i].params) << i;
    EXPECT_EQ(g.macs, expected[i].macs) << i;
    EXPECT_NEAR(g.latency_s, expected[i].latency_s, 1e-12) << i;
    EXPECT_EQ(j[i]["depth"].get<int>(), g.depth) << i;
    EXPECT_EQ(j[i]["type"].get<std::string>(), g.type) << i;
    EXPECT_EQ(j[i]["modules"].get<uint64_t>(), g.modules) << i;
    EXPECT_EQ(j[i]["params"].get<uint64_t>(), g.params) << i;
    EXPECT_EQ(j[i]["fwd_macs"].get<uint64_t>(), g.macs) << i;
    EXPECT_DOUBLE_EQ(j[i]["fwd_latency_s"].get<double>(), g.latency_s) << i;
  }
}

TEST(TextReport, MatchesLineByLine) {
  std::string text = format_text_report(small_result(), ReportOptions{7, -1, 2, true});
  std::vector<std::string> expected = {
      "-------------------------- flopsprof: Flops Profiler --------------------------",
      "Profile Summary at step 7:",
      "Notations:",
      "data parallel size (dp_size), model parallel size (mp_size),",
      "number of parameters (params), number of multiply-accumulate operations (MACs),",
      "number of floating-point operations (flops), floating-point operations per second (FLOPS),",
      "fwd latency (forward propagation latency), bwd latency (backward propagation latency),",
      "step (weights update latency), iter latency (sum of fwd, bwd and step latency)",
      "",
      "world size:                                                   1",
      "data parallel size:                                           1",
      "model parallel size:                                          1",
      "batch size per device:                                        n/a",
      "params per device:                                            35",
      "params of model = params per device * mp_size:                35",
      "trainable params per device:                                  35",
      "params size (fp32):                                           0.00 MiB",
      "fwd MACs per device:                                          1.51 MMACs",
      "fwd flops per device:                                         3.02 M",
      "fwd flops of model = fwd flops per device * mp_size:          3.02 M",
      "fwd latency:                                                  4.00 ms",
      "fwd FLOPS per device = fwd flops per device / fwd latency:    755.00 MFLOPS",
      // bytes: 120,000 (fc1) + 80,000 (fc2) + 8,400 (head), the cumsum's unknown (see the JSON
      // test); 3.02e6 / 208,400 = 14.49 FLOP/B over a ridge of 10: compute-bound, at 755 MFLOP/s
      // 0.8% of 100 GFLOP/s; 208,400 B / 4 ms = 52.1 MB/s = 0.5% of 10 GB/s
      "fwd bytes moved (read + written):                             208.40 KB (148.00 KB read, "
      "60.40 KB written)",
      "fwd arithmetic intensity (flops / byte):                      14.49 FLOP/B, compute-bound, "
      "0.8% of the peak FLOPS",
      "machine peak FLOPS (fp32):                                    100.00 GFLOPS (given)",
      "machine peak memory bandwidth:                                10.00 GB/s (given)",
      "machine ridge point (fp32):                                   10.00 FLOP/B",
      "fwd utilisation (achieved / peak):                            0.8% of peak FLOPS, 0.5% of "
      "the bandwidth",
      // No backward, one dtype: MFU and MBU are the forward's shares above; HFU is MFU (no
      // recompute, no masks).
      "MFU / HFU / MBU (fwd, per-dtype peaks):                       0.8% / 0.8% / 0.5% (model "
      "FLOPs in the dense convention; HFU: as the hardware ran them, recompute included)",
      "op calls whose written bytes no rule derives:                 1 (counted as reads only, or "
      "from allocations with track_memory): aten::cumsum 1",
      "fwd ops without a formula (n/a, not counted):                 1 op(s), 1 call(s), 500.00 us "
      "= 12.50% of fwd latency",
      // the cumsum follows enc.fc2: the Encoder's call ends there by inference (a user module), so
      // the cumsum may be its last op or the root's
      "fwd ops placed by inference (op order):                       1 op(s), 0 FLOPs = 0.00% of "
      "fwd flops, 0 B = 0.00% of fwd bytes (see problems)",
      "timer:                                                        test",
      "",
      "Ops without a formula (listed with their time and bytes; their FLOPs are n/a):",
      "    op                                           phase    calls         time    self time"
      "        bytes",
      "    aten::cumsum                               forward        1    500.00 us    500.00 us"
      "          0 B (writes unknown)",
      "",
      "Problems seen while profiling:",
      // the other side: enc.fc2 and enc (whose call end no evidence fixes) or head (whose start
      // none fixes) may have run it; their scopes decide, the model's (enclosing them) does not
      "    placement inferred from op order: 1 op(s), 0 FLOPs, 0 B given to the model (Net); op "
      "order cannot tell whether they are its own or the work of 'enc' (Encoder), 'enc.fc2' "
      "(Linear), "
      "'head' (Linear) (which may show too little). FLOPSPROF_MODULE() as the first line of the "
      "forward of 'enc' (Encoder), 'enc.fc2' (Linear), 'head' (Linear) makes them exact (a scope "
      "in the model (Net) alone does not)",
      "",
      "----------------------------- Aggregated Profile -----------------------------",
      "Top 2 modules in terms of params, MACs or fwd latency at different model depths:",
      "depth 0:",
      "    params      - {'Net': '35'}",
      "    MACs        - {'Net': '1.51 MMACs'}",
      "    fwd latency - {'Net': '4.00 ms'}",
      "depth 1:",
      "    params      - {'Encoder': '30', 'Linear': '5'}",
      "    MACs        - {'Encoder': '1.50 MMACs', 'Linear': '10.00 KMACs'}",
      "    fwd latency - {'Encoder': '3.00 ms', 'Linear': '500.00 us'}",
      "depth 2:",
      "    params      - {'Linear': '30'}",
      "    MACs        - {'Linear': '1.50 MMACs'}",
      "    fwd latency - {'Linear': '3.00 ms'}",
      "",
      "------------------------------ Detailed Profile ------------------------------",
      "Each module profile is listed after its name in the following order:",
      "params, percentage of total params, MACs, percentage of total MACs, fwd latency, percentage "
      "of total fwd latency, fwd FLOPS (with backward: bwd flops, bwd latency;",
      "and the call count when not 1)",
      "then the roofline: bytes moved (read + written), arithmetic intensity (FLOP/B), the",
      "ceiling that bounds it (memory, with the memory level its working sets fit, or",
      "compute) and the share of that ceiling reached (memory: of that level's bandwidth;",
      "compute: of the peak FLOPS; '!': above the ceiling, see problems); with backward, also",
      "for bwd",
      "",
      "Note: 1. Ops outside any submodule (functional calls in a parent's forward) make up the",
      "difference between a parent's MACs (or latency) and the sum of its submodules'.",
      "2. FLOPs are counted from formulas of the ops' shapes; FLOPS computed from them can",
      "exceed what the hardware sustains.",
      // the guess moved nothing and computed nothing (the cumsum's bytes are unknown): no mark of
      // zero magnitude in the tree, the problems list names it
      "",
      // fc1 16.67 FLOP/B at 2 GFLOP/s (2.0% of the peak); fc2 12.50 at 0.5 GFLOP/s (0.5%); head
      // 2e4 / 8,400 = 2.38 FLOP/B, below the ridge: 8,400 B in 0.5 ms = 16.8 MB/s, 0.2% of 10 GB/s
      "Net(",
      "  35 = 100.00% Params, 1.51 MMACs = 100.00% MACs, 4.00 ms = 100.00% latency, 755.00 MFLOPS, "
      "208.40 KB moved, 14.49 FLOP/B compute 0.8%",
      "  (enc): Encoder(",
      "    30 = 85.71% Params, 1.50 MMACs = 99.34% MACs, 3.00 ms = 75.00% latency, 1.00 GFLOPS, "
      "200.00 KB moved, 15.00 FLOP/B compute 1.0%",
      "    (fc1): Linear(10 = 28.57% Params, 1.00 MMACs = 66.23% MACs, 1.00 ms = 25.00% latency, "
      "2.00 GFLOPS, 120.00 KB moved, 16.67 FLOP/B compute 2.0%)",
      "    (fc2): Linear(20 = 57.14% Params, 500.00 KMACs = 33.11% MACs, 2.00 ms = 50.00% latency, "
      "500.00 MFLOPS, 80.00 KB moved, 12.50 FLOP/B compute 0.5%)",
      "  )",
      "  (head): Linear(5 = 14.29% Params, 10.00 KMACs = 0.66% MACs, 500.00 us = 12.50% latency, "
      "40.00 MFLOPS, 8.40 KB moved, 2.38 FLOP/B memory 0.2%)",
      ")",
      "",
      "------------------------------ Roofline per op ------------------------------",
      "Slowest ops with their bytes moved, intensity and the ceiling that bounds them:",
      "    op                                       phase   calls  "
      "      time      flops      bytes   FLOP/B          FLOPS    bound   share",
      // the three mm: 3.02e6 FLOPs in 3.5 ms = 862.86 MFLOP/s, 0.9% of the peak (the cumsum has
      // neither FLOPs nor bytes here: not listed)
      "    aten::mm                               forward       3  "
      "   3.50 ms     3.02 M  208.40 KB    14.49  862.86 MFLOPS  compute    0.9%",
      "------------------------------------------------------------------------------",
  };
  std::istringstream in(text);
  std::string line;
  size_t i = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(i, expected.size()) << "extra line: " << line;
    EXPECT_EQ(line, expected[i]) << "line " << i + 1;
    ++i;
  }
  EXPECT_EQ(i, expected.size());
}

TEST(TextReport, ModuleDepthLimitsTreeAndAggregation) {
  std::string text = format_text_report(small_result(), ReportOptions{1, 1, 1, true});
  EXPECT_EQ(text.find("depth 2:"), std::string::npos);
  EXPECT_EQ(text.find("(fc1)"), std::string::npos);
  EXPECT_NE(text.find("  (enc): Encoder(30 = 85.71% Params"), std::string::npos);
  std::string no_tree = format_text_report(small_result(), ReportOptions{1, -1, 1, false});
  EXPECT_EQ(no_tree.find("Detailed Profile"), std::string::npos);
}

TEST(TextReport, InvalidOptionsThrow) {
  EXPECT_THROW(format_text_report(small_result(), ReportOptions{1, -2, 1, true}), Error);
  EXPECT_THROW(format_text_report(small_result(), ReportOptions{1, -1, 0, true}), Error);
}

TEST(JsonReport, SchemaAndValues) {
  ProfileResult r = small_result();
  nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["workload"]["iterations"], r.modules[0].calls);
  EXPECT_EQ(j["summary"]["params"], 35);
  EXPECT_EQ(j["summary"]["fwd_flops"], 3020000);  // 2e6 + 1e6 + 2e4
  EXPECT_EQ(j["summary"]["fwd_macs"], 1510000);
  EXPECT_DOUBLE_EQ(j["summary"]["fwd_latency_s"].get<double>(), 0.004);
  EXPECT_EQ(j["summary"]["flops_by_dtype"]["fp32"], 3020000);
  ASSERT_EQ(j["modules"].size(), 5u);
  EXPECT_EQ(j["modules"][2]["name"], "enc.fc1");
  EXPECT_EQ(j["modules"][2]["type"], "Linear");
  EXPECT_EQ(j["modules"][2]["depth"], 2);
  EXPECT_EQ(j["modules"][2]["parent"], "enc");
  EXPECT_EQ(j["modules"][2]["flops"], 2000000);
  EXPECT_EQ(j["modules"][2]["calls"], 1);
  uint64_t child_sum = 0;
  for (const auto& m : j["modules"]) {
    if (m["depth"] == 1) child_sum += m["flops"].get<uint64_t>();
  }
  EXPECT_EQ(child_sum, 3020000u);  // the root has no flops of its own here
  bool found = false;
  for (const auto& op : j["ops"]) {
    if (op["name"] == "aten::cumsum") {
      found = true;
      EXPECT_FALSE(op["has_formula"].get<bool>());
      EXPECT_EQ(op["calls"], 1);
    }
  }
  EXPECT_TRUE(found);
  // Bytes (fp32): fc1 mm(100,100,100) reads 2 x 10,000 and writes 10,000 floats = 120,000 B;
  // fc2 mm(100,100,50) (10,000 + 5,000 + 5,000) * 4 = 80,000; head mm(10,100,10)
  // (1,000 + 1,000 + 100) * 4 = 8,400; the cumsum (no arguments recorded here) reads nothing
  // and writes what no rule derives: 0, counted as unknown.
  EXPECT_EQ(j["summary"]["fwd_bytes"], 208400);
  EXPECT_EQ(j["summary"]["fwd_bytes_read"], 148000);
  EXPECT_EQ(j["summary"]["fwd_bytes_written"], 60400);
  EXPECT_EQ(j["summary"]["bytes_written_unknown_calls"], 1);
  EXPECT_EQ(j["modules"][2]["bytes"], 120000);
  EXPECT_EQ(j["modules"][1]["bytes"], 200000);  // enc = fc1 + fc2
  EXPECT_EQ(j["modules"][0]["bytes"], 208400);
  // fc1: 2e6 FLOPs / 120,000 B = 16.67 FLOP/B > the ridge (10): compute-bound, 2 GFLOP/s of 100
  EXPECT_NEAR(j["modules"][2]["intensity"].get<double>(), 2e6 / 120000.0, 1e-9);
  EXPECT_EQ(j["modules"][2]["bound"], "compute");
  EXPECT_NEAR(j["modules"][2]["roofline_share"].get<double>(), 0.02, 1e-12);
  EXPECT_NEAR(j["modules"][2]["attainable_flops_per_s"].get<double>(), 100e9, 1e-3);
  // head: 2e4 / 8,400 = 2.38 FLOP/B: memory-bound; 8,400 B in 0.5 ms = 16.8 MB/s of 10 GB/s
  EXPECT_EQ(j["modules"][4]["bound"], "memory");
  EXPECT_NEAR(j["modules"][4]["roofline_share"].get<double>(), 16.8e6 / 10e9, 1e-12);
  EXPECT_NEAR(j["modules"][4]["attainable_flops_per_s"].get<double>(), 2e4 / 8400.0 * 10e9, 1e-3);
  EXPECT_TRUE(j["modules"][2]["bwd_bound"].is_null());  // no backward
  EXPECT_EQ(j["machine"]["peak_flops_per_s"]["fp32"].get<double>(), 100e9);
  EXPECT_EQ(j["machine"]["peak_bytes_per_s"].get<double>(), 10e9);
  EXPECT_EQ(j["machine"]["flops_source"], "given");
  EXPECT_EQ(j["summary"]["fwd_bound"], "compute");
  uint64_t op_bytes = 0;
  for (const auto& op : j["ops"]) {
    if (op["phase"] == "forward") op_bytes += op["bytes"].get<uint64_t>();
    if (op["name"] == "aten::mm") {
      EXPECT_EQ(op["bytes"], 208400);
      EXPECT_EQ(op["bound"], "compute");  // 3.02e6 / 208,400 = 14.5 FLOP/B
    }
    if (op["name"] == "aten::cumsum") {
      EXPECT_EQ(op["written_unknown_calls"], 1);
      EXPECT_TRUE(op["bound"].is_null()) << "FLOPs n/a: no bound";
    }
  }
  EXPECT_EQ(op_bytes, j["summary"]["fwd_bytes"].get<uint64_t>()) << "totals are the ops' sum";
}

TEST(JsonReport, StringsAreEscaped) {
  ProfileResult r = small_result();
  r.modules[1].name = "enc \"quoted\"\\path\n\ttab\x01";
  r.problems.push_back("a \"problem\"");
  for (int indent : {-1, 0, 2}) {
    nlohmann::json j = nlohmann::json::parse(to_json(r, indent));
    EXPECT_EQ(j["modules"][1]["name"], r.modules[1].name);
    EXPECT_EQ(j["modules"][2]["parent"], r.modules[1].name);
    EXPECT_EQ(j["problems"].back(), "a \"problem\"");
    EXPECT_TRUE(j["modules"][0]["parent"].is_null());
  }
}

// ---- GPU records (synthetic, as the CUPTI backend would deliver them) -------------------------

GpuRecord kernel(const char* name, int64_t start_us, int64_t dur_us, uint64_t ext,
                 uint32_t stream = 7) {
  GpuRecord k;
  k.name = name;
  k.start_ns = 1'000'000'000 + start_us * 1000;  // CUPTI's clock: any origin
  k.end_ns = k.start_ns + dur_us * 1000;
  k.stream = stream;
  k.external_id = ext;
  return k;
}

// Kernel workspace: a block freed before the op that allocated it returned (matched by address),
// reported apart from the peak of the tensors that outlive their op.
TEST(Memory, WorkspaceIsWhatAnOpFreesBeforeItReturns) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  const int conv = b.op("aten::conv2d", 0);              // [0, 10)
  const int add = b.op("aten::add", 2);                  // [10, 20)
  const int outer = b.op("aten::outer", 2, -1, -1, 20);  // [20, 40)
  const int inner = b.op("aten::inner", 2, -1, outer);   // [40, 50): nested in outer
  b.th.events[inner].start_tick = 22;
  b.th.events[inner].end_tick = 30;
  auto mem = [&](int64_t t, int op, uint64_t address, int64_t bytes) {
    MemRecord m;
    m.time_tick = t;
    m.op = op;
    m.address = address;
    m.bytes = bytes;
    b.th.memory.push_back(m);
  };
  mem(1, conv, 0xa1, 100);   // conv's output, freed by add: a tensor
  mem(2, conv, 0xa2, 50);    // conv's scratch buffer, freed by conv: workspace
  mem(3, conv, 0xa2, -50);   //   -> the peak (150) was at t=2, 50 of it workspace
  mem(11, add, 0xa3, 30);    // add's output
  mem(12, add, 0xa1, -100);  // conv's output freed by another op: not workspace
  mem(13, add, 0xa2, 10);    // the scratch buffer's address again, now a kept tensor
  mem(21, outer, 0xa4, 40);  // freed inside inner, while outer is still open: workspace
  mem(23, inner, 0xa5, 20);  // freed by outer after inner returned: a tensor
  mem(24, inner, 0xa4, -40);
  mem(31, outer, 0xa5, -20);
  mem(32, -1, 0xb0, -64);  // a tensor allocated before the profile: not matched
  AggregateInput in;
  in.tree = &tree;
  in.threads = {&b.th};
  in.names = &names;
  in.stop_tick = 1000;
  in.track_memory = true;
  ProfileResult r = aggregate(in);
  const MemoryStats& m = r.memory;
  ASSERT_TRUE(m.tracked);
  // in use after each record: 100 150 100 130 30 40 80 100 60 40 -24;
  // workspace in use:          0  50   0   0  0  0 40  40  0  0   0
  EXPECT_EQ(m.peak_bytes, 150);
  EXPECT_EQ(m.peak_op, "aten::conv2d");
  EXPECT_EQ(m.peak_workspace_bytes, 50);
  EXPECT_EQ(m.tensor_peak_bytes, 130);  // after add's output, before conv's is freed
  EXPECT_EQ(m.final_bytes, -24);
  nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["memory"]["peak_workspace_bytes"], 50);
  EXPECT_EQ(j["memory"]["tensor_peak_bytes"], 130);
  EXPECT_NE(
      format_text_report(r).find("memory peak of tensors (no kernel workspace):                 "
                                 "130 B (the peak above has 50 B of workspace)\n"),
      std::string::npos)
      << format_text_report(r);
}

TEST(GpuRecords, KernelsAreAttributedThroughTheLaunchingOp) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int op_fc1 = b.mm(4, 4, 4, /*owner=*/0);
  int op_head = b.mm(4, 4, 4, /*owner=*/2);
  GpuCollection g;
  g.backend = "cupti";
  g.device = "NVIDIA H100 80GB HBM3";
  g.gpu_origin_ns = 1'000'000'000;
  g.host_origin = 0;
  g.records = {kernel("sgemm_a", 0, 10, make_external_id(0, op_fc1)),
               kernel("bias_add", 10, 20, make_external_id(0, op_fc1)),
               kernel("sgemm_a", 40, 5, make_external_id(0, op_head)),
               kernel("memset", 50, 1, 0)};  // launched by nothing we saw
  AggregateInput in;
  in.tree = &tree;
  in.threads = {&b.th};
  in.names = &names;
  in.stop_tick = 1000;
  in.gpu = &g;
  // Each record's placement is decided once, by the analysis; the aggregation and the trace read
  // it.
  const Analysis a = analyze(in);
  ASSERT_EQ(a.device.size(), 4u);
  EXPECT_EQ(a.device[1].thread, 0);
  EXPECT_EQ(a.device[1].event, static_cast<uint32_t>(op_fc1));
  EXPECT_EQ(tree.nodes[a.device[1].module].name, "enc.fc1");
  EXPECT_EQ(tree.nodes[a.device[2].module].name, "head");
  EXPECT_EQ(a.device[2].phase, Phase::kForward);
  EXPECT_EQ(a.device[3].thread, -1);
  EXPECT_EQ(a.device[3].module, kUnlinked);
  TraceData trace;
  ProfileResult r = aggregate_with_trace(in, &trace);
  ASSERT_TRUE(r.gpu.measured);
  EXPECT_EQ(r.gpu.kernels, 4u);
  EXPECT_NEAR(r.gpu.busy_s, 36e-6, 1e-12);
  EXPECT_NEAR(r.gpu.span_s, 51e-6, 1e-12);  // 0 .. 51 us
  EXPECT_NEAR(r.gpu.unattributed_s, 1e-6, 1e-12);
  EXPECT_NEAR(mod(r, "enc.fc1").gpu_busy_s, 30e-6, 1e-12);
  EXPECT_NEAR(mod(r, "enc.fc1").gpu_span_s, 30e-6, 1e-12);
  EXPECT_NEAR(mod(r, "enc").gpu_busy_s, 30e-6, 1e-12);
  EXPECT_NEAR(mod(r, "head").gpu_busy_s, 5e-6, 1e-12);
  // per-module GPU time sums to the attributed total
  EXPECT_NEAR(mod(r, "").gpu_busy_s + r.gpu.unattributed_s, r.gpu.busy_s, 1e-12);
  ASSERT_EQ(r.gpu.top_kernels.size(), 3u);
  EXPECT_EQ(r.gpu.top_kernels[0].name, "bias_add");
  EXPECT_EQ(r.gpu.top_kernels[1].name, "sgemm_a");
  EXPECT_EQ(r.gpu.top_kernels[1].calls, 2u);
  ASSERT_EQ(mod(r, "").top_kernels.size(), 2u);
  // the report and JSON carry it
  std::string text = format_text_report(r);
  EXPECT_NE(text.find("GPU busy (sum of kernel times)"), std::string::npos);
  EXPECT_NE(text.find("GPU kernels per module"), std::string::npos);
  EXPECT_NE(text.find("enc.fc1 (Linear): 30.00 us GPU"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["gpu"]["kernels"], 4);
  EXPECT_NEAR(j["modules"][2]["gpu_busy_s"].get<double>(), 30e-6, 1e-12);
  // the trace: a GPU track per stream, kernels at host time, flows from the launching op
  nlohmann::json t = nlohmann::json::parse(to_chrome_trace(trace, {1}, TraceClock{0, 1.0}, 1, {}));
  int gpu_spans = 0, launches = 0;
  for (const auto& e : t["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if ((cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") && e["ph"] == "X") {
      ++gpu_spans;
      EXPECT_EQ(e["pid"], 2);
      EXPECT_EQ(e["tid"], 7);
    }
    if (e.value("name", "") == "launch" && e["ph"] == "s") {
      ++launches;
      EXPECT_EQ(e["pid"], 1);
    }
  }
  EXPECT_EQ(gpu_spans, 4);
  EXPECT_EQ(launches, 3);  // the unattributed memset has no launcher
}

// Kernels none of which could be linked to an op (CUPTI without its API records, seen on an
// H200): the modules have no device time, so their achieved rates and shares are unknown: the
// text says n/a and the JSON null where a share of 0.0% would be shown plain.
TEST(GpuRecords, ModulesWithoutLinkedKernelsHaveNoShare) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(64, 64, 64, /*owner=*/0);
  b.mm(64, 64, 64, /*owner=*/2);
  GpuCollection g;
  g.backend = "cupti";
  g.device = "NVIDIA H100 80GB HBM3";
  g.gpu_origin_ns = 1'000'000'000;
  g.records = {kernel("sgemm_a", 0, 10, 0), kernel("sgemm_a", 20, 10, 0)};  // linked to nothing
  MachinePeaks m;
  m.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 1e12;
  m.bytes_per_s = 100e9;
  m.flops_source = m.bandwidth_source = "given";
  AggregateInput in = input_of(tree, {&b.th}, names, m, 1000);
  in.gpu = &g;
  ProfileResult r = aggregate(in);
  ASSERT_TRUE(r.gpu.measured);
  EXPECT_NEAR(r.gpu.unattributed_s, 20e-6, 1e-12);
  const ModuleStats& fc1 = mod(r, "enc.fc1");
  EXPECT_EQ(fc1.gpu_busy_s, 0.0);
  EXPECT_EQ(fc1.roofline.bound, "compute");  // 2*64^3 FLOPs over 3 x 64 x 64 x 4 B: 10.7 FLOP/B
  EXPECT_FALSE(fc1.roofline.timed);
  std::string text = format_text_report(r);
  const size_t row = text.find("(fc1): Linear(");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find("compute n/a"), std::string::npos) << line;
  EXPECT_EQ(line.find("0.0%"), std::string::npos) << line;
  nlohmann::json j = nlohmann::json::parse(to_json(r));
  for (const auto& m : j["modules"]) EXPECT_TRUE(m["roofline_share"].is_null()) << m["name"];
  // A measured time gives a share again (the same point with 1 ms)
  EXPECT_TRUE(roofline_point(1000, true, 100, 1e-3, in.machine, DType::kFloat32).timed);
}

// A CUDA model's fp32 work on TF32 tensor cores (cuDNN's convolutions by default, cuBLAS's
// products when allowed): counted in tf32, against the TF32 peak, where it showed 59% of the fp32
// peak for TF32 convolutions on an H200 (and could pass 100%).
TEST(Tf32, Fp32ProductsOnTensorCoresAreCountedInTf32AgainstItsPeak) {
  EXPECT_EQ(tf32_family("aten::mm"), Tf32Family::kCublas);
  EXPECT_EQ(tf32_family("aten::linear"), Tf32Family::kCublas);
  EXPECT_EQ(tf32_family("aten::convolution"), Tf32Family::kCudnn);
  EXPECT_EQ(tf32_family("aten::cudnn_convolution"), Tf32Family::kCudnn);
  EXPECT_EQ(tf32_family("aten::convolution_backward"), Tf32Family::kCudnn);
  EXPECT_EQ(tf32_family("aten::_cudnn_rnn"), Tf32Family::kCudnn);
  EXPECT_EQ(tf32_family("aten::mv"), Tf32Family::kNone);
  EXPECT_EQ(tf32_family("aten::_scaled_dot_product_efficient_attention"), Tf32Family::kNone);

  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  b.mm(100, 100, 100, /*owner=*/0, -1, -1, 1000);  // fc1: 2e6 FLOPs in 1 us: 2 TFLOP/s
  MachinePeaks m;
  m.flops_per_s[static_cast<size_t>(DType::kFloat32)] = 1e12;
  m.flops_per_s[static_cast<size_t>(DType::kTFloat32)] = 8e12;
  m.bytes_per_s = 1e15;
  m.flops_source = m.bandwidth_source = "given";
  AggregateInput in = input_of(tree, {&b.th}, names, m);
  // Not allowed (cuBLAS's default): fp32, at 200% of the fp32 peak, flagged
  ProfileResult fp32 = aggregate(in);
  EXPECT_EQ(mod(fp32, "enc.fc1").dtype, DType::kFloat32);
  EXPECT_NEAR(mod(fp32, "enc.fc1").roofline.share, 2.0, 1e-9);
  EXPECT_TRUE(mod(fp32, "enc.fc1").roofline.above_ceiling);
  // cuDNN's TF32 alone leaves a product fp32
  in.tf32.convolutions = true;
  EXPECT_EQ(mod(aggregate(in), "enc.fc1").dtype, DType::kFloat32);
  // cuBLAS's allowed: tf32, 25% of the TF32 peak; its FLOPs in tf32 in the text and JSON
  in.tf32.matmuls = true;
  ProfileResult tf32 = aggregate(in);
  const ModuleStats& fc1 = mod(tf32, "enc.fc1");
  EXPECT_EQ(fc1.dtype, DType::kTFloat32);
  EXPECT_EQ(fc1.flops_by_dtype[static_cast<size_t>(DType::kTFloat32)], 2000000u);
  EXPECT_EQ(fc1.flops_by_dtype[static_cast<size_t>(DType::kFloat32)], 0u);
  EXPECT_NEAR(fc1.roofline.share, 0.25, 1e-9);
  EXPECT_FALSE(fc1.roofline.above_ceiling);
  nlohmann::json j = nlohmann::json::parse(to_json(tf32));
  EXPECT_EQ(j["summary"]["flops_by_dtype"]["tf32"], 2000000);
  EXPECT_EQ(j["ops"][0]["dtype"], "tf32");
}

TEST(GpuRecords, BackwardKernelsFollowTheirNode) {
  Names names;
  ModuleTree tree = make_tree();
  Builder b{names};
  int fwd = b.mm(2, 2, 2, /*owner=*/2);  // head's forward op, sequence number 5
  b.th.events[fwd].seq_nr = 5;
  b.th.events[fwd].seq_end = 6;
  RawEvent node;
  node.kind = EventKind::kBackwardNode;
  node.flags = kBackward;
  node.seq_nr = 5;
  node.name_id = names.id("MmBackward0");
  int n = b.push(node, 100);
  b.th.events[n].end_tick = b.th.events[n].start_tick + 100;
  b.clock = b.th.events[n].start_tick + 1;
  int bwd = b.mm(2, 2, 2, -1, -1, n, 10);
  b.th.events[bwd].flags |= kBackward;
  b.th.thread_id = 0;
  b.th.events[n].fwd_thread = 0;
  GpuCollection g;
  g.backend = "cupti";
  g.records = {kernel("sgemm_bwd", 0, 8, make_external_id(0, bwd))};
  AggregateInput in;
  in.tree = &tree;
  in.threads = {&b.th};
  in.names = &names;
  in.stop_tick = 10000;
  in.gpu = &g;
  ProfileResult r = aggregate(in);
  EXPECT_NEAR(mod(r, "head").gpu_busy_s, 8e-6, 1e-12);
  EXPECT_EQ(mod(r, "head").bwd_flops, 16u);
}

TEST(DevicePeaks, TableAndMfu) {
  EXPECT_DOUBLE_EQ(*device_peak_flops("NVIDIA H100 80GB HBM3", DType::kBFloat16), 989.4e12);
  EXPECT_DOUBLE_EQ(*device_peak_flops("NVIDIA H100 80GB HBM3", DType::kFloat32), 67e12);
  EXPECT_DOUBLE_EQ(*device_peak_flops("NVIDIA H100 80GB HBM3", DType::kFloat32, /*tf32=*/true),
                   494.7e12);
  EXPECT_DOUBLE_EQ(*device_peak_flops("NVIDIA H100 PCIe", DType::kFloat16), 756e12);
  EXPECT_DOUBLE_EQ(*device_peak_flops("NVIDIA H200", DType::kBFloat16), 989.4e12);
  EXPECT_DOUBLE_EQ(*device_peak_flops("NVIDIA A100-SXM4-80GB", DType::kFloat32), 19.5e12);
  EXPECT_FALSE(device_peak_flops("NVIDIA GeForce GTX 1080", DType::kFloat32));
  EXPECT_FALSE(device_peak_flops("NVIDIA H100 80GB HBM3", DType::kInt64));
  // 494.7 TFLOP done in 1 s on an H100 in bf16: 50% MFU
  EXPECT_NEAR(*mfu(494700000000000ull, 1.0, "NVIDIA H100 80GB HBM3", DType::kBFloat16), 0.5, 1e-12);
  EXPECT_FALSE(mfu(1, 0.0, "NVIDIA H100 80GB HBM3", DType::kBFloat16));
}

// The batch sweep's renderings, from rows alone (no torch): 1 MiB = 1,048,576 bytes.
TEST(SweepReport, TableCsvAndSvgFromRows) {
  std::vector<BatchSweepRow> rows = {{1, 1048576, 3 * 1048576, 2'000'000'000, 0.0015},
                                     {4, 4 * 1048576, 0, 8'000'000'000, 0.004}};
  EXPECT_EQ(sweep_csv(rows),
            "batch_size,fwd_peak_bytes,train_peak_bytes,fwd_flops,fwd_latency_s\n"
            "1,1048576,3145728,2000000000,0.0015\n"
            "4,4194304,0,8000000000,0.004\n");
  const std::string table = sweep_table(rows);
  EXPECT_NE(table.find("fwd peak MiB"), std::string::npos);
  // batch 1: 1.00 MiB forward, 3.00 MiB training, 2 GFLOPs, 1.50 ms
  EXPECT_NE(table.find("         1           1.00           3.00          2.000         1.50\n"),
            std::string::npos)
      << table;
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  const std::string svg = sweep_svg(rows);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(svg, "<polyline"), 2u);  // forward and training
  EXPECT_EQ(count(svg, "<circle"), 4u);    // one per row and series
  for (BatchSweepRow& r : rows) r.train_peak_bytes = 0;
  EXPECT_EQ(count(sweep_svg(rows), "<polyline"), 1u);  // no training run: forward only
}

}  // namespace
// An op whose written bytes no rule derives, in two phases (YOLOv3's meshgrid, found on
// walktree/libtorch-yolov3): the summary names it with each phase, not twice alike.
TEST(Report, AnOpWithUnknownWritesInTwoPhasesIsNamedWithItsPhase) {
  flopsprof::ProfileResult r;
  r.bytes_written_unknown_calls = 3;
  flopsprof::OpStats a, b;
  a.name = b.name = "aten::meshgrid";
  a.phase = "forward";
  a.written_unknown = 2;
  b.phase = "outside";
  b.written_unknown = 1;
  r.ops = {a, b};
  const std::string text = flopsprof::format_text_report(r);
  EXPECT_NE(text.find("aten::meshgrid (forward) 2, aten::meshgrid (outside) 1"), std::string::npos)
      << text;
}

}  // namespace flopsprof::detail
