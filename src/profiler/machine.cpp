// A CPU's peaks measured with LibTorch's own kernels (a matrix product per dtype, a streaming
// triad), kept in a small cache file per machine; and the peaks a profile uses (src/profiler/
// peaks.h).
#include "flopsprof/machine.h"

#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "capture/interceptor.h"
#include "flopsprof/error.h"
#include "flopsprof/report.h"
#include "profiler/peak_kernels.h"
#include "profiler/peaks.h"
#include "profiler/peaks_cache.h"

namespace flopsprof {
namespace {

using detail::cache_levels;
using detail::conv_peak;
using detail::gemm_peak;
using detail::implausible;
using detail::level_bandwidth;
using detail::peaks_cache_dir;
using detail::PeaksEntry;
using detail::read_peaks_cache;
using detail::seconds_since;
using detail::triad_bandwidth;
using detail::usable_cache_file;
using detail::write_peaks_cache;

std::string first_line_value(const char* path, const char* key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      size_t b = line.find_first_not_of(" \t", colon + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  }
  return "";
}

// The BLAS library LibTorch's matrix products run in, as loaded (its real path): the GEMM peak
// depends on it (Debian switches libblas.so.3 between implementations).
std::string blas_library() {
  std::string found;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) -> int {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("blas") == std::string::npos && name.find("mkl") == std::string::npos)
          return 0;
        char* real = realpath(name.c_str(), nullptr);
        *static_cast<std::string*>(out) = real ? real : name;
        std::free(real);
        return 1;
      },
      &found);
  return found.empty() ? "built-in" : found;
}

// fp32 and the real floating dtypes of `dtypes` (a measurement's GEMMs), each once.
std::vector<DType> measured_dtypes(const std::vector<DType>& dtypes) {
  std::vector<DType> wanted{DType::kFloat32};
  for (DType d : dtypes) {
    if (is_floating(d) && d != DType::kComplex64 && d != DType::kComplex128 &&
        d != DType::kFloat8 && std::find(wanted.begin(), wanted.end(), d) == wanted.end())
      wanted.push_back(d);
  }
  return wanted;
}

std::mutex g_peaks_mu;
std::map<std::string, MachinePeaks> g_device_measured;  // by device and dtypes, this process
std::map<std::string, PeaksEntry> g_process_cache;      // measured in this process, by key

// The cache's key of this CPU at `threads`: its model, LibTorch, BLAS and kernel set.
// "kernels=mm+conv": entries cached before the convolution was measured are measured again.
std::string cpu_peaks_key(const std::string& model, int threads) {
  const char* isa = std::getenv("ATEN_CPU_CAPABILITY");
  return fmt::format("{}|threads={}|libtorch={}|blas={}|isa={}|kernels=mm+conv|levels=2", model,
                     threads, TORCH_VERSION, blas_library(), isa && *isa ? isa : "default");
}

// The entry a measurement starts from: this process's, else the file's when `use_cache` allows.
// An implausible line (measured while the machine was busy, or edited) is measured again; one
// measured twice and kept with its doubt is used as it is, the doubt said. `*from_file`: it came
// from the file.
PeaksEntry starting_entry(const std::string& key, const std::map<std::string, PeaksEntry>& cached,
                          bool use_cache, bool* from_file) {
  *from_file = false;
  if (auto it = g_process_cache.find(key); it != g_process_cache.end()) return it->second;
  if (auto jt = cached.find(key); use_cache && jt != cached.end()) {
    if (!jt->second.doubt.empty() || implausible(jt->second, key, cached).empty()) {
      *from_file = true;
      return jt->second;
    }
  }
  return PeaksEntry{};
}

// Main memory's bandwidth and each cache level's (a triad over half of it: docs/report.md, "The
// machine's roofline"), into a fresh entry.
PeaksEntry measure_bandwidths() {
  PeaksEntry e;
  std::string d;
  e.bandwidth = triad_bandwidth(&d);
  for (BandwidthLevel l : cache_levels()) {
    l.bytes_per_s = level_bandwidth(l.capacity_bytes);
    d += fmt::format(", {} triads over {} and {} KiB", l.name, l.capacity_bytes / 4 >> 10,
                     l.capacity_bytes / 2 >> 10);
    e.levels.push_back(l);
  }
  e.detail = d;
  return e;
}

