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
/// a path that is one of `inputs` (same file, by device and inode); two outputs naming one file
/// (a character device such as /dev/null may take several). Cost: a few system calls per path.
/// Writes nothing.
void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs);

/// Writes every output, or none: each regular file (or new path) goes to a temporary file beside
/// it, renamed over it once every output is written; a character device or FIFO (/dev/null, a
/// pipe) is written straight through, as are "-", /dev/stdout, /dev/stderr and /dev/fd/N (the
/// process's own descriptors); a symbolic link is followed and never replaced (the file it points
/// to is). Runs `check_outputs` first. On any failure the temporary files are removed, no target
/// was replaced, and `Error` names the output, the path and the OS's reason (a stream written
/// before the failure keeps what it got). A replaced file keeps its permission bits; a new one
/// gets 0666 less the umask. Not for concurrent writers of one path.
void write_outputs(const std::vector<OutputFile>& outputs,
                   const std::vector<InputFile>& inputs = {});

/// `write_outputs` of one file (the library's save_json, save_html, export_chrome_trace, ...).
void write_output(const std::string& path, const std::string& text, const std::string& what);

/// Whether `path` names the process's standard output ("-", /dev/stdout, /dev/fd/1,
/// /proc/self/fd/1): a command that writes an output there prints its text report elsewhere.
bool is_standard_output(const std::string& path);

}  // namespace flopsprof::detail
