// The roofline's arithmetic: peaks per dtype, ridge points, a point under the ceilings, and the
// parsing of peaks given as text (ProfilerOptions, the command's flags, the environment).
#include "flopsprof/roofline.h"

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

RooflinePoint roofline_point(uint64_t flops, bool flops_known, uint64_t bytes, double seconds,
                             const MachinePeaks& peaks, DType dtype) {
  RooflinePoint p;
  const double f = flops_known ? static_cast<double>(flops) : 0.0;
  const double b = static_cast<double>(bytes);
  if (seconds > 0) {
    p.achieved_flops_per_s = f / seconds;
    p.achieved_bytes_per_s = b / seconds;
  }
  if (!flops_known || (flops == 0 && bytes == 0)) return p;
  p.intensity = bytes > 0 ? f / b : 0.0;
  if (!peaks.known(dtype)) return p;
  const double peak = peaks.peak_flops(dtype), bw = peaks.bytes_per_s;
  const bool memory = bytes > 0 && p.intensity < peak / bw;
  p.bound = memory ? "memory" : "compute";
  p.attainable_flops_per_s = memory ? p.intensity * bw : peak;
  if (seconds > 0) p.share = memory ? p.achieved_bytes_per_s / bw : p.achieved_flops_per_s / peak;
  return p;
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
    size_t d = 0;
    for (; d < static_cast<size_t>(DType::kCount); ++d) {
      if (name == dtype_name(static_cast<DType>(d))) break;
    }
    if (d == static_cast<size_t>(DType::kCount) || d == 0) {
      throw Error(
          fmt::format("peak FLOP/s '{}': unknown dtype '{}' (fp64, fp32, fp16, bf16, fp8, "
                      "...)",
                      text, name));
    }
    r[d] = parse_value(item.substr(eq + 1), "peak FLOP/s");
    start = comma + 1;
  }
  return r;
}

double parse_peak_bandwidth(const std::string& text) { return parse_value(text, "peak bandwidth"); }

std::string intensity_to_string(double flops_per_byte) {
  return fmt::format("{:.2f} FLOP/B", flops_per_byte);
}

std::string bandwidth_to_string(double bytes_per_s) {
  const std::string s = number_to_string(bytes_per_s);
  return s + (s.back() >= 'A' && s.back() <= 'Z' ? "B/s" : " B/s");
}

}  // namespace flopsprof
