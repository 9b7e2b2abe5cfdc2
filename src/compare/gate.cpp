// --fail-if rules over a diff (docs/diff.md, "A gate for CI").
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "compare/diff_format.h"
#include "flopsprof/diff.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

// Rule fields: the totals' key and whether each is also a module's and a region's field.
struct Field {
  const char* name;
  const char* total;  // "" : no total
  bool module;        // also per module
  bool region;        // also per region
};
constexpr Field kFields[] = {
    {"latency", "fwd_latency_s", true, true},
    {"bwd_latency", "bwd_latency_s", true, false},
    {"step_latency", "step_latency_s", false, false},
    {"iter_latency", "iter_latency_s", false, false},
    {"flops", "fwd_flops", true, true},
    {"macs", "fwd_macs", true, false},
    {"bwd_flops", "bwd_flops", true, true},
    {"params", "params", true, false},
    {"calls", "", true, false},
    {"bytes", "fwd_bytes", true, true},
    {"memory.peak", "memory.peak_bytes", false, false},
    {"latency_per_token", "", false, true},
    {"tokens_per_s", "", false, true},
    {"mfu", "", false, true},
    {"mbu", "", false, true},
    {"tokens", "", false, true},
    {"windows", "", false, true},
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

// Compares a count's exact delta (sign and magnitude) with a rule's exact integer: -1, 0, 1.
int compare_exact(const CountDelta& c, const GateRule& r) {
  const bool neg = c.next < c.base;
  const uint64_t mag = c.abs_delta();
  const bool zero = mag == 0;
  const bool rzero = r.magnitude == 0 && !r.beyond;
  if (zero && rzero) return 0;
  const bool rneg = r.negative && !rzero;
  if (!zero && neg != rneg) return neg ? -1 : 1;
  if (zero) return rneg ? 1 : -1;
  // same sign: compare magnitudes (beyond is larger than any delta)
  int m = r.beyond ? -1 : (mag < r.magnitude ? -1 : mag > r.magnitude ? 1 : 0);
  return neg ? -m : m;
}

bool holds_order(int cmp, const std::string& op) {
  if (op == ">") return cmp > 0;
  if (op == ">=") return cmp >= 0;
  if (op == "<") return cmp < 0;
  if (op == "<=") return cmp <= 0;
  if (op == "==") return cmp == 0;
  return cmp != 0;
}

bool holds(double x, const std::string& op, double v) {
  if (op == ">") return x > v;
  if (op == ">=") return x >= v;
  if (op == "<") return x < v;
  if (op == "<=") return x <= v;
  if (op == "==") return x == v;
  return x != v;
}

// How a field's values read in a broken rule's line.
enum class Shown { kCount, kTime, kRate };

// One side's value as text for a broken rule's line (counts are written from their integers).
std::string shown(double v, Shown how) {
  if (how == Shown::kTime) return duration_to_string(v);
  return fmt::format("{:.4g}", v);
}

// A rule field's values in both profiles, as the rule compares them.
struct RuleValue {
  Shown how = Shown::kCount;
  bool known = true, noise = false;
  double base = 0, next = 0, delta = 0, pct = 0;
  const CountDelta* count = nullptr;  // a count's exact values, for its line
};

RuleValue of_count(const CountDelta& c) {
  RuleValue v;
  v.count = &c;
  v.known = c.known;
  v.base = static_cast<double>(c.base);
  v.next = static_cast<double>(c.next);
  const double magnitude = static_cast<double>(c.abs_delta());
  v.delta = c.next >= c.base ? magnitude : -magnitude;
  v.pct = c.percent();
  return v;
}

RuleValue of_time(const TimeDelta& t) {
  RuleValue v;
  v.how = Shown::kTime;
  v.known = t.known;
  v.noise = t.noise;
  v.base = t.base;
  v.next = t.next;
  v.delta = t.delta();
  v.pct = t.percent();
  return v;
}

RuleValue of_rate(const RateDelta& x) {
  RuleValue v;
  v.how = Shown::kRate;
  v.known = x.known();
  v.base = x.base;
  v.next = x.next;
  v.delta = x.delta();
  v.pct = x.percent();
  return v;
}

// A region's field (one that parse_gate_rule accepts for a region).
RuleValue region_value(const RegionDiff& g, const std::string& n) {
  if (n == "latency") return of_time(g.latency);
  if (n == "latency_per_token") return of_time(g.latency_per_token);
  if (n == "tokens_per_s") return of_rate(g.tokens_per_s);
  if (n == "mfu") return of_rate(g.mfu);
  if (n == "mbu") return of_rate(g.mbu);
  if (n == "flops") return of_count(g.flops);
  if (n == "bwd_flops") return of_count(g.bwd_flops);
  if (n == "bytes") return of_count(g.bytes);
  if (n == "tokens") return of_count(g.tokens);
  return of_count(g.windows);
}

// A module's field. A module in one profile only: the other side had none of it (0), known.
RuleValue module_value(const ModuleDiff& m, const std::string& n) {
  if (n == "latency") return of_time(m.latency);
  if (n == "bwd_latency") return of_time(m.bwd_latency);
  if (n == "flops") return of_count(m.flops);
  if (n == "macs") return of_count(m.macs);
  if (n == "bwd_flops") return of_count(m.bwd_flops);
  if (n == "params") return of_count(m.params);
  if (n == "calls") return of_count(m.calls);
  return of_count(m.bytes);
}

// Whether a known value meets the rule's condition (the rule is broken): an integer rule on a
// count compares exactly.
bool breaks(const GateRule& r, const RuleValue& v) {
  if (v.count != nullptr && !r.percent && r.integer)
    return holds_order(compare_exact(*v.count, r), r.op);
  return holds(r.percent ? v.pct : v.delta, r.op, r.value);
}

// A broken rule's line: both sides, the delta and its percent (counts from their integers).
std::string broken_line(const GateRule& r, const RuleValue& v) {
  if (v.count != nullptr) {
    const CountDelta& c = *v.count;
    return fmt::format("{}: {} -> {} ({}{}, {:+.2f}%)", r.text, c.base, c.next,
                       c.next >= c.base ? "+" : "-", c.abs_delta(), v.pct);
  }
  return fmt::format("{}: {} -> {} ({}{}, {:+.2f}%)", r.text, shown(v.base, v.how),
                     shown(v.next, v.how), v.delta >= 0 ? "+" : "-",
                     shown(std::fabs(v.delta), v.how), v.pct);
}

}  // namespace

