// The profile's JSON tables (src/reports/profile_fields.h): every field the writer writes from a
// table comes back from the reader with its value, and no table spells a key twice.
#include <cctype>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "flopsprof/diff.h"
#include "flopsprof/report.h"
#include "reports/profile_fields.h"

namespace flopsprof {
namespace {

namespace fields = detail::fields;

// Gives every field of a table its own value: the n-th field n (as a count, an integer, n/4 s,
// "t<n>", a dtype picked by n), so that a field read into another's member shows.
class Filler {
 public:
  /// `sparse`: what the writer writes as null or leaves out instead (unknown rates, no time, no
  /// device) is left 0; flags alternate.
  explicit Filler(ProfileResult& r, bool slim = false, bool sparse = false)
      : r_(r), slim_(slim), sparse_(sparse) {}
  ProfileResult& result() { return r_; }

  template <class T>
  void count(std::string_view, T& v, fields::Need n = {}) {
    if (!skip(n)) v = static_cast<T>(next());
  }
  template <class T>
  void integer(std::string_view, T& v, fields::Need n = {}) {
    if (!skip(n)) v = static_cast<T>(next());
  }
  void text(std::string_view, std::string& v, fields::Need n = {}) {
    if (!skip(n)) v = fmt::format("t{}", next());
  }
  void text_or_null(std::string_view k, std::string& v) {
    if (!sparse_) text(k, v);
  }
  void flag(std::string_view, bool& v, fields::Need n = {}) {
    if (!skip(n)) v = !sparse_ || next() % 2 == 0;
  }
  void seconds(std::string_view, double& v, fields::Need n = {}) {
    if (!skip(n)) v = static_cast<double>(next()) / 4;
  }
  void timed(std::string_view k, double& v, fields::Need n = {}) {
    if (!sparse_) seconds(k, v, n);
  }
  // Rates and ratios as large as a GPU's (1e15 FLOP/s and more), durations as a profile's.
  void timed_rate(std::string_view k, double& v, fields::Need n = {}) {
    if (!sparse_) rate(k, v, n);
  }
  void number(std::string_view k, double& v, fields::Need n = {}) { rate(k, v, n); }
  void known(std::string_view k, double& v, fields::Need n = {}) {
    if (!sparse_) rate(k, v, n);
  }
  void rate(std::string_view, double& v, fields::Need n) {
    if (!skip(n)) v = static_cast<double>(next()) * 1e13 + 0.25;
  }
  void known_count(std::string_view k, uint64_t& v, fields::Need n = {}) {
    if (!sparse_) count(k, v, n);
  }
  void share(std::string_view, double& share, bool& timed, const std::string&) {
    if (sparse_) return;  // no time: null
    share = static_cast<double>(next()) / 4;
    timed = true;
  }
  void dtype(std::string_view, DType& v, fields::Need n = {}) {
    if (!skip(n)) v = pick();
  }
  void convention(std::string_view, AttentionConvention& v) { v = AttentionConvention::kCausal; }
  template <class Array>
  void by_dtype(std::string_view, Array& a) {
    a[static_cast<size_t>(pick())] = static_cast<typename Array::value_type>(next());
  }
  template <class T>
  void derived(std::string_view, const T&) {}
  // Each region's numbers (the regions are filled first).
  void regions(std::string_view, ModuleStats& m) {
    m.regions.resize(r_.regions.size());
    for (ModuleRegionStats& x : m.regions) fields::module_region(*this, x);
  }
  void parent(std::string_view, int&) {}
  void spread(std::string_view, LatencySpread& s) { fields::spread(*this, s); }
  void roofline(const std::string& prefix, RooflinePoint& p, fields::Need n = {}) {
    if (!skip(n)) fields::roofline(*this, prefix, p);
  }
  void strings(std::string_view, std::vector<std::string>& v, fields::Need n = {}) {
    if (skip(n)) return;
    v = {fmt::format("t{}", next()), fmt::format("t{}", next())};
  }
  template <class T, class Table>
  void list(std::string_view, std::vector<T>& v, Table table, fields::Need n = {},
            bool slim = false) {
    if (skip(n)) return;
    v.resize(2);
    for (T& x : v) {
      Filler inner(r_, slim, sparse_);
      inner.n_ = n_;
      table(inner, x);
      n_ = inner.n_;
    }
  }
  void slim_ops(std::string_view k, std::vector<OpStats>& v, fields::Need n) {
    list(
        k, v, [](auto& f, auto& o) { fields::op(f, o); }, n, true);
  }

