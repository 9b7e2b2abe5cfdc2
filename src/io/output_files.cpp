// The files a run writes, under one policy (docs/cli.md, "Output files").
#include "io/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "flopsprof/error.h"

namespace flopsprof::detail {
namespace {

std::string os_reason(int err) { return std::strerror(err); }

// Where an output goes once its path is resolved.
struct Target {
  enum Kind { kNew, kRegular, kStream, kDescriptor } kind = kNew;
  std::string path;  // the resolved path (a link's target); "" for a descriptor
  int fd = -1;       // kDescriptor: the process's own descriptor
  dev_t dev = 0;     // kRegular, kStream, kDescriptor: what it writes to
  ino_t ino = 0;
  bool regular = false;  // a regular file (kRegular, or a descriptor open on one)
  mode_t mode = 0;       // kRegular: its permission bits
};

[[noreturn]] void refuse(const OutputFile& o, const std::string& why) {
  throw Error(fmt::format("cannot write the {} to '{}': {}; no output file was written", o.what,
                          shown_path(o.path), why));
}

// "/dev/fd/N", "/proc/self/fd/N": N; else nullopt.
std::optional<int> descriptor_path(const std::string& p) {
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const size_t n = std::strlen(prefix);
    if (p.size() <= n || p.compare(0, n, prefix) != 0) continue;
    int fd = 0;
    for (size_t i = n; i < p.size(); ++i) {
      if (p[i] < '0' || p[i] > '9' || fd > 100000) return std::nullopt;
      fd = fd * 10 + (p[i] - '0');
    }
    return fd;
  }
  return std::nullopt;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The folder a new or replaced file goes into: it exists, is a folder, and takes new files.
void check_folder(const OutputFile& o, const std::string& file) {
  const std::string dir = parent_of(file);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    refuse(o, fmt::format("its folder '{}' cannot be used ({})", dir, os_reason(errno)));
  if (!S_ISDIR(st.st_mode)) refuse(o, fmt::format("'{}' is not a folder", dir));
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    refuse(o, fmt::format("its folder '{}' is not writable ({})", dir, os_reason(errno)));
}

Target resolve(const OutputFile& o) {
  Target t;
  if (o.path.empty()) refuse(o, "the path is empty (name a file, or - for standard output)");
  if (o.path == "-" || o.path == "/dev/stdout") {
    t.kind = Target::kDescriptor;
    t.fd = STDOUT_FILENO;
  } else if (o.path == "/dev/stderr") {
    t.kind = Target::kDescriptor;
    t.fd = STDERR_FILENO;
  }
  if (auto fd = descriptor_path(o.path)) {
    t.kind = Target::kDescriptor;
    t.fd = *fd;
  }
  if (t.kind == Target::kDescriptor) {
    const int mode = fcntl(t.fd, F_GETFL);
    if (mode == -1) refuse(o, fmt::format("descriptor {} is not open", t.fd));
    if ((mode & O_ACCMODE) == O_RDONLY)
      refuse(o, fmt::format("descriptor {} is open for reading only", t.fd));
    struct stat st {};
    if (fstat(t.fd, &st) == 0) {  // what it writes to: checked against the inputs, as a path is
      t.dev = st.st_dev;
      t.ino = st.st_ino;
      t.regular = S_ISREG(st.st_mode);
    }
    return t;
  }
  std::string path = o.path;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) refuse(o, os_reason(errno));
    check_folder(o, path);
    t.kind = Target::kNew;
    t.path = path;
    return t;
  }
  if (S_ISLNK(st.st_mode)) {
    // Followed, never replaced: the file it points to takes the output.
    char* real = realpath(path.c_str(), nullptr);
    if (real == nullptr) {
      char link[PATH_MAX];
      const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
      const std::string to = n > 0 ? std::string(link, static_cast<size_t>(n)) : "?";
      refuse(o, fmt::format("it is a symbolic link to '{}', which cannot be resolved ({}); write "
                            "to the file itself",
                            to, os_reason(errno)));
    }
    path = real;
    std::free(real);
    if (lstat(path.c_str(), &st) != 0) refuse(o, os_reason(errno));
  }
  t.path = path;
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.regular = S_ISREG(st.st_mode);
  if (S_ISDIR(st.st_mode)) refuse(o, "it is a folder (name a file in it)");
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    if (access(path.c_str(), W_OK) != 0) refuse(o, os_reason(errno));
    t.kind = Target::kStream;
    return t;
  }
  if (!S_ISREG(st.st_mode)) {
    refuse(o, fmt::format("it is a {}; outputs go to files, character devices (/dev/null) and "
                          "FIFOs",
                          S_ISBLK(st.st_mode)    ? "block device"
                          : S_ISSOCK(st.st_mode) ? "socket"
                                                 : "special file"));
  }
  if (access(path.c_str(), W_OK) != 0)
    refuse(o, fmt::format("the file is not writable ({})", os_reason(errno)));
  check_folder(o, path);
  t.kind = Target::kRegular;
  t.mode = st.st_mode & 07777;
  return t;
}

// A new file's identity, before it exists: its folder's real path and its name.
std::string new_file_key(const std::string& path) {
  char* real = realpath(parent_of(path).c_str(), nullptr);
  std::string key = real != nullptr ? std::string(real) : parent_of(path);
  std::free(real);
  return key + "/" + base_of(path);
}

// /dev/null's identity: the one target several outputs may share (a sink).
bool is_dev_null(const Target& t) {
  struct stat st {};
  return t.kind != Target::kNew && stat("/dev/null", &st) == 0 && st.st_dev == t.dev &&
         st.st_ino == t.ino;
}

