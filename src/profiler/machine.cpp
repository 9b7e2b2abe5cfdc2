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
#include "profiler/peaks.h"

namespace flopsprof {
namespace {

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

// The last-level cache of CPU 0, bytes (sysfs); 32 MiB when unknown.
uint64_t llc_bytes() {
  uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream lf(dir + "level"), sf(dir + "size");
    int level = 0;
    std::string size;
    if (!(lf >> level) || !(sf >> size) || size.empty()) continue;
    uint64_t v = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    if (level > best_level || (level == best_level && v > best)) {
      best_level = level;
      best = v;
    }
  }
  return best > 0 ? best : (32u << 20);
}

std::string cache_dir() {
  if (const char* d = std::getenv("FLOPSPROF_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/flopsprof";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/flopsprof";
  return "";
}

// One line of the cache: "<key>\tbandwidth=<B/s>\t<dtype>=<FLOP/s>...\tdetail=<text>".
struct Entry {
  double bandwidth = 0;
  std::vector<BandwidthLevel> levels;  // the caches, fastest first (main memory: `bandwidth`)
  RateByDtype flops{};
  std::map<std::string, bool> tried;  // dtypes measured (a 0 is "cannot compute it here")
  std::string detail;
  std::string doubt;  // why its measurement looked wrong even measured twice ("": none)
};

// Why an entry's rates cannot all be right ("" when they can): a cache level slower than main
// memory (by more than the triads' noise, 20%), or a FLOP/s rate under half of what this CPU
// reached with fewer threads (`others`: the cache's lines; the key differs only in its thread
// count). Measured on a busy machine, they would flag every share above them. (Caches slower
// than the larger cache after them are not: with several threads, L1's triads split over the
// cores are short enough that their per-call cost shows, every time.)
std::string implausible(const Entry& e, const std::string& key,
                        const std::map<std::string, Entry>& others) {
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

std::map<std::string, Entry> read_cache(const std::string& file) {
  std::map<std::string, Entry> out;
  if (file.empty()) return out;
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    std::string key, field;
    if (!std::getline(ss, key, '\t') || key.empty()) continue;
    Entry e;
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
        for (size_t d = 1; d < e.flops.size(); ++d) {
          if (name == dtype_name(static_cast<DType>(d))) {
            const auto v = cached_rate(value, true);
            trusted = trusted && v.has_value();
            e.flops[d] = v.value_or(0);
            e.tried[name] = true;
          }
        }
      }
    }
    if (trusted && e.bandwidth > 0) out[key] = e;
  }
  return out;
}

void write_cache(const std::string& dir, const std::string& file,
                 const std::map<std::string, Entry>& entries) {
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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Waits for the work queued on `device`'s current stream (nothing to wait for on the CPU).
void sync(const c10::Device& device) {
  if (device.is_cpu()) return;
  c10::impl::getDeviceGuardImpl(device.type())->getStream(device).synchronize();
}

// Seconds `launch` takes to run on `device`: from the host, until the device finished it.
template <typename F>
double device_seconds(const c10::Device& device, F launch) {
  const auto t0 = std::chrono::steady_clock::now();
  launch();
  sync(device);
  return seconds_since(t0);
}

// The LibTorch type of a floating dtype the peaks are measured in; nullopt for the others.
std::optional<c10::ScalarType> measured_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return at::kDouble;
    case DType::kFloat32:
      return at::kFloat;
    case DType::kBFloat16:
      return at::kBFloat16;
    case DType::kFloat16:
      return at::kHalf;
    default:
      return std::nullopt;
  }
}

// The best of `first` and up to 6 more timings of `timed` (seconds), within about 120 ms: on a
// shared machine one run in three can go at half speed (a neighbour on the core), and a peak is
// the fastest the kernel can go.
double best_of_more(double first, const std::function<double()>& timed) {
  double t = first, spent = 0;
  for (int k = 0; k < 6 && spent < 0.12; ++k) {
    const double tk = timed();
    spent += tk;
    t = std::min(t, tk);
  }
  return t;
}

