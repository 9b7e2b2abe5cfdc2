// Multi-rank profiles (see ranks.h).
#include "aggregation/ranks.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "flopsprof/error.h"

namespace flopsprof::detail {
namespace {

constexpr const char* kMagic = "flopsprof-rank 1";

// Fields are tab-separated; tab, newline and backslash inside a field are escaped.
std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}
std::string unesc(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char n = s[++i];
      out += n == 't' ? '\t' : n == 'n' ? '\n' : n;
    } else {
      out += s[i];
    }
  }
  return out;
}
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    out.push_back(unesc(line.substr(start, tab == std::string::npos ? tab : tab - start)));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return out;
}
[[noreturn]] void malformed(const std::string& what) {
  throw Error("gather_profile: a rank sent a malformed profile (" + what +
              "); are all ranks running the same flopsprof version?");
}
uint64_t to_u64(const std::string& s) {
  try {
    return std::stoull(s);
  } catch (...) {
    malformed("number '" + s + "'");
  }
}
double to_double(const std::string& s) {
  try {
    return std::stod(s);
  } catch (...) {
    malformed("number '" + s + "'");
  }
}
std::string num(double v) { return fmt::format("{:.17g}", v); }

double lower_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

std::string first_line(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
    line.pop_back();
  }
  return line;
}

uint64_t model_signature(const ProfileResult& r) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  for (const ModuleStats& m : r.modules) {
    mix(m.name);
    mix(m.type);
    mix(std::to_string(m.params));
  }
  return h;
}

RankProfile make_rank_profile(const ProfileResult& r, int rank, int world_size,
                              const std::string& host, int64_t pid) {
  RankProfile p;
  p.world_size = world_size;
  p.signature = model_signature(r);
  RankStats& s = p.stats;
  s.rank = rank;
  s.host = host;
  s.pid = pid;
  s.forward_calls = r.modules.empty() ? 0 : r.modules[0].calls;
  s.fwd_latency_s = r.duration_s;
  s.bwd_latency_s = r.bwd_latency_s;
  s.step_latency_s = r.step_latency_s;
  s.iteration_latency_s = r.iteration_latency_s();
  s.flops = r.flops;
  s.macs = r.macs;
  s.bwd_flops = r.bwd_flops;
  for (const ModuleStats& m : r.modules) {
    p.modules.push_back(
        {m.name, m.type, m.depth, m.calls, m.flops, m.params, m.latency_s, m.bwd_latency_s});
  }
  return p;
}

std::string encode_header(const RankProfile& p) {
  return fmt::format("{} {} {} {}", p.stats.rank, p.world_size, p.signature, p.stats.forward_calls);
}

std::string header_mismatch(const RankProfile& mine, const std::vector<std::string>& headers) {
  for (size_t i = 0; i < headers.size(); ++i) {
    std::istringstream in(headers[i]);
    long long rank = -1, world = -1;
    unsigned long long signature = 0, calls = 0;
    if (!(in >> rank >> world >> signature >> calls)) {
      return fmt::format("rank {} sent a malformed header", i);
    }
    if (world != mine.world_size) {
      return fmt::format("rank {} was given world size {}, rank {} world size {}", rank, world,
                         mine.stats.rank, mine.world_size);
    }
    if (signature != mine.signature) {
      return fmt::format(
          "rank {} profiled a different model than rank {} (module names, types or parameter "
          "counts differ): profile the same model on every rank",
          rank, mine.stats.rank);
    }
    if (calls != mine.stats.forward_calls) {
      return fmt::format(
          "rank {} profiled {} forward calls of the model, rank {} profiled {}: start and stop "
          "the profile at the same step on every rank",
          rank, calls, mine.stats.rank, mine.stats.forward_calls);
    }
  }
  return "";
}

std::string encode_rank(const RankProfile& p) {
  const RankStats& s = p.stats;
  std::string out = std::string(kMagic) + "\n";
  out += fmt::format("rank\t{}\t{}\t{}\t{}\t{}\n", s.rank, p.world_size, p.signature, esc(s.host),
                     s.pid);
  out += fmt::format("totals\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", s.forward_calls,
                     num(s.fwd_latency_s), num(s.bwd_latency_s), num(s.step_latency_s),
                     num(s.iteration_latency_s), s.flops, s.macs, s.bwd_flops);
  for (const RankProfile::Module& m : p.modules) {
    out += fmt::format("module\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", esc(m.name), esc(m.type),
                       m.depth, m.calls, m.flops, m.params, num(m.fwd_s), num(m.bwd_s));
  }
  return out;
}

RankProfile decode_rank(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) malformed("no header line");
  RankProfile p;
  bool rank = false, totals = false;
  while (std::getline(in, line)) {
    std::vector<std::string> f = fields(line);
    if (f[0] == "rank" && f.size() == 6) {
      p.stats.rank = static_cast<int>(to_u64(f[1]));
      p.world_size = static_cast<int>(to_u64(f[2]));
      p.signature = to_u64(f[3]);
      p.stats.host = f[4];
      p.stats.pid = static_cast<int64_t>(to_u64(f[5]));
      rank = true;
    } else if (f[0] == "totals" && f.size() == 9) {
      RankStats& s = p.stats;
      s.forward_calls = to_u64(f[1]);
      s.fwd_latency_s = to_double(f[2]);
      s.bwd_latency_s = to_double(f[3]);
      s.step_latency_s = to_double(f[4]);
      s.iteration_latency_s = to_double(f[5]);
      s.flops = to_u64(f[6]);
      s.macs = to_u64(f[7]);
      s.bwd_flops = to_u64(f[8]);
      totals = true;
    } else if (f[0] == "module" && f.size() == 9) {
      p.modules.push_back({f[1], f[2], static_cast<int>(to_u64(f[3])), to_u64(f[4]), to_u64(f[5]),
                           to_u64(f[6]), to_double(f[7]), to_double(f[8])});
    } else {
      malformed("line '" + line.substr(0, 40) + "'");
    }
  }
  if (!rank || !totals) malformed("missing rank or totals");
  return p;
}

