// The `flopsprof` command: profiles a saved TorchScript model without writing any C++.
#include <sys/stat.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/serialize.h>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"
#include "flopsprof/jit.h"
#include "flopsprof/profiler.h"

namespace {

using flopsprof::Error;

constexpr const char* kUsage = R"(usage: flopsprof MODEL [options]
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
  --threads N            intra-op threads (torch::set_num_threads)
  --peak-flops F         the machine's peak FLOP/s for the roofline instead of measuring it:
                         a number (1.5e12, 900G, 67T) for every dtype, or per dtype
                         (fp32=67T,bf16=989T); also FLOPSPROF_PEAK_FLOPS
  --peak-bandwidth B     the machine's peak memory bandwidth, bytes/s (20e9, 3.35T); also
                         FLOPSPROF_PEAK_BANDWIDTH. Unless given, a CPU's peaks are measured once
                         (a few hundred ms) and cached, a GPU's come from its properties
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
  --quiet                no progress lines on stderr
  -h, --help             this text

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
)";

[[noreturn]] void fail(const std::string& msg) { throw Error(msg); }

int64_t parse_int(const std::string& opt, const std::string& v, int64_t min) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n < min) {
    fail(opt + ": '" + v + "' is not an integer >= " + std::to_string(min));
  }
  return n;
}

struct InputSpec {
  std::vector<int64_t> shape;
  torch::Dtype dtype = torch::kFloat;
  std::string text;
};

// The dtype names --input accepts; the first of each dtype is the one messages show.
constexpr std::pair<const char*, torch::Dtype> kDtypeNames[] = {
    {"float32", torch::kFloat},     {"float", torch::kFloat},   {"f32", torch::kFloat},
    {"float64", torch::kDouble},    {"double", torch::kDouble}, {"f64", torch::kDouble},
    {"float16", torch::kHalf},      {"half", torch::kHalf},     {"f16", torch::kHalf},
    {"bfloat16", torch::kBFloat16}, {"bf16", torch::kBFloat16}, {"int64", torch::kLong},
    {"long", torch::kLong},         {"int32", torch::kInt},     {"int", torch::kInt},
    {"int16", torch::kShort},       {"int8", torch::kChar},     {"uint8", torch::kByte},
    {"bool", torch::kBool},
};

torch::Dtype parse_dtype(const std::string& s, const std::string& arg) {
  for (const auto& [name, t] : kDtypeNames) {
    if (s == name) return t;
  }
  fail("--input " + arg + ": unknown dtype '" + s +
       "'; use one of float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool");
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
  std::stringstream ss(shape);
  std::string dim;
  while (std::getline(ss, dim, 'x')) {
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || errno != 0 || n < 0 || !std::isdigit(dim[0])) {
      fail("--input " + arg + ": bad size '" + dim + "' in the shape" + hint);
    }
    spec.shape.push_back(n);
  }
  if (shape.back() == 'x') fail("--input " + arg + ": the shape ends with 'x'" + hint);
  return spec;
}

// A tensor as --input writes it: 2x16, 1x128:int64 (float32 is the default, left out).
std::string describe(const torch::Tensor& t) {
  std::string text;
  for (int64_t d : t.sizes()) text += (text.empty() ? "" : "x") + std::to_string(d);
  if (t.dim() == 0) text = "scalar";
  if (t.scalar_type() == torch::kFloat) return text;
  for (const auto& [name, dtype] : kDtypeNames) {
    if (dtype == t.scalar_type()) return text + ":" + name;
  }
  return text + ":" + c10::toString(t.scalar_type());
}

struct Options {
  std::string model;
  std::vector<InputSpec> inputs;
  std::string inputs_file;  // --inputs: saved tensors instead of `inputs`
  int64_t int_max = 2;
  int depth = -1;
  int top = 1;
  int warmup = 1;
  int runs = 0;
  int profile_runs = 1;
  bool backward = false;
  std::string device = "cpu";
  int threads = 0;
  std::string json, html, trace;
  bool quiet = false;
  flopsprof::RooflineOptions roofline;
  flopsprof::AttentionConvention attention = flopsprof::AttentionConvention::kDense;
  bool read_masks = false;
};

