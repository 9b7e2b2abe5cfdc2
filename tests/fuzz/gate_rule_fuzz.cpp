// Fuzz target: a --fail-if rule parsed and checked against a diff of two small profiles.
#include <cstddef>
#include <cstdint>
#include <string>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"

namespace {

flopsprof::ProfileResult profile(uint64_t flops) {
  flopsprof::ProfileResult r;
  flopsprof::ModuleStats root, fc;
  root.type = "Net";
  root.calls = fc.calls = 1;
  root.flops = fc.flops = flops;
  root.children = {1};
  fc.name = "fc";
  fc.type = "Linear";
  fc.depth = 1;
  fc.parent = 0;
  r.modules = {root, fc};
  r.flops = flops;
  flopsprof::RegionStats g;
  g.name = "decode";
  g.windows = 2;
  g.tokens = 2;
  r.regions = {g};
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const flopsprof::ProfileDiff d = flopsprof::diff(profile(0), profile(~uint64_t{0}));
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    flopsprof::check_gate(d, {flopsprof::parse_gate_rule(text)});
  } catch (const flopsprof::Error&) {
  }
  return 0;
}
