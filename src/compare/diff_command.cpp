// `flopsprof diff BASE.json NEW.json [options]` (docs/diff.md): the comparison as text, JSON or
// HTML, and --fail-if rules for CI. Exit 0: no rule broken; 1: a rule broken; 2: bad input.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <future>
#include <new>

#include <fmt/format.h>

#include "compare/diff_format.h"
#include "flopsprof/diff.h"
#include "flopsprof/error.h"
#include "io/output_files.h"

namespace flopsprof {
namespace {

constexpr const char* kUsage = R"(usage: flopsprof diff BASE.json NEW.json [options]

Compares two profiles written by `flopsprof MODEL --json FILE` or FlopsProfiler::save_json:
totals, every module (matched by dotted name) and the op table, with deltas.

options:
  --depth N            deepest module level in the text (default -1: all)
  --top N              only the N modules with the largest deltas, largest first
  --threshold X        hide modules whose deltas are all under X: a percent of the base
                       (5%) or a latency (0.5ms, 20us, 1e-3s)
  --rename OLD=NEW     a module renamed between the two (its submodules follow); repeatable
  --no-ops             leave out the model's op table
  --ops                under each module, its own ops' deltas (matched by name)
  --json FILE          also write the diff as JSON
  --html FILE          also write the diff as a self-contained HTML page
  --fail-if RULE       exit 1 when RULE holds; repeatable. RULE: [module=NAME:]FIELD OP VALUE[%]
                       with OP one of > >= < <= == != over the delta (new - base), e.g.
                       latency>+5%  flops>0  params!=0  memory.peak>+10%  module=fc:latency>+20%
                       (quote a rule in a shell: --fail-if 'latency>+5%')
                       Fields: latency bwd_latency step_latency iter_latency flops macs
                       bwd_flops params calls bytes memory.peak. A latency delta inside the
                       run-to-run spread (profiles with --profile-runs N) breaks no rule.
  -h, --help           this text

exit status: 0 no rule broken, 1 a --fail-if rule broken, 2 bad input (unreadable or foreign
JSON, a bad option, a rule that cannot be checked).
)";

struct Usage : Error {
  using Error::Error;
};

// 5% -> percent; 0.5ms, 20us, 1e-3s, 0.002 -> seconds.
void parse_threshold(const std::string& v, DiffTextOptions& o) {
  std::string num = v;
  double scale = 1;
  bool percent = false;
  if (!num.empty() && num.back() == '%') {
    percent = true;
    num.pop_back();
  } else if (num.size() > 2 && num.compare(num.size() - 2, 2, "ms") == 0) {
    scale = 1e-3;
    num.resize(num.size() - 2);
  } else if (num.size() > 2 && num.compare(num.size() - 2, 2, "us") == 0) {
    scale = 1e-6;
    num.resize(num.size() - 2);
  } else if (!num.empty() && num.back() == 's') {
    num.pop_back();
  }
  const bool unit = percent || scale != 1 || (!v.empty() && v.back() == 's');
  const double x = detail::is_decimal_number(num) ? std::strtod(num.c_str(), nullptr) : -1;
  if (!unit || !std::isfinite(x) || x < 0)
    throw Usage(
        fmt::format("--threshold '{}': write a percent (5%) or a latency with its unit "
                    "(0.5ms, 20us, 1e-3s)",
                    v));
  (percent ? o.threshold_percent : o.threshold_s) = x * scale;
}

int parse_count(const std::string& flag, const std::string& v, int min) {
  constexpr long kMax = 1000000;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  const bool digits = !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
  if (!digits || end != v.c_str() + v.size() || errno != 0 || x < min || x > kMax)
    throw Usage(fmt::format("{} '{}': give an integer from {} to {}", flag, v, min, kMax));
  return static_cast<int>(x);
}

// The command line, read.
struct DiffArgs {
  bool help = false;
  std::vector<std::string> files;
  DiffOptions options;
  DiffTextOptions text;
  std::vector<GateRule> rules;
  std::string json_file, html_file;
  bool json_file_given = false, html_file_given = false;  // '' given is an error, not "none"
};

// --rename OLD=NEW, each OLD once.
void add_rename(DiffOptions& options, const std::string& v) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
    throw Usage("--rename '" + v + "': write OLD=NEW (dotted module names)");
  for (const auto& [from, to] : options.renames) {
    if (from == v.substr(0, eq))
      throw Usage(
          fmt::format("--rename '{}': '{}' is renamed twice (to '{}' already)", v, from, to));
  }
  options.renames.emplace_back(v.substr(0, eq), v.substr(eq + 1));
}

