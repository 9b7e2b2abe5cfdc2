// The files a run writes, under one policy (docs/cli.md, "Output files"): checked before any work,
// written all or none, never replacing what is not a regular file.
#pragma once

#include <string>
#include <vector>

namespace flopsprof::detail {

/// A file a run writes: where, what it is for messages ("JSON profile"), and (when writing) its
/// text.
struct OutputFile {
  std::string path;
  std::string what;
  std::string text;
};

/// A file a run reads (the model, --inputs, a profile to compare), which no output may replace:
/// its path and how messages name it ("MODEL", "--inputs", "BASE").
struct InputFile {
  std::string path;
  std::string what;
};

/// Checks that every output can be written, before any work is done. Throws `Error` naming the
/// output, its path and the reason for: an empty path; a directory; a missing folder or one this
/// process cannot write; a read-only file; a symbolic link to nothing; a block device or socket;
/// a descriptor open for reading only; a path or descriptor that is one of `inputs` (same file,
/// by device and inode); two outputs naming one file or stream (only /dev/null may take
/// several). Cost: a few system calls per path. Writes nothing.
void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs);

/// Writes every output, or none: a character device or FIFO (/dev/null, a pipe) is written
/// straight through, as are "-", /dev/stdout, /dev/stderr and /dev/fd/N (the process's own
/// descriptors), first; then each regular file (or new path) goes to a temporary file beside it,
/// renamed over it once every output is written; a symbolic link is followed and never replaced
/// (the file it points to is). Runs `check_outputs` first. On any failure the temporary files are
/// removed, no file was replaced, and `Error` names the output, the path and the OS's reason (a
/// stream keeps what reached it, and the message says it may be cut short). A replaced file keeps
/// its permission bits, not its owner or its hard links (it is a new file); a new one gets 0666
/// less the umask. Not for concurrent writers of one path.
void write_outputs(const std::vector<OutputFile>& outputs,
                   const std::vector<InputFile>& inputs = {});

/// `write_outputs` of one file (the library's save_json, save_html, export_chrome_trace, ...).
void write_output(const std::string& path, const std::string& text, const std::string& what);

/// Removes the temporary files write_outputs is writing, if any. Async-signal-safe: for a
/// program's handler of SIGINT, SIGTERM, SIGHUP and SIGPIPE (the library installs none), which
/// then ends the process; nothing is left behind by a signal.
void remove_staged_temporaries() noexcept;

/// `path` as messages quote it: whole up to 200 characters, else its two ends.
std::string shown_path(const std::string& path);

/// Whether `path` names the process's standard output ("-", /dev/stdout, /dev/fd/1,
/// /proc/self/fd/1): a command that writes an output there prints its text report elsewhere.
bool is_standard_output(const std::string& path);

}  // namespace flopsprof::detail
