// The roofline's arithmetic: peaks per dtype, ridge points, a point under the ceilings, and the
// parsing of peaks given as text (ProfilerOptions, the command's flags, the environment).
#include "flopsprof/roofline.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "flopsprof/error.h"
#include "flopsprof/report.h"

namespace flopsprof {

double MachinePeaks::peak_flops(DType dtype) const {
  const double own = flops_per_s[static_cast<size_t>(dtype)];
  if (own > 0) return own;
  return flops_per_s[static_cast<size_t>(DType::kFloat32)];
}

double MachinePeaks::ridge(DType dtype) const {
  return known(dtype) ? peak_flops(dtype) / bytes_per_s : 0.0;
}

double MachinePeaks::ridge(DType dtype, const BandwidthLevel& level) const {
  return peak_flops(dtype) > 0 && level.bytes_per_s > 0 ? peak_flops(dtype) / level.bytes_per_s
                                                        : 0.0;
}

int MachinePeaks::level_for(uint64_t bytes) const {
  for (size_t i = 0; i < bandwidth_by_level.size(); ++i) {
    const BandwidthLevel& l = bandwidth_by_level[i];
    if (l.capacity_bytes == 0 || bytes <= l.capacity_bytes || i + 1 == bandwidth_by_level.size())
      return static_cast<int>(i);
  }
  return -1;
}

RooflinePoint roofline_point(uint64_t flops, bool flops_known, uint64_t bytes, double seconds,
                             const MachinePeaks& peaks, DType dtype) {
  MemoryCeiling main;
  main.name = peaks.bandwidth_by_level.empty() ? "" : peaks.bandwidth_by_level.back().name;
  main.bytes_per_s = peaks.bytes_per_s;
  return roofline_point(flops, flops_known, bytes, seconds, peaks, dtype, main);
}

RooflinePoint roofline_point(uint64_t flops, bool flops_known, uint64_t bytes, double seconds,
                             const MachinePeaks& peaks, DType dtype, const MemoryCeiling& memory) {
  RooflinePoint p;
  const double f = flops_known ? static_cast<double>(flops) : 0.0;
  const double b = static_cast<double>(bytes);
  p.timed = seconds > 0;
  if (p.timed) {
    p.achieved_flops_per_s = f / seconds;
    p.achieved_bytes_per_s = b / seconds;
  }
  if (!flops_known || (flops == 0 && bytes == 0)) return p;
  p.intensity = bytes > 0 ? f / b : 0.0;
  const double peak = peaks.peak_flops(dtype), bw = memory.bytes_per_s;
  if (!(peak > 0) || !(bw > 0)) return p;
  const bool on_memory = bytes > 0 && p.intensity < peak / bw;
  p.bound = on_memory ? "memory" : "compute";
  p.attainable_flops_per_s = on_memory ? p.intensity * bw : peak;
  p.ceiling = on_memory ? memory.name : "";
  p.ceiling_bytes_per_s = bytes > 0 ? bw : 0.0;
  if (seconds > 0) {
    p.share = on_memory ? p.achieved_bytes_per_s / bw : p.achieved_flops_per_s / peak;
    p.above_ceiling = p.share > 1.0 + kCeilingTolerance;
  }
  return p;
}

std::string memory_ceiling_text(const MachinePeaks& m, const RooflinePoint& p) {
  const std::string value = bandwidth_to_string(p.ceiling_bytes_per_s);
  for (const BandwidthLevel& l : m.bandwidth_by_level) {
    if (l.name != p.ceiling) continue;
    if (std::abs(l.bytes_per_s - p.ceiling_bytes_per_s) <= 0.005 * l.bytes_per_s) break;
    return fmt::format(
        "its memory ceiling ({}: its bytes at their levels' bandwidths, most "
        "in {}, {})",
        value, l.name, bandwidth_to_string(l.bytes_per_s));
  }
  return fmt::format("the {}bandwidth ({})", p.ceiling.empty() ? "" : p.ceiling + " ", value);
}

namespace {

// "1.5e12", "900G", "3.35T", "2.5 TB/s" -> the value; throws Error on anything else.
double parse_value(const std::string& text, const char* what) {
  const char* s = text.c_str();
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s) {
    throw Error(
        fmt::format("{} '{}' is not a number: give e.g. 1.5e12, 900G or 3.35T", what, text));
  }
  while (*end == ' ') ++end;
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1e3;
      ++end;
      break;
    case 'M':
      v *= 1e6;
      ++end;
      break;
    case 'G':
      v *= 1e9;
      ++end;
      break;
    case 'T':
      v *= 1e12;
      ++end;
      break;
    case 'P':
      v *= 1e15;
      ++end;
      break;
    default:
      break;
  }
  // An optional unit after the suffix: FLOPS, FLOP/s, B/s.
  const std::string rest(end);
  if (!rest.empty() && rest != "FLOPS" && rest != "FLOP/s" && rest != "B/s" && rest != "/s") {
    throw Error(
        fmt::format("{} '{}': unexpected '{}' after the number; give e.g. 1.5e12, 900G or "
                    "3.35T",
                    what, text, rest));
  }
  // Every machine's peaks lie between a megaFLOP/s (or MB/s) and an exaFLOP/s: a value outside
  // is a typo (1e-300, 3e30), and would put every share at 0 or at 1e300 %.
  if (!std::isfinite(v) || v < 1e6 || v > 1e18) {
    throw Error(fmt::format("{} '{}' must lie between 1M and 1000P per second (a machine's peak)",
                            what, text));
  }
  return v;
}

}  // namespace

