// Zip archives held in memory: the central directory read and checked (APPNOTE.TXT 6.3, sections
// 4.3.6-4.3.16 and 4.5.3 for zip64).
#include "io/zip_archive.h"

#include <array>

#include <fmt/format.h>

#include "flopsprof/error.h"

namespace flopsprof::detail {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kCentralSize = 46,
                 kLocalSize = 30;

class Bytes {
 public:
  Bytes(std::string_view d, const std::string& source) : d_(d), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: not a readable zip archive ({})", source_, what));
  }
  bool fits(uint64_t at, uint64_t n) const { return at <= d_.size() && n <= d_.size() - at; }
  void need(uint64_t at, uint64_t n, const char* what) const {
    if (!fits(at, n)) fail(fmt::format("{} reaches past the end of the data", what));
  }
  uint16_t u16(uint64_t at) const { return static_cast<uint16_t>(byte(at) | (byte(at + 1) << 8)); }
  uint32_t u32(uint64_t at) const {
    return static_cast<uint32_t>(u16(at)) | (static_cast<uint32_t>(u16(at + 2)) << 16);
  }
  uint64_t u64(uint64_t at) const {
    return static_cast<uint64_t>(u32(at)) | (static_cast<uint64_t>(u32(at + 4)) << 32);
  }
  uint64_t size() const { return d_.size(); }
  std::string_view view(uint64_t at, uint64_t n) const { return d_.substr(at, n); }

 private:
  uint32_t byte(uint64_t at) const { return static_cast<unsigned char>(d_[at]); }
  std::string_view d_;
  const std::string& source_;
};

// Where the end of central directory record starts: searched back from the end over the longest
// comment it may carry.
uint64_t find_end(const Bytes& b) {
  if (b.size() < kEndSize) b.fail(fmt::format("{} bytes, shorter than any archive", b.size()));
  const uint64_t last = b.size() - kEndSize;
  const uint64_t first = last > 0xffff ? last - 0xffff : 0;
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

}  // namespace

std::vector<ZipEntry> read_zip_directory(std::string_view data, const std::string& source) {
  const Bytes b(data, source);
  const uint64_t end = find_end(b);
  if (b.u16(end + 4) != 0 || b.u16(end + 6) != 0) b.fail("an archive split over several disks");
  uint64_t count = b.u16(end + 10);
  if (b.u16(end + 8) != count) b.fail("an archive split over several disks");
  uint64_t dir_size = b.u32(end + 12);
  uint64_t dir_offset = b.u32(end + 16);
  uint64_t dir_end = end;  // where the central directory must stop
  if (count == 0xffff || dir_size == 0xffffffffu || dir_offset == 0xffffffffu) {
    if (end < kLocatorSize || b.u32(end - kLocatorSize) != kZip64Locator)
      b.fail("zip64 sizes without a zip64 locator");
    const uint64_t z = b.u64(end - kLocatorSize + 8);
    if (z > end - kLocatorSize || !b.fits(z, kZip64EndSize) || b.u32(z) != kZip64End)
      b.fail("the zip64 end of central directory record is not where its locator says");
    if (b.u32(z + 16) != 0 || b.u32(z + 20) != 0 || b.u64(z + 24) != b.u64(z + 32))
      b.fail("an archive split over several disks");
    count = b.u64(z + 32);
    dir_size = b.u64(z + 40);
    dir_offset = b.u64(z + 48);
    dir_end = z;
  }
  if (dir_offset > dir_end || dir_size > dir_end - dir_offset)
    b.fail("the central directory lies outside the data");
  if (count > dir_size / kCentralSize)
    b.fail(fmt::format("{} members do not fit a central directory of {} bytes", count, dir_size));
  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<size_t>(count));
  uint64_t at = dir_offset;
  const uint64_t stop = dir_offset + dir_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (at + kCentralSize > stop || b.u32(at) != kCentralHeader)
      b.fail(fmt::format("central directory entry {} is missing or corrupt", i));
    ZipEntry e;
    const uint16_t flags = b.u16(at + 8);
    e.method = b.u16(at + 10);
    e.crc32 = b.u32(at + 16);
    const uint32_t csize32 = b.u32(at + 20), size32 = b.u32(at + 24);
    const uint16_t name_len = b.u16(at + 28), extra_len = b.u16(at + 30),
                   comment_len = b.u16(at + 32);
    const uint32_t offset32 = b.u32(at + 42);
    const uint64_t record = kCentralSize + uint64_t{name_len} + extra_len + comment_len;
    if (at + record > stop) b.fail(fmt::format("central directory entry {} overruns it", i));
    e.name = std::string(b.view(at + kCentralSize, name_len));
    e.compressed_size = csize32;
    e.size = size32;
    e.header_offset = offset32;
    read_zip64_extra(b, at + kCentralSize + name_len, extra_len, e, size32, csize32, offset32);
    if (flags & 1) b.fail(fmt::format("member '{}' is encrypted", e.name));
    if (e.method != 0 && e.method != 8)
      b.fail(
          fmt::format("member '{}' uses compression method {} (only stored and deflated are "
                      "read)",
                      e.name, e.method));
    if (e.method == 0 && e.size != e.compressed_size)
      b.fail(fmt::format("stored member '{}' has two sizes", e.name));
    // Its local header and data, before the central directory.
    if (e.header_offset > dir_offset || kLocalSize > dir_offset - e.header_offset ||
        b.u32(e.header_offset) != kLocalHeader)
      b.fail(fmt::format("member '{}': no local header where the directory says", e.name));
    e.data_offset =
        e.header_offset + kLocalSize + b.u16(e.header_offset + 26) + b.u16(e.header_offset + 28);
    if (e.data_offset > dir_offset || e.compressed_size > dir_offset - e.data_offset)
      b.fail(fmt::format("member '{}' ({} bytes) reaches past its place in the data (truncated?)",
                         e.name, e.compressed_size));
    entries.push_back(std::move(e));
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

std::string_view stored_member(std::string_view data, const ZipEntry& e,
                               const std::string& source) {
  if (e.method != 0)
    throw Error(
        fmt::format("{}: member '{}' is compressed (method {}); flopsprof reads the "
                    "stored members torch.save and torch.export.save write",
                    source, e.name, e.method));
  const std::string_view bytes = data.substr(e.data_offset, e.size);
  if (crc32_of(bytes) != e.crc32)
    throw Error(
        fmt::format("{}: member '{}' is corrupt (its CRC-32 does not match)", source, e.name));
  return bytes;
}

}  // namespace flopsprof::detail
