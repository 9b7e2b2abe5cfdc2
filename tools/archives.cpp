// The command's archives: bounded reads, records remembered, tensors checked against them.
#include "archives.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "flopsprof/error.h"
#include "io/input_files.h"

namespace flopsprof::cli {

Archive::Archive(const std::string& path, const std::string& what)
    : label_(fmt::format("{} '{}'", what, path)) {
  auto fail = [&](const std::string& why) {
    if (fd_ >= 0) ::close(fd_);
    throw Error(fmt::format("cannot read {}: {}", label_, why));
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("it is a folder, not a file");
  if (!S_ISREG(st.st_mode))
    fail("it is " + detail::special_file_kind(st.st_mode) + ", not a regular file");
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(std::strerror(errno));
  size_ = static_cast<uint64_t>(st.st_size);
  try {
    entries_ = detail::read_zip_directory(static_cast<const detail::ZipSource&>(*this),
                                          "cannot read " + label_);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  for (const detail::ZipEntry& e : entries_) {
    if (e.method == 0) stored_at_[e.data_offset] = e.size;
  }
}

Archive::~Archive() {
  if (fd_ >= 0) ::close(fd_);
}

size_t Archive::read(uint64_t pos, void* buf, size_t n, const char*) const {
  if (pos >= size_) return 0;
  n = static_cast<size_t>(std::min<uint64_t>(n, size_ - pos));
  size_t got = 0;
  while (got < n) {
    const ssize_t k =
        ::pread(fd_, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(pos + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += static_cast<size_t>(k);
  }
  if (auto it = stored_at_.find(pos); it != stored_at_.end() && it->second == got && got > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    buffers_[buf] = got;
  }
  return got;
}

std::string Archive::read(uint64_t offset, uint64_t n) const {
  std::string out(static_cast<size_t>(n), '\0');
  const size_t got = read(offset, out.data(), out.size());
  if (got != n) throw Error(fmt::format("cannot read {}: a read error at byte {}", label_, offset));
  return out;
}

uint64_t Archive::record_bytes(const void* data) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffers_.find(data);
  return it == buffers_.end() ? 0 : it->second;
}

void check_tensor(const at::Tensor& t, const Archive& archive, const std::string& what,
                  const std::string& no_data) {
  if (!t.defined()) return;
  auto fail = [&](const std::string& why) {
    throw Error(
        fmt::format("{}: {} {}; the file is corrupt or was not written by torch.save / "
                    "torch.jit.save: save it again",
                    archive.label(), what, why));
  };
  if (!t.has_storage()) return;  // no data to read past (a sparse or opaque tensor)
  if (t.is_meta() || (!t.is_cpu() && !no_data.empty())) {
    if (!no_data.empty())
      throw Error(fmt::format("{}: {} is on {}, with no data here; {}", archive.label(), what,
                              t.device().str(), no_data));
  }
  const c10::Storage& s = t.storage();
  const uint64_t item = t.element_size();
  // The last byte its elements reach, from its offset, sizes and strides (checked arithmetic).
  uint64_t last = static_cast<uint64_t>(t.storage_offset());
  bool overflow = t.storage_offset() < 0;
  if (t.numel() > 0) {
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.stride(d) < 0) fail(fmt::format("has a negative stride ({})", t.stride(d)));
      uint64_t step = 0;
      overflow = overflow ||
                 __builtin_mul_overflow(static_cast<uint64_t>(t.size(d) - 1),
                                        static_cast<uint64_t>(t.stride(d)), &step) ||
                 __builtin_add_overflow(last, step, &last);
    }
    uint64_t bytes = 0;
    overflow = overflow || __builtin_add_overflow(last, uint64_t{1}, &last) ||
               __builtin_mul_overflow(last, item, &bytes);
    if (overflow || bytes > s.nbytes())
      fail(
          fmt::format("has elements outside its storage ({} elements of {} bytes from offset "
                      "{}; the storage holds {} bytes)",
                      t.numel(), item, t.storage_offset(), s.nbytes()));
  }
  if (!t.is_cpu() || s.nbytes() == 0) return;
  if (s.data() == nullptr) fail("has no data behind it");
  const uint64_t record = archive.record_bytes(s.data());
  if (record > 0 && s.nbytes() > record)
    fail(fmt::format("claims {} bytes of data, but its record in the archive holds {}", s.nbytes(),
                     record));
}

}  // namespace flopsprof::cli