// Peak FLOP/s of torch::mm at `dtype` on `device`: n doubles from 128 until one product takes
// >= 8 ms on a CPU, 2 ms on a device (or n = 2048 on a CPU, 8192 on a device; the smaller ones
// warm the kernel up), then the best of that one and up to 6 more at that size (at most about
// 120 ms more). The operands are constant (no random generator is drawn from: the program's
// random numbers stay as they were). `*what`: what was timed ("fp32 mm 1024^3"), or that it could
// not run. 0 when LibTorch cannot multiply this dtype there.
double gemm_peak(DType dtype, std::string* what, const c10::Device& device = c10::kCPU) {
  const std::optional<c10::ScalarType> st = measured_scalar_type(dtype);
  if (!st) return 0;
  try {
    int64_t n = 128;
    at::Tensor a, b;
    auto product = [&] { return device_seconds(device, [&] { at::Tensor c = at::mm(a, b); }); };
    const bool cpu = device.is_cpu();
    const double enough = cpu ? 0.008 : 0.002;
    const int64_t largest = cpu ? 2048 : 8192;
    const auto options = at::TensorOptions().dtype(*st).device(device);
    double t = 0;
    for (;;) {
      a = at::full({n, n}, 0.5, options);
      b = at::full({n, n}, 0.25, options);
      t = product();
      if (t >= enough || n >= largest) break;
      n *= 2;
    }
    t = best_of_more(t, product);
    const double flops =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / t;
    *what = fmt::format("{} mm {}^3", dtype_name(dtype), n);
    return flops;
  } catch (const std::exception&) {
    *what = fmt::format("{} mm not supported", dtype_name(dtype));
    return 0;
  }
}

// Peak FLOP/s of a 3x3 convolution at `dtype` on this CPU (64 to 64 channels, 56 x 56, padding 1:
// 2 x N x 64 x 64 x 9 x 56 x 56 FLOPs): LibTorch runs it with oneDNN, whose kernels may use wider
// vector units than the BLAS behind at::mm (OpenBLAS's fp32 GEMM is its AVX2 kernel on a CPU with
// AVX-512: a quarter of what oneDNN's convolutions reach there). The batch N doubles from 1 until
// one convolution takes >= 8 ms (or N = 64), then the best of up to 6 more within about 120 ms,
// as for the GEMM. Constant operands. 0 when LibTorch cannot convolve this dtype here.
double conv_peak(DType dtype, std::string* what) {
  // fp64 and fp16 convolutions have no faster CPU kernel than the GEMM's
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return 0;
  try {
    const auto options = at::TensorOptions().dtype(*measured_scalar_type(dtype));
    const at::Tensor w = at::full({64, 64, 3, 3}, 0.125, options);
    int64_t n = 1;
    at::Tensor x;
    auto conv = [&] {
      return device_seconds(c10::kCPU, [&] { at::Tensor y = at::conv2d(x, w, {}, 1, 1); });
    };
    double t = 0;
    for (;;) {
      x = at::full({n, 64, 56, 56}, 0.5, options);
      t = conv();
      if (t >= 0.008 || n >= 64) break;
      n *= 2;
    }
    t = best_of_more(t, conv);
    *what = fmt::format("{} conv2d 3x3 {}x64x56^2", dtype_name(dtype), n);
    return 2.0 * static_cast<double>(n) * 64 * 64 * 9 * 56 * 56 / t;
  } catch (const std::exception&) {
    return 0;
  }
}

