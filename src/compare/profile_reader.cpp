// Profiles read back from their JSON (docs/json.md): what diff() compares, checked key by key so
// that a foreign or corrupt file is refused with its name and the key at fault, never read as 0.
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"
#include "io/input_files.h"
#include "reports/profile_fields.h"
#include "reports/schema.h"

namespace flopsprof {
namespace {

using nlohmann::json;
namespace fields = detail::fields;

// A profile nests 5 levels (document, modules, a module, its ops, an op); 64 leaves room for
// what later schemas add and bounds the recursion of anything that walks a value.
constexpr int kMaxDepth = 64;
// Characters of a bad value quoted in a message.
constexpr size_t kExcerpt = 60;

// How deep `text` nests arrays and objects (strings skipped), stopping once past `limit`.
int nesting_depth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// A value as a message quotes it: its JSON, cut to kExcerpt characters.
std::string excerpt(const json& v) {
  std::string s = v.dump();
  if (s.size() <= kExcerpt) return s;
  return fmt::format("{}... ({} characters)", s.substr(0, kExcerpt), s.size());
}

// Refuses `source`: `what` is wrong with it.
[[noreturn]] void refuse(const std::string& source, const std::string& what) {
  throw Error(
      fmt::format("{}: {} (not a flopsprof profile, or a corrupt one: write it again "
                  "with save_json() or `flopsprof MODEL --json FILE`)",
                  source, what));
}

// `missing` once (LoadedProfile::missing lists what an older profile lacks).
void record_missing(LoadedProfile& lp, const char* what) {
  for (const std::string& m : lp.missing)
    if (m == what) return;
  lp.missing.emplace_back(what);
}

// Reads the fields of one object by a table of reports/profile_fields.h, key by key: a key that
// is absent is refused when required, left at its default otherwise; one of the wrong type or
// range is refused, naming the object and the key (`where`).
class FieldReader {
 public:
  FieldReader(const std::string& source, const json& o, std::string where, LoadedProfile& lp,
              bool slim = false)
      : source_(source), o_(o), where_(std::move(where)), lp_(lp), slim_(slim) {}
  ProfileResult& result() { return lp_.result; }

