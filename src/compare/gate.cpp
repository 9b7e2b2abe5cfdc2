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
    Shown how = Shown::kCount;
    bool known = true, noise = false;
    double base = 0, next = 0, delta = 0, pct = 0;
    const CountDelta* count = nullptr;  // a count's exact values, for its line
    auto from_count = [&](const CountDelta& c) {
      count = &c;
      known = c.known;
      base = static_cast<double>(c.base);
      next = static_cast<double>(c.next);
      const double magnitude = static_cast<double>(c.abs_delta());
      delta = c.next >= c.base ? magnitude : -magnitude;
      pct = c.percent();
    };
    auto from_time = [&](const TimeDelta& t) {
      how = Shown::kTime;
      known = t.known;
      noise = t.noise;
      base = t.base;
      next = t.next;
      delta = t.delta();
      pct = t.percent();
    };
    auto from_rate = [&](const RateDelta& x) {
      how = Shown::kRate;
      known = x.known();
      base = x.base;
      next = x.next;
      delta = x.delta();
      pct = x.percent();
    };
    if (!r.region.empty()) {
      const RegionDiff* g = d.region(r.region);
      if (g == nullptr) {
        out.unknown.push_back(
            fmt::format("{}: no region '{}' in either profile", r.text, r.region));
        continue;
      }
      const std::string& n = r.field;
      if (n == "latency")
        from_time(g->latency);
      else if (n == "latency_per_token")
        from_time(g->latency_per_token);
      else if (n == "tokens_per_s")
        from_rate(g->tokens_per_s);
      else if (n == "mfu")
        from_rate(g->mfu);
      else if (n == "mbu")
        from_rate(g->mbu);
      else if (n == "flops")
        from_count(g->flops);
      else if (n == "bwd_flops")
        from_count(g->bwd_flops);
      else if (n == "bytes")
        from_count(g->bytes);
      else if (n == "tokens")
        from_count(g->tokens);
      else
        from_count(g->windows);
    } else if (r.module.empty()) {
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
          r.region.empty()
              ? fmt::format("{}: a profile does not record {} (see the warnings)", r.text, r.field)
              : fmt::format("{}: {} is unknown in a profile (no tokens, or no peaks, there)",
                            r.text, r.field));
      continue;
    }
    const double x = r.percent ? pct : delta;
    const bool exact = count != nullptr && !r.percent && r.integer;
    if (exact ? !holds_order(compare_exact(*count, r), r.op) : !holds(x, r.op, r.value)) continue;
    const std::string line =
        count != nullptr
            ? fmt::format("{}: {} -> {} ({}{}, {:+.2f}%)", r.text, count->base, count->next,
                          count->next >= count->base ? "+" : "-", count->abs_delta(), pct)
            : fmt::format("{}: {} -> {} ({}{}, {:+.2f}%)", r.text, shown(base, how),
                          shown(next, how), delta >= 0 ? "+" : "-", shown(std::fabs(delta), how),
                          pct);
    (noise ? out.noise : out.broken).push_back(line);
  }
  return out;
}

}  // namespace flopsprof
