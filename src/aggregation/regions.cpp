#include "aggregation/regions.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "aggregation/op_fold.h"
#include "aggregation/spread.h"
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// Adds with saturation (the count stage's sat_add).
void add_sat(uint64_t& total, uint64_t v) { total = sat_add(total, v); }

// What a region gathers beyond its public numbers.
struct RegionAcc {
  FlopsByDtype model_by_dtype{};     // forward + backward: MFU's FLOPs
  FlopsByDtype hardware_by_dtype{};  // what ran: HFU's (masked work in, skipped out, recompute)
  std::vector<uint64_t> window_tokens;
  std::vector<uint8_t> window_given;  // tokens given for the window
  std::vector<uint8_t> window_found;  // tokens found from an embedding's indices
};

// The windows by start, for finding the one an instant falls in.
class WindowIndex {
 public:
  explicit WindowIndex(const std::vector<RegionWindow>& windows, int64_t stop) {
    for (size_t k = 0; k < windows.size(); ++k) {
      const int64_t end = windows[k].end_tick != 0 ? windows[k].end_tick : stop;
      spans_.push_back({windows[k].start_tick, end, static_cast<int>(k)});
    }
    std::sort(spans_.begin(), spans_.end(),
              [](const Span& a, const Span& b) { return a.start < b.start; });
  }
  // The window holding `t` ([start, end)), -1: none.
  int at(int64_t t) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), t,
                               [](int64_t v, const Span& s) { return v < s.start; });
    if (it == spans_.begin()) return -1;
    --it;
    return t < it->end ? it->window : -1;
  }

 private:
  struct Span {
    int64_t start, end;
    int window;
  };
  std::vector<Span> spans_;
};

// The element count of an op's indices argument (aten::embedding(weight, indices, ...)).
uint64_t indices_numel(const ThreadEvents& thread, const RawEvent& e) {
  const std::vector<ArgView> args = arg_views(thread, e);
  return args.size() < 2 || args[1].kind != ArgKind::kTensor ? 0 : count_of(args[1].shape);
}

}  // namespace

double flops_utilisation(const FlopsByDtype& flops_by_dtype, double seconds,
                         const MachinePeaks& peaks) {
  if (seconds <= 0) return 0;
  double at_peak_s = 0;
  bool any = false;
  for (size_t d = 0; d < flops_by_dtype.size(); ++d) {
    if (flops_by_dtype[d] == 0) continue;
    const double peak = peaks.peak_flops(static_cast<DType>(d));
    if (peak <= 0) return 0;
    at_peak_s += static_cast<double>(flops_by_dtype[d]) / peak;
    any = true;
  }
  return any ? at_peak_s / seconds : 0;
}

