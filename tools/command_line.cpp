// The `flopsprof MODEL` command's arguments, parsed and checked.
#include "command_line.h"

#include <sched.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "flopsprof/error.h"

namespace flopsprof::cli {

const char* const kUsage = R"(usage: flopsprof MODEL [options]
       flopsprof diff BASE.json NEW.json [options]   (compare two profiles: flopsprof diff --help)

Profiles one forward (or training step) of a TorchScript model (torch.jit.script / torch.jit.trace,
saved with torch.jit.save) and prints per-module parameters, MACs, FLOPs and latency, as
flopsprof's print_model_profile prints them. Modules are named as in Python (layer1.0.conv1): each
op goes to the module the TorchScript interpreter says it ran in.

options:
  --input SHAPE[:DTYPE]  one per forward argument, in order: 1x3x224x224, 1x128:int64, 4:bool.
                         Random values: normal floats; integers in [0, --int-max).
                         dtypes: float32 (default), float64, float16, bfloat16, int64, int32,
                         int16, int8, uint8, bool
  --inputs FILE          the forward's arguments from saved tensors instead of --input: a tensor
                         (one argument) or a tuple or list of tensors (one argument each), saved
                         with Python's torch.save((x, y), "inputs.pt") in its default (zip)
                         format or with C++'s torch::pickle_save. Values, shapes and dtypes as
                         saved; the report's batch size is the first tensor's first dimension
  --int-max N            upper bound (exclusive) of random integer inputs (default 2: valid token
                         ids, masks and class indices for any model)
  --depth N              module depth of the aggregated section (default -1: all)
  --top N                top modules per depth (default 1)
  --warmup N             unprofiled forwards first (default 1; the first forward of a TorchScript
                         model runs one-off ops outside any module)
  --runs N               also time N unprofiled runs and print their median latency (default 0)
  --profile-runs N       profile N runs (default 1): the report and trace are the first run's; the JSON
                         keeps every module's latency spread over the N (min, median, max), which
                         `flopsprof diff` uses to tell a change from noise
  --backward             profile a training step: forward, loss = sum of the outputs, backward
  --device cpu|cuda      where the model and inputs live (default cpu)
  --threads N            intra-op threads (torch::set_num_threads), at most this machine's
                         CPUs
  --peak-flops F         the machine's peak FLOP/s for the roofline instead of measuring it:
                         a number (1.5e12, 900G, 67T) for every dtype, or per dtype
                         (fp32=67T,bf16=989T); also FLOPSPROF_PEAK_FLOPS
  --peak-bandwidth B     the machine's peak memory bandwidth, bytes/s (20e9, 3.35T), or its
                         memory levels for the cache-aware roofline, fastest first, main memory
                         last (L1:32K=400G,L2:1M=200G,L3:32M=100G,DRAM=20G); also
                         FLOPSPROF_PEAK_BANDWIDTH. Unless given, a CPU's peaks are measured once
                         (a few hundred ms: each cache level, memory, the fastest kernels) and
                         cached, a GPU's come from its properties (one ceiling: its memory)
  --attention dense|causal
                         how attention under a causal mask (SDPA's is_causal) counts in FLOPs,
                         MACs and MFU: every query against every key (dense, the default, as
                         FlopCounterMode) or only the pairs the mask keeps (causal); the JSON has
                         both, and what the kernels ran
  --read-masks           read each attention mask tensor (SDPA's attn_mask: a sliding window,
                         padding) to count the pairs it discards as masked, as is_causal's;
                         one pass over the mask per attention call
  --no-roofline          no peaks measured, no roofline columns in the text (bytes stay in JSON)
  --json FILE            also write the profile as JSON
  --html FILE            also write the self-contained HTML report
  --trace FILE           also write a Chrome trace (chrome://tracing, Perfetto)
                         Output files are checked before the model loads and written all or
                         none at the end: a file by a temporary renamed over it, a device or
                         FIFO straight through (never replaced); - or /dev/stdout: standard
                         output (the text report then goes to standard error). An output may
                         not be MODEL or the --inputs file
  --quiet                no progress lines on stderr
  --dim NAME=VALUE       an exported program's symbolic size (s0=128), repeatable; a symbol not
                         given takes the hint saved with it
  --tokens N             an exported program's tokens per forward, for FLOPs per token per module
                         (default: the indices its embedding reads, batch x sequence)
  -h, --help             this text

An exported program (MODEL.pt2, saved by PyTorch 2.6's torch.export.save, weights or none) is not
run: each node is counted from the shapes in its graph and placed in the module its
nn_module_stack names, in seconds even for a 7 B-parameter LLM exported under FakeTensorMode.
Its report has FLOPs, MACs, bytes, intensity and parameters per module, and no time (latencies,
rates and shares n/a; the JSON's null). --input, --inputs, --backward, --runs, --profile-runs,
--trace, --read-masks, --warmup, --threads and --device do not apply to it.

What is disabled, so that every op of the model is seen and nothing stalls: the graph executor's
optimizations (torch::jit::setGraphExecutorOptimize(false): no profiling-executor
specialization, no fusion groups, no differentiable graphs: the ops run as the saved graph has
them) and LibTorch's TensorExpr fuser (torch::jit::setTensorExprFuserEnabled(false): its LLVM
compilation of a ViT-B/16 took over 580 s on a second forward). Latency is therefore that of
the unoptimized graph. The model runs in eval mode under no_grad unless --backward is given
(then train mode is left as saved and gradients are on).

examples:
  flopsprof resnet50.pt --input 1x3x224x224
  flopsprof bert.pt --input 1x128:int64 --int-max 30000 --depth 2 --top 3 --json bert.json
  flopsprof bert.pt --inputs batch.pt --json bert.json
  flopsprof model.pt --input 8x3x64x64 --backward --runs 10 --html report.html
  flopsprof llama.pt2 --dim s0=2048 --json llama.json
)";

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(msg); }

// An integer option in [lo, hi]: decimal digits (a leading '-' where lo < 0), never wrapped.
int64_t parse_int(const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
  const std::string range = fmt::format("give an integer from {} to {}", lo, hi);
  const bool digits =
      !v.empty() &&
      (std::isdigit(static_cast<unsigned char>(v[0])) ||
       (v[0] == '-' && v.size() > 1 && std::isdigit(static_cast<unsigned char>(v[1]))));
  char* end = nullptr;
  errno = 0;
  const long long n = digits ? std::strtoll(v.c_str(), &end, 10) : 0;
  if (!digits || end != v.c_str() + v.size())
    fail(fmt::format("{}: '{}' is not an integer; {}", opt, v, range));
  if (errno == ERANGE || n < lo || n > hi)
    fail(fmt::format("{}: '{}' is out of range; {}", opt, v, range));
  return n;
}

// The dtype names --input accepts; the first of each dtype is the one messages show.
constexpr std::pair<const char*, c10::ScalarType> kDtypeNames[] = {
    {"float32", c10::kFloat},     {"float", c10::kFloat},   {"f32", c10::kFloat},
    {"float64", c10::kDouble},    {"double", c10::kDouble}, {"f64", c10::kDouble},
    {"float16", c10::kHalf},      {"half", c10::kHalf},     {"f16", c10::kHalf},
    {"bfloat16", c10::kBFloat16}, {"bf16", c10::kBFloat16}, {"int64", c10::kLong},
    {"long", c10::kLong},         {"int32", c10::kInt},     {"int", c10::kInt},
    {"int16", c10::kShort},       {"int8", c10::kChar},     {"uint8", c10::kByte},
    {"bool", c10::kBool},
};

c10::ScalarType parse_dtype(const std::string& s, const std::string& arg) {
  for (const auto& [name, t] : kDtypeNames) {
    if (s == name) return t;
  }
  fail("--input " + arg + ": unknown dtype '" + s +
       "'; use one of float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool");
}

// Per option: the least and the most it takes.
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kMillion = 1000000;

// CPUs this process may run on (its affinity mask: `taskset -c 0` gives 1), else the machine's.
int64_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

}  // namespace

std::string dtype_name(c10::ScalarType t) {
  for (const auto& [name, dtype] : kDtypeNames) {
    if (dtype == t) return name;
  }
  return c10::toString(t);
}

InputSpec parse_input(const std::string& arg) {
  InputSpec spec;
  spec.text = arg;
  std::string shape = arg;
  const size_t colon = arg.find(':');
  if (colon != std::string::npos) {
    shape = arg.substr(0, colon);
    spec.dtype = parse_dtype(arg.substr(colon + 1), arg);
  }
  const std::string hint = "; write the sizes separated by 'x', e.g. 1x3x224x224 or 1x128:int64";
  if (shape.empty()) fail("--input " + arg + ": the shape is empty" + hint);
  if (shape.back() == 'x') fail("--input " + arg + ": the shape ends with 'x'" + hint);
  std::stringstream ss(shape);
  std::string dim;
  while (std::getline(ss, dim, 'x')) {
    char* end = nullptr;
    errno = 0;
    const bool digits = !dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]));
    const long long n = digits ? std::strtoll(dim.c_str(), &end, 10) : -1;
    if (!digits || *end != '\0' || n < 0) {
      fail("--input " + arg + ": bad size '" + dim + "' in the shape" + hint);
    }
    if (errno == ERANGE || n > (int64_t{1} << 62))
      fail("--input " + arg + ": size " + dim + " is larger than any tensor's (2^62)");
    spec.shape.push_back(n);
  }
  if (spec.shape.size() > 64) fail("--input " + arg + ": more than 64 dimensions" + hint);
  return spec;
}

