// Zip archives held in memory: the central directory read and checked (APPNOTE.TXT 6.3, sections
// 4.3.6-4.3.16 and 4.5.3 for zip64).
#include "io/zip_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "flopsprof/error.h"
#include "io/input_files.h"

namespace flopsprof::detail {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kCentralSize = 46,
                 kLocalSize = 30;

// A window of an archive: `data` holds its bytes from `base` on; reads outside fail as corrupt.
class Bytes {
 public:
  Bytes(std::string data, uint64_t base, uint64_t archive_size, const std::string& name)
      : d_(std::move(data)), base_(base), size_(archive_size), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: not a readable zip archive ({})", name_, what));
  }
  // Whether [at, at + n) lies inside the window.
  bool fits(uint64_t at, uint64_t n) const {
    return at >= base_ && at - base_ <= d_.size() && n <= d_.size() - (at - base_);
  }
  uint16_t u16(uint64_t at) const {
    if (!fits(at, 2)) fail("a record reaches past the end of the data");
    return static_cast<uint16_t>(byte(at) | (byte(at + 1) << 8));
  }
  uint32_t u32(uint64_t at) const {
    return static_cast<uint32_t>(u16(at)) | (static_cast<uint32_t>(u16(at + 2)) << 16);
  }
  uint64_t u64(uint64_t at) const {
    return static_cast<uint64_t>(u32(at)) | (static_cast<uint64_t>(u32(at + 4)) << 32);
  }
  std::string text(uint64_t at, uint64_t n) const {
    if (!fits(at, n)) fail("a name reaches past the end of the data");
    return d_.substr(at - base_, n);
  }
  uint64_t size() const { return size_; }  // the whole archive's
  uint64_t base() const { return base_; }
  uint64_t end() const { return base_ + d_.size(); }

 private:
  uint32_t byte(uint64_t at) const { return static_cast<unsigned char>(d_[at - base_]); }
  std::string d_;
  uint64_t base_, size_;
  const std::string& name_;
};

// Where the end of central directory record starts in `tail` (the archive's last bytes): searched
// back from the end over the longest comment it may carry.
uint64_t find_end(const Bytes& b) {
  if (b.size() < kEndSize) b.fail(fmt::format("{} bytes, shorter than any archive", b.size()));
  const uint64_t last = b.size() - kEndSize;
  const uint64_t first = std::max(b.base(), last > 0xffff ? last - 0xffff : 0);
  for (uint64_t at = last + 1; at-- > first;) {
    if (b.u32(at) == kEndOfCentralDirectory && at + kEndSize + b.u16(at + 20) <= b.size())
      return at;
  }
  b.fail("no end of central directory record");
}

// The zip64 extended information of a central header (APPNOTE 4.5.3): the values that read
// 0xffffffff in the header, in this order.
void read_zip64_extra(const Bytes& b, uint64_t at, uint64_t len, ZipEntry& e, uint32_t size32,
                      uint32_t csize32, uint32_t offset32) {
  const uint64_t end = at + len;
  while (at + 4 <= end) {
    const uint16_t id = b.u16(at), n = b.u16(at + 2);
    if (at + 4 + n > end) b.fail(fmt::format("member '{}': an extra field overruns it", e.name));
    if (id == 0x0001) {
      uint64_t p = at + 4;
      auto take = [&](uint64_t& v) {
        if (p + 8 > at + 4 + n) b.fail(fmt::format("member '{}': a short zip64 field", e.name));
        v = b.u64(p);
        p += 8;
      };
      if (size32 == 0xffffffffu) take(e.size);
      if (csize32 == 0xffffffffu) take(e.compressed_size);
      if (offset32 == 0xffffffffu) take(e.header_offset);
      return;
    }
    at += 4 + n;
  }
  if (size32 == 0xffffffffu || csize32 == 0xffffffffu || offset32 == 0xffffffffu)
    b.fail(fmt::format("member '{}': sizes in a zip64 field that is absent", e.name));
}