Options parse_args(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) fail(a + " needs a value (see flopsprof --help)");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--input") {
      o.inputs.push_back(parse_input(value()));
    } else if (a == "--inputs") {
      if (!o.inputs_file.empty()) fail("--inputs given twice; pass one file holding all arguments");
      o.inputs_file = value();
    } else if (a == "--int-max") {
      o.int_max = parse_int(a, value(), 1);
    } else if (a == "--depth") {
      o.depth = static_cast<int>(parse_int(a, value(), -1));
    } else if (a == "--top") {
      o.top = static_cast<int>(parse_int(a, value(), 1));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_int(a, value(), 0));
    } else if (a == "--runs") {
      o.runs = static_cast<int>(parse_int(a, value(), 0));
    } else if (a == "--profile-runs") {
      o.profile_runs = static_cast<int>(parse_int(a, value(), 1));
    } else if (a == "--backward") {
      o.backward = true;
    } else if (a == "--device") {
      o.device = value();
      if (o.device != "cpu" && o.device != "cuda")
        fail("--device: '" + o.device + "' is not a device; use cpu or cuda");
    } else if (a == "--threads") {
      o.threads = static_cast<int>(parse_int(a, value(), 1));
    } else if (a == "--peak-flops") {
      try {
        o.roofline.peak_flops = flopsprof::parse_peak_flops(value());
      } catch (const flopsprof::Error& e) {
        fail(std::string("--peak-flops: ") + e.what());
      }
    } else if (a == "--peak-bandwidth") {
      try {
        o.roofline.peak_bandwidth = flopsprof::parse_peak_bandwidth(value());
      } catch (const flopsprof::Error& e) {
        fail(std::string("--peak-bandwidth: ") + e.what());
      }
    } else if (a == "--attention") {
      const std::string v = value();
      if (v == "dense") {
        o.attention = flopsprof::AttentionConvention::kDense;
      } else if (v == "causal") {
        o.attention = flopsprof::AttentionConvention::kCausal;
      } else {
        fail("--attention: '" + v + "' is not a convention; use dense or causal");
      }
    } else if (a == "--read-masks") {
      o.read_masks = true;
    } else if (a == "--no-roofline") {
      o.roofline.enabled = false;
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--html") {
      o.html = value();
    } else if (a == "--trace") {
      o.trace = value();
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      fail("unknown option '" + a + "' (see flopsprof --help)");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      fail("a second MODEL '" + a + "' (one model per run; see flopsprof --help)");
    }
  }
  if (o.model.empty()) fail("no MODEL given; usage: flopsprof MODEL --input 1x3x224x224");
  if (!o.inputs_file.empty() && !o.inputs.empty()) {
    fail(
        "--inputs and --input both given; pass the forward's arguments one way: --input SHAPE "
        "per argument (random values) or --inputs FILE (saved tensors)");
  }
  return o;
}

// The start of a file written by torch.save(..., _use_new_zipfile_serialization=False): pickle
// protocol 2 and the legacy format's magic number (torch/serialization.py, MAGIC_NUMBER).
constexpr unsigned char kLegacySaveMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                              0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

// Kind of a loaded value, for messages: "a dict", "an int".
std::string kind_of(const c10::IValue& v) {
  if (v.isGenericDict()) return "a dict";
  if (v.isNone()) return "None";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isBool()) return "a bool";
  if (v.isString()) return "a string";
  if (v.isTuple()) return "a tuple";
  if (v.isList()) return "a list";
  if (v.isObject()) return "an object";
  return std::string("a ") + v.tagKind();
}