// Measures what `e` lacks (everything when `fresh`) at the current thread count: the
// bandwidths, then each wanted dtype's FLOP/s (the faster of a GEMM and a convolution). Measured
// twice at most: a second time when the first looks implausible (a busy machine); still so, it
// is kept with its doubt (MachinePeaks::doubt, said in the problems until the file is deleted),
// not measured again by every run. Returns whether anything was measured.
bool measure_entry(PeaksEntry& e, const std::string& key,
                   const std::map<std::string, PeaksEntry>& cached,
                   const std::vector<DType>& wanted, bool fresh) {
  bool measured = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fresh || attempt > 0) {
      e = measure_bandwidths();
      measured = true;
    }
    for (DType d : wanted) {
      const char* n = dtype_name(d);
      if (e.tried.count(n)) continue;
      std::string det, mm_what, conv_what;
      const double mm = gemm_peak(d, &mm_what);
      const double conv = conv_peak(d, &conv_what);
      e.flops[static_cast<size_t>(d)] =
          detail::fastest_kernel({{mm, mm_what}, {conv, conv_what}}, &det);
      e.tried[n] = true;
      e.detail = det + e.detail;
      measured = true;
    }
    if (!measured) break;  // this process's entry, its doubt kept
    e.doubt = implausible(e, key, cached);
    if (e.doubt.empty()) break;
  }
  return measured;
}

// measure_entry() on `threads` threads, unobserved by any profile and without autograd; a
// failure is an Error that says how to give the peaks instead.
bool measure_on_threads(PeaksEntry& e, const std::string& key,
                        const std::map<std::string, PeaksEntry>& cached,
                        const std::vector<DType>& wanted, bool fresh, int threads) {
  detail::Unobserved no_records;  // no profile records these
  c10::InferenceMode no_grad;
  const int before = at::get_num_threads();
  if (before != threads) at::set_num_threads(threads);
  bool measured = false;
  try {
    measured = measure_entry(e, key, cached, wanted, fresh);
  } catch (const std::exception& ex) {
    if (before != threads) at::set_num_threads(before);
    throw Error(
        fmt::format("measuring this CPU's peaks failed ({}); give them instead "
                    "(ProfilerOptions::roofline, --peak-flops / --peak-bandwidth, or "
                    "FLOPSPROF_PEAK_FLOPS / FLOPSPROF_PEAK_BANDWIDTH)",
                    ex.what()));
  }
  if (before != threads) at::set_num_threads(before);
  return measured;
}

// cpu_peaks; with `measure` false, nullopt unless every dtype is in a cache.
std::optional<MachinePeaks> peaks_of_this_cpu(const std::vector<DType>& dtypes, int threads,
                                              bool use_cache, bool measure) {
  std::lock_guard<std::mutex> lock(g_peaks_mu);
  if (threads <= 0) threads = at::get_num_threads();
  const std::string model = detail::cpu_model();
  const std::string key = cpu_peaks_key(model, threads);
  const std::string dir = peaks_cache_dir();
  const std::string file = dir.empty() ? "" : usable_cache_file(dir + "/machine-peaks.txt");
  const std::vector<DType> wanted = measured_dtypes(dtypes);
  std::map<std::string, PeaksEntry> cached =
      file.empty() ? std::map<std::string, PeaksEntry>{} : read_peaks_cache(file);
  bool from_file = false;
  PeaksEntry e = starting_entry(key, cached, use_cache, &from_file);
  if (!measure) {
    bool complete = e.bandwidth > 0;
    for (DType d : wanted) complete = complete && e.tried.count(dtype_name(d)) > 0;
    if (!complete) return std::nullopt;
  }
  MachinePeaks p;
  const auto t0 = std::chrono::steady_clock::now();
  const bool fresh = e.bandwidth <= 0 || !use_cache;
  const bool measured_now = measure_on_threads(e, key, cached, wanted, fresh, threads);
  if (measured_now) {
    p.measure_s = seconds_since(t0);
    g_process_cache[key] = e;
    if (!file.empty()) {
      cached = read_peaks_cache(file);  // another process may have written meanwhile
      cached[key] = e;
      write_peaks_cache(dir, file, cached);
    }
  }
  p.device = model;
  p.threads = threads;
  p.cache_file = file;
  p.flops_per_s = e.flops;
  p.bytes_per_s = e.bandwidth;
  p.bandwidth_by_level = e.levels;
  BandwidthLevel dram;
  dram.name = "DRAM";
  dram.bytes_per_s = e.bandwidth;
  p.bandwidth_by_level.push_back(dram);
  const char* source = measured_now ? "measured" : from_file ? "measured (cached)" : "measured";
  p.flops_source = p.bandwidth_source = source;
  p.doubt = e.doubt;
  p.detail = fmt::format("{}, {} thread(s), LibTorch {}, BLAS {}: {}", model, threads,
                         TORCH_VERSION, blas_library(), e.detail);
  return p;
}

}  // namespace