void split_by_region(const AggregateInput& in, const Analysis& analysis, ProfileResult& r) {
  if (in.regions.empty()) return;
  const double s_per_tick = in.ns_per_tick * 1e-9;
  const Attribution& at = analysis.attribution;
  const ModuleTree& tree = *in.tree;

  // Regions in the order first opened; each window's region.
  std::map<std::string, int> by_name;
  std::vector<int> region_of(in.regions.size());
  std::vector<std::vector<double>> window_s;
  for (size_t k = 0; k < in.regions.size(); ++k) {
    const RegionWindow& w = in.regions[k];
    auto [it, added] = by_name.emplace(w.name, static_cast<int>(r.regions.size()));
    if (added) {
      RegionStats s;
      s.name = w.name;
      r.regions.push_back(std::move(s));
      window_s.emplace_back();
    }
    region_of[k] = it->second;
    const int64_t end = w.end_tick != 0 ? w.end_tick : in.stop_tick;
    window_s[it->second].push_back(static_cast<double>(end - w.start_tick) * s_per_tick);
  }
  const size_t n_regions = r.regions.size();
  std::vector<RegionAcc> acc(n_regions);
  for (size_t k = 0; k < in.regions.size(); ++k) {
    RegionAcc& a = acc[region_of[k]];
    a.window_tokens.push_back(in.regions[k].tokens);
    a.window_given.push_back(in.regions[k].tokens > 0);
    a.window_found.push_back(0);
  }
  // Each window's position among its region's windows.
  std::vector<size_t> slot(in.regions.size());
  {
    std::vector<size_t> seen(n_regions, 0);
    for (size_t k = 0; k < in.regions.size(); ++k) slot[k] = seen[region_of[k]]++;
  }
  const WindowIndex windows(in.regions, in.stop_tick);

  // Module (tree index) -> result index (ignored ones: none; their work is in their ancestors').
  const std::vector<int> remap = result_indices(tree);
  for (ModuleStats& m : r.modules) m.regions.assign(n_regions, ModuleRegionStats{});
  auto module_region = [&](int m, int region) -> ModuleRegionStats* {
    const int x = m >= 0 && static_cast<size_t>(m) < remap.size() ? remap[m] : -1;
    return x >= 0 && static_cast<size_t>(x) < r.modules.size() ? &r.modules[x].regions[region]
                                                               : nullptr;
  };

  // Ops: each into the region of the window it began in, as the totals count it.
  for_each_placed_op(in, analysis, [&](const PlacedOp& op) {
    const RawEvent& e = *op.event;
    const int w = windows.at(e.start_tick);
    if (w < 0) return;
    const int g = region_of[w];
    RegionStats& s = r.regions[g];
    RegionAcc& a = acc[g];
    const Phase ph = op.phase;
    const int m = op.module;
    const OpCount& c = *op.count;
    const FlopCount* fc = op.flops;
    const KvBytes* kv = op.kv;
    const size_t dt = static_cast<size_t>(c.dtype);
    const uint64_t flops = fc ? fc->flops : 0;
    if (op.outside) {
      add_sat(s.outside_flops, flops);
      return;
    }
    if (ph == Phase::kForward) {
      add_sat(s.flops, flops);
      add_sat(s.macs, fc ? fc->macs : 0);
      add_sat(s.flops_by_dtype[dt], flops);
      add_sat(a.model_by_dtype[dt], flops);
      for (int p = m; p >= 0; p = tree.nodes[p].parent) {
        if (ModuleRegionStats* x = module_region(p, g)) {
          add_sat(x->flops, flops);
          add_sat(x->macs, fc ? fc->macs : 0);
          add_sat(x->flops_by_dtype[dt], flops);
          if (c.has_bytes()) add_sat(x->bytes, c.bytes_total());
          if (kv) {
            add_sat(x->kv_read_bytes, kv->read);
            add_sat(x->kv_write_bytes, kv->written);
          }
        }
      }
      if (kv && m >= 0) {
        add_sat(s.kv_read_bytes, kv->read);
        add_sat(s.kv_write_bytes, kv->written);
      }
      // Tokens of a window given none: the largest indices of its embeddings on the model's
      // weights (token ids, batch x sequence; a position embedding's may be one sequence only).
      const size_t k = slot[w];
      if (!a.window_given[k] && m >= 0 && in.names->name(e.name_id) == "aten::embedding") {
        a.window_tokens[k] = std::max(a.window_tokens[k], indices_numel(*in.threads[op.thread], e));
        a.window_found[k] = a.window_tokens[k] > 0;
      }
    } else if (ph == Phase::kBackward) {
      if (m == kOutsideModel) return;
      add_sat(s.bwd_flops, flops);
      add_sat(a.model_by_dtype[dt], flops);
      for (int p = m; p >= 0; p = tree.nodes[p].parent) {
        if (ModuleRegionStats* x = module_region(p, g)) add_sat(x->bwd_flops, flops);
      }
    } else if (ph == Phase::kRecompute) {
      add_sat(s.recompute_flops, flops);
    } else {
      return;  // the optimizer step: neither model FLOPs nor the model's bytes
    }
    // What the hardware ran (HFU): the dense count less what the kernels skipped, recompute in.
    if (fc) {
      add_sat(a.hardware_by_dtype[dt], r.kernel_flops(flops, fc->masked_flops, fc->skipped_flops));
    }
    if (c.has_bytes()) add_sat(s.bytes, c.bytes_total());
  });

  // Module calls: each into the region of the window it began in.
  for (const CallSpan& c : at.calls) {
    const int w = windows.at(c.start);
    if (w < 0) continue;
    if (ModuleRegionStats* x = module_region(c.module, region_of[w])) {
      ++x->calls;
      x->latency_s += static_cast<double>(c.end - c.start) * s_per_tick;
    }
  }

  // Per region: time, tokens, rates, utilisation.
  const MachinePeaks& peaks = r.machine;
  for (size_t g = 0; g < n_regions; ++g) {
    RegionStats& s = r.regions[g];
    RegionAcc& a = acc[g];
    const std::vector<double>& ws = window_s[g];
    s.windows = ws.size();
    for (double x : ws) s.duration_s += x;
    s.first_s = ws.empty() ? 0.0 : ws.front();
    s.spread = spread_of(ws);
    size_t missing = 0, given = 0, found = 0;
    uint64_t tokens = 0;
    for (size_t k = 0; k < a.window_tokens.size(); ++k) {
      if (a.window_tokens[k] == 0) ++missing;
      given += a.window_given[k];
      found += a.window_found[k];
      add_sat(tokens, a.window_tokens[k]);
    }
    if (missing > 0) {
      if (given + found > 0) {
        r.problems.push_back(fmt::format(
            "region \"{}\": {} of {} window(s) have no tokens (none given, no aten::embedding on "
            "the model's weights in them); its tokens, tokens/s and per-token numbers are not "
            "shown: give them with region(name, tokens) or RegionScope::add_tokens()",
            s.name, missing, a.window_tokens.size()));
      }
    } else {
      s.tokens = tokens;
      s.tokens_source = given > 0 && found > 0 ? "given and embedding indices"
                        : given > 0            ? "given"
                                               : "embedding indices";
    }
    uint64_t model_flops = s.flops;
    add_sat(model_flops, s.bwd_flops);
    if (s.tokens > 0) {
      if (s.duration_s > 0) {
        s.tokens_per_s = static_cast<double>(s.tokens) / s.duration_s;
        s.latency_per_token_s = s.duration_s / static_cast<double>(s.tokens);
      }
      s.flops_per_token = static_cast<double>(model_flops) / static_cast<double>(s.tokens);
    }
    s.mfu = flops_utilisation(a.model_by_dtype, s.duration_s, peaks);
    s.hfu = flops_utilisation(a.hardware_by_dtype, s.duration_s, peaks);
    if (peaks.bytes_per_s > 0 && s.duration_s > 0)
      s.mbu = static_cast<double>(s.bytes) / s.duration_s / peaks.bytes_per_s;
    s.mfu_above_peak = above_peak(s.mfu);
    s.hfu_above_peak = above_peak(s.hfu);
    s.mbu_above_peak = above_peak(s.mbu);
  }
  for (ModuleStats& m : r.modules) {
    for (size_t g = 0; g < m.regions.size() && g < r.regions.size(); ++g) {
      ModuleRegionStats& x = m.regions[g];
      if (r.regions[g].tokens > 0) {  // as the region's: fwd + bwd FLOPs per token
        uint64_t flops = x.flops;
        add_sat(flops, x.bwd_flops);
        x.flops_per_token = static_cast<double>(flops) / static_cast<double>(r.regions[g].tokens);
      }
      x.mfu = flops_utilisation(x.flops_by_dtype, x.latency_s, peaks);
      if (peaks.bytes_per_s > 0 && x.latency_s > 0)
        x.mbu = static_cast<double>(x.bytes) / x.latency_s / peaks.bytes_per_s;
      x.mfu_above_peak = above_peak(x.mfu);
      x.mbu_above_peak = above_peak(x.mbu);
    }
  }
}

}  // namespace flopsprof::detail