// --inputs FILE: the forward's arguments saved by torch.save / torch::pickle_save: a tensor is
// one argument, a tuple or list of tensors one argument each. Tensors come back on the CPU,
// detached (as --input's random ones: no gradient flows into the inputs).
std::vector<torch::Tensor> load_inputs_file(const std::string& path) {
  const std::string how =
      "pass a tensor, or a tuple or list of tensors (one per forward argument), saved in Python "
      "with torch.save((x, y), \"inputs.pt\") (or torch.save(x, \"inputs.pt\") for one argument)";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    fail("cannot open --inputs '" + path + "': no such file; " + how);
  if (!S_ISREG(st.st_mode)) fail("--inputs '" + path + "' is not a file; " + how);
  std::ifstream f(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) fail("cannot read --inputs '" + path + "'; check its permissions");
  if (data.size() >= sizeof kLegacySaveMagic &&
      std::equal(std::begin(kLegacySaveMagic), std::end(kLegacySaveMagic),
                 reinterpret_cast<const unsigned char*>(data.data()))) {
    fail("--inputs '" + path +
         "' is in torch.save's legacy format (_use_new_zipfile_serialization=False), which "
         "LibTorch cannot read; save it again with torch.save's default format");
  }
  c10::IValue value;
  try {
    value = torch::pickle_load(data);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    // LibTorch 1.x's unpickler lacks APPEND and SETITEM, which Python writes for a list of one
    // element and a dict of one key.
    const std::string old_unpickler =
        what.find("Unknown opcode") != std::string::npos
            ? "; this LibTorch cannot read every pickle opcode Python writes (LibTorch 1.x: a "
              "list of one element or a dict of one key), save a tensor or a tuple"
            : "";
    fail("cannot read --inputs '" + path + "' as saved tensors (" + what + ")" + old_unpickler +
         "; " + how);
  }
  std::vector<c10::IValue> items;
  if (value.isTensor()) {
    items.push_back(value);
  } else if (value.isTuple()) {
    items = value.toTupleRef().elements().vec();
  } else if (value.isList()) {
    items = value.toList().vec();
  } else {
    fail("--inputs '" + path + "' holds " + kind_of(value) + "; " + how);
  }
  if (items.empty())
    fail("--inputs '" + path + "' holds an empty " + kind_of(value).substr(2) + "; " + how);
  std::vector<torch::Tensor> tensors;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].isTensor() || !items[i].toTensor().defined()) {
      fail("--inputs '" + path + "': element " + std::to_string(i) + " of the " +
           kind_of(value).substr(2) + " is " + kind_of(items[i]) + ", not a tensor; " + how);
    }
    tensors.push_back(items[i].toTensor().detach());
  }
  return tensors;
}

std::string schema_of(torch::jit::Module& m) {
  try {
    auto method = m.find_method("forward");
    if (!method) return "(no forward method)";
    std::stringstream ss;
    ss << method->function().getSchema();
    return ss.str();
  } catch (const std::exception&) {
    return "(unknown schema)";
  }
}

// Sum of every floating tensor in a (nested) output: the loss of --backward.
void sum_outputs(const c10::IValue& v, torch::Tensor& acc) {
  if (v.isTensor()) {
    const torch::Tensor& t = v.toTensor();
    if (t.defined() && t.is_floating_point() && t.requires_grad()) {
      torch::Tensor s = t.sum();
      acc = acc.defined() ? acc + s : s;
    }
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) sum_outputs(e, acc);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) sum_outputs(e, acc);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) sum_outputs(kv.value(), acc);
  }
}

// Writes `text` to `path` whole or not at all (a temporary file renamed over it).
void write_file(const std::string& path, const std::string& text, const char* what) {
  const std::string tmp = path + ".flopsprof-tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      fail(std::string("cannot write the ") + what + " to '" + path +
           "'; check that its folder exists and is writable");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail(std::string("cannot write the ") + what + " to '" + path + "'");
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds with three decimals at most, for progress lines: "0.021".
std::string seconds_text(double s) { return std::to_string(s).substr(0, 5); }

void progress(const Options& o, const std::string& s) {
  if (!o.quiet) std::cerr << "flopsprof: " << s << std::endl;
}

