// The batch-size sweep's renderings: text table, CSV and a plain SVG plot.
#include "reports/report_sweep.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace flopsprof::detail {
namespace {

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

std::string sweep_table(const std::vector<BatchSweepRow>& rows) {
  std::string out = fmt::format("{:>10} {:>14} {:>14} {:>14} {:>12}\n", "batch", "fwd peak MiB",
                                "train peak MiB", "fwd GFLOPs", "fwd ms");
  for (const BatchSweepRow& r : rows) {
    fmt::format_to(std::back_inserter(out), "{:>10} {:>14.2f} {:>14.2f} {:>14.3f} {:>12.2f}\n",
                   r.batch_size, mib(r.fwd_peak_bytes), mib(r.train_peak_bytes),
                   static_cast<double>(r.fwd_flops) * 1e-9, r.fwd_latency_s * 1e3);
  }
  return out;
}

std::string sweep_csv(const std::vector<BatchSweepRow>& rows) {
  std::string out = "batch_size,fwd_peak_bytes,train_peak_bytes,fwd_flops,fwd_latency_s\n";
  for (const BatchSweepRow& r : rows) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{}\n", r.batch_size, r.fwd_peak_bytes,
                   r.train_peak_bytes, r.fwd_flops, r.fwd_latency_s);
  }
  return out;
}

// A plain SVG (no plotting dependency): axes with ticks, one polyline per series, a legend.
std::string sweep_svg(const std::vector<BatchSweepRow>& rows) {
  const double W = 640, H = 420, left = 70, right = 20, top = 60, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  int64_t max_b = 1;
  double max_mib = 0;
  bool has_train = false;
  for (const BatchSweepRow& r : rows) {
    max_b = std::max(max_b, r.batch_size);
    max_mib = std::max({max_mib, mib(r.fwd_peak_bytes), mib(r.train_peak_bytes)});
    has_train = has_train || r.train_peak_bytes > 0;
  }
  // A "nice" y range: 1, 2 or 5 times a power of ten per tick, 5 ticks.
  double raw = std::max(max_mib, 1e-3) / 5.0;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / mag <= 1   ? mag
                : raw / mag <= 2 ? 2 * mag
                : raw / mag <= 5 ? 5 * mag
                                 : 10 * mag;
  double y_max = step * std::ceil(std::max(max_mib, 1e-3) / step);
  auto x = [&](int64_t b) {
    return left + pw * static_cast<double>(b) / static_cast<double>(max_b);
  };
  auto y = [&](double v) { return top + ph * (1.0 - v / y_max); };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">Peak memory vs batch "
      "size</text>\n",
      W, H, W / 2);
  fmt::format_to(std::back_inserter(s),
                 "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n"
                 "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"black\"/>\n",
                 left, top, top + ph, left + pw);
  for (double v = 0; v <= y_max + step * 1e-9; v += step) {
    fmt::format_to(std::back_inserter(s),
                   "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                   "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                   left, y(v), left + pw, left - 6, y(v) + 4, v);
  }
  for (const BatchSweepRow& r : rows) {
    fmt::format_to(std::back_inserter(s),
                   "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   x(r.batch_size), top + ph + 18, r.batch_size);
  }
  fmt::format_to(
      std::back_inserter(s),
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">batch size</text>\n"
      "<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">peak "
      "memory (MiB)</text>\n",
      left + pw / 2, H - 10, top + ph / 2, top + ph / 2);
  auto series = [&](const char* color, const char* label, int legend_row, auto value) {
    std::string points;
    for (const BatchSweepRow& r : rows) {
      fmt::format_to(std::back_inserter(points), "{:.1f},{:.1f} ", x(r.batch_size), y(value(r)));
      fmt::format_to(std::back_inserter(s),
                     "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x(r.batch_size),
                     y(value(r)), color);
    }
    fmt::format_to(
        std::back_inserter(s),
        "<polyline fill=\"none\" stroke=\"{0}\" stroke-width=\"2\" points=\"{1}\"/>\n"
        "<line x1=\"{2}\" y1=\"{3}\" x2=\"{4}\" y2=\"{3}\" stroke=\"{0}\" stroke-width=\"2\"/>"
        "<text x=\"{5}\" y=\"{6}\">{7}</text>\n",
        color, points, left + 12 + 180 * legend_row, top - 14, left + 36 + 180 * legend_row,
        left + 42 + 180 * legend_row, top - 10, label);
  };
  series("#1f77b4", "forward", 0, [](const BatchSweepRow& r) { return mib(r.fwd_peak_bytes); });
  if (has_train)
    series("#d62728", "training (forward + backward)", 1,
           [](const BatchSweepRow& r) { return mib(r.train_peak_bytes); });
  s += "</svg>\n";
  return s;
}

}  // namespace flopsprof::detail