namespace {

// Module `i` across the ranks (same tree on every rank: checked by the header exchange); its
// fwd + bwd time on each rank appended to `total`.
RankModuleStats module_across_ranks(const std::vector<RankProfile>& ranks, size_t i,
                                    std::vector<double>& total) {
  RankModuleStats m;
  const RankProfile::Module& m0 = ranks[0].modules[i];
  m.name = m0.name;
  m.type = m0.type;
  m.depth = m0.depth;
  m.flops = m0.flops;
  m.fwd_min_s = m.bwd_min_s = 1e300;
  m.fwd_max_s = m.bwd_max_s = -1;
  double slowest = -1;
  for (const RankProfile& p : ranks) {
    if (i >= p.modules.size()) continue;
    const RankProfile::Module& x = p.modules[i];
    m.fwd_min_s = std::min(m.fwd_min_s, x.fwd_s);
    m.fwd_max_s = std::max(m.fwd_max_s, x.fwd_s);
    m.bwd_min_s = std::min(m.bwd_min_s, x.bwd_s);
    m.bwd_max_s = std::max(m.bwd_max_s, x.bwd_s);
    m.fwd_mean_s += x.fwd_s / static_cast<double>(ranks.size());
    m.bwd_mean_s += x.bwd_s / static_cast<double>(ranks.size());
    m.same_flops = m.same_flops && x.flops == m0.flops;
    total.push_back(x.fwd_s + x.bwd_s);
    if (x.fwd_s + x.bwd_s > slowest) {
      slowest = x.fwd_s + x.bwd_s;
      m.slowest_rank = p.stats.rank;
    }
  }
  return m;
}

// The modules that account for rank `r`'s excess over each module's median: deepest first (a
// parent explained by a child is left out), largest first, at most 3.
std::vector<std::pair<size_t, double>> excess_causes(
    const std::vector<RankProfile>& ranks, const std::vector<std::vector<double>>& module_total,
    const std::vector<double>& module_median, size_t r) {
  const size_t n = module_total.size();
  std::vector<std::pair<size_t, double>> out;
  std::vector<double> excess(n, 0);
  for (size_t i = 1; i < n; ++i) excess[i] = module_total[i][r] - module_median[i];
  for (size_t i = 1; i < n; ++i) {
    if (excess[i] <= 0) continue;
    bool explained = false;
    for (size_t c = i + 1; c < n && ranks[0].modules[c].depth > ranks[0].modules[i].depth; ++c) {
      explained = explained || excess[c] >= 0.8 * excess[i];
    }
    if (!explained) out.emplace_back(i, excess[i]);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > 3) out.resize(3);
  return out;
}

// Ranks whose iteration, or one of whose modules, is slower than the median by more than
// `threshold`, with the modules that explain it.
void find_stragglers(const std::vector<RankProfile>& ranks,
                     const std::vector<std::vector<double>>& module_total, double threshold,
                     DistributedStats& d) {
  std::vector<double> module_median(module_total.size());
  for (size_t i = 0; i < module_total.size(); ++i) module_median[i] = lower_median(module_total[i]);
  std::vector<double> iters;
  for (const RankProfile& p : ranks) iters.push_back(p.stats.iteration_latency_s);
  const double median_iter = lower_median(iters);
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double it = ranks[r].stats.iteration_latency_s;
    const auto causes = excess_causes(ranks, module_total, module_median, r);
    if (it > median_iter * (1 + threshold)) {
      Straggler s{ranks[r].stats.rank, "iteration", it, median_iter, {}};
      for (const auto& [i, ex] : causes) {  // those that explain a tenth of it or more
        if (ex >= 0.1 * (it - median_iter)) s.modules.emplace_back(ranks[0].modules[i].name, ex);
      }
      s.over_median = median_iter > 0 ? it / median_iter - 1 : 0.0;
      d.stragglers.push_back(std::move(s));
      continue;
    }
    for (const auto& [i, ex] : causes) {  // a module markedly slower, the iteration not
      const double v = module_total[i][r], med = module_median[i];
      if (v > med * (1 + threshold) && ex >= std::max(0.5 * threshold * median_iter, 200e-6)) {
        d.stragglers.push_back({ranks[r].stats.rank,
                                "module " + ranks[0].modules[i].name,
                                v,
                                med,
                                {{ranks[0].modules[i].name, ex}},
                                med > 0 ? v / med - 1 : 0.0});
      }
    }
  }
}

}  // namespace

DistributedStats combine_ranks(std::vector<RankProfile> ranks, double threshold,
                               const std::string& backend) {
  std::sort(ranks.begin(), ranks.end(),
            [](const RankProfile& a, const RankProfile& b) { return a.stats.rank < b.stats.rank; });
  DistributedStats d;
  d.world_size = ranks.empty() ? 0 : ranks[0].world_size;
  d.data_parallel_size = d.world_size;
  d.backend = backend;
  d.threshold = threshold;
  for (const RankProfile& p : ranks) d.ranks.push_back(p.stats);
  if (ranks.empty()) return d;
  const size_t n = ranks[0].modules.size();
  std::vector<std::vector<double>> module_total(n);  // per module, per rank: fwd + bwd
  for (size_t i = 0; i < n; ++i)
    d.modules.push_back(module_across_ranks(ranks, i, module_total[i]));
  find_stragglers(ranks, module_total, threshold, d);
  return d;
}

}  // namespace flopsprof::detail
