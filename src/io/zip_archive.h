// Zip archives held in memory (torch.save files, torch.export's .pt2): the central directory read
// and every entry checked to lie inside the data, before anything else looks at the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flopsprof::detail {

/// One member of a zip archive. Offsets are from the start of the data.
struct ZipEntry {
  std::string name;
  uint16_t method = 0;  ///< 0 stored, 8 deflated
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;           ///< uncompressed
  uint64_t header_offset = 0;  ///< its local header
  uint64_t data_offset = 0;    ///< its first byte of data
};

/// The members of the zip archive `data` (zip64 included), in the central directory's order.
/// Throws `Error` ("<source>: not a readable zip archive (<what>)") when `data` is not a zip
/// archive (no end of central directory record), spans several disks, or any record or member
/// reaches outside the data, overlaps the central directory, is encrypted or uses a method other
/// than stored or deflated. Cost: one pass over the central directory; member data is not read.
std::vector<ZipEntry> read_zip_directory(std::string_view data, const std::string& source);

/// The bytes of a stored (uncompressed) member, checked against its CRC-32. Throws `Error` naming
/// `source` and the member for a deflated member or a CRC mismatch (a corrupt archive).
std::string_view stored_member(std::string_view data, const ZipEntry& e, const std::string& source);

/// CRC-32 (the zip format's, IEEE 802.3) of `bytes`.
uint32_t crc32_of(std::string_view bytes);

}  // namespace flopsprof::detail