 private:
  bool skip(fields::Need n) const { return (n.full && slim_) || (n.gpu && sparse_); }
  uint64_t next() { return ++n_; }
  DType pick() { return static_cast<DType>(1 + next() % (static_cast<size_t>(DType::kCount) - 1)); }

  ProfileResult& r_;
  bool slim_;
  bool sparse_;
  uint64_t n_ = 0;
};

// Every field a table reads, as "key=value" lines (derived fields and the parent left out: the
// reader computes those).
class Dumper {
 public:
  Dumper(const ProfileResult& r, std::string where, bool slim = false)
      : r_(r), where_(std::move(where)), slim_(slim) {}
  const ProfileResult& result() const { return r_; }
  std::vector<std::string> lines;

  template <class T>
  void count(std::string_view k, const T& v, fields::Need n = {}) {
    put(k, fmt::format("{}", v), n);
  }
  template <class T>
  void integer(std::string_view k, const T& v, fields::Need n = {}) {
    put(k, fmt::format("{}", v), n);
  }
  void text(std::string_view k, const std::string& v, fields::Need n = {}) { put(k, v, n); }
  void text_or_null(std::string_view k, const std::string& v) { put(k, v, {}); }
  void flag(std::string_view k, bool v, fields::Need n = {}) { put(k, v ? "true" : "false", n); }
  void seconds(std::string_view k, double v, fields::Need n = {}) {
    put(k, fmt::format("{}", v), n);
  }
  void timed(std::string_view k, double v, fields::Need n = {}) { seconds(k, v, n); }
  void timed_rate(std::string_view k, double v, fields::Need n = {}) { seconds(k, v, n); }
  void number(std::string_view k, double v, fields::Need n = {}) { seconds(k, v, n); }
  void known(std::string_view k, double v, fields::Need n = {}) { seconds(k, v, n); }
  void known_count(std::string_view k, uint64_t v, fields::Need n = {}) { count(k, v, n); }
  void share(std::string_view k, double share, bool timed, const std::string&) {
    put(k, fmt::format("{} {}", share, timed), {});
  }
  void dtype(std::string_view k, DType v, fields::Need n = {}) { put(k, dtype_name(v), n); }
  void convention(std::string_view k, AttentionConvention v) { put(k, convention_name(v), {}); }
  template <class Array>
  void by_dtype(std::string_view k, const Array& a) {
    for (size_t d = 0; d < a.size(); ++d)
      if (a[d] != 0)
        put(fmt::format("{}.{}", k, dtype_name(static_cast<DType>(d))), fmt::format("{}", a[d]),
            {});
  }
  template <class T>
  void derived(std::string_view, const T&) {}
  void regions(std::string_view k, const ModuleStats& m) {
    for (size_t g = 0; g < m.regions.size() && g < r_.regions.size(); ++g) {
      Dumper inner(r_, fmt::format("{}.{}.{}", where_, k, r_.regions[g].name));
      fields::module_region(inner, m.regions[g]);
      append(inner);
    }
  }
  void parent(std::string_view, int) {}
  void spread(std::string_view k, const LatencySpread& s) {
    Dumper inner(r_, fmt::format("{}.{}", where_, k));
    fields::spread(inner, s);
    append(inner);
  }
  void roofline(const std::string& prefix, const RooflinePoint& p, fields::Need n = {}) {
    if (!(n.full && slim_)) fields::roofline(*this, prefix, p);
  }
  void strings(std::string_view k, const std::vector<std::string>& v, fields::Need n = {}) {
    for (size_t i = 0; i < v.size(); ++i) put(fmt::format("{}[{}]", k, i), v[i], n);
  }
  template <class T, class Table>
  void list(std::string_view k, const std::vector<T>& v, Table table, fields::Need n = {},
            bool slim = false) {
    if (n.full && slim_) return;
    for (size_t i = 0; i < v.size(); ++i) {
      Dumper inner(r_, fmt::format("{}.{}[{}]", where_, k, i), slim);
      table(inner, v[i]);
      append(inner);
    }
  }
  void slim_ops(std::string_view k, const std::vector<OpStats>& v, fields::Need n) {
    list(
        k, v, [](auto& d, auto& o) { fields::op(d, o); }, n, true);
  }