RateByDtype parse_peak_flops(const std::string& text) {
  RateByDtype r{};
  if (text.find('=') == std::string::npos) {
    r.fill(parse_value(text, "peak FLOP/s"));
    return r;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw Error(
          fmt::format("peak FLOP/s '{}': '{}' has no '='; give a number for every dtype "
                      "or dtype=number pairs, e.g. fp32=67T,bf16=989T",
                      text, item));
    }
    const std::string name = item.substr(0, eq);
    const std::optional<DType> dtype = dtype_from_name(name);
    const size_t d = dtype ? static_cast<size_t>(*dtype) : 0;
    if (d == 0) {
      throw Error(
          fmt::format("peak FLOP/s '{}': unknown dtype '{}' (fp64, fp32, fp16, bf16, fp8, "
                      "...)",
                      text, name));
    }
    if (r[d] > 0)
      throw Error(
          fmt::format("peak FLOP/s '{}': {} is given twice; give each dtype once", text, name));
    r[d] = parse_value(item.substr(eq + 1), "peak FLOP/s");
    start = comma + 1;
  }
  return r;
}

double parse_peak_bandwidth(const std::string& text) { return parse_value(text, "peak bandwidth"); }

std::vector<BandwidthLevel> parse_bandwidth_levels(const std::string& text) {
  const std::string form =
      "give NAME:CAPACITY=RATE for each cache level, fastest first, then "
      "NAME=RATE for main memory, e.g. L1:32K=400G,L2:1M=200G,DRAM=20G";
  auto bad = [&](const std::string& why) {
    throw Error(fmt::format("memory levels '{}': {}; {}", text, why, form));
  };
  std::vector<BandwidthLevel> levels;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) bad("'" + item + "' has no '='");
    BandwidthLevel l;
    std::string head = item.substr(0, eq);
    if (const size_t colon = head.find(':'); colon != std::string::npos) {
      std::string cap = head.substr(colon + 1);
      head = head.substr(0, colon);
      uint64_t scale = 1;
      if (!cap.empty() && (cap.back() == 'K' || cap.back() == 'k')) scale = uint64_t{1} << 10;
      if (!cap.empty() && cap.back() == 'M') scale = uint64_t{1} << 20;
      if (!cap.empty() && cap.back() == 'G') scale = uint64_t{1} << 30;
      if (scale > 1) cap.pop_back();
      char* end = nullptr;
      const unsigned long long n = std::strtoull(cap.c_str(), &end, 10);
      if (cap.empty() || !std::isdigit(static_cast<unsigned char>(cap[0])) ||
          end != cap.c_str() + cap.size() || n == 0 || n > (uint64_t{1} << 50))
        bad("capacity '" + item.substr(colon + 1, eq - colon - 1) + "' is not a size");
      l.capacity_bytes = n * scale;
    }
    if (head.empty()) bad("'" + item + "' names no level");
    l.name = head;
    l.bytes_per_s = parse_value(item.substr(eq + 1), "bandwidth");
    if (!levels.empty() && levels.back().capacity_bytes == 0)
      bad("only the last level (main memory) may have no capacity");
    if (!levels.empty() && l.capacity_bytes != 0 &&
        l.capacity_bytes <= levels.back().capacity_bytes)
      bad("capacities must rise from level to level");
    levels.push_back(l);
  }
  if (levels.back().capacity_bytes != 0) bad("the last level (main memory) takes no capacity");
  return levels;
}

std::string intensity_to_string(double flops_per_byte) {
  return fmt::format("{:.2f} FLOP/B", flops_per_byte);
}

std::string bandwidth_to_string(double bytes_per_s) { return number_to_string(bytes_per_s, "B/s"); }

}  // namespace flopsprof
