// Profiles read back from their JSON (docs/json.md): what diff() compares, checked key by key so
// that a foreign or corrupt file is refused with its name and the key at fault, never read as 0.
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

using nlohmann::json;

constexpr int kNewestSchema = 2;

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
  uint64_t count(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
      fail(fmt::format("{}: \"{}\" is not a count ({})", where, key, it->dump()));
    return it->get<uint64_t>();
  }
  int64_t integer(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    if (!it->is_number_integer()) fail(fmt::format("{}: \"{}\" is not an integer", where, key));
    return it->get<int64_t>();
  }
  double seconds(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    if (!it->is_number())
      fail(fmt::format("{}: \"{}\" is not a number ({})", where, key, it->dump()));
    return it->get<double>();
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
    json j;
    try {
      j = json::parse(text_in);
    } catch (const json::exception& e) {
      fail(fmt::format("not JSON ({})", e.what()));
    }
    if (!j.is_object()) fail("the document is not a JSON object");
    auto v = j.find("schema_version");
    if (v == j.end() || !v->is_number_integer()) fail("no \"schema_version\"");
    lp.schema_version = v->get<int>();
    if (lp.schema_version < 1)
      fail(fmt::format("schema_version {} is not one flopsprof writes", lp.schema_version));
    if (lp.schema_version > kNewestSchema) {
      throw Error(
          fmt::format("{}: schema_version {} is newer than this flopsprof reads ({}); "
                      "compare it with the flopsprof that wrote it",
                      source_, lp.schema_version, kNewestSchema));
    }
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
    r.params = count(s, "params", w);
    r.flops = count(s, "fwd_flops", w);
    r.macs = count(s, "fwd_macs", w);
    r.duration_s = seconds(s, "fwd_latency_s", w);
    r.batch_size = has(s, "batch_size") ? integer(s, "batch_size", w) : 0;
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
    x.intra_op_threads = static_cast<int>(integer(o, "intra_op_threads", w));
    x.libtorch_version = text(o, "libtorch_version", w);
    x.build_type = text(o, "build_type", w);
    x.device = text(o, "device", w);
    x.flopsprof_version = text(o, "flopsprof_version", w);
    x.profile_step = static_cast<int>(integer(o, "profile_step", w));
    x.runs = count(o, "runs", w);
  }

  void modules(const json& list, ProfileResult& r) {
    if (list.empty()) fail("\"modules\" is empty (the root model is always listed)");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& o = list[i];
      const std::string w = fmt::format("modules[{}]", i);
      if (!o.is_object()) fail(w + " is not an object");
      ModuleStats m;
      m.name = text(o, "name", w);
      m.type = text(o, "type", w);
      m.depth = static_cast<int>(integer(o, "depth", w));
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
      // The parent: the nearest earlier module one level up (tree order).
      if (i > 0) {
        if (m.depth < 1) fail(w + ": a second root (depth 0)");
        int p = static_cast<int>(i) - 1;
        while (p >= 0 && r.modules[p].depth >= m.depth) --p;
        if (p < 0 || r.modules[p].depth != m.depth - 1)
          fail(fmt::format("{}: depth {} does not follow the tree order", w, m.depth));
        m.parent = p;
        r.modules[p].children.push_back(static_cast<int>(i));
      }
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
};

}  // namespace

LoadedProfile profile_from_json(const std::string& text, const std::string& source) {
  return Reader(source).read(text);
}

LoadedProfile load_profile_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot open '{}': no such file, or not readable", path));
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error(fmt::format("cannot read '{}'", path));
  return profile_from_json(s.str(), path);
}

}  // namespace flopsprof