// What can be checked before LibTorch loads anything: the model file exists, the forward's
// arguments are given one way or the other.
void check_model_and_inputs_given(const Options& o) {
  struct stat st {};
  if (stat(o.model.c_str(), &st) != 0) {
    fail("cannot open MODEL '" + o.model + "': no such file; pass the path of a file saved with " +
         "torch.jit.save");
  }
  if (!S_ISREG(st.st_mode)) fail("MODEL '" + o.model + "' is not a file");
  if (o.inputs.empty() && o.inputs_file.empty()) {
    fail(
        "no --input given: pass one --input SHAPE[:DTYPE] per argument of the model's forward, "
        "or --inputs FILE with saved tensors");
  }
}

// The device (--device), the intra-op threads (--threads), and the JIT settings --help describes.
torch::Device set_up_runtime(const Options& o) {
  torch::Device device(torch::kCPU);
  if (o.device == "cuda") {
    if (!torch::cuda::is_available()) {
      fail("--device cuda: no CUDA device is available to this LibTorch (" +
           std::to_string(torch::cuda::device_count()) + " devices); use --device cpu");
    }
    device = torch::Device(torch::kCUDA);
  }
  if (o.threads > 0) at::set_num_threads(o.threads);
  // See --help: the ops run as saved, nothing is compiled.
  torch::jit::setGraphExecutorOptimize(false);
  torch::jit::setTensorExprFuserEnabled(false);
  return device;
}

// The TorchScript module on `device`, in eval mode unless --backward.
torch::jit::Module load_model(const Options& o, torch::Device device) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(o.model, device);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    fail("cannot load MODEL '" + o.model + "' as TorchScript (" + what +
         "); pass a file saved with torch.jit.save of a scripted or traced module");
  }
  if (!o.backward) module.eval();
  return module;
}

// Fails, quoting the schema, unless the forward takes `given` arguments.
void check_argument_count(torch::jit::Module& module, const Options& o, size_t given,
                          const std::string& schema) {
  auto method = module.find_method("forward");
  if (!method) fail("MODEL '" + o.model + "' has no forward method; export a module with one");
  const auto& args = method->function().getSchema().arguments();
  size_t required = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) ++required;
  }
  if (given < required || given + 1 > args.size()) {
    fail("the model's forward takes " + std::to_string(required) +
         (args.size() - 1 > required ? " to " + std::to_string(args.size() - 1) : "") +
         " arguments, " + std::to_string(given) +
         (o.inputs_file.empty() ? " --input given"
                                : " tensors in --inputs '" + o.inputs_file + "'") +
         "; its schema is " + schema);
  }
}

// The forward's arguments on the device, and how messages show them.
struct Inputs {
  std::vector<c10::IValue> values;
  std::string shown;  // as --input writes them: "2x16, 2x16:int64" (+ " from FILE")
  int64_t batch = 0;  // the first argument's first dimension; 0: none
};

// Random tensors of the --input shapes (seeded: every run gets the same), or the `loaded` ones.
Inputs make_inputs(const Options& o, const std::vector<torch::Tensor>& loaded,
                   torch::Device device) {
  Inputs in;
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  for (const InputSpec& spec : o.inputs) {
    auto opts = torch::TensorOptions().dtype(spec.dtype).device(device);
    torch::Tensor t =
        at::isFloatingType(spec.dtype)
            ? torch::randn(spec.shape).to(opts)
            : (spec.dtype == torch::kBool ? torch::randint(0, 2, spec.shape, opts)
                                          : torch::randint(0, o.int_max, spec.shape, opts));
    in.values.emplace_back(t);
    in.shown += (in.shown.empty() ? "" : ", ") + spec.text;
  }
  for (const torch::Tensor& t : loaded) {
    in.values.emplace_back(t.to(device));
    in.shown += (in.shown.empty() ? "" : ", ") + describe(t);
  }
  if (!loaded.empty()) in.shown += " from " + o.inputs_file;
  const torch::Tensor& first = in.values[0].toTensor();
  if (first.dim() > 0) in.batch = first.size(0);
  return in;
}