// Bandwidth of a = b + 2 * c over fp32 arrays (on a CPU of max(2 x LLC, 32 MiB) each, at most
// 512 MiB; on a device 128 MiB each, and 10 passes per timing, as one pass takes well under a
// millisecond there): 3 x the array's bytes per pass (the compulsory traffic), best of 3 after a
// first pass that touches a's pages (b and c are written when made: reading never-written pages
// would read the kernel's shared zero page, from cache).
double triad_bandwidth(std::string* detail, const c10::Device& device = c10::kCPU) {
  const bool cpu = device.is_cpu();
  const uint64_t bytes =
      cpu ? std::min<uint64_t>(std::max<uint64_t>(2 * llc_bytes(), 32u << 20), 512u << 20)
          : (128u << 20);
  const int passes = cpu ? 1 : 10;
  const int64_t n = static_cast<int64_t>(bytes / 4);
  const auto options = at::TensorOptions().dtype(at::kFloat).device(device);
  at::Tensor a = at::empty({n}, options), b = at::ones({n}, options), c = at::ones({n}, options);
  at::add_out(a, b, c, 2.0);
  double best = 1e300;
  for (int k = 0; k < 3; ++k) {
    best = std::min(best, device_seconds(device, [&] {
                      for (int p = 0; p < passes; ++p) at::add_out(a, b, c, 2.0);
                    }));
  }
  *detail += passes > 1 ? fmt::format("triad 3 x {} MiB x {}", bytes >> 20, passes)
                        : fmt::format("triad 3 x {} MiB", bytes >> 20);
  return 3.0 * static_cast<double>(n) * 4.0 * passes / best;
}

// The CPU's data caches (sysfs, CPU 0): L1 (data), L2, L3, with their sizes; empty when unknown.
std::vector<BandwidthLevel> cache_levels() {
  std::map<int, uint64_t> by_level;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream lf(dir + "level"), sf(dir + "size"), tf(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(lf >> level) || !(sf >> size) || !(tf >> type) || size.empty()) continue;
    if (type == "Instruction") continue;
    uint64_t v = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    if (v > 0 && level >= 1 && level <= 4) by_level[level] = v;
  }
  std::vector<BandwidthLevel> out;
  for (const auto& [level, bytes] : by_level) {
    BandwidthLevel l;
    l.name = fmt::format("L{}", level);
    l.capacity_bytes = bytes;
    out.push_back(l);
  }
  return out;
}

// Seconds of one a = b + 2 * c over fp32 arrays whose three operands take `working_set` bytes,
// as a profile's ops run it (at::add_out at the current thread count): repeated to about 3 ms a
// timing, the best of 5 timings, over the repetitions.
double triad_call_seconds(uint64_t working_set) {
  const int64_t n = std::max<int64_t>(64, static_cast<int64_t>(working_set / 12));
  const auto options = at::TensorOptions().dtype(at::kFloat);
  at::Tensor a = at::empty({n}, options), b = at::ones({n}, options), c = at::ones({n}, options);
  for (int k = 0; k < 8; ++k) at::add_out(a, b, c, 2.0);  // warm: pages, caches, the dispatcher
  const auto t0 = std::chrono::steady_clock::now();
  at::add_out(a, b, c, 2.0);
  const double one = std::max(1e-8, seconds_since(t0));
  const int reps = static_cast<int>(std::clamp(0.003 / one, 1.0, 100000.0));
  double best = 1e300;
  for (int k = 0; k < 5; ++k) {
    const auto tk = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) at::add_out(a, b, c, 2.0);
    best = std::min(best, seconds_since(tk));
  }
  return best / reps;
}

