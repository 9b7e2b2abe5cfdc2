// Fuzz target: the command's arguments (tools/command_line.cpp): the input split at NUL bytes into
// arguments and parsed, and each --input's size checked against a memory limit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "command_line.h"
#include "flopsprof/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.emplace_back();
    } else {
      args.back() += static_cast<char>(data[i]);
    }
  }
  try {
    flopsprof::cli::parse_input(args[0]);
  } catch (const flopsprof::Error&) {
  }
  try {
    const flopsprof::cli::Options o = flopsprof::cli::parse_args(args);
    for (const auto& spec : o.inputs) flopsprof::cli::input_bytes(spec, uint64_t{1} << 34);
  } catch (const flopsprof::Error&) {
  }
  return 0;
}
