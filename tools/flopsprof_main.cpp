// The `flopsprof` command: profiles a saved TorchScript model without writing any C++.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
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

#include "archives.h"
#include "command_line.h"
#include "flopsprof/diff.h"
#include "flopsprof/error.h"
#include "flopsprof/exported.h"
#include "flopsprof/jit.h"
#include "flopsprof/profiler.h"
#include "inputs_file.h"
#include "io/exported_program.h"
#include "io/input_files.h"
#include "io/output_files.h"
#include "io/zip_archive.h"
#include "reports/terminal.h"

namespace {

using flopsprof::Error;
using flopsprof::cli::InputSpec;
using flopsprof::cli::Options;

[[noreturn]] void fail(const std::string& msg) { throw Error(msg); }

// A tensor as --input writes it: 2x16, 1x128:int64 (float32 is the default, left out).
std::string describe(const torch::Tensor& t) {
  std::string text;
  for (int64_t d : t.sizes()) text += (text.empty() ? "" : "x") + std::to_string(d);
  if (t.dim() == 0) text = "scalar";
  if (t.scalar_type() == torch::kFloat) return text;
  return text + ":" + flopsprof::cli::dtype_name(t.scalar_type());
}

// What LibTorch said, without its C++ backtrace: a c10::Error's message, else what().
std::string libtorch_text(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

// The first line of LibTorch's text that says something (TorchScript's compile errors start with
// an empty line), at most 300 characters.
std::string first_line(const std::string& text) {
  std::stringstream ss(text);
  std::string line, first;
  while (std::getline(ss, line)) {
    const size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos) continue;
    line = line.substr(at);
    if (first.empty()) {
      first = line.size() > 300 ? line.substr(0, 300) + "..." : line;
      if (first.back() != ':') break;  // "... here:": where follows
    } else if (line.rfind("File \"", 0) == 0) {
      return first + " " + line.substr(0, 200);  // File "code/__torch__.py", line 5
    }
  }
  return first.empty() ? "no message" : first;
}

// The cause in LibTorch's text: its last line that is not a frame of a backtrace, a traceback
// header or code (TorchScript's errors end with "RuntimeError: <the cause>").
std::string cause_of(const std::string& text) {
  std::stringstream ss(text);
  std::string line, cause;
  while (std::getline(ss, line)) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const std::string t = line.substr(first);
    if (t.rfind("frame #", 0) == 0 || t.rfind("Exception raised from", 0) == 0) continue;
    cause = t;
  }
  if (cause.size() > 500) cause = cause.substr(0, 500) + "...";
  return cause.empty() ? "(no message)" : cause;
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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds with three decimals at most, for progress lines: "0.021".
std::string seconds_text(double s) { return std::to_string(s).substr(0, 5); }

void progress(const Options& o, const std::string& s) {
  if (!o.quiet) std::cerr << "flopsprof: " << s << std::endl;
}

// Where the text report goes: standard output, or standard error when an output takes stdout.
std::string text_report_path(const Options& o) {
  for (const std::string* p : {&o.json, &o.html, &o.trace}) {
    if (!p->empty() && flopsprof::detail::is_standard_output(*p)) return "/dev/stderr";
  }
  return "-";
}

// The outputs, as check_outputs and write_outputs take them (text filled in at the end).
std::vector<flopsprof::detail::OutputFile> output_files(const Options& o) {
  std::vector<flopsprof::detail::OutputFile> out;
  if (o.json_given) out.push_back({o.json, "JSON profile", ""});
  if (o.html_given) out.push_back({o.html, "HTML report", ""});
  if (o.trace_given) out.push_back({o.trace, "Chrome trace", ""});
  return out;
}

// The files this run reads, which no output may replace.
std::vector<flopsprof::detail::InputFile> input_files(const Options& o) {
  std::vector<flopsprof::detail::InputFile> in = {{o.model, "MODEL"}};
  if (!o.inputs_file.empty()) in.push_back({o.inputs_file, "the --inputs file"});
  return in;
}

// What can be checked before LibTorch loads anything: the model file exists, the forward's
// arguments are given one way or the other and fit in memory, every output can be written.
void check_before_loading(const Options& o) {
  struct stat st {};
  if (stat(o.model.c_str(), &st) != 0) {
    fail("cannot open MODEL '" + o.model + "': " + std::strerror(errno) +
         "; pass the path of a file saved with torch.jit.save");
  }
  if (!S_ISREG(st.st_mode))
    fail("MODEL '" + o.model + "' is " + (S_ISDIR(st.st_mode) ? "a folder" : "not a regular file") +
         "; pass the path of a file saved with torch.jit.save");
  if (o.inputs.empty() && o.inputs_file.empty()) {
    fail(
        "no --input given: pass one --input SHAPE[:DTYPE] per argument of the model's forward, "
        "or --inputs FILE with saved tensors");
  }
  const uint64_t memory = flopsprof::detail::memory_available();
  uint64_t total = 0;
  for (const InputSpec& spec : o.inputs) {
    total += flopsprof::cli::input_bytes(spec, memory);
    if (total > memory)
      fail(
          "the --input tensors together take more than this machine's memory; give smaller "
          "shapes");
  }
  std::vector<flopsprof::detail::OutputFile> outputs = output_files(o);
  outputs.push_back({text_report_path(o), "text report", ""});
  flopsprof::detail::check_outputs(outputs, input_files(o));
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

// The TorchScript module on `device`, in eval mode unless --backward: read through the checked
// archive (every read bounded by the file), then each of its tensors checked against its storage
// and the record it was loaded from (a crafted or damaged file would make the forward read
// outside them).
torch::jit::Module load_model(const Options& o, torch::Device device) {
  auto archive = std::make_shared<flopsprof::cli::Archive>(o.model, "MODEL");
  torch::jit::Module module;
  try {
    module = torch::jit::load(
        std::static_pointer_cast<caffe2::serialize::ReadAdapterInterface>(archive), device);
  } catch (const std::exception& e) {
    fail("cannot load MODEL '" + o.model + "' as TorchScript (" + first_line(libtorch_text(e)) +
         "); pass a file saved with torch.jit.save of a scripted or traced module");
  }
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    flopsprof::cli::check_tensor(p.value, *archive, "parameter '" + p.name + "'");
  for (const auto& b : module.named_buffers(/*recurse=*/true))
    flopsprof::cli::check_tensor(b.value, *archive, "buffer '" + b.name + "'");
  for (const auto& a : module.named_attributes(/*recurse=*/true)) {
    if (a.value.isTensor())
      flopsprof::cli::check_tensor(a.value.toTensor(), *archive, "attribute '" + a.name + "'");
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
         (args.size() == 2 && required == 1 ? " argument, " : " arguments, ") +
         std::to_string(given) +
         (o.inputs_file.empty() ? " --input given"
                                : " tensors in --inputs '" + o.inputs_file + "'") +
         "; its schema is " + schema);
  }
}

// The forward's arguments on the device, and how messages show them.
struct Inputs {
  std::vector<c10::IValue> values;
  std::string shown;  // "--input 2x16, --input 2x16:int64", or "2x16, 2x16 from --inputs FILE"
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
    torch::Tensor t;
    try {
      t = at::isFloatingType(spec.dtype)
              ? torch::randn(spec.shape).to(opts)
              : (spec.dtype == torch::kBool ? torch::randint(0, 2, spec.shape, opts)
                                            : torch::randint(0, o.int_max, spec.shape, opts));
    } catch (const std::exception& e) {
      fail("--input " + spec.text + ": LibTorch could not make the tensor (" +
           first_line(libtorch_text(e)) + "); give a smaller shape");
    }
    in.values.emplace_back(t);
    in.shown += (in.shown.empty() ? "--input " : ", --input ") + spec.text;
  }
  for (const torch::Tensor& t : loaded) {
    in.values.emplace_back(t.to(device));
    in.shown += (in.shown.empty() ? "" : ", ") + describe(t);
  }
  if (!loaded.empty()) in.shown += " from --inputs " + o.inputs_file;
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
      // The cause first (LibTorch's last line; TorchScript's messages carry a traceback and
      // code before it), then the inputs, then what to do.
      fail(cause_of(libtorch_text(e)) + ": the model's forward rejected the inputs (" +
           inputs_.shown + "); its schema is " + schema_ +
           ": give one input per argument with the shapes and dtypes it takes");
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

// The --json/--html/--trace files (all or none), then the text report and the median latency on
// stdout (on stderr when an output took stdout). Everything is produced before anything is written.
void write_outputs(const Options& o, const flopsprof::ProfileResult& result,
                   const std::function<std::string()>& trace, std::vector<double> times) {
  flopsprof::ReportOptions ro;
  ro.module_depth = o.depth;
  ro.top_modules = o.top;
  ro.roofline = o.roofline.enabled;
  std::string text = flopsprof::format_text_report(result, ro);
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    const double median = times.size() % 2 == 1
                              ? times[times.size() / 2]
                              : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
    text += "median latency of " + std::to_string(times.size()) +
            (o.backward ? " training steps" : " forwards") +
            " (unprofiled): " + std::to_string(median * 1e3) + " ms\n";
  }
  std::vector<flopsprof::detail::OutputFile> files = output_files(o);
  for (flopsprof::detail::OutputFile& f : files) {
    f.text = f.what == "JSON profile"  ? flopsprof::to_json(result)
             : f.what == "HTML report" ? flopsprof::to_html(result)
                                       : trace();
  }
  // The text report is an output too: checked and written as the files are (a full or closed
  // standard output is an error, and never the file another output replaces).
  files.push_back({text_report_path(o), "text report", std::move(text)});
  flopsprof::detail::write_outputs(files, input_files(o));
}