MachinePeaks cpu_peaks(const std::vector<DType>& dtypes, int threads, bool use_cache) {
  return *peaks_of_this_cpu(dtypes, threads, use_cache, true);
}

MachinePeaks measure_device_peaks(int device_type, int device_index,
                                  const std::vector<DType>& dtypes) {
  const c10::Device device(static_cast<c10::DeviceType>(device_type),
                           static_cast<c10::DeviceIndex>(device_index));
  const std::vector<DType> wanted = measured_dtypes(dtypes);
  std::string key = device.str();
  for (DType d : wanted) key += fmt::format("|{}", dtype_name(d));
  std::lock_guard<std::mutex> lock(g_peaks_mu);
  if (auto it = g_device_measured.find(key); it != g_device_measured.end()) {
    MachinePeaks p = it->second;
    p.measure_s = 0;
    return p;
  }
  MachinePeaks p;
  p.device = device.str();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    detail::Unobserved no_records;  // no profile records these
    c10::InferenceMode no_grad;
    detail::wait_for_device(device);  // the program's queued work is not timed
    std::string d;
    p.bytes_per_s = triad_bandwidth(&d, device);
    for (DType dt : wanted) {
      std::string what;
      p.flops_per_s[static_cast<size_t>(dt)] = gemm_peak(dt, &what, device);
      p.detail += what + "; ";
    }
    p.detail += d;
  } catch (const std::exception& ex) {
    throw Error(
        fmt::format("measuring the peaks of {} failed ({}); give them instead "
                    "(ProfilerOptions::roofline, --peak-flops / --peak-bandwidth, or "
                    "FLOPSPROF_PEAK_FLOPS / FLOPSPROF_PEAK_BANDWIDTH)",
                    device.str(), ex.what()));
  }
  p.flops_source = p.bandwidth_source = "measured";
  p.measure_s = seconds_since(t0);
  g_device_measured[key] = p;
  return p;
}

namespace detail {
double fastest_kernel(const std::vector<std::pair<double, std::string>>& kernels,
                      std::string* detail) {
  double best = 0;
  size_t at = 0, rated = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].first > 0 && !kernels[k].second.empty()) ++rated;
    if (kernels[k].first > best) {
      best = kernels[k].first;
      at = k;
    }
  }
  std::string out;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].second.empty()) continue;
    if (!out.empty()) out += ", ";
    out += kernels[k].first > 0
               ? fmt::format("{} {:.4g} GFLOP/s", kernels[k].second, kernels[k].first / 1e9)
               : kernels[k].second;  // e.g. "fp32 mm not supported"
    if (k == at && rated > 1) out += " (the peak)";
  }
  *detail = out.empty() ? "" : out + "; ";
  return best;
}

std::string cpu_model() {
  static const std::string model = [] {
    std::string m = first_line_value("/proc/cpuinfo", "model name");
    if (m.empty()) m = first_line_value("/proc/cpuinfo", "Model");
    return m.empty() ? std::string("unknown CPU") : m;
  }();
  return model;
}

namespace {
void add_problem(std::string* problem, const std::string& what) {
  if (problem == nullptr) return;
  if (!problem->empty()) *problem += "; ";
  *problem += what;
}
}  // namespace

void forget_measured_peaks() {
  std::lock_guard<std::mutex> lock(g_peaks_mu);
  g_process_cache.clear();
  g_device_measured.clear();
}

