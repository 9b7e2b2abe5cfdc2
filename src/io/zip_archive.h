// Zip archives (torch.save files, TorchScript files, torch.export's .pt2): the central directory
// read and every entry checked to lie inside the archive, before anything else looks at the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flopsprof::detail {

/// One member of a zip archive. Offsets are from the start of the archive.
struct ZipEntry {
  std::string name;
  uint16_t method = 0;  ///< 0 stored, 8 deflated
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;           ///< uncompressed
  uint64_t header_offset = 0;  ///< its local header
  uint64_t data_offset = 0;    ///< its first byte of data
};

/// An archive's bytes by offset (a file read with pread, or bytes in memory).
class ZipSource {
 public:
  virtual ~ZipSource() = default;
  virtual uint64_t size() const = 0;
  /// The `n` bytes at `offset` (callers stay inside size()). Throws `Error` on a read error.
  virtual std::string read(uint64_t offset, uint64_t n) const = 0;
};

/// Bytes held in memory as a source (they must outlive it).
class MemoryZipSource : public ZipSource {
 public:
  explicit MemoryZipSource(std::string_view data) : d_(data) {}
  uint64_t size() const override { return d_.size(); }
  std::string read(uint64_t offset, uint64_t n) const override {
    return std::string(d_.substr(offset, n));
  }

 private:
  std::string_view d_;
};

/// The members of the zip archive in `source` (zip64 included), in the central directory's
/// order. Throws `Error` ("<name>: not a readable zip archive (<what>)") when it is not a zip
/// archive (no end of central directory record), spans several disks, or any record or member
/// reaches outside it, overlaps the central directory, is encrypted or uses a method other than
/// stored or deflated. Cost: reads of its last 64 KiB, its central directory (at most 1 GiB) and
/// each member's 30-byte local header; member data is not read.
std::vector<ZipEntry> read_zip_directory(const ZipSource& source, const std::string& name);
/// The same for an archive held in memory.
std::vector<ZipEntry> read_zip_directory(std::string_view data, const std::string& name);

/// The bytes of a stored (uncompressed) member of `source`, checked against its CRC-32. Throws
/// `Error` naming `name` and the member for a deflated member or a CRC mismatch (corrupt).
std::string stored_member(const ZipSource& source, const ZipEntry& e, const std::string& name);

/// CRC-32 (the zip format's, IEEE 802.3) of `bytes`.
uint32_t crc32_of(std::string_view bytes);

}  // namespace flopsprof::detail

namespace flopsprof::detail {

/// A regular file as a source, read with pread. Not copyable; reads are thread-safe.
class FileZipSource : public ZipSource {
 public:
  /// Opens `path`; `label` names it in errors ("MODEL 'x.pt2'"). Throws `Error` ("cannot read
  /// <label>: <why>") for a missing or unreadable file, a folder or a special file (never
  /// opened: a FIFO would wait for a writer).
  FileZipSource(const std::string& path, const std::string& label);
  ~FileZipSource() override;
  FileZipSource(const FileZipSource&) = delete;
  FileZipSource& operator=(const FileZipSource&) = delete;
  uint64_t size() const override { return size_; }
  std::string read(uint64_t offset, uint64_t n) const override;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string label_;
};

}  // namespace flopsprof::detail
