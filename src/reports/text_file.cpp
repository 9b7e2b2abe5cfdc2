// Writing a report to a file, with an Error that names the path and the reason.
#include "reports/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "flopsprof/error.h"

namespace flopsprof::detail {

void write_text_file(const std::string& path, const std::string& text, const char* what) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.flush();
  if (!out) {
    throw Error(fmt::format(
        "cannot write the {} to '{}' ({}); the profile is kept: write it to another path", what,
        path, errno != 0 ? std::strerror(errno) : "I/O error"));
  }
}

}  // namespace flopsprof::detail
