// The command's archives (MODEL, --inputs): zip files read through LibTorch's reader interface
// with every read bounded by the file, and the tensors LibTorch builds from them checked against
// the records they were loaded from, before any of them is used.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include "io/zip_archive.h"

namespace flopsprof::cli {

/// A zip archive on disk, opened once (a regular file), read with pread. Its central directory
/// is read and checked when opened (detail::read_zip_directory). As LibTorch's read adapter, it
/// clamps every read to the file and remembers the buffer each stored record was read into
/// whole, so that `record_bytes` can say how large the data behind a tensor's storage really is.
/// Not copyable; reads are thread-safe.
class Archive : public caffe2::serialize::ReadAdapterInterface, public detail::ZipSource {
 public:
  /// Opens `path` for `what` ("MODEL", "--inputs"). Throws `Error` naming both for a missing,
  /// special or unreadable file, or one that is not a readable zip archive.
  Archive(const std::string& path, const std::string& what);
  ~Archive() override;
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  const std::vector<detail::ZipEntry>& entries() const { return entries_; }
  /// "--inputs 'batch.pt'": how messages name it.
  const std::string& label() const { return label_; }

  // caffe2::serialize::ReadAdapterInterface and detail::ZipSource
  size_t size() const override { return static_cast<size_t>(size_); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* what = "") const override;
  std::string read(uint64_t offset, uint64_t n) const override;

  /// The size of the record whose data was read whole into the buffer at `data`; 0 when no
  /// record was read there (a storage LibTorch allocated itself).
  uint64_t record_bytes(const void* data) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string label_;
  std::vector<detail::ZipEntry> entries_;
  std::unordered_map<uint64_t, uint64_t> stored_at_;  // a stored member's data offset -> size
  mutable std::mutex mu_;
  mutable std::unordered_map<const void*, uint64_t> buffers_;
};

/// Checks a tensor LibTorch built from `archive`: its strides are not negative, its elements
/// (storage offset, sizes and strides) lie inside its storage, and its storage inside the record
/// its data was read from. Throws `Error` naming `what` ("element 0", "parameter 'fc.weight'")
/// and the archive, for a corrupt or crafted file whose tensors would read outside their data.
/// A tensor that is not on the CPU, or has no data (meta), is refused with `no_data`'s hint
/// when given, else only its extent is checked against its storage.
void check_tensor(const at::Tensor& t, const Archive& archive, const std::string& what,
                  const std::string& no_data = "");

}  // namespace flopsprof::cli
