#include "compare/diff_format.h"

#include "reports/schema.h"
#include "reports/terminal.h"

#include <cmath>

#include <fmt/format.h>

namespace flopsprof::detail {

// A decimal number as a rule writes it: [+-]digits[.digits][e[+-]digits] (strtod alone would
// also take hexadecimal, "inf" and leading spaces).
bool is_decimal_number(const std::string& v) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    return i > from;
  };
  if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
  bool any = digits();
  if (i < v.size() && v[i] == '.') {
    ++i;
    any = digits() || any;
  }
  if (!any) return false;
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == v.size();
}

const char* status_name(DiffStatus s) {
  switch (s) {
    case DiffStatus::kSame:
      return "same";
    case DiffStatus::kChanged:
      return "changed";
    case DiffStatus::kAdded:
      return "added";
    case DiffStatus::kRemoved:
      return "removed";
  }
  return "?";
}

std::string percent_text(double p) {
  if (std::isinf(p)) return p > 0 ? "new" : "gone";
  if (std::fabs(p) >= 1e6) return fmt::format("{:+.2g}%", p);  // keeps the columns
  return fmt::format("{:+.1f}%", p);
}

std::string count_delta_text(const CountDelta& c) {
  if (!c.known) return "n/a";
  if (c.base == c.next) return "0";
  return (c.next > c.base ? "+" : "-") + number_to_string(static_cast<double>(c.abs_delta()));
}

std::string time_delta_text(const TimeDelta& t) {
  if (!t.known) return "n/a";
  const double d = t.delta();
  return (d >= 0 ? "+" : "-") + duration_to_string(std::fabs(d)) + (t.noise ? " ~" : "");
}

std::string time_side_text(const TimeDelta& t, double value) {
  return t.known ? duration_to_string(value) : std::string("n/a");
}

std::string time_percent_text(const TimeDelta& t) {
  return t.known ? percent_text(t.percent()) : std::string();
}

std::string rate_text(double v, bool fraction) {
  if (v <= 0) return "n/a";
  return fraction ? fmt::format("{:.1f}%", 100 * v) : number_to_string(v);
}

std::string rate_percent_text(const RateDelta& r) {
  return r.known() ? percent_text(r.percent()) : "";
}

std::string share_text(const ModuleDiff& m) {
  return m.share_known ? fmt::format("{:.1f}%", 100 * m.share_of_delta) : "n/a";
}

bool in_both(const ModuleDiff& m) {
  return m.status == DiffStatus::kSame || m.status == DiffStatus::kChanged;
}

std::string module_label(const ModuleDiff& m) {
  std::string name = m.name.empty() ? module_label(m.name) : printable(m.name);
  if (!m.base_name.empty() && m.base_name != m.name)
    name += " (was " + printable(m.base_name) + ")";
  return name;
}

std::string type_label(const ModuleDiff& m) {
  if (m.base_type == m.new_type || m.base_type.empty()) return printable(m.new_type);
  if (m.new_type.empty()) return printable(m.base_type);
  return printable(m.base_type) + " -> " + printable(m.new_type);
}

bool unused_training_total(const TotalDiff& t) {
  const bool training = t.key.rfind("bwd_", 0) == 0 || t.key.rfind("step_", 0) == 0;
  if (!training) return false;
  return t.is_time ? t.time.known && t.time.base == 0 && t.time.next == 0
                   : t.count.known && t.count.base == 0 && t.count.next == 0;
}

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

}  // namespace flopsprof::detail