  template <class T>
  void count(std::string_view k, T& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v) return;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
      fail(fmt::format("{}: \"{}\" is not a count ({})", where_, k, excerpt(*v)));
    const uint64_t x = v->get<uint64_t>();
    if (x > static_cast<uint64_t>(std::numeric_limits<T>::max()))  // a count held signed
      fail(fmt::format("{}: \"{}\" is {}, outside [0, {}]", where_, k, excerpt(*v),
                       std::numeric_limits<T>::max()));
    out = static_cast<T>(x);
  }
  // An integer in the range of T; an int (depths, threads, sizes) is never negative.
  template <class T>
  void integer(std::string_view k, T& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v) return;
    const int64_t lo = std::is_same_v<T, int> ? 0 : std::numeric_limits<T>::min();
    const int64_t hi = std::numeric_limits<T>::max();
    if (!v->is_number_integer())
      fail(fmt::format("{}: \"{}\" is not an integer ({})", where_, k, excerpt(*v)));
    const bool above = v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(hi)
                                               : v->get<int64_t>() > hi;
    if (above || (!v->is_number_unsigned() && v->get<int64_t>() < lo))
      fail(fmt::format("{}: \"{}\" is {}, outside [{}, {}]", where_, k, excerpt(*v), lo, hi));
    out = static_cast<T>(v->get<int64_t>());
  }
  void text(std::string_view k, std::string& out, fields::Need n = {}) {
    const json* v = find(k, n, "string ");
    if (!v) return;
    if (!v->is_string()) fail(fmt::format("{} has no string \"{}\"", where_, k));
    out = v->get<std::string>();
  }
  void text_or_null(std::string_view k, std::string& out) {
    const json* v = find(k, {});
    if (!v || v->is_null()) return;
    if (!v->is_string())
      fail(fmt::format("{}: \"{}\" is not a string ({})", where_, k, excerpt(*v)));
    out = v->get<std::string>();
  }
  void flag(std::string_view k, bool& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v) return;
    if (!v->is_boolean())
      fail(fmt::format("{}: \"{}\" is not a boolean ({})", where_, k, excerpt(*v)));
    out = v->get<bool>();
  }
  // A duration: a finite number from 0 to 1e9 s (31 years: more is no profile's, and would
  // print as a 300-digit number); null (read as 0) in a profile with no time (summary.timed
  // false: an exported program counted from its graph).
  void seconds(std::string_view k, double& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v || (v->is_null() && !lp_.result.timed)) return;
    out = real(k, *v, true);
  }
  void timed(std::string_view k, double& out, fields::Need n = {}) { seconds(k, out, n); }
  // A rate: a finite number >= 0, no bound; null (read as 0) where the profile has no time.
  void timed_rate(std::string_view k, double& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v || (v->is_null() && !lp_.result.timed)) return;
    out = real(k, *v, false);
  }
  // A rate or ratio: a finite number >= 0, null (not finite when written) read as 0.
  void number(std::string_view k, double& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v || v->is_null()) return;
    out = real(k, *v, false);
  }
  void known(std::string_view k, double& out, fields::Need n = {}) { number(k, out, n); }
  void known_count(std::string_view k, uint64_t& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v || v->is_null()) return;
    count(k, out, n);
  }
  void share(std::string_view k, double& share, bool& timed, const std::string&) {
    const json* v = find(k, {});
    if (!v || v->is_null()) return;
    share = real(k, *v, false);
    timed = true;
  }
  void dtype(std::string_view k, DType& out, fields::Need n = {}) {
    const json* v = find(k, n);
    if (!v) return;
    const std::optional<DType> d =
        v->is_string() ? dtype_from_name(v->get<std::string>()) : std::nullopt;
    if (!d) fail(fmt::format("{}: \"{}\" is {}, not a dtype's name", where_, k, excerpt(*v)));
    out = *d;
  }
  void convention(std::string_view k, AttentionConvention& out) {
    const json* v = find(k, {});
    if (!v) return;
    for (AttentionConvention c : {AttentionConvention::kDense, AttentionConvention::kCausal}) {
      if (v->is_string() && v->get<std::string>() == convention_name(c)) {
        out = c;
        return;
      }
    }
    fail(fmt::format("{}: \"{}\" is {}, not a convention", where_, k, excerpt(*v)));
  }
  template <class Array>
  void by_dtype(std::string_view k, Array& out) {
    const json* v = find(k, {});
    if (!v) return;
    if (!v->is_object()) fail(fmt::format("{}: \"{}\" is not an object", where_, k));
    FieldReader inner(source_, *v, fmt::format("{}.{}", where_, k), lp_);
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::optional<DType> d = dtype_from_name(it.key());
      if (!d) fail(fmt::format("{}.{}: \"{}\" is not a dtype's name", where_, k, it.key()));
      uint64_t x = 0;
      inner.count(it.key(), x);
      out[static_cast<size_t>(*d)] = static_cast<typename Array::value_type>(x);
    }
  }
  template <class T>
  void derived(std::string_view, const T&) {}  // computed from the fields read
  // A module's numbers per region, keyed by the region's name (the regions are read first).
  void regions(std::string_view k, ModuleStats& m) {
    const json* v = find(k, {});
    if (!v) return;
    if (!v->is_object()) fail(fmt::format("{}: \"{}\" is not an object", where_, k));
    const std::vector<RegionStats>& rs = lp_.result.regions;
    m.regions.assign(rs.size(), ModuleRegionStats{});
    for (auto it = v->begin(); it != v->end(); ++it) {
      size_t g = 0;
      while (g < rs.size() && rs[g].name != it.key()) ++g;
      if (g == rs.size())
        fail(fmt::format("{}.{}: {} names no region of the profile", where_, k,
                         excerpt(json(it.key()))));
      if (!it->is_object())
        fail(fmt::format("{}.{}: {} is not an object", where_, k, excerpt(json(it.key()))));
      FieldReader inner(source_, *it, fmt::format("{}.{}.{}", where_, k, excerpt(json(it.key()))),
                        lp_);
      fields::module_region(inner, m.regions[g]);
      inner.finish();
    }
  }
  void spread(std::string_view k, LatencySpread& out) {
    object(k, out, [](auto& v, auto& x) { fields::spread(v, x); }, {});
  }
  void roofline(const std::string& prefix, RooflinePoint& p, fields::Need n = {}) {
    if (n.full && slim_) return;
    fields::roofline(*this, prefix, p);
  }
  void strings(std::string_view k, std::vector<std::string>& out, fields::Need n = {}) {
    const json* v = find(k, n, "array ");
    if (!v) return;
    if (!v->is_array()) fail(fmt::format("{} has no array \"{}\"", where_, k));
    for (const json& x : *v) {
      if (!x.is_string()) fail(fmt::format("{}.{} holds a value that is not a string", where_, k));
      out.push_back(x.get<std::string>());
    }
  }
  // Kept for the tree's check (the parent is what the depth says).
  void parent(std::string_view k, int&) {
    parent_key_ = std::string(k);
    parent_ = find(k, {});
  }
  const json* parent_value() const { return parent_; }
  const std::string& parent_key() const { return parent_key_; }

  template <class T, class Table>
  void list(std::string_view k, std::vector<T>& out, Table table, fields::Need n = {},
            bool slim = false) {
    const json* v = find(k, n, "array ");
    if (!v) return;
    if (!v->is_array()) fail(fmt::format("{} has no array \"{}\"", where_, k));
    const std::string prefix = where_ == kTop ? std::string(k) : fmt::format("{}.{}", where_, k);
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string w = fmt::format("{}[{}]", prefix, i);
      if (!(*v)[i].is_object()) fail(w + " is not an object");
      T x;
      FieldReader inner(source_, (*v)[i], w, lp_, slim);
      table(inner, x);
      inner.finish();
      out.push_back(std::move(x));
    }
  }
  void slim_ops(std::string_view k, std::vector<OpStats>& out, fields::Need n) {
    list(
        k, out, [](auto& v, auto& o) { fields::op(v, o); }, n, true);
  }
  // The object `k` into `x` by `table`.
  template <class T, class Table>
  void object(std::string_view k, T& x, Table table, fields::Need n = fields::kRequired) {
    const json* v = find(k, n, "object ");
    if (!v) return;
    if (!v->is_object()) fail(fmt::format("{} has no object \"{}\"", where_, k));
    FieldReader inner(source_, *v,
                      where_ == kTop ? std::string(k) : fmt::format("{}.{}", where_, k), lp_);
    table(inner, x);
    inner.finish();
  }

  // The groups' check: each all present or all absent (recorded as missing when it says so).
  void finish() {
    for (const Group& g : groups_) {
      if (!g.present.empty() && !g.absent.empty())
        fail(fmt::format("{} has \"{}\" but no \"{}\"", where_, g.present, g.absent));
      if (g.present.empty() && g.record) record_missing(lp_, g.name);
    }
  }

  static constexpr const char* kTop = "the profile";

 private:
  struct Group {
    const char* name;
    bool record;
    std::string present, absent;  // the first key of each, for the message
  };

  [[noreturn]] void fail(const std::string& what) const { refuse(source_, what); }

  // Key `k`, or null when absent (refused when required, the message naming its `kind`: "string
  // ", "array "...; noted for its group).
  const json* find(std::string_view k, fields::Need n, const char* kind = "") {
    if (n.full && slim_) return nullptr;
    auto it = o_.find(k);
    const bool here = it != o_.end();
    if (n.group) {
      Group* g = nullptr;
      for (Group& x : groups_)
        if (std::string_view(x.name) == n.group) g = &x;
      if (!g) g = &groups_.emplace_back(Group{n.group, n.record, {}, {}});
      std::string& first = here ? g->present : g->absent;
      if (first.empty()) first = std::string(k);
    }
    if (!here) {
      if (n.required) fail(fmt::format("{} has no {}\"{}\"", where_, kind, k));
      return nullptr;
    }
    return &*it;
  }
  // A finite number >= 0; a duration (`seconds`) at most 1e9 s.
  double real(std::string_view k, const json& v, bool seconds) const {
    if (!v.is_number()) fail(fmt::format("{}: \"{}\" is not a number ({})", where_, k, excerpt(v)));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (seconds && x > 1e9))
      fail(fmt::format("{}: \"{}\" is {}, not a number from 0 to {}", where_, k, excerpt(v),
                       seconds ? "1e9" : "1.8e308"));
    return x;
  }

  const std::string& source_;
  const json& o_;
  std::string where_;
  LoadedProfile& lp_;
  bool slim_;
  std::vector<Group> groups_;
  std::string parent_key_;
  const json* parent_ = nullptr;
};

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const { refuse(source_, what); }

  const json& array(const json& parent, const char* key, const std::string& where) const {
    auto it = parent.find(key);
    if (it == parent.end() || !it->is_array())
      fail(fmt::format("{} has no array \"{}\"", where, key));
    return *it;
  }

  LoadedProfile read(const std::string& text_in) {
    LoadedProfile lp;
    lp.source = source_;
    if (const int depth = nesting_depth(text_in, kMaxDepth); depth > kMaxDepth)
      fail(fmt::format("it nests arrays and objects more than {} levels deep", kMaxDepth));
    json j;
    try {
      j = json::parse(text_in);
    } catch (const json::exception& e) {
      std::string what = e.what();
      if (what.size() > 200) what = what.substr(0, 200) + "...";
      fail(fmt::format("not JSON ({})", what));
    }
    if (!j.is_object()) fail("the document is not a JSON object");
    const char* version = fields::kSchemaVersion;
    auto v = j.find(version);
    if (v == j.end()) fail(fmt::format("no \"{}\"", version));
    if (!v->is_number_integer())
      fail(fmt::format("\"{}\" is {}, not an integer ({} to {})", version, excerpt(*v), 1,
                       detail::kProfileSchemaVersion));
    if (v->is_number_unsigned() ? v->get<uint64_t>() > detail::kProfileSchemaVersion
                                : v->get<int64_t>() > detail::kProfileSchemaVersion) {
      throw Error(
          fmt::format("{}: {} {} is newer than this flopsprof reads ({}); "
                      "compare it with the flopsprof that wrote it",
                      source_, version, excerpt(*v), detail::kProfileSchemaVersion));
    }
    if (v->get<int64_t>() < 1)
      fail(fmt::format("{} {} is not one flopsprof writes", version, v->get<int64_t>()));
    lp.schema_version = static_cast<int>(v->get<int64_t>());
    ProfileResult& r = lp.result;
    FieldReader doc(source_, j, FieldReader::kTop, lp);
    if (auto it = j.find(fields::kWorkload); it != j.end()) {
      doc.object(fields::kWorkload, r, [](auto& v, auto& x) { fields::workload(v, x); });
    } else {
      record_missing(lp, fields::kWorkload);
    }
    doc.object(fields::kSummary, r, [](auto& v, auto& x) { fields::summary(v, x); });
    r.has_backward = r.bwd_flops > 0 || r.bwd_latency_s > 0;
    r.has_step = r.step_latency_s > 0;
    // The regions before the modules: a module's numbers per region are keyed by their names.
    if (auto it = j.find(fields::kRegions); it != j.end() && !it->is_array())
      fail(fmt::format("\"{}\" is not an array", fields::kRegions));
    doc.list(fields::kRegions, r.regions, [](auto& v, auto& g) { fields::region(v, g); });
    for (size_t g = 0; g < r.regions.size(); ++g) {  // names key the modules' regions: unique
      for (size_t h = 0; h < g; ++h) {
        if (r.regions[h].name == r.regions[g].name)
          fail(fmt::format("{}[{}] has the name of {}[{}], {}", fields::kRegions, g,
                           fields::kRegions, h, excerpt(json(r.regions[g].name))));
      }
    }
    modules(array(j, fields::kModules, "the profile"), lp);
    doc.list(
        fields::kOps, r.ops, [](auto& v, auto& o) { fields::op(v, o); }, fields::kRequired);
    if (auto it = j.find(fields::kMemory); it != j.end() && it->is_object()) {
      r.memory.tracked = true;
      doc.object(fields::kMemory, r.memory, [](auto& v, auto& x) { fields::memory(v, x); });
    } else {
      record_missing(lp, fields::kMemory);
    }
    if (auto it = j.find(fields::kProblems); it != j.end() && it->is_array()) {
      for (const json& p : *it)
        if (p.is_string()) r.problems.push_back(p.get<std::string>());
    }
    return lp;
  }

 private:
  void modules(const json& list, LoadedProfile& lp) {
    ProfileResult& r = lp.result;
    if (list.empty())
      fail(fmt::format("\"{}\" is empty (the root model is always listed)", fields::kModules));
    std::vector<int> open;  // the modules whose subtree the next one may be in, by depth
    std::unordered_map<std::string, size_t> seen;  // names, which identify modules in a diff
    for (size_t i = 0; i < list.size(); ++i) {
      const json& o = list[i];
      const std::string w = fmt::format("{}[{}]", fields::kModules, i);
      if (!o.is_object()) fail(w + " is not an object");
      ModuleStats m;
      FieldReader f(source_, o, w, lp);
      fields::module(f, m);
      f.finish();
      if (i == 0 && (m.depth != 0 || !m.name.empty()))
        fail(w + " is not the root (name \"\", depth 0)");
      if (i > 0 && m.name.empty()) fail(w + " has the root's name \"\" but is not the root");
      if (auto [it, fresh] = seen.emplace(m.name, i); !fresh)
        fail(fmt::format("{}: {} is the name of {}[{}] too", w, excerpt(json(m.name)),
                         fields::kModules, it->second));
      // The parent: the nearest earlier module one level up (tree order), the top of `open`
      // once the deeper ones are closed.
      if (i > 0) {
        if (m.depth < 1) fail(w + ": a second root (depth 0)");
        if (static_cast<size_t>(m.depth) > open.size())
          fail(fmt::format("{}: depth {} does not follow the tree order (after depth {})", w,
                           m.depth, open.size() - 1));
        open.resize(static_cast<size_t>(m.depth));
        const int p = open.back();
        // The file's own parent (a name), when present, must be the one its depth says.
        const json* named = f.parent_value();
        if (named && (!named->is_string() || named->get<std::string>() != r.modules[p].name))
          fail(fmt::format("{}: \"{}\" is {}, but its depth places it under \"{}\"", w,
                           f.parent_key(), excerpt(*named), r.modules[p].name));
        m.parent = p;
        r.modules[p].children.push_back(static_cast<int>(i));
      } else {
        m.parent = -1;
      }
      open.push_back(static_cast<int>(i));
      r.modules.push_back(std::move(m));
    }
  }

  std::string source_;
};

}  // namespace

LoadedProfile profile_from_json(const std::string& text, const std::string& source) {
  return Reader(source).read(text);
}

LoadedProfile load_profile_json(const std::string& path) {
  std::string text = detail::read_input(path, "the profile", kMaxProfileBytes);
  // The parsed document takes about 12 bytes per byte of text (measured: 100,000 modules, 140 MB
  // of JSON). Said before parsing: a parser that runs out of memory cannot unwind cleanly (the
  // half-built document allocates as it is destroyed).
  const uint64_t needed = 12 * static_cast<uint64_t>(text.size());
  const uint64_t available = detail::memory_available();
  if (needed > available)
    throw Error(
        fmt::format("cannot read the profile '{}': its {} of JSON need about {} of memory "
                    "to read, and this process may allocate {}",
                    path, detail::size_text(text.size()), detail::size_text(needed),
                    detail::size_text(available)));
  return profile_from_json(text, path);
}

}  // namespace flopsprof