 private:
  void put(std::string_view k, const std::string& v, fields::Need n) {
    if (!(n.full && slim_)) lines.push_back(fmt::format("{}.{}={}", where_, k, v));
  }
  void append(const Dumper& d) { lines.insert(lines.end(), d.lines.begin(), d.lines.end()); }

  const ProfileResult& r_;
  std::string where_;
  bool slim_;
};

std::vector<std::string> dump(const ProfileResult& r) {
  Dumper d(r, "");
  fields::workload(d, r);
  fields::summary(d, r);
  d.list("modules", r.modules, [](auto& v, auto& m) { fields::module(v, m); });
  d.list("ops", r.ops, [](auto& v, auto& o) { fields::op(v, o); });
  d.list("regions", r.regions, [](auto& v, auto& g) { fields::region(v, g); });
  Dumper m(r, "memory");
  fields::memory(m, r.memory);
  d.lines.insert(d.lines.end(), m.lines.begin(), m.lines.end());
  return d.lines;
}

// A profile with every table's field set, each to its own value.
ProfileResult filled(bool sparse = false) {
  ProfileResult r;
  Filler f(r, false, sparse);
  fields::workload(f, r);
  fields::summary(f, r);
  f.list("regions", r.regions, [](auto& v, auto& g) { fields::region(v, g); });
  f.list("modules", r.modules, [](auto& v, auto& m) { fields::module(v, m); });
  f.list("ops", r.ops, [](auto& v, auto& o) { fields::op(v, o); });
  fields::memory(f, r.memory);
  // What the reader checks: a tree (the root "" at depth 0, its child at 1), a profile that
  // measured a device (the modules' device fields are written then) and memory.
  r.modules[0].name = "";
  r.modules[0].depth = 0;
  r.modules[1].depth = 1;
  r.modules[1].parent = 0;
  r.modules[0].children = {1};
  r.gpu.measured = !sparse;
  r.gpu.backend = "cupti";
  r.memory.tracked = true;
  if (sparse) r.timed = false;  // every duration and rate null
  return r;
}

TEST(ProfileFields, EveryFieldOfEveryTableComesBackAsWritten) {
  const ProfileResult r = filled();
  const std::vector<std::string> written = dump(r);
  // The tables hold well over a hundred fields (summary 60-odd, module 50-odd, op 16, region 22).
  ASSERT_GT(written.size(), 300u);
  const LoadedProfile back = profile_from_json(to_json(r, 1), "filled");
  EXPECT_TRUE(back.missing.empty()) << fmt::format("{}", fmt::join(back.missing, ", "));
  const std::vector<std::string> read = dump(back.result);
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) EXPECT_EQ(read[i], written[i]);
  EXPECT_EQ(back.result.modules[1].parent, 0);
}

// Collects each table's keys.
class Keys {
 public:
  explicit Keys(const ProfileResult& r) : r_(r) {}
  const ProfileResult& result() const { return r_; }
  std::vector<std::string> keys;