std::vector<Target> check_all(const std::vector<OutputFile>& outputs,
                              const std::vector<InputFile>& inputs) {
  std::vector<Target> targets;
  for (const OutputFile& o : outputs) targets.push_back(resolve(o));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Target& t = targets[i];
    if (t.regular) {  // a file, or a descriptor open on one: never an input
      for (const InputFile& in : inputs) {
        struct stat st {};
        if (!in.path.empty() && stat(in.path.c_str(), &st) == 0 && st.st_dev == t.dev &&
            st.st_ino == t.ino)
          refuse(outputs[i], fmt::format("it is {} '{}', which this run reads; write the {} "
                                         "elsewhere",
                                         in.what, shown_path(in.path), outputs[i].what));
      }
    }
    for (size_t j = 0; j < i; ++j) {
      const Target& u = targets[j];
      const bool same = t.kind == Target::kNew || u.kind == Target::kNew
                            ? t.kind == u.kind && new_file_key(t.path) == new_file_key(u.path)
                            : t.dev == u.dev && t.ino == u.ino && !is_dev_null(t);
      if (same)
        refuse(outputs[i], fmt::format("the {} goes there too; give each output its own file",
                                       outputs[j].what));
    }
  }
  return targets;
}

// Writes all of `text` to `fd`; errno of the failure, 0 on success.
int write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

std::atomic<unsigned> g_temp_counter{0};

// The temporaries being written, for remove_staged_temporaries() (a signal handler): fixed
// slots of plain characters, a path published by its `used` flag.
constexpr int kSlots = 16;
struct Slot {
  std::atomic<bool> used{false};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];

void publish(const std::string& path) {
  if (path.size() >= PATH_MAX) return;
  for (Slot& s : g_slots) {
    bool expected = false;
    if (!s.used.compare_exchange_strong(expected, true)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    return;
  }
}
void unpublish(const std::string& path) {
  for (Slot& s : g_slots) {
    if (s.used.load() && path == s.path) {
      s.used.store(false);
      return;
    }
  }
}

// Temporary files written so far, removed unless committed.
class Staged {
 public:
  ~Staged() {
    for (const std::string& t : temps_) {
      if (t.empty()) continue;
      ::unlink(t.c_str());
      unpublish(t);
    }
  }
  // A temporary file beside `target` holding `text`; its index.
  size_t stage(const OutputFile& o, const Target& t) {
    const std::string dir = parent_of(t.path);
    std::string temp;
    int fd = -1;
    // A name within NAME_MAX whatever the target's: its first 100 characters.
    const std::string base = base_of(t.path).substr(0, 100);
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
      temp =
          fmt::format("{}/.{}.flopsprof-{}-{}", dir, base, getpid(), g_temp_counter.fetch_add(1));
      publish(temp);
      fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
      if (fd < 0) unpublish(temp);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) fail(o, os_reason(errno));
    temps_.push_back(temp);
    int err = write_all(fd, o.text);
    if (err == 0 && t.kind == Target::kRegular && ::fchmod(fd, t.mode) != 0) err = errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) fail(o, os_reason(err));
    return temps_.size() - 1;
  }
  void commit(size_t i, const OutputFile& o, const Target& t) {
    if (::rename(temps_[i].c_str(), t.path.c_str()) != 0) fail(o, os_reason(errno));
    unpublish(temps_[i]);
    temps_[i].clear();
    committed_.push_back(o.path);
  }
  // `partial`: a stream that may have received part of its output.
  [[noreturn]] void fail(const OutputFile& o, const std::string& why, bool partial = false) const {
    std::string written;
    for (const std::string& c : committed_) written += (written.empty() ? "" : ", ") + c;
    throw Error(fmt::format(
        "cannot write the {} to '{}' ({}); {}{}", o.what, shown_path(o.path), why,
        partial ? "what reached it may be cut short; " : "",
        written.empty() ? "no output file was written" : "already written: " + written));
  }

 private:
  std::vector<std::string> temps_;
  std::vector<std::string> committed_;
};

}  // namespace

void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs) {
  check_all(outputs, inputs);
}

void write_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs) {
  const std::vector<Target> targets = check_all(outputs, inputs);
  Staged staged;
  // Streams first (a reader that goes away, or a signal, then leaves no temporary behind), then
  // the files to temporaries (nothing replaced yet), then the renames.
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Target& t = targets[i];
    if (t.kind == Target::kDescriptor) {
      if (const int err = write_all(t.fd, outputs[i].text))
        staged.fail(outputs[i], os_reason(err), true);
    } else if (t.kind == Target::kStream) {
      const int fd = ::open(t.path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) staged.fail(outputs[i], os_reason(errno));
      int err = write_all(fd, outputs[i].text);
      if (::close(fd) != 0 && err == 0) err = errno;
      if (err != 0) staged.fail(outputs[i], os_reason(err), true);
    }
  }
  std::vector<size_t> temp_of(outputs.size(), 0);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (targets[i].kind == Target::kNew || targets[i].kind == Target::kRegular)
      temp_of[i] = staged.stage(outputs[i], targets[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (targets[i].kind == Target::kNew || targets[i].kind == Target::kRegular)
      staged.commit(temp_of[i], outputs[i], targets[i]);
  }
}

void write_output(const std::string& path, const std::string& text, const std::string& what) {
  write_outputs({OutputFile{path, what, text}});
}

void remove_staged_temporaries() noexcept {
  for (Slot& s : g_slots) {
    if (s.used.load()) ::unlink(s.path);
  }
}

std::string shown_path(const std::string& path) {
  if (path.size() <= 200) return path;
  return fmt::format("{}...({} characters)...{}", path.substr(0, 80), path.size(),
                     path.substr(path.size() - 80));
}

bool is_standard_output(const std::string& path) {
  return path == "-" || path == "/dev/stdout" || descriptor_path(path) == STDOUT_FILENO;
}

}  // namespace flopsprof::detail
