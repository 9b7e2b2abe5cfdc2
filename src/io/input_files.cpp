// Files a run reads, read whole and bounded.
#include "io/input_files.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "flopsprof/error.h"

namespace flopsprof::detail {

std::string size_text(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.2f} {}", v, units[u]);
}

uint64_t memory_available() {
  uint64_t best = std::numeric_limits<uint64_t>::max();
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (meminfo >> key >> kb) {
    if (key == "MemAvailable:") best = std::min(best, kb * 1024);
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  struct rlimit as {};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    uint64_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;  // the address space in use, pages
    const uint64_t used = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    best = std::min<uint64_t>(best, as.rlim_cur > used ? as.rlim_cur - used : 0);
  }
  return best;
}

std::string special_file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (a pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

std::string read_input(const std::string& path, const std::string& what, uint64_t max_bytes) {
  auto fail = [&](const std::string& why) -> void {
    throw Error(fmt::format("cannot read {} '{}': {}", what, path, why));
  };
  if (path.empty()) fail("the path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("it is a folder, not a file");
  if (!S_ISREG(st.st_mode)) {
    fail(
        fmt::format("it is {}, not a regular file (flopsprof reads files of a known size: save "
                    "the data to a file first)",
                    special_file_kind(st.st_mode)));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    fail(fmt::format("it holds {}, more than the {} this reader takes", size_text(size),
                     size_text(max_bytes)));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(std::strerror(errno));
  std::string data;
  data.resize(static_cast<size_t>(size));
  size_t got = 0;
  int err = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, &data[got], data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    if (n == 0) break;  // shrank while read: what is there
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (err != 0) fail(std::strerror(err));
  data.resize(got);
  return data;
}

}  // namespace flopsprof::detail