  template <class T>
  void count(std::string_view k, const T&, fields::Need = {}) {
    add(k);
  }
  template <class T>
  void integer(std::string_view k, const T&, fields::Need = {}) {
    add(k);
  }
  void text(std::string_view k, const std::string&, fields::Need = {}) { add(k); }
  void text_or_null(std::string_view k, const std::string&) { add(k); }
  void flag(std::string_view k, bool, fields::Need = {}) { add(k); }
  void seconds(std::string_view k, double, fields::Need = {}) { add(k); }
  void timed(std::string_view k, double, fields::Need = {}) { add(k); }
  void timed_rate(std::string_view k, double, fields::Need = {}) { add(k); }
  void number(std::string_view k, double, fields::Need = {}) { add(k); }
  void known(std::string_view k, double, fields::Need = {}) { add(k); }
  void known_count(std::string_view k, uint64_t, fields::Need = {}) { add(k); }
  void share(std::string_view k, double, bool, const std::string&) { add(k); }
  void dtype(std::string_view k, DType, fields::Need = {}) { add(k); }
  void convention(std::string_view k, AttentionConvention) { add(k); }
  template <class Array>
  void by_dtype(std::string_view k, const Array&) {
    add(k);
  }
  template <class T>
  void derived(std::string_view k, const T&) {
    add(k);
  }
  void regions(std::string_view k, const ModuleStats&) { add(k); }
  void parent(std::string_view k, int) { add(k); }
  void spread(std::string_view k, const LatencySpread&) { add(k); }
  void roofline(const std::string& prefix, const RooflinePoint& p, fields::Need = {}) {
    fields::roofline(*this, unprefixed ? std::string() : prefix, p);
  }
  void strings(std::string_view k, const std::vector<std::string>&, fields::Need = {}) { add(k); }
  bool unprefixed = false;  // a roofline point's keys without their "fwd_" / "bwd_" / "step_"
  template <class T, class Table>
  void list(std::string_view k, const std::vector<T>&, Table, fields::Need = {}, bool = false) {
    add(k);
  }
  void slim_ops(std::string_view k, const std::vector<OpStats>&, fields::Need) { add(k); }

 private:
  void add(std::string_view k) { keys.emplace_back(k); }
  const ProfileResult& r_;
};

template <class Table, class S>
void expect_unique(const char* table, Table t, const S& s, const ProfileResult& r) {
  Keys k(r);
  t(k, s);
  std::set<std::string> seen;
  for (const std::string& key : k.keys)
    EXPECT_TRUE(seen.insert(key).second) << table << " spells \"" << key << "\" twice";
  EXPECT_FALSE(k.keys.empty()) << table;
}

TEST(ProfileFields, NoTableSpellsAKeyTwice) {
  const ProfileResult r = filled();
  expect_unique(
      "summary", [](auto& v, auto& x) { fields::summary(v, x); }, r, r);
  expect_unique(
      "workload", [](auto& v, auto& x) { fields::workload(v, x); }, r, r);
  expect_unique(
      "module", [](auto& v, auto& x) { fields::module(v, x); }, r.modules[1], r);
  expect_unique(
      "op", [](auto& v, auto& x) { fields::op(v, x); }, r.ops[0], r);
  expect_unique(
      "region", [](auto& v, auto& x) { fields::region(v, x); }, r.regions[0], r);
  expect_unique(
      "module_region", [](auto& v, auto& x) { fields::module_region(v, x); },
      r.modules[0].regions[0], r);
  expect_unique(
      "memory", [](auto& v, auto& x) { fields::memory(v, x); }, r.memory, r);
}

// With no time, no device and nothing known of the rates, the writer writes nulls (and leaves the
// device's fields out); the reader takes them back as the zeros and falses they stand for, and
// flags come back false as well as true.
TEST(ProfileFields, NullsAndFalsesComeBackAsWritten) {
  const ProfileResult r = filled(true);
  ASSERT_FALSE(r.timed);
  const std::string text = to_json(r, 1);
  EXPECT_NE(text.find("\"fwd_latency_s\": null"), std::string::npos);
  EXPECT_NE(text.find("\"mfu\": null"), std::string::npos);
  EXPECT_NE(text.find("\"tokens\": null"), std::string::npos);
  EXPECT_EQ(text.find("\"device_fwd_s\""), std::string::npos);
  EXPECT_NE(text.find("false"), std::string::npos);
  const LoadedProfile back = profile_from_json(text, "sparse");
  const std::vector<std::string> written = dump(r), read = dump(back.result);
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) EXPECT_EQ(read[i], written[i]);
}