// The bandwidth of a cache level of `capacity` bytes: the slope of a triad's time between working
// sets of a quarter and a half of it (both stay in it). The slope leaves out what every call
// pays whatever its size (the dispatcher, the kernel's start), which is no bandwidth: the
// ceiling is what the level streams, as a cache-aware roofline's (Intel Advisor's) are. A slope
// the noise spoils (not positive, or past 20 times the half's own rate) falls back to that rate.
double level_bandwidth(uint64_t capacity) {
  const uint64_t small = capacity / 4, large = capacity / 2;
  const double ts = triad_call_seconds(small), tl = triad_call_seconds(large);
  const double whole = static_cast<double>(large) / tl;
  const double slope = tl > ts ? static_cast<double>(large - small) / (tl - ts) : 0.0;
  return slope > 0 && slope < 20 * whole ? std::max(slope, whole) : whole;
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
std::map<std::string, Entry> g_process_cache;           // measured in this process, by key

// cpu_peaks; with `measure` false, nullopt unless every dtype is in a cache.
std::optional<MachinePeaks> peaks_of_this_cpu(const std::vector<DType>& dtypes, int threads,
                                              bool use_cache, bool measure) {
  std::lock_guard<std::mutex> lock(g_peaks_mu);
  if (threads <= 0) threads = at::get_num_threads();
  const char* isa = std::getenv("ATEN_CPU_CAPABILITY");
  const std::string model = detail::cpu_model();
  // "kernels=mm+conv": entries cached before the convolution was measured are measured again.
  const std::string key =
      fmt::format("{}|threads={}|libtorch={}|blas={}|isa={}|kernels=mm+conv|levels=2", model,
                  threads, TORCH_VERSION, blas_library(), isa && *isa ? isa : "default");
  const std::string dir = cache_dir();
  const std::string file = dir.empty() ? "" : usable_cache_file(dir + "/machine-peaks.txt");
  const std::vector<DType> wanted = measured_dtypes(dtypes);
  MachinePeaks p;
  p.device = model;
  p.threads = threads;
  p.cache_file = file;
  std::map<std::string, Entry> cached =
      file.empty() ? std::map<std::string, Entry>{} : read_cache(file);
  Entry e;
  bool from_file = false;
  if (auto it = g_process_cache.find(key); it != g_process_cache.end()) {
    e = it->second;
  } else if (auto jt = cached.find(key); use_cache && jt != cached.end()) {
    // an implausible line (measured while the machine was busy, or edited) is measured again;
    // one measured twice and kept with its doubt is used as it is, the doubt said
    if (!jt->second.doubt.empty() || implausible(jt->second, key, cached).empty()) {
      e = jt->second;
      from_file = true;
    }
  }
  if (!measure) {
    bool complete = e.bandwidth > 0;
    for (DType d : wanted) complete = complete && e.tried.count(dtype_name(d)) > 0;
    if (!complete) return std::nullopt;
  }
  bool measured_now = false;
  const auto t0 = std::chrono::steady_clock::now();
  {
    detail::Unobserved no_records;  // no profile records these
    c10::InferenceMode no_grad;
    const int before = at::get_num_threads();
    if (before != threads) at::set_num_threads(threads);
    try {
      // Measured twice at most: a second time when the first looks implausible (a busy
      // machine); still so, it is used and kept with its doubt (MachinePeaks::doubt, said in the
      // problems until the file is deleted), not measured again by every run.
      const bool fresh = e.bandwidth <= 0 || !use_cache;
      for (int attempt = 0; attempt < 2; ++attempt) {
        if (fresh || attempt > 0) {
          e = Entry{};
          std::string d;
          e.bandwidth = triad_bandwidth(&d);
          // Each cache level's ceiling: a triad over half of it (docs/report.md, "The
          // machine's roofline").
          for (BandwidthLevel l : cache_levels()) {
            l.bytes_per_s = level_bandwidth(l.capacity_bytes);
            d += fmt::format(", {} triads over {} and {} KiB", l.name, l.capacity_bytes / 4 >> 10,
                             l.capacity_bytes / 2 >> 10);
            e.levels.push_back(l);
          }
          e.detail = d;
          measured_now = true;
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
          measured_now = true;
        }
        if (!measured_now) break;  // this process's entry, its doubt kept
        e.doubt = implausible(e, key, cached);
        if (e.doubt.empty()) break;
      }
    } catch (const std::exception& ex) {
      if (before != threads) at::set_num_threads(before);
      throw Error(
          fmt::format("measuring this CPU's peaks failed ({}); give them instead "
                      "(ProfilerOptions::roofline, --peak-flops / --peak-bandwidth, or "
                      "FLOPSPROF_PEAK_FLOPS / FLOPSPROF_PEAK_BANDWIDTH)",
                      ex.what()));
    }
    if (before != threads) at::set_num_threads(before);
  }
  if (measured_now) {
    p.measure_s = seconds_since(t0);
    g_process_cache[key] = e;
    if (!file.empty()) {
      cached = read_cache(file);  // another process may have written meanwhile
      cached[key] = e;
      write_cache(dir, file, cached);
    }
  }
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
    sync(device);  // the program's queued work is not timed
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