// The largest central directory read: 1 GiB (a model of 100,000 tensors has about 10 MB).
constexpr uint64_t kMaxDirectory = uint64_t{1} << 30;

}  // namespace

std::vector<ZipEntry> read_zip_directory(std::string_view data, const std::string& name) {
  return read_zip_directory(MemoryZipSource(data), name);
}

namespace {

// Where the central directory is: from the end record (or its zip64 form), checked against the
// data's size and the reading limits.
struct Directory {
  uint64_t count, size, offset;
};

Directory locate_directory(const ZipSource& source, const std::string& name) {
  const uint64_t size = source.size();
  // The tail: the end record, its comment, and the zip64 locator before it.
  const uint64_t tail_len = std::min<uint64_t>(size, kEndSize + 0xffff + kLocatorSize);
  const Bytes tail(source.read(size - tail_len, tail_len), size - tail_len, size, name);
  const uint64_t end = find_end(tail);
  if (tail.u16(end + 4) != 0 || tail.u16(end + 6) != 0)
    tail.fail("an archive split over several disks");
  uint64_t count = tail.u16(end + 10);
  if (tail.u16(end + 8) != count) tail.fail("an archive split over several disks");
  uint64_t dir_size = tail.u32(end + 12);
  uint64_t dir_offset = tail.u32(end + 16);
  uint64_t dir_end = end;  // where the central directory must stop
  if (count == 0xffff || dir_size == 0xffffffffu || dir_offset == 0xffffffffu) {
    if (end < kLocatorSize || !tail.fits(end - kLocatorSize, kLocatorSize) ||
        tail.u32(end - kLocatorSize) != kZip64Locator)
      tail.fail("zip64 sizes without a zip64 locator");
    const uint64_t z = tail.u64(end - kLocatorSize + 8);
    if (z > end - kLocatorSize || kZip64EndSize > end - kLocatorSize - z)
      tail.fail("the zip64 end of central directory record is not where its locator says");
    const Bytes rec(source.read(z, kZip64EndSize), z, size, name);
    if (rec.u32(z) != kZip64End)
      rec.fail("the zip64 end of central directory record is not where its locator says");
    if (rec.u32(z + 16) != 0 || rec.u32(z + 20) != 0 || rec.u64(z + 24) != rec.u64(z + 32))
      rec.fail("an archive split over several disks");
    count = rec.u64(z + 32);
    dir_size = rec.u64(z + 40);
    dir_offset = rec.u64(z + 48);
    dir_end = z;
  }
  if (dir_offset > dir_end || dir_size > dir_end - dir_offset)
    tail.fail("the central directory lies outside the data");
  if (dir_size > kMaxDirectory)
    tail.fail(fmt::format("a central directory of {} bytes, more than the {} read", dir_size,
                          kMaxDirectory));
  if (count > dir_size / kCentralSize)
    tail.fail(
        fmt::format("{} members do not fit a central directory of {} bytes", count, dir_size));
  return Directory{count, dir_size, dir_offset};
}

// The central directory's entry at `at`, with its local header's place checked against the
// directory's.
ZipEntry read_entry(const ZipSource& source, const Bytes& dir, uint64_t at, uint64_t dir_offset,
                    const std::string& name) {
  const uint64_t size = source.size();
  ZipEntry e;
  const uint16_t flags = dir.u16(at + 8);
  e.method = dir.u16(at + 10);
  e.crc32 = dir.u32(at + 16);
  const uint32_t csize32 = dir.u32(at + 20), size32 = dir.u32(at + 24);
  const uint16_t name_len = dir.u16(at + 28), extra_len = dir.u16(at + 30);
  const uint32_t offset32 = dir.u32(at + 42);
  e.name = dir.text(at + kCentralSize, name_len);
  e.compressed_size = csize32;
  e.size = size32;
  e.header_offset = offset32;
  read_zip64_extra(dir, at + kCentralSize + name_len, extra_len, e, size32, csize32, offset32);
  if (flags & 1) dir.fail(fmt::format("member '{}' is encrypted", e.name));
  if (e.method != 0 && e.method != 8)
    dir.fail(
        fmt::format("member '{}' uses compression method {} (only stored and deflated are "
                    "read)",
                    e.name, e.method));
  if (e.method == 0 && e.size != e.compressed_size)
    dir.fail(fmt::format("stored member '{}' has two sizes", e.name));
  // Its local header and data, before the central directory.
  if (e.header_offset > dir_offset || kLocalSize > dir_offset - e.header_offset)
    dir.fail(fmt::format("member '{}': no local header where the directory says", e.name));
  const Bytes local(source.read(e.header_offset, kLocalSize), e.header_offset, size, name);
  if (local.u32(e.header_offset) != kLocalHeader)
    dir.fail(fmt::format("member '{}': no local header where the directory says", e.name));
  e.data_offset = e.header_offset + kLocalSize + local.u16(e.header_offset + 26) +
                  local.u16(e.header_offset + 28);
  if (e.data_offset > dir_offset || e.compressed_size > dir_offset - e.data_offset)
    dir.fail(fmt::format("member '{}' ({} bytes) reaches past its place in the data (truncated?)",
                         e.name, e.compressed_size));
  return e;
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(const ZipSource& source, const std::string& name) {
  const Directory d = locate_directory(source, name);
  const Bytes dir(source.read(d.offset, d.size), d.offset, source.size(), name);
  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<size_t>(d.count));
  uint64_t at = d.offset;
  const uint64_t stop = d.offset + d.size;
  for (uint64_t i = 0; i < d.count; ++i) {
    if (at + kCentralSize > stop || dir.u32(at) != kCentralHeader)
      dir.fail(fmt::format("central directory entry {} is missing or corrupt", i));
    const uint64_t record = kCentralSize + uint64_t{dir.u16(at + 28)} + dir.u16(at + 30) +
                            dir.u16(at + 32);  // name, extra field, comment
    if (at + record > stop) dir.fail(fmt::format("central directory entry {} overruns it", i));
    entries.push_back(read_entry(source, dir, at, d.offset, name));
    at += record;
  }
  return entries;
}

uint32_t crc32_of(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (const char ch : bytes) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::string stored_member(const ZipSource& source, const ZipEntry& e, const std::string& name) {
  if (e.method != 0)
    throw Error(
        fmt::format("{}: member '{}' is compressed (method {}); flopsprof reads the "
                    "stored members torch.save and torch.export.save write",
                    name, e.name, e.method));
  std::string bytes = source.read(e.data_offset, e.size);
  if (crc32_of(bytes) != e.crc32)
    throw Error(
        fmt::format("{}: member '{}' is corrupt (its CRC-32 does not match)", name, e.name));
  return bytes;
}

}  // namespace flopsprof::detail

namespace flopsprof::detail {

FileZipSource::FileZipSource(const std::string& path, const std::string& label) : label_(label) {
  auto fail = [&](const std::string& why) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw Error("cannot read " + label_ + ": " + why);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("it is a folder, not a file");
  if (!S_ISREG(st.st_mode)) fail("it is " + special_file_kind(st.st_mode) + ", not a regular file");
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(std::strerror(errno));
  size_ = static_cast<uint64_t>(st.st_size);
}

FileZipSource::~FileZipSource() {
  if (fd_ >= 0) ::close(fd_);
}

std::string FileZipSource::read(uint64_t offset, uint64_t n) const {
  std::string out(static_cast<size_t>(n), '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t k = ::pread(fd_, out.data() + got, static_cast<size_t>(n) - got,
                              static_cast<off_t>(offset + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += static_cast<size_t>(k);
  }
  if (got != n) {
    throw Error("cannot read " + label_ + ": a read error at byte " + std::to_string(offset + got) +
                " (the file changed or shrank while it was read)");
  }
  return out;
}

}  // namespace flopsprof::detail
