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

namespace {

// split_by_region's state: the regions, their windows and what each gathers, filled op by op and
// call by call, then finished into rates and utilisation.
class RegionSplit {
 public:
  RegionSplit(const AggregateInput& in, const Analysis& analysis, ProfileResult& r)
      : in_(in),
        analysis_(analysis),
        r_(r),
        tree_(*in.tree),
        s_per_tick_(in.ns_per_tick * 1e-9),
        windows_(in.regions, in.stop_tick),
        remap_(result_indices(*in.tree)) {
    open_regions();
    for (ModuleStats& m : r_.modules) m.regions.assign(r_.regions.size(), ModuleRegionStats{});
  }

  void run() {
    for_each_placed_op(in_, analysis_, [&](const PlacedOp& op) { add_op(op); });
    add_calls();
    for (size_t g = 0; g < r_.regions.size(); ++g) finish_region(g);
    for (ModuleStats& m : r_.modules) finish_module(m);
  }

 private:
  // Regions in the order first opened; each window's region and its position among the region's.
  void open_regions() {
    std::map<std::string, int> by_name;
    region_of_.resize(in_.regions.size());
    slot_.resize(in_.regions.size());
    for (size_t k = 0; k < in_.regions.size(); ++k) {
      const RegionWindow& w = in_.regions[k];
      auto [it, added] = by_name.emplace(w.name, static_cast<int>(r_.regions.size()));
      if (added) {
        RegionStats s;
        s.name = w.name;
        r_.regions.push_back(std::move(s));
        window_s_.emplace_back();
        acc_.emplace_back();
      }
      const int g = it->second;
      region_of_[k] = g;
      const int64_t end = w.end_tick != 0 ? w.end_tick : in_.stop_tick;
      window_s_[g].push_back(static_cast<double>(end - w.start_tick) * s_per_tick_);
      RegionAcc& a = acc_[g];
      slot_[k] = a.window_tokens.size();
      a.window_tokens.push_back(w.tokens);
      a.window_given.push_back(w.tokens > 0);
      a.window_found.push_back(0);
    }
  }

  // Module (tree index) -> its numbers in region `g` (ignored ones: none; their work is in their
  // ancestors').
  ModuleRegionStats* module_region(int m, int g) {
    const int x = m >= 0 && static_cast<size_t>(m) < remap_.size() ? remap_[m] : -1;
    return x >= 0 && static_cast<size_t>(x) < r_.modules.size() ? &r_.modules[x].regions[g]
                                                                : nullptr;
  }

  // An op, into the region of the window it began in, as the totals count it.
  void add_op(const PlacedOp& op) {
    const int w = windows_.at(op.event->start_tick);
    if (w < 0) return;
    const int g = region_of_[w];
    RegionStats& s = r_.regions[g];
    const FlopCount* fc = op.flops;
    const uint64_t flops = fc ? fc->flops : 0;
    const size_t dt = static_cast<size_t>(op.count->dtype);
    if (op.outside) {
      add_sat(s.outside_flops, flops);
      return;
    }
    if (op.phase == Phase::kForward) {
      add_forward(op, w, g);
    } else if (op.phase == Phase::kBackward) {
      if (op.module == kOutsideModel) return;
      add_sat(s.bwd_flops, flops);
      add_sat(acc_[g].model_by_dtype[dt], flops);
      for (int p = op.module; p >= 0; p = tree_.nodes[p].parent) {
        if (ModuleRegionStats* x = module_region(p, g)) add_sat(x->bwd_flops, flops);
      }
    } else if (op.phase == Phase::kRecompute) {
      add_sat(s.recompute_flops, flops);
    } else {
      return;  // the optimizer step: neither model FLOPs nor the model's bytes
    }
    // What the hardware ran (HFU): the dense count less what the kernels skipped, recompute in.
    if (fc) {
      add_sat(acc_[g].hardware_by_dtype[dt],
              r_.kernel_flops(flops, fc->masked_flops, fc->skipped_flops));
    }
    if (op.count->has_bytes()) add_sat(s.bytes, op.count->bytes_total());
  }

  // A forward op in window `w` of region `g`: the region's and each enclosing module's numbers.
  void add_forward(const PlacedOp& op, int w, int g) {
    RegionStats& s = r_.regions[g];
    RegionAcc& a = acc_[g];
    const OpCount& c = *op.count;
    const FlopCount* fc = op.flops;
    const KvBytes* kv = op.kv;
    const size_t dt = static_cast<size_t>(c.dtype);
    const uint64_t flops = fc ? fc->flops : 0;
    const uint64_t macs = fc ? fc->macs : 0;
    add_sat(s.flops, flops);
    add_sat(s.macs, macs);
    add_sat(s.flops_by_dtype[dt], flops);
    add_sat(a.model_by_dtype[dt], flops);
    for (int p = op.module; p >= 0; p = tree_.nodes[p].parent) {
      if (ModuleRegionStats* x = module_region(p, g)) {
        add_sat(x->flops, flops);
        add_sat(x->macs, macs);
        add_sat(x->flops_by_dtype[dt], flops);
        if (c.has_bytes()) add_sat(x->bytes, c.bytes_total());
        if (kv) {
          add_sat(x->kv_read_bytes, kv->read);
          add_sat(x->kv_write_bytes, kv->written);
        }
      }
    }
    if (kv && op.module >= 0) {
      add_sat(s.kv_read_bytes, kv->read);
      add_sat(s.kv_write_bytes, kv->written);
    }
    // Tokens of a window given none: the largest indices of its embeddings on the model's
    // weights (token ids, batch x sequence; a position embedding's may be one sequence only).
    const size_t k = slot_[w];
    if (!a.window_given[k] && op.module >= 0 &&
        in_.names->name(op.event->name_id) == "aten::embedding") {
      a.window_tokens[k] =
          std::max(a.window_tokens[k], indices_numel(*in_.threads[op.thread], *op.event));
      a.window_found[k] = a.window_tokens[k] > 0;
    }
  }

