// Fuzz target: an --inputs file (tools/inputs_file.cpp): checked as a zip archive, and when it
// passes, read by LibTorch as the command reads it (by path). LibTorch itself is not instrumented:
// the check must keep it from ever reading outside the file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "flopsprof/error.h"
#include "inputs_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    flopsprof::cli::check_saved_tensors_archive(bytes, "fuzz.pt");
  } catch (const flopsprof::Error&) {
    return 0;
  }
  static const std::string path = "/tmp/flopsprof_inputs_fuzz_" + std::to_string(getpid()) + ".pt";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    try {
      flopsprof::cli::load_inputs_file(path);
    } catch (const flopsprof::Error&) {
    }
    std::remove(path.c_str());
  }
  return 0;
}
