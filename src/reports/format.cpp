// Human-readable numbers with units, as DeepSpeed prints them ("8.21 G", "120.53 ms").
#include <cmath>

#include <fmt/format.h>

#include "flopsprof/report.h"

namespace flopsprof {

const char* convention_name(AttentionConvention convention) {
  return convention == AttentionConvention::kCausal ? "causal" : "dense";
}

std::string number_to_string(double value, int precision) {
  static const struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& u : kUnits) {
    if (std::fabs(value) >= u.scale)
      return fmt::format("{:.{}f} {}", value / u.scale, precision, u.unit);
  }
  if (value == std::floor(value)) return fmt::format("{:.0f}", value);
  return fmt::format("{:.{}f}", value, precision);
}

std::string number_to_string(double value, std::string_view unit) {
  std::string s = number_to_string(value);
  if (unit.empty()) return s;
  if (!(s.back() >= 'A' && s.back() <= 'Z')) s += ' ';
  return s.append(unit);
}

std::string params_to_string(uint64_t params) {
  return number_to_string(static_cast<double>(params));
}

std::string macs_to_string(uint64_t macs) {
  return number_to_string(static_cast<double>(macs), "MACs");
}

std::string flops_to_string(uint64_t flops) { return number_to_string(static_cast<double>(flops)); }

std::string flops_per_second_to_string(double flops_per_second) {
  return number_to_string(flops_per_second, "FLOPS");
}

std::string duration_to_string(double seconds) {
  if (seconds >= 1e6) return fmt::format("{:.3g} s", seconds);  // a long run, or a bad file
  if (seconds >= 1.0) return fmt::format("{:.2f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.2f} us", seconds * 1e6);
}

std::string bytes_to_string(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (std::fabs(b) >= 1024.0 * 1024.0 * 1024.0)
    return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
  if (std::fabs(b) >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  if (std::fabs(b) >= 1024.0) return fmt::format("{:.2f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace flopsprof