uint64_t input_bytes(const InputSpec& spec, uint64_t limit_bytes) {
  const uint64_t item = c10::elementSize(spec.dtype);
  uint64_t bytes = item;
  bool overflow = false;
  for (int64_t d : spec.shape) {
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      overflow = true;
    bytes = overflow ? bytes : bytes * static_cast<uint64_t>(d);
    if (d == 0) {
      bytes = 0;
      overflow = false;
      break;
    }
  }
  if (overflow || bytes > limit_bytes) {
    fail(
        fmt::format("--input {}: the tensor would take {} bytes ({} per element), more than the "
                    "{:.1f} GB of memory this process may use; give a smaller shape",
                    spec.text, overflow ? std::string("over 2^64") : std::to_string(bytes), item,
                    static_cast<double>(limit_bytes) / 1e9));
  }
  return bytes;
}

namespace {

// --threads N: 1 to the CPUs this process may run on.
int parse_threads(const std::string& v, int64_t cpus) {
  const int64_t n = parse_int("--threads", v, 1, kIntMax);
  if (n > cpus)
    fail(fmt::format("--threads: {} is more than the {} CPUs this process may run on; give 1 to {}",
                     v, cpus, cpus));
  return static_cast<int>(n);
}

// A peak option's value: --peak-flops, or --peak-bandwidth (one figure, or memory levels:
// L1:32K=400G,...,DRAM=20G). Throws the parser's Error.
void read_peak(RooflineOptions& r, bool flops, const std::string& v) {
  if (flops) {
    r.peak_flops = parse_peak_flops(v);
  } else if (v.find('=') != std::string::npos) {
    r.bandwidth_levels = parse_bandwidth_levels(v);
  } else {
    r.peak_bandwidth = parse_peak_bandwidth(v);
  }
}

// The environment's peaks are options too: refused as --peak-flops and --peak-bandwidth are.
void check_environment_peaks() {
  for (const char* var : {"FLOPSPROF_PEAK_FLOPS", "FLOPSPROF_PEAK_BANDWIDTH"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    RooflineOptions unused;
    try {
      read_peak(unused, std::string(var) == "FLOPSPROF_PEAK_FLOPS", v);
    } catch (const Error& e) {
      fail(std::string(var) + ": " + e.what());
    }
  }
}

AttentionConvention parse_attention(const std::string& v) {
  if (v == "dense") return AttentionConvention::kDense;
  if (v != "causal") fail("--attention: '" + v + "' is not a convention; use dense or causal");
  return AttentionConvention::kCausal;
}

// --dim NAME=VALUE: a symbol of the exported program and its size, each once.
void add_dim(std::map<std::string, int64_t>& dims, const std::string& v) {
  const size_t eq = v.find('=');
  const std::string name = v.substr(0, eq);
  if (eq == std::string::npos || name.empty())
    fail("--dim " + v +
         ": give NAME=VALUE, a symbol of the exported program and its size (s0=128)");
  if (dims.count(name)) fail("--dim " + name + " given twice");
  dims[name] = parse_int("--dim " + name, v.substr(eq + 1), 0, int64_t{1} << 62);
}

// What no single option can tell: a model given, the environment's peaks, inputs given one way.
void check_whole(const Options& o) {
  if (o.model.empty()) fail("no MODEL given; usage: flopsprof MODEL --input 1x3x224x224");
  check_environment_peaks();
  if (!o.inputs_file.empty() && !o.inputs.empty()) {
    fail(
        "--inputs and --input both given; pass the forward's arguments one way: --input SHAPE "
        "per argument (random values) or --inputs FILE (saved tensors)");
  }
}

}  // namespace

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  const int64_t cpus = usable_cpus();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) fail(a + " needs a value (see flopsprof --help)");
      return args[++i];
    };
    auto integer = [&](int64_t lo, int64_t hi) { return parse_int(a, value(), lo, hi); };
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    } else if (a == "--input") {
      o.inputs.push_back(parse_input(value()));
    } else if (a == "--inputs") {
      if (!o.inputs_file.empty()) fail("--inputs given twice; pass one file holding all arguments");
      o.inputs_file = value();
      if (o.inputs_file.empty()) fail("--inputs: the path is empty");
    } else if (a == "--int-max") {
      o.int_max = integer(1, int64_t{1} << 62);
    } else if (a == "--depth") {
      o.depth = static_cast<int>(integer(-1, kMillion));
    } else if (a == "--top") {
      o.top = static_cast<int>(integer(1, kMillion));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(integer(0, kMillion));
      o.warmup_given = true;
    } else if (a == "--runs") {
      o.runs = static_cast<int>(integer(0, kMillion));
    } else if (a == "--profile-runs") {
      o.profile_runs = static_cast<int>(integer(1, 10000));
    } else if (a == "--backward") {
      o.backward = true;
    } else if (a == "--device") {
      o.device = value();
      if (o.device != "cpu" && o.device != "cuda")
        fail("--device: '" + o.device + "' is not a device; use cpu or cuda");
    } else if (a == "--threads") {
      o.threads = parse_threads(value(), cpus);
      o.threads_given = true;
    } else if (a == "--peak-flops" || a == "--peak-bandwidth") {
      try {
        read_peak(o.roofline, a == "--peak-flops", value());
      } catch (const Error& e) {
        fail(a + ": " + e.what());
      }
    } else if (a == "--attention") {
      o.attention = parse_attention(value());
    } else if (a == "--read-masks") {
      o.read_masks = true;
    } else if (a == "--no-roofline") {
      o.roofline.enabled = false;
    } else if (a == "--json" || a == "--html" || a == "--trace") {
      std::string& path = a == "--json" ? o.json : a == "--html" ? o.html : o.trace;
      bool& given = a == "--json" ? o.json_given : a == "--html" ? o.html_given : o.trace_given;
      if (given) fail(a + " given twice; one file per output");
      path = value();
      given = true;
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "--tokens") {
      o.tokens = static_cast<uint64_t>(integer(1, int64_t{1} << 62));
    } else if (a == "--dim") {
      add_dim(o.dims, value());
    } else if (!a.empty() && a[0] == '-') {
      fail("unknown option '" + a + "' (see flopsprof --help)");
    } else if (a.empty()) {
      fail("an empty argument where MODEL was expected (see flopsprof --help)");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      fail("a second MODEL '" + a + "' (one model per run; see flopsprof --help)");
    }
  }
  check_whole(o);
  return o;
}

}  // namespace flopsprof::cli