MachinePeaks with_measurement(const MachinePeaks& device, const MachinePeaks& measured) {
  MachinePeaks p = device;
  std::string m;
  for (size_t d = 0; d < measured.flops_per_s.size(); ++d) {
    const double f = measured.flops_per_s[d];
    if (f <= 0) continue;
    const DType dt = static_cast<DType>(d);
    const double ceiling = device.peak_flops(dt);
    m += ceiling > 0 ? fmt::format("{} {:.4g} TFLOP/s ({:.0f}% of the ceiling), ", dtype_name(dt),
                                   f / 1e12, 100 * f / ceiling)
                     : fmt::format("{} {:.4g} TFLOP/s, ", dtype_name(dt), f / 1e12);
  }
  m += device.bytes_per_s > 0
           ? fmt::format("{:.4g} GB/s ({:.0f}% of the ceiling)", measured.bytes_per_s / 1e9,
                         100 * measured.bytes_per_s / device.bytes_per_s)
           : fmt::format("{:.4g} GB/s", measured.bytes_per_s / 1e9);
  p.detail += fmt::format("{}measured on the device: {} ({})", p.detail.empty() ? "" : "; ", m,
                          measured.detail);
  p.measure_s = measured.measure_s;
  return p;
}

MachinePeaks profile_peaks(const RooflineOptions& options, const std::vector<DType>& dtypes,
                           const PeaksTarget& target, bool measure, std::string* problem) {
  MachinePeaks p;
  if (!options.enabled) return p;
  // Given > environment > device (GPU) or measured (CPU), each ceiling on its own.
  RateByDtype flops = options.peak_flops;
  std::string flops_source = "given", bandwidth_source = "given";
  double bandwidth = options.peak_bandwidth;
  std::vector<BandwidthLevel> levels = options.bandwidth_levels;
  if (!levels.empty()) bandwidth = levels.back().bytes_per_s;
  bool any_flops = false;
  for (double f : flops) any_flops = any_flops || f > 0;
  if (!any_flops) {
    if (const char* env = std::getenv("FLOPSPROF_PEAK_FLOPS"); env && *env) {
      try {
        flops = parse_peak_flops(env);
        flops_source = "given (FLOPSPROF_PEAK_FLOPS)";
        any_flops = true;
      } catch (const Error& e) {  // the profile is kept; the variable is ignored, and said so
        add_problem(problem, fmt::format("FLOPSPROF_PEAK_FLOPS ignored: {}", e.what()));
      }
    }
  }
  if (bandwidth <= 0) {
    if (const char* env = std::getenv("FLOPSPROF_PEAK_BANDWIDTH"); env && *env) {
      try {
        if (std::string(env).find('=') != std::string::npos) {
          levels = parse_bandwidth_levels(env);
          bandwidth = levels.back().bytes_per_s;
        } else {
          bandwidth = parse_peak_bandwidth(env);
        }
        bandwidth_source = "given (FLOPSPROF_PEAK_BANDWIDTH)";
      } catch (const Error& e) {
        add_problem(problem, fmt::format("FLOPSPROF_PEAK_BANDWIDTH ignored: {}", e.what()));
      }
    }
  }
  const bool need = !any_flops || bandwidth <= 0;
  const bool device = target.device_type >= 0;
  if (need && device && !target.meta) {
    p = target.known.value_or(MachinePeaks{});
    if (measure) {
      try {
        const MachinePeaks m =
            measure_device_peaks(target.device_type, target.device_index, dtypes);
        p = target.known ? with_measurement(*target.known, m) : m;
      } catch (const Error& e) {
        add_problem(problem, e.what());
      }
    }
  } else if (need && !device && !target.meta) {
    try {
      p = peaks_of_this_cpu(dtypes, 0, true, measure).value_or(MachinePeaks{});
    } catch (const Error& e) {
      add_problem(problem, e.what());
    }
  }
  if (any_flops) {
    // Given per dtype: the ones not given keep the base's (a measurement of another dtype)
    for (size_t d = 0; d < flops.size(); ++d) {
      if (flops[d] > 0) p.flops_per_s[d] = flops[d];
    }
    p.flops_source = flops_source;
  }
  if (bandwidth > 0) {
    // Given: its levels when given, else one ceiling (main memory's), not the measured caches.
    p.bytes_per_s = bandwidth;
    p.bandwidth_source = bandwidth_source;
    p.bandwidth_by_level = levels;
  }
  if (p.bandwidth_by_level.empty() && p.bytes_per_s > 0) {
    // A GPU's one ceiling: its memory (HBM; its caches are not modelled), as a single level.
    BandwidthLevel main;
    main.name = device ? "HBM" : "DRAM";
    main.bytes_per_s = p.bytes_per_s;
    p.bandwidth_by_level.push_back(main);
  }
  if (!device && !target.meta && p.threads == 0) p.threads = at::get_num_threads();
  return p;
}

}  // namespace detail
}  // namespace flopsprof