DiffArgs parse_diff_args(const std::vector<std::string>& args) {
  DiffArgs d;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Usage(a + " needs a value (see flopsprof diff --help)");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      d.help = true;
      return d;
    } else if (a == "--depth") {
      d.text.depth = parse_count(a, value(), -1);
    } else if (a == "--top") {
      d.text.top = parse_count(a, value(), 1);
    } else if (a == "--threshold") {
      parse_threshold(value(), d.text);
    } else if (a == "--rename") {
      add_rename(d.options, value());
    } else if (a == "--no-ops") {
      d.text.ops = false;
    } else if (a == "--ops") {
      d.text.module_ops = true;
    } else if (a == "--json") {
      d.json_file = value();
      d.json_file_given = true;
    } else if (a == "--html") {
      d.html_file = value();
      d.html_file_given = true;
    } else if (a == "--fail-if") {
      d.rules.push_back(parse_gate_rule(value()));
    } else if (a.size() > 1 && a[0] == '-') {
      throw Usage("unknown option '" + a + "' (see flopsprof diff --help)");
    } else {
      d.files.push_back(a);
    }
  }
  if (d.files.size() != 2)
    throw Usage(
        fmt::format("give two profiles, BASE.json and NEW.json ({} given); usage: "
                    "flopsprof diff BASE.json NEW.json",
                    d.files.size()));
  return d;
}

// The gate's lines under the report; false (and the reasons in `err`) when a rule cannot be
// checked.
bool gate_lines(const ProfileDiff& d, const std::vector<GateRule>& rules, GateResult& g,
                std::string& report, std::string& err) {
  g = check_gate(d, rules);
  if (!g.unknown.empty()) {  // a rule that cannot be checked: bad input, nothing written
    for (const std::string& s : g.unknown) err += "flopsprof diff: cannot check " + s + "\n";
    err += "flopsprof diff: no output file was written\n";
    return false;
  }
  report += "\nGate\n";
  for (const std::string& s : g.noise)
    report += "noise:  " + s + " (inside the run-to-run spread: not counted)\n";
  for (const std::string& s : g.broken) report += "BROKEN: " + s + "\n";
  if (g.broken.empty()) report += fmt::format("{} rule(s) checked, none broken\n", rules.size());
  return true;
}

int run_diff(const DiffArgs& a, std::string& out, std::string& err) {
  // Every output checked before the profiles are read, written only once all is known.
  std::vector<detail::OutputFile> outputs;
  if (a.json_file_given) outputs.push_back({a.json_file, "diff JSON", ""});
  if (a.html_file_given) outputs.push_back({a.html_file, "diff HTML", ""});
  const std::vector<detail::InputFile> inputs = {{a.files[0], "BASE"}, {a.files[1], "NEW"}};
  detail::check_outputs(outputs, inputs);
  // The two files parsed side by side (parsing is most of a large diff's time).
  auto next_read = std::async(std::launch::async, [&] { return load_profile_json(a.files[1]); });
  const LoadedProfile base = load_profile_json(a.files[0]);
  const LoadedProfile next = next_read.get();
  const ProfileDiff d = diff(base, next, a.options);
  std::string report = format_diff_text(d, a.text);
  GateResult g;
  if (!a.rules.empty() && !gate_lines(d, a.rules, g, report, err)) return 2;
  bool on_stdout = false;
  for (detail::OutputFile& o : outputs) {
    o.text = o.what == "diff JSON" ? diff_to_json(d) : diff_to_html(d);
    on_stdout = on_stdout || detail::is_standard_output(o.path);
  }
  detail::write_outputs(outputs, inputs);
  // An output on standard output keeps it for itself: the text goes to standard error.
  (on_stdout ? err : out) += report;
  if (!g.broken.empty()) {
    err += fmt::format("flopsprof diff: {} rule(s) broken\n", g.broken.size());
    return 1;
  }
  return 0;
}

}  // namespace

int diff_command(const std::vector<std::string>& args, std::string& out, std::string& err) {
  try {
    const DiffArgs a = parse_diff_args(args);
    if (a.help) {
      out += kUsage;
      return 0;
    }
    return run_diff(a, out, err);
  } catch (const Error& e) {
    err += std::string("flopsprof diff: ") + e.what() + "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err +=
        "flopsprof diff: out of memory (the profiles or their diff need more than this "
        "process may allocate; compare smaller profiles, or use --depth and --top)\n";
    return 2;
  } catch (const std::exception& e) {
    err += std::string("flopsprof diff: ") + e.what() + "\n";
    return 2;
  }
}

}  // namespace flopsprof
