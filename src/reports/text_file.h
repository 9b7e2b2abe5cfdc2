// Writing a report to a file, with an Error that names the path and the reason.
#pragma once

#include <string>

namespace flopsprof::detail {

/// Writes `text` to `path` (truncating). Throws Error naming `what`, the path and the OS reason;
/// the caller's data is untouched, so it can be written elsewhere.
void write_text_file(const std::string& path, const std::string& text, const char* what);

}  // namespace flopsprof::detail
