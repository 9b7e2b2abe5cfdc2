// Files in and out (src/io/): the output policy, bounded reads, zip archives checked before use.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flopsprof/error.h"
#include "io/input_files.h"
#include "io/output_files.h"
#include "io/zip_archive.h"

namespace {

using flopsprof::Error;
using flopsprof::detail::InputFile;
using flopsprof::detail::OutputFile;

std::string scratch() {
  static const std::string d = [] {
    std::string base = ::testing::TempDir() + "flopsprof_io_test_XXXXXX";
    char* made = mkdtemp(base.data());
    return std::string(made != nullptr ? made : "/tmp");
  }();
  return d;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The message of the Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Files in `dir` whose name holds ".flopsprof-" (temporaries left behind).
int temporaries_in(const std::string& dir) {
  int n = 0;
  const std::string cmd = "ls -a '" + dir + "'";
  FILE* p = popen(cmd.c_str(), "r");
  char line[4096];
  while (p && fgets(line, sizeof line, p))
    n += std::string(line).find(".flopsprof-") != std::string::npos;
  if (p) pclose(p);
  return n;
}

TEST(OutputFiles, NewAndRegularFilesAreWrittenByRenameKeepingTheirMode) {
  const std::string d = scratch() + "/regular";
  mkdir(d.c_str(), 0755);
  flopsprof::detail::write_output(d + "/new.json", "{}", "JSON profile");
  EXPECT_EQ(slurp(d + "/new.json"), "{}");
  put(d + "/old.json", "old contents, longer than the new ones");
  chmod((d + "/old.json").c_str(), 0640);
  flopsprof::detail::write_output(d + "/old.json", "new", "JSON profile");
  EXPECT_EQ(slurp(d + "/old.json"), "new");
  struct stat st {};
  ASSERT_EQ(stat((d + "/old.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(temporaries_in(d), 0);
}

TEST(OutputFiles, DevicesAndFifosAreWrittenThroughNeverReplaced) {
  // /dev/null stays the character device it is (as root, a rename would replace it).
  flopsprof::detail::write_output("/dev/null", "discarded", "JSON profile");
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A FIFO with a reader gets the text and stays a FIFO.
  const std::string fifo = scratch() + "/out.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  FILE* reader = popen(("cat '" + fifo + "'").c_str(), "r");
  ASSERT_NE(reader, nullptr);
  flopsprof::detail::write_output(fifo, "through the pipe", "HTML report");
  char buf[64];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, reader)) > 0) got.append(buf, n);
  pclose(reader);
  EXPECT_EQ(got, "through the pipe");
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A full device: the OS's reason, and nothing replaced.
  const std::string e =
      error_of([] { flopsprof::detail::write_output("/dev/full", "x", "JSON profile"); });
  EXPECT_NE(e.find("No space left on device"), std::string::npos) << e;
  ASSERT_EQ(stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFiles, ALinkIsFollowedAndKeptADanglingOneRefused) {
  const std::string d = scratch() + "/links";
  mkdir(d.c_str(), 0755);
  put(d + "/target.json", "before");
  ASSERT_EQ(symlink("target.json", (d + "/link.json").c_str()), 0);
  flopsprof::detail::write_output(d + "/link.json", "after", "JSON profile");
  struct stat st {};
  ASSERT_EQ(lstat((d + "/link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(d + "/target.json"), "after");
  ASSERT_EQ(symlink("nowhere.json", (d + "/dangling.json").c_str()), 0);
  const std::string e =
      error_of([&] { flopsprof::detail::write_output(d + "/dangling.json", "x", "JSON profile"); });
  EXPECT_NE(e.find("symbolic link to 'nowhere.json'"), std::string::npos) << e;
  EXPECT_NE(lstat((d + "/nowhere.json").c_str(), &st), 0);
  EXPECT_EQ(temporaries_in(d), 0);
}

TEST(OutputFiles, BadPathsAreRefusedBeforeAnythingIsWritten) {
  const std::string d = scratch() + "/bad";
  mkdir(d.c_str(), 0755);
  auto check = [&](const std::vector<OutputFile>& outs, const std::vector<InputFile>& ins) {
    return error_of([&] { flopsprof::detail::check_outputs(outs, ins); });
  };
  EXPECT_NE(check({{"", "JSON profile", ""}}, {}).find("the path is empty"), std::string::npos);
  EXPECT_NE(check({{d, "JSON profile", ""}}, {}).find("it is a folder"), std::string::npos);
  EXPECT_NE(check({{d + "/no/such/x.json", "JSON profile", ""}}, {}).find("its folder"),
            std::string::npos);
  put(d + "/model.pt", "model");
  const std::string e =
      check({{d + "/model.pt", "JSON profile", ""}}, {{d + "/model.pt", "MODEL"}});
  EXPECT_NE(e.find("it is MODEL"), std::string::npos) << e;
  // The same file under another name is the same input (device and inode).
  ASSERT_EQ(symlink("model.pt", (d + "/alias.pt").c_str()), 0);
  EXPECT_NE(
      check({{d + "/alias.pt", "JSON profile", ""}}, {{d + "/model.pt", "MODEL"}}).find("MODEL"),
      std::string::npos);
  const std::string twice =
      check({{d + "/a.json", "JSON profile", ""}, {d + "/./a.json", "HTML report", ""}}, {});
  EXPECT_NE(twice.find("the JSON profile goes there too"), std::string::npos) << twice;
  // One character device may take several outputs.
  EXPECT_EQ(check({{"/dev/null", "JSON profile", ""}, {"/dev/null", "HTML report", ""}}, {}), "");
  EXPECT_EQ(slurp(d + "/model.pt"), "model");
}

TEST(OutputFiles, AllOrNoneWhenALaterOutputFails) {
  const std::string d = scratch() + "/all_or_none";
  mkdir(d.c_str(), 0755);
  put(d + "/kept.json", "old");
  const std::string e = error_of([&] {
    flopsprof::detail::write_outputs({{d + "/kept.json", "JSON profile", "new"},
                                      {d + "/fresh.html", "HTML report", "<html>"},
                                      {"/dev/full", "Chrome trace", "{}"}});
  });
  EXPECT_NE(e.find("cannot write the Chrome trace to '/dev/full' (No space left on device); what "
                   "reached it may be cut short; no output file was written"),
            std::string::npos)
      << e;
  EXPECT_EQ(slurp(d + "/kept.json"), "old");
  struct stat st {};
  EXPECT_NE(stat((d + "/fresh.html").c_str(), &st), 0);
  EXPECT_EQ(temporaries_in(d), 0);
}

TEST(OutputFiles, StandardOutputIsNamedByDashOrDevStdout) {
  EXPECT_TRUE(flopsprof::detail::is_standard_output("-"));
  EXPECT_TRUE(flopsprof::detail::is_standard_output("/dev/stdout"));
  EXPECT_TRUE(flopsprof::detail::is_standard_output("/dev/fd/1"));
  EXPECT_TRUE(flopsprof::detail::is_standard_output("/proc/self/fd/1"));
  EXPECT_FALSE(flopsprof::detail::is_standard_output("/dev/fd/2"));
  EXPECT_FALSE(flopsprof::detail::is_standard_output("out.json"));
}

TEST(InputFiles, OnlyRegularFilesOfTheStatedSize) {
  const std::string d = scratch() + "/inputs";
  mkdir(d.c_str(), 0755);
  put(d + "/p.json", "0123456789");
  EXPECT_EQ(flopsprof::detail::read_input(d + "/p.json", "the profile", 10), "0123456789");
  auto e = [&](const std::string& path, uint64_t max) {
    return error_of([&] { flopsprof::detail::read_input(path, "the profile", max); });
  };
  EXPECT_NE(e(d + "/p.json", 9).find("it holds 10 B, more than the 9 B this reader takes"),
            std::string::npos);
  EXPECT_NE(e(d, 100).find("it is a folder"), std::string::npos);
  EXPECT_NE(e("/dev/zero", 100).find("character device, not a regular file"), std::string::npos);
  ASSERT_EQ(mkfifo((d + "/in.fifo").c_str(), 0600), 0);
  // Refused without opening it (opening a FIFO with no writer would wait forever).
  EXPECT_NE(e(d + "/in.fifo", 100).find("FIFO"), std::string::npos);
  EXPECT_NE(e(d + "/missing", 100).find("No such file or directory"), std::string::npos);
}

// A zip archive of stored members, as torch.save writes them; `zip64` adds the zip64 end records
// (which PyTorch's writer always writes) and puts 0xffff... in the classic record.
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& members, bool zip64) {
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

TEST(ZipArchive, ClassicAndZip64DirectoriesAreRead) {
  for (bool zip64 : {false, true}) {
    const std::string z = make_zip({{"a/data.pkl", "pickle"}, {"a/data/0", "0123456789"}}, zip64);
    const auto entries = flopsprof::detail::read_zip_directory(z, "test");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].name, "a/data.pkl");
    EXPECT_EQ(
        flopsprof::detail::stored_member(flopsprof::detail::MemoryZipSource(z), entries[1], "test"),
        "0123456789");
    // data of member 1 sits after its 30-byte local header and its 8-character name
    EXPECT_EQ(entries[1].data_offset, entries[1].header_offset + 30 + 8);
  }
  // CRC-32 of "123456789" is the check value every implementation publishes.
  EXPECT_EQ(flopsprof::detail::crc32_of("123456789"), 0xcbf43926u);
}

TEST(ZipArchive, EveryTruncationAndByteFlipIsAnErrorOrAReadableArchive) {
  const std::string z = make_zip({{"a/data.pkl", "pickle"}, {"a/data/0", "0123456789"}}, true);
  for (size_t n = 0; n < z.size(); ++n) {
    const std::string cut = z.substr(0, n);
    EXPECT_NE(error_of([&] { flopsprof::detail::read_zip_directory(cut, "cut"); }), "") << n;
  }
  for (size_t i = 0; i < z.size(); ++i) {
    std::string flipped = z;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    try {  // either refused, or every member lies inside the data (ASan checks the reads)
      for (const auto& e : flopsprof::detail::read_zip_directory(flipped, "flipped")) {
        EXPECT_LE(e.data_offset + e.compressed_size, flipped.size()) << i;
        if (e.method == 0) {
          error_of([&] {
            flopsprof::detail::stored_member(flopsprof::detail::MemoryZipSource(flipped), e, "f");
          });
        }
      }
    } catch (const Error&) {
    }
  }
  EXPECT_NE(error_of([&] {
              flopsprof::detail::read_zip_directory(std::string(5000, 'x'), "junk");
            }).find("junk: not a readable zip archive (no end of central directory record)"),
            std::string::npos);
}

}  // namespace
