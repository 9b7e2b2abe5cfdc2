// The cache of this CPU's measured peaks (peaks_cache.h).
#include "profiler/peaks_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "flopsprof/formulas.h"

namespace flopsprof::detail {
namespace {

// A cached rate as written: a finite number, 0 ("cannot compute it here", FLOP/s only) or within
// what any CPU measures (1 M to 1 E per second). Anything else (NaN, -1, 1e-300, text) is not
// trusted: the entry is measured again.
std::optional<double> cached_rate(const std::string& value, bool zero_allowed) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v))
    return std::nullopt;
  if (v == 0 && zero_allowed) return v;
  if (v < 1e6 || v > 1e18) return std::nullopt;
  return v;
}

}  // namespace

std::string peaks_cache_dir() {
  if (const char* d = std::getenv("FLOPSPROF_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/flopsprof";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/flopsprof";
  return "";
}

// Why an entry's rates cannot all be right ("" when they can): a cache level slower than main
// memory (by more than the triads' noise, 20%), or a FLOP/s rate under half of what this CPU
// reached with fewer threads (`others`: the cache's lines; the key differs only in its thread
// count). Measured on a busy machine, they would flag every share above them. (Caches slower
// than the larger cache after them are not: with several threads, L1's triads split over the
// cores are short enough that their per-call cost shows, every time.)
std::string implausible(const PeaksEntry& e, const std::string& key,
                        const std::map<std::string, PeaksEntry>& others) {
  std::vector<std::string> why;
  for (size_t i = 0; i < e.levels.size(); ++i) {
    const BandwidthLevel& l = e.levels[i];
    if (l.bytes_per_s < 0.8 * e.bandwidth) {
      why.push_back(fmt::format("{} {} below DRAM {}", l.name, bandwidth_to_string(l.bytes_per_s),
                                bandwidth_to_string(e.bandwidth)));
      continue;
    }
    // The first cache runs at several times DRAM, and a cache nearer the core is not far slower
    // than one farther out (a busy machine measured L1 at 24.6 GB/s beside L2's 84.8 and DRAM's
    // 23.0). A milder inversion is what a quiet machine measures at 2 threads (L1 155 GB/s under
    // L2 277: its L1 triads split over the cores are short enough for their per-call cost to
    // show), not a fault: taking it for one would measure again in every process.
    if (i == 0 && e.levels.size() > 1 && l.bytes_per_s < 2 * e.bandwidth) {
      why.push_back(fmt::format("{} {} under twice DRAM {}", l.name,
                                bandwidth_to_string(l.bytes_per_s),
                                bandwidth_to_string(e.bandwidth)));
      continue;
    }
    for (size_t j = i + 1; j < e.levels.size(); ++j) {
      if (l.bytes_per_s < 0.4 * e.levels[j].bytes_per_s) {
        why.push_back(fmt::format("{} {} below {} {}", l.name, bandwidth_to_string(l.bytes_per_s),
                                  e.levels[j].name, bandwidth_to_string(e.levels[j].bytes_per_s)));
        break;
      }
    }
  }
  auto threads_of = [](const std::string& k, std::string* rest) {
    const size_t a = k.find("|threads="), b = k.find('|', a + 1);
    if (a == std::string::npos || b == std::string::npos) return -1;
    *rest = k.substr(0, a) + k.substr(b);
    return std::atoi(k.c_str() + a + 9);
  };
  std::string mine_rest;
  const int mine = threads_of(key, &mine_rest);
  for (const auto& [k, o] : others) {
    std::string rest;
    const int t = threads_of(k, &rest);
    if (t <= 0 || t >= mine || rest != mine_rest) continue;
    for (size_t d = 1; d < e.flops.size(); ++d) {
      if (e.flops[d] > 0 && e.flops[d] < 0.5 * o.flops[d]) {
        why.push_back(fmt::format("{} {} at {} threads, under half of {} at {}",
                                  dtype_name(static_cast<DType>(d)),
                                  flops_per_second_to_string(e.flops[d]), mine,
                                  flops_per_second_to_string(o.flops[d]), t));
      }
    }
  }
  return fmt::format("{}", fmt::join(why, "; "));
}

// The cache file's real path when it can be read and replaced: absent, a regular file, or a link
// to one (followed: the link stays); "" for anything else (a FIFO would block a reader, a device
// or a folder must not be replaced): no cache then, the peaks are measured each time.
std::string usable_cache_file(const std::string& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return errno == ENOENT ? file : "";
  if (S_ISREG(st.st_mode)) return file;
  if (!S_ISLNK(st.st_mode)) return "";
  char* real = realpath(file.c_str(), nullptr);
  if (real == nullptr) return "";
  const std::string target = real;
  std::free(real);
  return ::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? target : "";
}

std::map<std::string, PeaksEntry> read_peaks_cache(const std::string& file) {
  std::map<std::string, PeaksEntry> out;
  if (file.empty()) return out;
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    std::string key, field;
    if (!std::getline(ss, key, '\t') || key.empty()) continue;
    PeaksEntry e;
    bool trusted = true;
    while (std::getline(ss, field, '\t')) {
      const size_t eq = field.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = field.substr(0, eq), value = field.substr(eq + 1);
      if (name == "bandwidth") {
        const auto v = cached_rate(value, false);
        trusted = trusted && v.has_value();
        e.bandwidth = v.value_or(0);
      } else if (name == "detail") {
        e.detail = value;
      } else if (name == "doubt") {
        e.doubt = value;
      } else if (name == "levels") {
        // NAME:CAPACITY:RATE;... (rates as the other fields, trusted likewise)
        std::stringstream ls(value);
        std::string item;
        while (std::getline(ls, item, ';')) {
          const size_t a = item.find(':'), b = item.find(':', a + 1);
          if (a == std::string::npos || b == std::string::npos) {
            trusted = false;
            break;
          }
          BandwidthLevel l;
          l.name = item.substr(0, a);
          l.capacity_bytes = std::strtoull(item.substr(a + 1, b - a - 1).c_str(), nullptr, 10);
          const auto rate = cached_rate(item.substr(b + 1), false);
          trusted = trusted && rate.has_value() && l.capacity_bytes > 0;
          l.bytes_per_s = rate.value_or(0);
          e.levels.push_back(l);
        }
      } else {
        const std::optional<DType> dtype = dtype_from_name(name);
        const size_t d = dtype ? static_cast<size_t>(*dtype) : 0;
        if (d > 0 && d < e.flops.size()) {
          const auto v = cached_rate(value, true);
          trusted = trusted && v.has_value();
          e.flops[d] = v.value_or(0);
          e.tried[name] = true;
        }
      }
    }
    if (trusted && e.bandwidth > 0) out[key] = e;
  }
  return out;
}

void write_peaks_cache(const std::string& dir, const std::string& file,
                       const std::map<std::string, PeaksEntry>& entries) {
  // mkdir -p, one level at a time
  for (size_t p = 1; p <= dir.size(); ++p) {
    if (p == dir.size() || dir[p] == '/') ::mkdir(dir.substr(0, p).c_str(), 0755);
  }
  const std::string tmp = fmt::format("{}.{}.tmp", file, ::getpid());
  {
    std::ofstream f(tmp);
    if (!f) return;  // an unwritable cache: measured again next time
    for (const auto& [key, e] : entries) {
      f << key << "\tbandwidth=" << fmt::format("{:.17g}", e.bandwidth);
      if (!e.levels.empty()) {
        f << "\tlevels=";
        for (size_t i = 0; i < e.levels.size(); ++i) {
          const BandwidthLevel& l = e.levels[i];
          f << (i ? ";" : "") << l.name << ':' << l.capacity_bytes << ':'
            << fmt::format("{:.17g}", l.bytes_per_s);
        }
      }
      for (size_t d = 1; d < e.flops.size(); ++d) {
        const char* n = dtype_name(static_cast<DType>(d));
        if (e.tried.count(n)) f << '\t' << n << '=' << fmt::format("{:.17g}", e.flops[d]);
      }
      if (!e.doubt.empty()) f << "\tdoubt=" << e.doubt;
      f << "\tdetail=" << e.detail << '\n';
    }
    if (!f) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace flopsprof::detail
