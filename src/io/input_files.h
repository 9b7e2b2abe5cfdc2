// Files a run reads, read whole and bounded: a regular file of a stated size at most, or a clear
// error naming it.
#pragma once

#include <cstdint>
#include <string>

namespace flopsprof::detail {

/// Reads the whole of `path`, a regular file (symbolic links followed) of at most `max_bytes`.
/// Throws `Error` naming `what` ("BASE", "--inputs"), the path and the reason: no such file, a
/// folder, a FIFO or device (never opened: opening a FIFO would wait for a writer, a device may
/// never end), larger than `max_bytes` (said with both sizes), or a read error with the OS's
/// reason. Cost: one stat, one open, reads of the file's size.
std::string read_input(const std::string& path, const std::string& what, uint64_t max_bytes);

/// Bytes this process may still allocate: the least of the machine's available memory
/// (/proc/meminfo's MemAvailable) and what its address-space limit (RLIMIT_AS) leaves; the
/// largest uint64 when neither is known. Cost: two small /proc reads.
uint64_t memory_available();

/// What a file that is not a regular one is, for messages: "a folder", "a FIFO (a pipe)", "a
/// character device", "a block device", "a socket", "a special file".
std::string special_file_kind(unsigned mode);

/// "1.50 GiB", "512 MiB", "8.00 KiB", "17 B": a file size for messages.
std::string size_text(uint64_t bytes);

}  // namespace flopsprof::detail
