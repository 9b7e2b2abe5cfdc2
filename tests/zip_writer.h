// A zip archive written in memory, for tests of the readers (torch.save files, .pt2 programs).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/zip_archive.h"

namespace flopsprof::testing {

// A zip archive of stored members, as torch.save writes them; `zip64` adds the zip64 end records
// (which PyTorch's writer always writes) and puts 0xffff... in the classic record.
inline std::string make_zip(const std::vector<std::pair<std::string, std::string>>& members,
                            bool zip64) {
  std::string out, dir;
  auto u16 = [](std::string& s, uint32_t v) {
    s += static_cast<char>(v & 0xff);
    s += static_cast<char>((v >> 8) & 0xff);
  };
  auto u32 = [&](std::string& s, uint32_t v) {
    u16(s, v & 0xffff);
    u16(s, v >> 16);
  };
  auto u64 = [&](std::string& s, uint64_t v) {
    u32(s, static_cast<uint32_t>(v));
    u32(s, static_cast<uint32_t>(v >> 32));
  };
  for (const auto& [name, data] : members) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = flopsprof::detail::crc32_of(data);
    u32(out, 0x04034b50);
    u16(out, 20);
    u16(out, 0);
    u16(out, 0);
    u32(out, 0);
    u32(out, crc);
    u32(out, static_cast<uint32_t>(data.size()));
    u32(out, static_cast<uint32_t>(data.size()));
    u16(out, static_cast<uint32_t>(name.size()));
    u16(out, 0);
    out += name + data;
    u32(dir, 0x02014b50);
    u16(dir, 20);
    u16(dir, 20);
    u16(dir, 0);
    u16(dir, 0);
    u32(dir, 0);
    u32(dir, crc);
    u32(dir, static_cast<uint32_t>(data.size()));
    u32(dir, static_cast<uint32_t>(data.size()));
    u16(dir, static_cast<uint32_t>(name.size()));
    u16(dir, 0);
    u16(dir, 0);
    u16(dir, 0);
    u16(dir, 0);
    u32(dir, 0);
    u32(dir, offset);
    dir += name;
  }
  const uint64_t dir_offset = out.size();
  out += dir;
  if (zip64) {
    const uint64_t z = out.size();
    u32(out, 0x06064b50);
    u64(out, 44);
    u16(out, 45);
    u16(out, 45);
    u32(out, 0);
    u32(out, 0);
    u64(out, members.size());
    u64(out, members.size());
    u64(out, dir.size());
    u64(out, dir_offset);
    u32(out, 0x07064b50);
    u32(out, 0);
    u64(out, z);
    u32(out, 1);
  }
  u32(out, 0x06054b50);
  u16(out, 0);
  u16(out, 0);
  u16(out, zip64 ? 0xffff : static_cast<uint32_t>(members.size()));
  u16(out, zip64 ? 0xffff : static_cast<uint32_t>(members.size()));
  u32(out, zip64 ? 0xffffffffu : static_cast<uint32_t>(dir.size()));
  u32(out, zip64 ? 0xffffffffu : static_cast<uint32_t>(dir_offset));
  u16(out, 0);
  return out;
}

}  // namespace flopsprof::testing