// Every key of every table is in the schema's documentation (docs/json.md), as a word: a key
// renamed in a table without the document fails here.
TEST(ProfileFields, EveryKeyIsDocumented) {
  std::ifstream f(std::string(FLOPSPROF_EXPORTED_DIR) + "/../../docs/json.md");
  ASSERT_TRUE(f) << "docs/json.md";
  const std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto documented = [&](const std::string& key) {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = doc.find(key); at != std::string::npos; at = doc.find(key, at + 1)) {
      const bool before = at > 0 && word(doc[at - 1]);
      const bool after = at + key.size() < doc.size() && word(doc[at + key.size()]);
      if (!before && !after) return true;
    }
    return false;
  };
  const ProfileResult r = filled();
  Keys k(r);
  k.unprefixed = true;
  fields::summary(k, r);
  fields::workload(k, r);
  fields::module(k, r.modules[1]);
  fields::op(k, r.ops[0]);
  fields::region(k, r.regions[0]);
  fields::module_region(k, r.modules[1].regions[0]);
  fields::memory(k, r.memory);
  fields::spread(k, r.fwd_spread);
  const KernelStats kernel;
  fields::kernel(k, kernel);
  for (const char* section : {fields::kWorkload, fields::kSummary, fields::kModules, fields::kOps,
                              fields::kRegions, fields::kMemory, fields::kProblems})
    k.keys.emplace_back(section);
  ASSERT_GT(k.keys.size(), 150u);
  for (const std::string& key : k.keys) EXPECT_TRUE(documented(key)) << key;
}

// A module's numbers per region are keyed by the region's name: a name no region has is refused,
// naming the module and the key.
TEST(ProfileFields, AModuleRegionNamingNoRegionIsRefused) {
  const ProfileResult r = filled();
  std::string text = to_json(r, 1);
  const std::string name = r.regions[1].name;
  // the module's key (in "regions" of modules[0]), not the region's own "name"
  const std::string key = fmt::format("\"{}\": {{", name);
  const size_t at = text.find(key, text.find("\"modules\""));
  ASSERT_NE(at, std::string::npos) << key;
  text.replace(at, key.size(), "\"elsewhere\": {");
  try {
    profile_from_json(text, "renamed");
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modules[0].regions: \"elsewhere\" names no region"),
              std::string::npos)
        << e.what();
  }
}

// Region names key the modules' per-region numbers: two regions of one name are refused.
TEST(ProfileFields, TwoRegionsOfOneNameAreRefused) {
  ProfileResult r = filled();
  r.regions[1].name = r.regions[0].name;
  try {
    profile_from_json(to_json(r, 1), "twice");
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("regions[1] has the name of regions[0]"),
              std::string::npos)
        << e.what();
  }
}

// Profiles written by earlier flopsprofs (the fuzzer's seeds, committed before the tables) read
// as they did; a batch size below 0 is refused, as it was.
TEST(ProfileFields, EarlierProfilesReadAndANegativeBatchIsRefused) {
  const std::string dir = std::string(FLOPSPROF_EXPORTED_DIR) + "/../fuzz/corpus/profile_json/";
  for (const char* name : {"valid.json", "regions.json", "chain.json"}) {
    const LoadedProfile p = load_profile_json(dir + name);
    EXPECT_FALSE(p.result.modules.empty()) << name;
    EXPECT_EQ(p.result.modules[0].name, "") << name;
  }
  ProfileResult r = filled();
  std::string text = to_json(r, 1);
  const std::string key = fmt::format("\"batch_size\": {}", r.batch_size);
  const size_t summary = text.find("\"summary\"");
  const size_t at = text.find(key, summary);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, key.size(), "\"batch_size\": -4");
  try {
    profile_from_json(text, "negative");
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("summary: \"batch_size\" is not a count (-4)"),
              std::string::npos)
        << e.what();
  }
}

// A group is all or none: the summary's backward keys half there is a corrupt file, named.
TEST(ProfileFields, AHalfGroupIsRefusedNamingTheKeyThatIsMissing) {
  ProfileResult r = filled();
  std::string text = to_json(r, 1);
  const std::string key = "\"bwd_macs\": ";
  const size_t at = text.find(key);  // the summary's comes first (workload has none)
  ASSERT_NE(at, std::string::npos);
  text.replace(at, key.size(), "\"bwd_macs_renamed\": ");
  try {
    profile_from_json(text, "half");
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("summary has \"bwd_flops\" but no \"bwd_macs\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace flopsprof
