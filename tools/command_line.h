// The `flopsprof MODEL` command's arguments: parsed and checked before anything is loaded, each
// bad value named with its option and the range or form expected.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

#include "flopsprof/profiler.h"

namespace flopsprof::cli {

/// One --input: a shape and a dtype, as written.
struct InputSpec {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::kFloat;
  std::string text;
};

/// Everything `flopsprof MODEL` was asked to do.
struct Options {
  bool help = false;
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
  bool json_given = false, html_given = false, trace_given = false;
  std::string json, html, trace;
  bool quiet = false;
  RooflineOptions roofline;
  AttentionConvention attention = AttentionConvention::kDense;
  bool read_masks = false;
  std::map<std::string, int64_t> dims;  // --dim: an exported program's symbolic sizes
  uint64_t tokens = 0;                  // --tokens: an exported program's tokens per forward
  bool warmup_given = false, threads_given = false;
};

/// The command's --help text.
extern const char* const kUsage;

/// Parses the arguments after the program name. Throws `Error` naming the option and what it
/// takes: an unknown option, a missing value, an integer out of its range (each option's own,
/// never wrapped: --profile-runs 4294967296 is refused), a bad --input, both --input and --inputs.
/// Does not look at any file.
Options parse_args(const std::vector<std::string>& args);

/// One --input SHAPE[:DTYPE]: sizes separated by 'x' (each 0 to 2^62), a dtype name. Throws
/// `Error` quoting the argument and the form expected.
InputSpec parse_input(const std::string& arg);

/// Bytes a tensor of `spec` takes; throws `Error` naming the --input when its element count or
/// bytes overflow 64 bits or exceed `limit_bytes` (the machine's memory: the allocator would
/// fail with a backtrace instead).
uint64_t input_bytes(const InputSpec& spec, uint64_t limit_bytes);

/// A dtype as --input writes it ("int64"; float32 is the default and is left out by `describe`).
std::string dtype_name(c10::ScalarType t);

}  // namespace flopsprof::cli