  // Module calls: each into the region of the window it began in.
  void add_calls() {
    for (const CallSpan& c : analysis_.attribution.calls) {
      const int w = windows_.at(c.start);
      if (w < 0) continue;
      if (ModuleRegionStats* x = module_region(c.module, region_of_[w])) {
        ++x->calls;
        x->latency_s += static_cast<double>(c.end - c.start) * s_per_tick_;
      }
    }
  }

  // Region `g`'s time, tokens (or the problem of windows without), rates and utilisation.
  void finish_region(size_t g) {
    RegionStats& s = r_.regions[g];
    const RegionAcc& a = acc_[g];
    const std::vector<double>& ws = window_s_[g];
    s.windows = ws.size();
    for (double x : ws) s.duration_s += x;
    s.first_s = ws.empty() ? 0.0 : ws.front();
    s.spread = spread_of(ws);
    finish_tokens(s, a);
    uint64_t model_flops = s.flops;
    add_sat(model_flops, s.bwd_flops);
    if (s.tokens > 0) {
      if (s.duration_s > 0) {
        s.tokens_per_s = static_cast<double>(s.tokens) / s.duration_s;
        s.latency_per_token_s = s.duration_s / static_cast<double>(s.tokens);
      }
      s.flops_per_token = static_cast<double>(model_flops) / static_cast<double>(s.tokens);
    }
    const MachinePeaks& peaks = r_.machine;
    s.mfu = flops_utilisation(a.model_by_dtype, s.duration_s, peaks);
    s.hfu = flops_utilisation(a.hardware_by_dtype, s.duration_s, peaks);
    if (peaks.bytes_per_s > 0 && s.duration_s > 0)
      s.mbu = static_cast<double>(s.bytes) / s.duration_s / peaks.bytes_per_s;
    s.mfu_above_peak = above_peak(s.mfu);
    s.hfu_above_peak = above_peak(s.hfu);
    s.mbu_above_peak = above_peak(s.mbu);
    if (s.bytes > 0) {
      s.kv_bytes_share =
          (static_cast<double>(s.kv_read_bytes) + s.kv_write_bytes) / static_cast<double>(s.bytes);
    }
    if (s.tokens > 0) {
      s.kv_read_per_token = static_cast<double>(s.kv_read_bytes) / static_cast<double>(s.tokens);
      s.kv_write_per_token = static_cast<double>(s.kv_write_bytes) / static_cast<double>(s.tokens);
    }
  }

  // A region's tokens: every window's, given or found; none (and a problem) when one has none.
  void finish_tokens(RegionStats& s, const RegionAcc& a) {
    size_t missing = 0, given = 0, found = 0;
    uint64_t tokens = 0;
    for (size_t k = 0; k < a.window_tokens.size(); ++k) {
      if (a.window_tokens[k] == 0) ++missing;
      given += a.window_given[k];
      found += a.window_found[k];
      add_sat(tokens, a.window_tokens[k]);
    }
    if (missing == 0) {
      s.tokens = tokens;
      s.tokens_source = given > 0 && found > 0 ? "given and embedding indices"
                        : given > 0            ? "given"
                                               : "embedding indices";
    } else if (given + found > 0) {
      r_.problems.push_back(fmt::format(
          "region \"{}\": {} of {} window(s) have no tokens (none given, no aten::embedding on "
          "the model's weights in them); its tokens, tokens/s and per-token numbers are not "
          "shown: give them with region(name, tokens) or RegionScope::add_tokens()",
          s.name, missing, a.window_tokens.size()));
    }
  }

  // A module's per-region rates and utilisation, from its calls' time in each region.
  void finish_module(ModuleStats& m) {
    const MachinePeaks& peaks = r_.machine;
    for (size_t g = 0; g < m.regions.size() && g < r_.regions.size(); ++g) {
      ModuleRegionStats& x = m.regions[g];
      if (r_.regions[g].flops > 0)
        x.flops_share = static_cast<double>(x.flops) / static_cast<double>(r_.regions[g].flops);
      if (r_.regions[g].tokens > 0) {  // as the region's: fwd + bwd FLOPs per token
        uint64_t flops = x.flops;
        add_sat(flops, x.bwd_flops);
        x.flops_per_token = static_cast<double>(flops) / static_cast<double>(r_.regions[g].tokens);
      }
      x.mfu = flops_utilisation(x.flops_by_dtype, x.latency_s, peaks);
      if (peaks.bytes_per_s > 0 && x.latency_s > 0)
        x.mbu = static_cast<double>(x.bytes) / x.latency_s / peaks.bytes_per_s;
      x.mfu_above_peak = above_peak(x.mfu);
      x.mbu_above_peak = above_peak(x.mbu);
    }
  }

  const AggregateInput& in_;
  const Analysis& analysis_;
  ProfileResult& r_;
  const ModuleTree& tree_;
  const double s_per_tick_;
  const WindowIndex windows_;
  const std::vector<int> remap_;               // module (tree index) -> result index, -1: ignored
  std::vector<int> region_of_;                 // window -> region
  std::vector<size_t> slot_;                   // window -> its position among its region's windows
  std::vector<std::vector<double>> window_s_;  // region -> its windows' durations
  std::vector<RegionAcc> acc_;                 // region -> what it gathers
};

}  // namespace

void split_by_region(const AggregateInput& in, const Analysis& analysis, ProfileResult& r) {
  if (in.regions.empty()) return;
  RegionSplit(in, analysis, r).run();
}

}  // namespace flopsprof::detail
