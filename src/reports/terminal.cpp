// Text for a terminal: control bytes escaped.
#include "reports/terminal.h"

#include <fmt/format.h>

namespace flopsprof::detail {
namespace {

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

std::string escape(std::string_view s, bool keep_newlines) {
  size_t controls = 0;
  for (const char c : s) controls += is_control(static_cast<unsigned char>(c)) ? 1 : 0;
  if (controls == 0) return std::string(s);  // the common case: one copy, no rewrite
  std::string out;
  out.reserve(s.size() + 3 * controls);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!is_control(c) || (keep_newlines && c == '\n')) {
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

}  // namespace

std::string printable(std::string_view s) { return escape(s, false); }
std::string terminal_safe(std::string_view text) { return escape(text, true); }

}  // namespace flopsprof::detail
