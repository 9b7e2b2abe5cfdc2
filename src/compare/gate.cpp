// --fail-if rules over a diff (docs/diff.md, "A gate for CI").
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

// Rule fields: the totals' key and the module field behind each.
struct Field {
  const char* name;
  const char* total;  // "" : no total
  bool module;        // also per module
};
constexpr Field kFields[] = {
    {"latency", "fwd_latency_s", true},
    {"bwd_latency", "bwd_latency_s", true},
    {"step_latency", "step_latency_s", false},
    {"iter_latency", "iter_latency_s", false},
    {"flops", "fwd_flops", true},
    {"macs", "fwd_macs", true},
    {"bwd_flops", "bwd_flops", true},
    {"params", "params", true},
    {"calls", "", true},
    {"bytes", "fwd_bytes", true},
    {"memory.peak", "memory.peak_bytes", false},
};

const Field* find_field(const std::string& name) {
  for (const Field& f : kFields) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::string field_list() {
  std::string s;
  for (const Field& f : kFields) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

bool holds(double x, const std::string& op, double v) {
  if (op == ">") return x > v;
  if (op == ">=") return x >= v;
  if (op == "<") return x < v;
  if (op == "<=") return x <= v;
  if (op == "==") return x == v;
  return x != v;
}

// One side's value as text for a broken rule's line.
std::string shown(double v, bool time) {
  return time ? duration_to_string(v) : fmt::format("{}", static_cast<uint64_t>(v));
}

}  // namespace

GateRule parse_gate_rule(const std::string& text) {
  GateRule r;
  r.text = text;
  std::string s = text;
  auto bad = [&](const std::string& why) {
    throw Error(
        fmt::format("--fail-if '{}': {}; write [module=NAME:]FIELD OP VALUE[%], e.g. "
                    "latency>+5%, flops>0, module=encoder:params!=0",
                    text, why));
  };
  if (s.rfind("module=", 0) == 0) {
    const size_t colon = s.find(':');
    if (colon == std::string::npos) bad("module=NAME is not followed by ':'");
    r.module = s.substr(7, colon - 7);
    s = s.substr(colon + 1);
  }
  const size_t op = s.find_first_of("<>=!");
  if (op == std::string::npos) bad("no operator (one of > >= < <= == !=)");
  r.field = s.substr(0, op);
  size_t len = (op + 1 < s.size() && s[op + 1] == '=') ? 2 : 1;
  r.op = s.substr(op, len);
  if (r.op == "=" || r.op == "!") bad("'" + r.op + "' is not an operator (use == or !=)");
  const Field* f = find_field(r.field);
  if (f == nullptr) bad(fmt::format("unknown field '{}' (fields: {})", r.field, field_list()));
  if (!r.module.empty() && !f->module)
    bad(fmt::format("'{}' is a total, not a module's field", r.field));
  if (r.module.empty() && f->total[0] == '\0') bad(fmt::format("'{}' needs module=NAME:", r.field));
  std::string v = s.substr(op + len);
  if (!v.empty() && v.back() == '%') {
    r.percent = true;
    v.pop_back();
  }
  char* end = nullptr;
  r.value = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(r.value))
    bad(fmt::format("'{}' is not a number", v));
  return r;
}

GateResult check_gate(const ProfileDiff& d, const std::vector<GateRule>& rules) {
  GateResult out;
  for (const GateRule& r : rules) {
    const Field* f = find_field(r.field);
    if (f == nullptr) {
      out.unknown.push_back(r.text + ": unknown field");
      continue;
    }
    bool time = false, known = true, noise = false;
    double base = 0, next = 0, delta = 0, pct = 0;
    auto from_count = [&](const CountDelta& c) {
      known = c.known;
      base = static_cast<double>(c.base);
      next = static_cast<double>(c.next);
      delta = static_cast<double>(c.delta());
      pct = c.percent();
    };
    auto from_time = [&](const TimeDelta& t) {
      time = true;
      known = t.known;
      noise = t.noise;
      base = t.base;
      next = t.next;
      delta = t.delta();
      pct = t.percent();
    };
    if (r.module.empty()) {
      const TotalDiff* t = d.total(f->total);
      if (t->is_time) {
        from_time(t->time);
      } else {
        from_count(t->count);
      }
    } else {
      const ModuleDiff* m = d.module(r.module);
      if (m == nullptr) {
        out.unknown.push_back(
            fmt::format("{}: no module '{}' in either profile", r.text, r.module));
        continue;
      }
      // A module in one profile only: the other side had none of it (0), which is known.
      const std::string& n = r.field;
      if (n == "latency")
        from_time(m->latency);
      else if (n == "bwd_latency")
        from_time(m->bwd_latency);
      else if (n == "flops")
        from_count(m->flops);
      else if (n == "macs")
        from_count(m->macs);
      else if (n == "bwd_flops")
        from_count(m->bwd_flops);
      else if (n == "params")
        from_count(m->params);
      else if (n == "calls")
        from_count(m->calls);
      else
        from_count(m->bytes);
    }
    if (!known) {
      out.unknown.push_back(
          fmt::format("{}: a profile does not record {} (see the warnings)", r.text, r.field));
      continue;
    }
    const double x = r.percent ? pct : (time ? delta : delta);
    if (!holds(x, r.op, r.value)) continue;
    const std::string line =
        fmt::format("{}: {} -> {} ({}{}, {:+.2f}%)", r.text, shown(base, time), shown(next, time),
                    delta >= 0 ? "+" : "-", shown(std::fabs(delta), time), pct);
    (noise ? out.noise : out.broken).push_back(line);
  }
  return out;
}

}  // namespace flopsprof
