// Profiles read back from their JSON (docs/json.md): what diff() compares, checked key by key so
// that a foreign or corrupt file is refused with its name and the key at fault, never read as 0.
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"
#include "io/input_files.h"
#include "reports/schema.h"

namespace flopsprof {
namespace {

using nlohmann::json;

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
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

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(
        fmt::format("{}: {} (not a flopsprof profile, or a corrupt one: write it again "
                    "with save_json() or `flopsprof MODEL --json FILE`)",
                    source_, what));
  }

  const json& object(const json& parent, const char* key, const std::string& where) const {
    auto it = parent.find(key);
    if (it == parent.end() || !it->is_object())
      fail(fmt::format("{} has no object \"{}\"", where, key));
    return *it;
  }
  const json& array(const json& parent, const char* key, const std::string& where) const {
    auto it = parent.find(key);
    if (it == parent.end() || !it->is_array())
      fail(fmt::format("{} has no array \"{}\"", where, key));
    return *it;
  }
  // A count: an integer in [0, 2^64 - 1], read as uint64 (never through a double).
  uint64_t count(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
      fail(fmt::format("{}: \"{}\" is not a count ({})", where, key, excerpt(*it)));
    return it->get<uint64_t>();
  }
  // An integer in [lo, hi].
  int64_t integer(const json& o, const char* key, const std::string& where,
                  int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    if (!it->is_number_integer())
      fail(fmt::format("{}: \"{}\" is not an integer ({})", where, key, excerpt(*it)));
    const bool above = it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(hi)
                                                : it->get<int64_t>() > hi;
    if (above || (!it->is_number_unsigned() && it->get<int64_t>() < lo))
      fail(fmt::format("{}: \"{}\" is {}, outside [{}, {}]", where, key, excerpt(*it), lo, hi));
    return it->get<int64_t>();
  }
  // A duration or a rate: a finite number >= 0; null (read as 0) in a profile with no time
  // (summary.timed false: an exported program counted from its graph).
  double seconds(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    if (it->is_null() && !timed_) return 0;
    if (!it->is_number())
      fail(fmt::format("{}: \"{}\" is not a number ({})", where, key, excerpt(*it)));
    const double v = it->get<double>();
    // 1e9 s is 31 years: more is no profile's, and would print as a 300-digit number.
    if (!std::isfinite(v) || v < 0 || v > 1e9)
      fail(fmt::format("{}: \"{}\" is {}, not a number from 0 to 1e9", where, key, excerpt(*it)));
    return v;
  }
  std::string text(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end() || !it->is_string()) fail(fmt::format("{} has no string \"{}\"", where, key));
    return it->get<std::string>();
  }
  // Optional keys: absent is fine (the caller records it as missing), a wrong type is not.
  bool has(const json& o, const char* key) const { return o.contains(key); }
  LatencySpread spread(const json& o, const char* key, const std::string& where) const {
    LatencySpread s;
    auto it = o.find(key);
    if (it == o.end()) return s;
    if (!it->is_object()) fail(fmt::format("{}: \"{}\" is not an object", where, key));
    const std::string w = where + "." + key;
    s.samples = count(*it, "samples", w);
    s.min_s = seconds(*it, "min_s", w);
    s.median_s = seconds(*it, "median_s", w);
    s.max_s = seconds(*it, "max_s", w);
    return s;
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
    auto v = j.find("schema_version");
    if (v == j.end()) fail("no \"schema_version\"");
    if (!v->is_number_integer())
      fail(fmt::format("\"schema_version\" is {}, not an integer ({} to {})", excerpt(*v), 1,
                       detail::kProfileSchemaVersion));
    if (v->is_number_unsigned() ? v->get<uint64_t>() > detail::kProfileSchemaVersion
                                : v->get<int64_t>() > detail::kProfileSchemaVersion) {
      throw Error(
          fmt::format("{}: schema_version {} is newer than this flopsprof reads ({}); "
                      "compare it with the flopsprof that wrote it",
                      source_, excerpt(*v), detail::kProfileSchemaVersion));
    }
    if (v->get<int64_t>() < 1)
      fail(fmt::format("schema_version {} is not one flopsprof writes", v->get<int64_t>()));
    lp.schema_version = static_cast<int>(v->get<int64_t>());
    ProfileResult& r = lp.result;
    summary(object(j, "summary", "the profile"), lp);
    workload(j, lp);
    modules(array(j, "modules", "the profile"), r);
    if (!j["modules"][0].contains("ops")) lp.missing.push_back("module_ops");
    r.ops = ops(array(j, "ops", "the profile"), "ops", true);
    auto mem = j.find("memory");
    if (mem != j.end() && mem->is_object()) {
      r.memory.tracked = true;
      r.memory.peak_bytes = integer(*mem, "peak_bytes", "memory");
    } else {
      lp.missing.push_back("memory");
    }
    auto regions_it = j.find("regions");
    if (regions_it != j.end()) regions(*regions_it, r);
    auto problems = j.find("problems");
    if (problems != j.end() && problems->is_array()) {
      for (const json& p : *problems) {
        if (p.is_string()) r.problems.push_back(p.get<std::string>());
      }
    }
    return lp;
  }

 private:
  void summary(const json& s, LoadedProfile& lp) {
    ProfileResult& r = lp.result;
    const std::string w = "summary";
    if (auto t = s.find("timed"); t != s.end()) {
      if (!t->is_boolean()) fail("summary: \"timed\" is not a boolean (" + excerpt(*t) + ")");
      timed_ = t->get<bool>();
    }
    r.timed = timed_;
    r.params = count(s, "params", w);
    r.flops = count(s, "fwd_flops", w);
    r.macs = count(s, "fwd_macs", w);
    r.duration_s = seconds(s, "fwd_latency_s", w);
    r.batch_size = has(s, "batch_size") ? integer(s, "batch_size", w, 0) : 0;
    r.threads = has(s, "threads") ? count(s, "threads", w) : 0;
    if (has(s, "bwd_flops")) {
      r.bwd_flops = count(s, "bwd_flops", w);
      r.bwd_macs = count(s, "bwd_macs", w);
      r.bwd_latency_s = seconds(s, "bwd_latency_s", w);
      r.step_flops = count(s, "step_flops", w);
      r.step_latency_s = seconds(s, "step_latency_s", w);
      r.has_backward = r.bwd_flops > 0 || r.bwd_latency_s > 0;
      r.has_step = r.step_latency_s > 0;
    } else {
      lp.missing.push_back("backward");
    }
    if (has(s, "fwd_bytes")) {
      r.fwd_bytes = count(s, "fwd_bytes", w);
    } else {
      lp.missing.push_back("bytes");
    }
    r.fwd_spread = spread(s, "fwd_spread", w);
    r.bwd_spread = spread(s, "bwd_spread", w);
    r.step_spread = spread(s, "step_spread", w);
  }

  void workload(const json& j, LoadedProfile& lp) {
    auto it = j.find("workload");
    if (it == j.end()) {
      lp.missing.push_back("workload");
      return;
    }
    if (!it->is_object()) fail("\"workload\" is not an object");
    const json& o = *it;
    Workload& x = lp.result.workload;
    const std::string w = "workload";
    for (const json& i : array(o, "inputs", w)) {
      if (!i.is_string()) fail("workload.inputs holds a value that is not a string");
      x.inputs.push_back(i.get<std::string>());
    }
    if (has(o, "inputs_source")) x.inputs_source = text(o, "inputs_source", w);
    x.intra_op_threads = static_cast<int>(integer(o, "intra_op_threads", w, 0, kIntMax));
    x.libtorch_version = text(o, "libtorch_version", w);
    x.build_type = text(o, "build_type", w);
    x.device = text(o, "device", w);
    x.flopsprof_version = text(o, "flopsprof_version", w);
    x.profile_step = static_cast<int>(integer(o, "profile_step", w, 0, kIntMax));
    x.runs = count(o, "runs", w);
    if (has(o, "capture")) x.capture = text(o, "capture", w);
    if (has(o, "capture_note")) x.capture_note = text(o, "capture_note", w);
  }

  void modules(const json& list, ProfileResult& r) {
    if (list.empty()) fail("\"modules\" is empty (the root model is always listed)");
    std::vector<int> open;  // the modules whose subtree the next one may be in, by depth
    std::unordered_map<std::string, size_t> seen;  // names, which identify modules in a diff
    for (size_t i = 0; i < list.size(); ++i) {
      const json& o = list[i];
      const std::string w = fmt::format("modules[{}]", i);
      if (!o.is_object()) fail(w + " is not an object");
      ModuleStats m;
      m.name = text(o, "name", w);
      m.type = text(o, "type", w);
      m.depth = static_cast<int>(integer(o, "depth", w, 0, kIntMax));
      m.calls = count(o, "calls", w);
      m.params = count(o, "params", w);
      m.flops = count(o, "flops", w);
      m.macs = count(o, "macs", w);
      m.latency_s = seconds(o, "latency_s", w);
      if (has(o, "bwd_flops")) {
        m.bwd_flops = count(o, "bwd_flops", w);
        m.bwd_latency_s = seconds(o, "bwd_latency_s", w);
      }
      if (has(o, "bytes")) m.bytes = count(o, "bytes", w);
      m.fwd_spread = spread(o, "fwd_spread", w);
      m.bwd_spread = spread(o, "bwd_spread", w);
      if (has(o, "ops")) m.ops = ops(array(o, "ops", w), w + ".ops", false);
      if (i == 0 && (m.depth != 0 || !m.name.empty()))
        fail("modules[0] is not the root (name \"\", depth 0)");
      if (i > 0 && m.name.empty()) fail(w + " has the root's name \"\" but is not the root");
      if (auto [it, fresh] = seen.emplace(m.name, i); !fresh)
        fail(fmt::format("{}: {} is the name of modules[{}] too", w, excerpt(o["name"]),
                         it->second));
      // The parent: the nearest earlier module one level up (tree order), the top of `open`
      // once the deeper ones are closed.
      if (i > 0) {
        if (m.depth < 1) fail(w + ": a second root (depth 0)");
        if (static_cast<size_t>(m.depth) > open.size())
          fail(fmt::format("{}: depth {} does not follow the tree order (after depth {})", w,
                           m.depth, open.size() - 1));
        open.resize(static_cast<size_t>(m.depth));
        const int p = open.back();
        // The file's own "parent" (a name), when present, must be the one its depth says.
        auto named = o.find("parent");
        if (named != o.end() &&
            (!named->is_string() || named->get<std::string>() != r.modules[p].name))
          fail(fmt::format("{}: \"parent\" is {}, but its depth places it under \"{}\"", w,
                           excerpt(*named), r.modules[p].name));
        m.parent = p;
        r.modules[p].children.push_back(static_cast<int>(i));
      }
      open.push_back(static_cast<int>(i));
      r.modules.push_back(std::move(m));
    }
  }

  // A number that may be null (unknown: read as 0, as RegionStats holds unknown rates).
  double nullable(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return 0;
    return seconds(o, key, where);
  }

  // The regions (FlopsProfiler::region()): what diff() compares of each.
  void regions(const json& list, ProfileResult& r) {
    if (!list.is_array()) fail("\"regions\" is not an array");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& o = list[i];
      const std::string w = fmt::format("regions[{}]", i);
      if (!o.is_object()) fail(w + " is not an object");
      RegionStats g;
      g.name = text(o, "name", w);
      g.windows = count(o, "windows", w);
      g.duration_s = seconds(o, "duration_s", w);
      g.first_s = seconds(o, "first_window_s", w);
      g.spread = spread(o, "window_spread", w);
      g.flops = count(o, "flops", w);
      g.macs = count(o, "macs", w);
      g.bwd_flops = count(o, "bwd_flops", w);
      g.bytes = count(o, "bytes", w);
      auto t = o.find("tokens");
      if (t != o.end() && !t->is_null()) g.tokens = count(o, "tokens", w);
      g.tokens_per_s = nullable(o, "tokens_per_s", w);
      g.flops_per_token = nullable(o, "flops_per_token", w);
      g.latency_per_token_s = nullable(o, "latency_per_token_s", w);
      g.mfu = nullable(o, "mfu", w);
      g.hfu = nullable(o, "hfu", w);
      g.mbu = nullable(o, "mbu", w);
      r.regions.push_back(std::move(g));
    }
  }

  // An op table's rows: the model's (`phase` and the rest) or a module's own (`with_phase` false:
  // the slim rows, all forward).
  std::vector<OpStats> ops(const json& list, const std::string& where, bool with_phase) {
    std::vector<OpStats> out;
    for (size_t i = 0; i < list.size(); ++i) {
      const json& o = list[i];
      const std::string w = fmt::format("{}[{}]", where, i);
      if (!o.is_object()) fail(w + " is not an object");
      OpStats op;
      op.name = text(o, "name", w);
      if (with_phase) op.phase = text(o, "phase", w);
      op.calls = count(o, "calls", w);
      op.flops = count(o, "flops", w);
      op.macs = count(o, "macs", w);
      op.latency_s = seconds(o, "latency_s", w);
      if (has(o, "has_formula"))
        op.has_formula = o["has_formula"].is_boolean() && o["has_formula"].get<bool>();
      if (has(o, "bytes")) op.bytes = count(o, "bytes", w);
      out.push_back(std::move(op));
    }
    return out;
  }

  std::string source_;
  bool timed_ = true;  // summary.timed: latencies may be null when false
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
