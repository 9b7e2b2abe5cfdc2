// Files in and out (src/io/): the output policy, bounded reads, zip archives checked before use.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flopsprof/error.h"
#include "io/exported_program.h"
#include "io/input_files.h"
#include "io/output_files.h"
#include "io/pickle_scan.h"
#include "io/zip_archive.h"
#include "zip_writer.h"

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

TEST(ZipArchive, ClassicAndZip64DirectoriesAreRead) {
  for (bool zip64 : {false, true}) {
    const std::string z =
        flopsprof::testing::make_zip({{"a/data.pkl", "pickle"}, {"a/data/0", "0123456789"}}, zip64);
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
  const std::string z =
      flopsprof::testing::make_zip({{"a/data.pkl", "pickle"}, {"a/data/0", "0123456789"}}, true);
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

// ---- Exported programs (.pt2): the program JSON read, every bad one a clear error ----------

using flopsprof::detail::evaluate_sym_expr;
using flopsprof::detail::ExportedProgram;
using flopsprof::detail::read_exported_program;

// A program of PyTorch 2.6's schema: x[B, 64] -> fc (Linear 64 -> 10). `sizes0` is x's first
// size as serialized; `extra` more top-level members.
std::string linear_program(const std::string& sizes0 = R"({"as_int": 8})", int major = 8,
                           const std::string& float_arg = "0.5") {
  return R"({"schema_version": {"major": )" + std::to_string(major) + R"(, "minor": 2},
  "torch_version": "2.6.0",
  "graph_module": {
    "graph": {
      "inputs": [], "outputs": [], "sym_int_values": {},
      "tensor_values": {
        "p_fc_weight": {"dtype": 7, "sizes": [{"as_int": 10}, {"as_int": 64}], "requires_grad": true,
                        "strides": [{"as_int": 64}, {"as_int": 1}]},
        "p_fc_bias": {"dtype": 7, "sizes": [{"as_int": 10}], "requires_grad": true},
        "x": {"dtype": 7, "sizes": [)" +
         sizes0 + R"(, {"as_int": 64}]},
        "t": {"dtype": 7, "sizes": [{"as_int": 64}, {"as_int": 10}],
              "strides": [{"as_int": 1}, {"as_int": 64}]},
        "linear": {"dtype": 7, "sizes": [{"as_int": 8}, {"as_int": 10}]}
      },
      "nodes": [
        {"target": "torch.ops.aten.linear.default",
         "inputs": [{"name": "input", "arg": {"as_tensor": {"name": "x"}}},
                    {"name": "weight", "arg": {"as_tensor": {"name": "p_fc_weight"}}},
                    {"name": "bias", "arg": {"as_tensor": {"name": "p_fc_bias"}}}],
         "outputs": [{"as_tensor": {"name": "linear"}}],
         "metadata": {"nn_module_stack": "L__self__,,__main__.Net;L__self___fc,fc,torch.nn.modules.linear.Linear"}},
        {"target": "torch.ops.aten.mul.Scalar",
         "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "t"}}},
                    {"name": "other", "arg": {"as_float": )" +
         float_arg + R"(}}],
         "outputs": [{"as_tensor": {"name": "m"}}], "metadata": {}},
        {"target": "_operator.getitem", "inputs": [], "outputs": [], "metadata": {}}
      ]
    },
    "signature": {
      "input_specs": [
        {"parameter": {"arg": {"name": "p_fc_weight"}, "parameter_name": "fc.weight"}},
        {"parameter": {"arg": {"name": "p_fc_bias"}, "parameter_name": "fc.bias"}},
        {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}
      ],
      "output_specs": []
    },
    "module_call_graph": []
  }
})";
}

ExportedProgram read_program(const std::string& json,
                             const std::map<std::string, int64_t>& dims = {},
                             const std::string& member = "serialized_exported_program.json") {
  const std::string z = flopsprof::testing::make_zip({{member, json}, {"version", "8.2"}}, false);
  return read_exported_program(flopsprof::detail::MemoryZipSource(z), "model.pt2", dims);
}

TEST(ExportedProgram, NodesShapesModulesAndParametersAreRead) {
  const ExportedProgram p = read_program(linear_program());
  EXPECT_EQ(p.schema_major, 8);
  EXPECT_EQ(p.torch_version, "2.6.0");
  EXPECT_EQ(p.root_type, "__main__.Net");
  ASSERT_EQ(p.nodes.size(), 3u);
  EXPECT_EQ(p.nodes[0].op, "aten::linear");
  EXPECT_EQ(p.nodes[0].overload, "");
  ASSERT_EQ(p.nodes[0].modules.size(), 1u);  // the root is not in the list
  EXPECT_EQ(p.nodes[0].modules[0].first, "fc");
  EXPECT_EQ(p.nodes[0].modules[0].second, "torch.nn.modules.linear.Linear");
  EXPECT_EQ(p.nodes[1].op, "aten::mul");
  EXPECT_EQ(p.nodes[1].overload, "Scalar");
  EXPECT_EQ(p.nodes[1].inputs[1].d, 0.5);
  EXPECT_EQ(p.nodes[2].op, "");  // not an operator
  EXPECT_EQ(p.tensors.at("x").sizes, (std::vector<int64_t>{8, 64}));
  EXPECT_TRUE(p.tensors.at("p_fc_weight").contiguous);
  EXPECT_FALSE(p.tensors.at("t").contiguous);  // a transpose's strides
  ASSERT_EQ(p.parameters.size(), 2u);
  EXPECT_EQ(p.parameters[0].fqn, "fc.weight");
  EXPECT_EQ(p.user_inputs, std::vector<std::string>{"x"});
}

TEST(ExportedProgram, NonFiniteFloatsAsPythonWritesThem) {
  // Python's json writes a mask's fill value as -Infinity; NaN as NaN.
  EXPECT_EQ(read_program(linear_program(R"({"as_int": 8})", 8, "-Infinity")).nodes[1].inputs[1].d,
            -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(
      std::isnan(read_program(linear_program(R"({"as_int": 8})", 8, "NaN")).nodes[1].inputs[1].d));
  // ... but not inside a string (a name stays as written).
  std::string j = linear_program();
  j.replace(j.find("__main__.Net"), 12, "NaN.Infinity");
  EXPECT_EQ(read_program(j).root_type, "NaN.Infinity");
}

TEST(ExportedProgram, SymbolicSizesTakeTheGivenValueOrTheHint) {
  const std::string s0 =
      R"J({"as_expr": {"expr_str": "Symbol('s0', positive=True, integer=True)", "hint": {"as_int": 16}}})J";
  EXPECT_EQ(read_program(linear_program(s0)).tensors.at("x").sizes[0], 16);
  EXPECT_EQ(read_program(linear_program(s0)).symbols.at("s0"), 16);
  const ExportedProgram given = read_program(linear_program(s0), {{"s0", 128}});
  EXPECT_EQ(given.tensors.at("x").sizes[0], 128);
  EXPECT_EQ(given.symbols.at("s0"), 128);
  // An expression of symbols: 2 x s0.
  const std::string twice =
      R"J({"as_expr": {"expr_str": "Mul(Integer(2), Symbol('s0', positive=True, integer=True))"}})J";
  EXPECT_EQ(read_program(linear_program(twice), {{"s0", 5}}).tensors.at("x").sizes[0], 10);
  // No hint and no value: the error names the symbol and --dim.
  const std::string e = error_of([&] { read_program(linear_program(twice)); });
  EXPECT_NE(e.find("needs a value for s0; give it with --dim NAME=VALUE"), std::string::npos) << e;
  // A value for no symbol of the program.
  const std::string u = error_of([&] { read_program(linear_program(s0), {{"seq", 4}}); });
  EXPECT_NE(u.find("--dim seq=4 names no symbol of the program (its symbols: s0)"),
            std::string::npos)
      << u;
  const std::string st = error_of([&] { read_program(linear_program(), {{"seq", 4}}); });
  EXPECT_NE(st.find("its sizes are all static"), std::string::npos) << st;
}

TEST(ExportedProgram, SympyExpressionsEvaluate) {
  const std::map<std::string, int64_t> s{{"s0", 7}, {"s1", 3}};
  EXPECT_EQ(evaluate_sym_expr("Symbol('s0', positive=True, integer=True)", s), 7);
  EXPECT_EQ(evaluate_sym_expr("Mul(Integer(64), Symbol('s0', positive=True, integer=True))", s),
            448);
  EXPECT_EQ(evaluate_sym_expr("Add(Symbol('s0'), Integer(-1))", s), 6);
  EXPECT_EQ(evaluate_sym_expr("FloorDiv(Symbol('s0'), Integer(2))", s), 3);
  EXPECT_EQ(evaluate_sym_expr("FloorDiv(Integer(-7), Integer(2))", s), -4);  // Python's floor
  EXPECT_EQ(evaluate_sym_expr("CeilDiv(Symbol('s0'), Integer(2))", s), 4);
  EXPECT_EQ(evaluate_sym_expr("Mod(Symbol('s0'), Symbol('s1'))", s), 1);
  EXPECT_EQ(evaluate_sym_expr("Max(Symbol('s1'), Integer(5), Symbol('s0'))", s), 7);
  EXPECT_EQ(evaluate_sym_expr("Pow(Symbol('s1'), Integer(3))", s), 27);
  for (const char* bad :
       {"Sin(Symbol('s0'))", "Symbol('s9')", "Mul(Integer(2)", "FloorDiv(Integer(1), Integer(0))",
        "Mul(Integer(4611686018427387904), Integer(4))", "", "Integer(1) junk"}) {
    const std::string e = error_of([&] { evaluate_sym_expr(bad, s); });
    EXPECT_NE(e.find("cannot be evaluated"), std::string::npos) << bad << ": " << e;
  }
}

TEST(ExportedProgram, HostileSizesAndPathsAreClearErrorsNotCrashes) {
  const std::map<std::string, int64_t> none;
  // INT64_MIN / -1 (a trap in 64 bits), a power of 1 to the 2^63-1 (a loop), deep nesting (the
  // stack).
  EXPECT_NE(error_of([&] {
              evaluate_sym_expr("FloorDiv(Integer(-9223372036854775808), Integer(-1))", none);
            }).find("past 64 bits"),
            std::string::npos);
  EXPECT_EQ(evaluate_sym_expr("Mod(Integer(-9223372036854775808), Integer(-1))", none), 0);
  EXPECT_EQ(evaluate_sym_expr("Pow(Integer(1), Integer(9223372036854775807))", none), 1);
  EXPECT_EQ(evaluate_sym_expr("Pow(Integer(-1), Integer(9223372036854775807))", none), -1);
  EXPECT_EQ(evaluate_sym_expr("Pow(Integer(0), Integer(0))", none), 1);
  std::string deep;
  for (int k = 0; k < 100000; ++k) deep += "Neg(";
  deep += "Integer(1)" + std::string(100000, ')');
  EXPECT_NE(error_of([&] { evaluate_sym_expr(deep, none); }).find("nested deeper than 256"),
            std::string::npos);
  // A module path of 300 levels; a tensor of more than 2^62 elements.
  std::string path = "m";
  for (int k = 0; k < 300; ++k) path += ".m";
  std::string j = linear_program();
  j.replace(j.find("L__self___fc,fc,"), 16, "L__self___fc," + path + ",");
  EXPECT_NE(error_of([&] { read_program(j); }).find("a module path longer than"),
            std::string::npos);
  const std::string huge =
      error_of([&] { read_program(linear_program(R"({"as_int": 4611686018427387904})")); });
  EXPECT_NE(huge.find("more than 2^62 elements"), std::string::npos) << huge;
}

TEST(ExportedProgram, AGivenSymbolIsKeptInExpressionsOfSeveral) {
  // x[s0, s1] (hints 8 and 64), t[s0 * s1] (hint 512): --dim s0=5 gives t 5 x 64 (s1 at its own
  // hint), never t's whole hint.
  const std::string s0 =
      R"J({"as_expr": {"expr_str": "Symbol('s0', positive=True, integer=True)", "hint": {"as_int": 8}}}, {"as_expr": {"expr_str": "Symbol('s1', positive=True, integer=True)", "hint": {"as_int": 64}}})J";
  std::string j = linear_program(s0);
  j.replace(j.find(R"("x": {"dtype": 7, "sizes": [)"), 0, "");
  const std::string x64 = R"(, {"as_int": 64}]},
        "t")";
  j.replace(j.find(x64), x64.size(), R"(]},
        "t")");  // x is [s0, s1]
  const std::string t = R"("t": {"dtype": 7, "sizes": [{"as_int": 64}, {"as_int": 10}],)";
  j.replace(
      j.find(t), t.size(),
      R"J("t": {"dtype": 7, "sizes": [{"as_expr": {"expr_str": "Mul(Symbol('s0', positive=True, integer=True), Symbol('s1', positive=True, integer=True))", "hint": {"as_int": 512}}}, {"as_int": 10}],)J");
  EXPECT_EQ(read_program(j).tensors.at("t").sizes[0], 512);
  const ExportedProgram given = read_program(j, {{"s0", 5}});
  EXPECT_EQ(given.tensors.at("t").sizes[0], 5 * 64);
  EXPECT_EQ(given.tensors.at("x").sizes, (std::vector<int64_t>{5, 64}));
}

TEST(ExportedProgram, EachBadArchiveOneClearError) {
  // Not a zip archive.
  EXPECT_NE(error_of([&] {
              read_exported_program(flopsprof::detail::MemoryZipSource("not a zip"), "m.pt2", {});
            }).find("not a readable zip archive"),
            std::string::npos);
  // A zip without the program (a TorchScript file).
  EXPECT_NE(
      error_of([&] { read_program(linear_program(), {}, "archive/data.pkl"); })
          .find("no serialized_exported_program.json (nor a PT2 archive's models/<name>.json) in "
                "the archive: not a program saved by torch.export.save"),
      std::string::npos);
  // The PT2 archive spec's layout (later PyTorch): an archive_format member and one program
  // under models/, read as 2.6's; several programs are refused, naming them.
  const std::string spec =
      flopsprof::testing::make_zip({{"package/archive_format", "pt2"},
                                    {"package/models/model.json", linear_program()},
                                    {"package/data/weights/weight_0", "x"}},
                                   false);
  EXPECT_EQ(
      read_exported_program(flopsprof::detail::MemoryZipSource(spec), "m.pt2", {}).nodes[0].op,
      "aten::linear");
  EXPECT_TRUE(
      flopsprof::detail::is_exported_program(flopsprof::detail::MemoryZipSource(spec), "m"));
  const std::string two = flopsprof::testing::make_zip(
      {{"archive_format", "pt2"}, {"models/a.json", linear_program()}, {"models/b.json", "{}"}},
      false);
  const std::string t = error_of(
      [&] { read_exported_program(flopsprof::detail::MemoryZipSource(two), "m.pt2", {}); });
  EXPECT_NE(t.find("the archive holds 2 programs (models/a.json, models/b.json)"),
            std::string::npos)
      << t;
  // Without archive_format, a models/ folder is no program.
  EXPECT_FALSE(flopsprof::detail::is_exported_program(
      flopsprof::detail::MemoryZipSource(
          flopsprof::testing::make_zip({{"models/a.json", linear_program()}}, false)),
      "m"));
  // An unknown schema major.
  const std::string major = error_of([&] { read_program(linear_program(R"({"as_int": 8})", 9)); });
  EXPECT_NE(major.find("an exported program of schema 9.2, which this flopsprof does not read"),
            std::string::npos)
      << major;
  // JSON that does not parse, or has not the schema's shape.
  EXPECT_NE(error_of([&] { read_program("{\"schema_version\": "); }).find("is not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_program("[1, 2]");
            }).find("not an exported program this flopsprof reads"),
            std::string::npos);
  std::string unknown = linear_program();
  unknown.replace(unknown.find("\"name\": \"p_fc_bias\"}}}],"), 30, "\"name\": \"nowhere\"}}}],");
  const std::string u = error_of([&] { read_program(unknown); });
  EXPECT_NE(u.find("reads the unknown tensor nowhere"), std::string::npos) << u;
  // A member whose bytes do not match its CRC (corrupt).
  std::string z =
      flopsprof::testing::make_zip({{"serialized_exported_program.json", linear_program()}}, false);
  z[z.find("schema_version") + 2] ^= 1;
  EXPECT_NE(
      error_of([&] { read_exported_program(flopsprof::detail::MemoryZipSource(z), "m.pt2", {}); }),
      "");
}

// Object identities of a pickled dict (tied weights: one tensor saved under two names).
std::string unhex(const std::string& h) {
  std::string out;
  for (size_t k = 0; k + 1 < h.size(); k += 2)
    out += static_cast<char>(std::stoi(h.substr(k, 2), nullptr, 16));
  return out;
}

TEST(ExportedProgram, PickledDictIdentitiesTellTiedEntries) {
  // pickle.dumps({'a': x, 'b': x, 'c': [2]}) with x = [1], protocols 2 and 4, and an OrderedDict
  // ({'w': x, 'v': x}, built by REDUCE, as torch.save writes a module's state_dict).
  for (const char* hex :
       {"80027d71002858010000006171015d71024b01615801000000627103680258010000006371045d71054b026175"
        "2e",
        "8004951d000000000000007d94288c0161945d944b01618c01629468028c0163945d944b0261752e"}) {
    const auto ids = flopsprof::detail::pickled_dict_identities(unhex(hex));
    ASSERT_TRUE(ids.has_value()) << hex;
    ASSERT_EQ(ids->size(), 3u);
    EXPECT_EQ(ids->at("a"), ids->at("b"));
    EXPECT_NE(ids->at("a"), ids->at("c"));
  }
  const auto od = flopsprof::detail::pickled_dict_identities(unhex(
      "800263636f6c6c656374696f6e730a4f726465726564446963740a7100295271012858010000007771025d71034b"
      "016158010000007671046803752e"));
  ASSERT_TRUE(od.has_value());
  EXPECT_EQ(od->at("w"), od->at("v"));
  // Not a pickle this reader follows: nullopt, never a crash (every truncation, an unknown opcode).
  const std::string p = unhex(
      "80027d71002858010000006171015d71024b01615801000000627103680258010000006371045d71054b0261752"
      "e");
  for (size_t n = 0; n + 1 < p.size(); ++n)
    EXPECT_FALSE(flopsprof::detail::pickled_dict_identities(p.substr(0, n)).has_value()) << n;
  EXPECT_FALSE(flopsprof::detail::pickled_dict_identities("\x80\x02\xff.").has_value());
  EXPECT_FALSE(
      flopsprof::detail::pickled_dict_identities("\x80\x02h\x07.").has_value());  // memo unset
}

TEST(ExportedProgram, TiedParametersFromTheStateDict) {
  // tests/exported/tied.pt2: GPT2 with lm_head.weight = wte.weight, exported under FakeTensorMode.
  const std::string pt2 = slurp(std::string(FLOPSPROF_EXPORTED_DIR) + "/tied.pt2");
  const ExportedProgram p =
      read_exported_program(flopsprof::detail::MemoryZipSource(pt2), "tied.pt2", {});
  EXPECT_TRUE(p.ties_known);
  int wte = -1, tied = 0;
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    if (p.parameters[i].fqn == "wte.weight") wte = static_cast<int>(i);
    if (p.parameters[i].same_as >= 0) {
      ++tied;
      EXPECT_EQ(p.parameters[i].fqn, "lm_head.weight");
      EXPECT_EQ(p.parameters[i].same_as, wte);
    }
  }
  EXPECT_EQ(tied, 1);
  // The same program without its state dict: ties unknown, and the problems say so (two
  // parameters share a shape and dtype).
  std::string json;
  for (const auto& e : flopsprof::detail::read_zip_directory(pt2, "tied.pt2")) {
    if (e.name.find("serialized_exported_program.json") != std::string::npos)
      json = flopsprof::detail::stored_member(flopsprof::detail::MemoryZipSource(pt2), e, "t");
  }
  const ExportedProgram bare = read_program(json);
  EXPECT_FALSE(bare.ties_known);
  bool said = false;
  for (const std::string& q : bare.problems)
    said = said || q.find("tied weights") != std::string::npos;
  // No state dict (a PT2 archive spec's layout): not known either, and said, as two
  // parameters of one shape and dtype may be one tensor.
  EXPECT_TRUE(said);
  said = false;
  const std::string z = flopsprof::testing::make_zip(
      {{"serialized_exported_program.json", json}, {"serialized_state_dict.pt", "junk"}}, false);
  const ExportedProgram junk =
      read_exported_program(flopsprof::detail::MemoryZipSource(z), "t", {});
  for (const std::string& q : junk.problems)
    said = said || q.find("tied weights") != std::string::npos;
  EXPECT_TRUE(said);
}