GateRule parse_gate_rule(const std::string& text) {
  GateRule r;
  r.text = text;
  std::string s = text;
  auto bad = [&](const std::string& why) {
    throw Error(
        fmt::format("--fail-if '{}': {}; write [module=NAME:|region=NAME:]FIELD OP VALUE[%], "
                    "e.g. latency>+5%, flops>0, module=encoder:params!=0, "
                    "region=decode:tokens_per_s<-5%",
                    text, why));
  };
  for (const char* prefix : {"module=", "region="}) {
    if (s.rfind(prefix, 0) != 0) continue;
    const size_t colon = s.find(':');
    if (colon == std::string::npos) bad(std::string(prefix) + "NAME is not followed by ':'");
    std::string& name = prefix[0] == 'm' ? r.module : r.region;
    name = s.substr(7, colon - 7);  // both prefixes are 7 characters
    if (name.empty()) bad(std::string(prefix) + " names nothing");
    s = s.substr(colon + 1);
    break;
  }
  const size_t op = s.find_first_of("<>=!");
  if (op == std::string::npos) bad("no operator (one of > >= < <= == !=)");
  r.field = s.substr(0, op);
  size_t len = (op + 1 < s.size() && s[op + 1] == '=') ? 2 : 1;
  r.op = s.substr(op, len);
  if (r.op == "=" || r.op == "!") bad("'" + r.op + "' is not an operator (use == or !=)");
  const Field* f = find_field(r.field);
  if (f == nullptr) bad(fmt::format("unknown field '{}' (fields: {})", r.field, field_list()));
  if (!r.module.empty() && !f->module) bad(fmt::format("'{}' is not a module's field", r.field));
  if (!r.region.empty() && !f->region)
    bad(
        fmt::format("'{}' is not a region's field (a region's: latency, latency_per_token, "
                    "tokens_per_s, mfu, mbu, flops, bwd_flops, bytes, tokens, windows)",
                    r.field));
  if (r.module.empty() && r.region.empty() && f->total[0] == '\0') {
    bad(fmt::format("'{}' needs {}NAME:", r.field, f->module ? "module=" : "region="));
  }
  std::string v = s.substr(op + len);
  if (!v.empty() && v.back() == '%') {
    r.percent = true;
    v.pop_back();
  }
  if (!detail::is_decimal_number(v))
    bad(fmt::format("'{}' is not a decimal number (e.g. 5, -2.5, 1e9)", v));
  if (v.find_first_of(".eE") == std::string::npos) {  // an integer: kept exactly
    r.integer = true;
    r.negative = v[0] == '-';
    for (char c : v) {
      if (c < '0' || c > '9') continue;
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      if (r.magnitude > (UINT64_MAX - digit) / 10) r.beyond = true;
      if (!r.beyond) r.magnitude = r.magnitude * 10 + digit;
    }
  }
  r.value = std::strtod(v.c_str(), nullptr);
  if (!std::isfinite(r.value)) bad(fmt::format("'{}' is out of range", v));
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
    RuleValue v;
    if (!r.region.empty()) {
      const RegionDiff* g = d.region(r.region);
      if (g == nullptr) {
        out.unknown.push_back(
            fmt::format("{}: no region '{}' in either profile", r.text, r.region));
        continue;
      }
      v = region_value(*g, r.field);
    } else if (r.module.empty()) {
      const TotalDiff* t = d.total(f->total);
      v = t->is_time ? of_time(t->time) : of_count(t->count);
    } else {
      const ModuleDiff* m = d.module(r.module);
      if (m == nullptr) {
        out.unknown.push_back(
            fmt::format("{}: no module '{}' in either profile", r.text, r.module));
        continue;
      }
      v = module_value(*m, r.field);
    }
    if (!v.known) {
      out.unknown.push_back(
          r.region.empty()
              ? fmt::format("{}: a profile does not record {} (see the warnings)", r.text, r.field)
              : fmt::format("{}: {} is unknown in a profile (no tokens, or no peaks, there)",
                            r.text, r.field));
      continue;
    }
    if (breaks(r, v)) (v.noise ? out.noise : out.broken).push_back(broken_line(r, v));
  }
  return out;
}

}  // namespace flopsprof