// One forward, or one training step with --backward: what warm-up, the profile and the timed runs
// each repeat.
class Step {
 public:
  Step(const Options& o, flopsprof::JitModel& model, const Inputs& inputs, std::string schema)
      : o_(o), model_(model), inputs_(inputs), schema_(std::move(schema)) {}

  void operator()() {
    if (!o_.backward) {
      torch::NoGradGuard no_grad;
      forward();
      return;
    }
    c10::IValue out = forward();
    torch::Tensor loss;
    {
      at::DisableRecordFunctionGuard not_the_model;  // the loss is not the model's work
      sum_outputs(out, loss);
    }
    if (!loss.defined()) {
      fail(
          "--backward: the model's output has no floating tensor that requires grad; profile "
          "without --backward");
    }
    loss.backward();
  }

 private:
  c10::IValue forward() {
    try {
      return model_.forward(inputs_.values);
    } catch (const flopsprof::Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string what = e.what();
      // TorchScript's messages carry the whole traceback: keep the first lines.
      std::stringstream ss(what);
      std::string line, head;
      for (int n = 0; n < 6 && std::getline(ss, line); ++n) head += "\n    " + line;
      fail("the model's forward rejected the inputs (" + inputs_.shown + "); its schema is " +
           schema_ + ". LibTorch said:" + head);
    }
  }

  const Options& o_;
  flopsprof::JitModel& model_;
  const Inputs& inputs_;
  std::string schema_;
};

// --warmup steps, then the gradients they left cleared (the profiled step starts from none).
void warm_up(const Options& o, Step& step, torch::jit::Module& module) {
  for (int i = 0; i < o.warmup; ++i) {
    auto tw = std::chrono::steady_clock::now();
    step();
    progress(o, "warm-up " + std::to_string(i + 1) + "/" + std::to_string(o.warmup) + " " +
                    seconds_text(seconds_since(tw)) + " s");
  }
  if (o.backward) {
    for (at::Tensor p : module.parameters()) p.mutable_grad() = torch::Tensor();
  }
}

// The profiled step, with the module hierarchy observed.
void profile_step(const Options& o, Step& step, flopsprof::JitModel& model,
                  flopsprof::FlopsProfiler& prof) {
  flopsprof::JitObserver observer = model.observe();  // before start_profile: see observe()
  prof.start_profile();
  auto tp = std::chrono::steady_clock::now();
  step();
  prof.stop_profile();
  progress(o, "profiled in " + seconds_text(seconds_since(tp)) + " s");
}

// Warnings when the per-module counts cannot be trusted: no submodules, no hierarchy, or
// hierarchy names that are no module of the loaded tree.
void warn_about_hierarchy(torch::jit::Module& module, flopsprof::JitModel& model) {
  const auto stats = model.hierarchy_stats();
  if (module.named_children().size() == 0) {
    std::cerr << "flopsprof: warning: the model has no submodules (torch.jit.freeze inlines them): "
                 "all its work is the root's; save the module unfrozen for per-module counts\n";
  } else if (stats.ops == 0) {
    std::cerr << "flopsprof: warning: no op carried a TorchScript module hierarchy; ops are placed "
                 "by parameter ownership only\n";
  }
  for (const auto& u : stats.unresolved) {
    std::cerr << "flopsprof: warning: the hierarchy names '" << u
              << "', which is no module of the loaded tree; its ops go to its parent\n";
  }
}

// Seconds of each of --runs unprofiled steps.
std::vector<double> time_runs(const Options& o, Step& step, torch::Device device) {
  std::vector<double> times;
  for (int i = 0; i < o.runs; ++i) {
    auto tr = std::chrono::steady_clock::now();
    step();
    if (device.is_cuda()) torch::cuda::synchronize();
    times.push_back(seconds_since(tr));
    progress(o, "run " + std::to_string(i + 1) + "/" + std::to_string(o.runs));
  }
  return times;
}

