// Text for a terminal: names from a model or a profile file never reach it as control codes.
#pragma once

#include <string>
#include <string_view>

namespace flopsprof::detail {

/// `s` with every control byte (below 0x20, and 0x7f) written as an escape: \n, \t, \r, \x1b.
/// For names (modules, types, ops, regions) placed inside a line of text.
std::string printable(std::string_view s);

/// `text` with every control byte but the newline escaped as `printable` does: a whole report,
/// so that no terminal escape sequence in a name (or anywhere else) reaches the terminal.
std::string terminal_safe(std::string_view text);

}  // namespace flopsprof::detail