// Whether MODEL is an exported program: named .pt2, or a zip archive with the program JSON; false
// for anything else, which the TorchScript path then names.
bool is_exported_program(const Options& o) {
  // Named as one: its own reader's errors (truncated, corrupt) are the ones to show.
  const std::string ext = ".pt2";
  if (o.model.size() > ext.size() &&
      o.model.compare(o.model.size() - ext.size(), ext.size(), ext) == 0)
    return true;
  struct stat st {};
  if (stat(o.model.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  try {
    flopsprof::detail::FileZipSource file(o.model, "MODEL '" + o.model + "'");
    return flopsprof::detail::is_exported_program(file, "MODEL '" + o.model + "'");
  } catch (const flopsprof::Error&) {
    return false;
  }
}

// `flopsprof MODEL.pt2`: the program counted from its graph (flopsprof/exported.h), not run.
int run_exported(const Options& o) {
  const std::string why =
      " does not apply to an exported program, which is counted from its graph and not run";
  if (!o.inputs.empty() || !o.inputs_file.empty()) {
    fail(std::string(o.inputs.empty() ? "--inputs" : "--input") + why +
         ": its inputs are the shapes it was exported with (give a symbolic size with --dim "
         "NAME=VALUE)");
  }
  if (o.backward) fail("--backward" + why + " (its graph is the forward only)");
  if (o.runs > 0) fail("--runs" + why);
  if (o.profile_runs > 1) fail("--profile-runs" + why);
  if (o.trace_given) fail("--trace" + why + " (a trace is a timeline; it has no time)");
  if (o.read_masks) fail("--read-masks" + why + " (it has no mask values)");
  if (o.warmup_given) fail("--warmup" + why);
  if (o.threads_given) fail("--threads" + why);
  if (o.device != "cpu") fail("--device" + why);
  std::vector<flopsprof::detail::OutputFile> outputs = output_files(o);
  outputs.push_back({text_report_path(o), "text report", ""});
  flopsprof::detail::check_outputs(outputs, input_files(o));
  auto t0 = std::chrono::steady_clock::now();
  flopsprof::ExportedOptions eo;
  eo.dims = o.dims;
  eo.tokens = o.tokens;
  eo.attention = o.attention;
  eo.roofline = o.roofline;
  const flopsprof::ProfileResult result = flopsprof::profile_exported(o.model, eo);
  progress(o,
           "counted " + o.model + " from its graph in " + seconds_text(seconds_since(t0)) + " s");
  write_outputs(o, result, [] { return std::string(); }, {});
  return 0;
}

int run(int argc, char** argv) {
  const Options o = flopsprof::cli::parse_args(std::vector<std::string>(argv + 1, argv + argc));
  if (o.help) {
    std::cout << flopsprof::cli::kUsage;
    return 0;
  }
  if (is_exported_program(o)) return run_exported(o);
  if (!o.dims.empty() || o.tokens > 0) {
    fail(std::string(o.dims.empty() ? "--tokens" : "--dim") +
         " applies to an exported program (MODEL.pt2); MODEL '" + o.model +
         "' is not one (a TorchScript model takes its sizes from --input)");
  }
  check_before_loading(o);
  // Read before the model, so that a bad file fails fast.
  std::vector<torch::Tensor> loaded;
  if (!o.inputs_file.empty()) loaded = flopsprof::cli::load_inputs_file(o.inputs_file);
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
    popts.inputs.push_back(v.isTensor() ? flopsprof::describe_input(v.toTensor()) : v.tagKind());
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
  write_outputs(
      o, flopsprof::combine_runs(runs), [&] { return prof.chrome_trace(); }, std::move(times));
  return 0;
}

// A fatal signal while outputs are written: their temporaries removed, then the default action.
void on_fatal_signal(int sig) {
  flopsprof::detail::remove_staged_temporaries();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Writes `text` to descriptor `fd` whole; false (errno set) when it cannot.
bool emit(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// One paragraph on standard error, its control characters escaped (paths and names from the
// command line or a file never reach the terminal raw).
int error_exit(const std::string& message) {
  emit(STDERR_FILENO, "flopsprof: error: " + flopsprof::detail::printable(message) + "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit makes write() fail with EFBIG (said, nothing left) instead of killing us.
  std::signal(SIGXFSZ, SIG_IGN);
  // Signals the caller left to their default action (an ignored SIGPIPE stays ignored: a
  // closed reader is then an error message).
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    if (std::signal(sig, on_fatal_signal) == SIG_IGN) std::signal(sig, SIG_IGN);
  }
  if (argc > 1 && std::string(argv[1]) == "diff") {  // flopsprof diff BASE.json NEW.json
    std::string out, err;
    int code = flopsprof::diff_command(std::vector<std::string>(argv + 2, argv + argc), out, err);
    if (!emit(STDOUT_FILENO, out)) {
      err += "flopsprof diff: cannot write the text to standard output (" +
             std::string(std::strerror(errno)) + ")\n";
      code = 2;
    }
    emit(STDERR_FILENO, err);
    return code;
  }
  // Every exception ends here: one paragraph, exit 2, never terminate().
  try {
    return run(argc, argv);
  } catch (const flopsprof::Error& e) {
    return error_exit(e.what());
  } catch (const std::bad_alloc&) {
    return error_exit(
        "out of memory (the model, its inputs or the profile need more than this process may "
        "allocate); give smaller --input shapes");
  } catch (const std::exception& e) {
    return error_exit(cause_of(libtorch_text(e)));
  }
}