// The --json/--html/--trace files, then the text report and the median latency on stdout.
// Everything is produced before anything is written.
void write_outputs(const Options& o, const flopsprof::ProfileResult& result,
                   flopsprof::FlopsProfiler& prof, std::vector<double> times) {
  flopsprof::ReportOptions ro;
  ro.module_depth = o.depth;
  ro.top_modules = o.top;
  ro.roofline = o.roofline.enabled;
  const std::string text = flopsprof::format_text_report(result, ro);
  std::string json, html, trace;
  if (!o.json.empty()) json = flopsprof::to_json(result);
  if (!o.html.empty()) html = flopsprof::to_html(result);
  if (!o.trace.empty()) trace = prof.chrome_trace();
  if (!o.json.empty()) write_file(o.json, json, "JSON profile");
  if (!o.html.empty()) write_file(o.html, html, "HTML report");
  if (!o.trace.empty()) write_file(o.trace, trace, "Chrome trace");
  std::cout << text;
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    const double median = times.size() % 2 == 1
                              ? times[times.size() / 2]
                              : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
    std::cout << "median latency of " << times.size()
              << (o.backward ? " training steps" : " forwards") << " (unprofiled): " << median * 1e3
              << " ms\n";
  }
}

int run(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  check_model_and_inputs_given(o);
  // Read before the model, so that a bad file fails fast.
  std::vector<torch::Tensor> loaded;
  if (!o.inputs_file.empty()) loaded = load_inputs_file(o.inputs_file);
  const torch::Device device = set_up_runtime(o);

  auto t0 = std::chrono::steady_clock::now();
  torch::jit::Module module = load_model(o, device);
  flopsprof::JitModel model(module);
  progress(o, "loaded " + o.model + " in " + seconds_text(seconds_since(t0)) + " s");
  // Inputs: checked against the schema before anything runs.
  const std::string schema = schema_of(module);
  check_argument_count(module, o, o.inputs_file.empty() ? o.inputs.size() : loaded.size(), schema);
  const Inputs inputs = make_inputs(o, loaded, device);
  Step step(o, model, inputs, schema);

  warm_up(o, step, module);
  flopsprof::ProfilerOptions popts;
  popts.batch_size = inputs.batch;
  popts.roofline = o.roofline;
  popts.attention = o.attention;
  popts.read_attention_masks = o.read_masks;
  for (const c10::IValue& v : inputs.values) {
    popts.inputs.push_back(v.isTensor() ? flopsprof::detail::describe_input(v.toTensor())
                                        : v.tagKind());
  }
  // --profile-runs: one profile per run, their spread kept; the first run is the report's and
  // the trace's.
  std::vector<flopsprof::ProfileResult> runs;
  flopsprof::FlopsProfiler prof(model.tree(), popts);
  for (int i = 0; i < o.profile_runs; ++i) {
    if (o.backward && i > 0) {
      for (at::Tensor p : module.parameters()) p.mutable_grad() = torch::Tensor();
    }
    if (i == 0) {
      profile_step(o, step, model, prof);
      runs.push_back(prof.result());
    } else {
      flopsprof::FlopsProfiler again(model.tree(), popts);
      profile_step(o, step, model, again);
      runs.push_back(again.result());
    }
  }
  warn_about_hierarchy(module, model);
  std::vector<double> times = time_runs(o, step, device);
  write_outputs(o, flopsprof::combine_runs(runs), prof, std::move(times));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "diff") {  // flopsprof diff BASE.json NEW.json
    std::string out, err;
    const int code =
        flopsprof::diff_command(std::vector<std::string>(argv + 2, argv + argc), out, err);
    std::cout << out << std::flush;
    std::cerr << err;
    return code;
  }
  try {
    return run(argc, argv);
  } catch (const flopsprof::Error& e) {
    std::cerr << "flopsprof: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "flopsprof: error: " << e.what() << "\n";
    return 1;
  }
}