// Every truncation and byte flip of a real program's JSON (tests/exported/mlp.pt2), packed again:
// an error or a program, never a crash (ASan checks the reads in the sanitizer job).
TEST(ExportedProgram, MutatedProgramsAreAnErrorOrAProgram) {
  const std::string pt2 = slurp(std::string(FLOPSPROF_EXPORTED_DIR) + "/mlp.pt2");
  const auto entries = flopsprof::detail::read_zip_directory(pt2, "mlp.pt2");
  std::string json;
  for (const auto& e : entries) {
    if (e.name.find("serialized_exported_program.json") != std::string::npos)
      json =
          flopsprof::detail::stored_member(flopsprof::detail::MemoryZipSource(pt2), e, "mlp.pt2");
  }
  ASSERT_GT(json.size(), 1000u);
  EXPECT_EQ(read_program(json).nodes.size(), 3u);
  size_t errors = 0, read = 0;
  auto attempt = [&](const std::string& j) {
    try {
      read_program(j);
      ++read;
    } catch (const Error&) {
      ++errors;
    }
  };
  for (size_t n = 0; n < json.size(); n += 7) attempt(json.substr(0, n));
  std::mt19937 rng(1);
  for (int k = 0; k < 3000; ++k) {
    std::string j = json;
    j[rng() % j.size()] = static_cast<char>(rng() & 0xff);
    attempt(j);
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(read, 0u);  // a flip inside a stack trace string changes nothing
}

}  // namespace
