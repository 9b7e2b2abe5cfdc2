// Fuzz target: a profile's JSON read back (profile_from_json), then diffed with itself and
// rendered as text, JSON and HTML. Any input must end in a profile or an Error, never a crash,
// a sanitizer report or a hang (libFuzzer's -timeout).
#include <cstddef>
#include <cstdint>
#include <string>

#include "flopsprof/diff.h"
#include "flopsprof/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const flopsprof::LoadedProfile p = flopsprof::profile_from_json(text, "fuzz.json");
    const flopsprof::ProfileDiff d = flopsprof::diff(p, p);
    flopsprof::format_diff_text(d);
    flopsprof::diff_to_json(d);
    flopsprof::diff_to_html(d);
  } catch (const flopsprof::Error&) {
  }
  return 0;
}
