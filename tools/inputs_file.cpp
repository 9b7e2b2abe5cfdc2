// --inputs FILE: saved tensors, checked as a zip archive before LibTorch reads them.
#include "inputs_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/import_read.h>

#include "archives.h"
#include "flopsprof/error.h"
#include "io/input_files.h"
#include "io/zip_archive.h"

namespace flopsprof::cli {
namespace {

const char* const kHow =
    "pass a tensor, or a tuple or list of tensors (one per forward argument), saved in Python "
    "with torch.save((x, y), \"inputs.pt\") (or torch.save(x, \"inputs.pt\") for one argument)";

// The start of a file written by torch.save(..., _use_new_zipfile_serialization=False): pickle
// protocol 2 and the legacy format's magic number (torch/serialization.py, MAGIC_NUMBER).
constexpr unsigned char kLegacySaveMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                              0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

[[noreturn]] void fail(const std::string& msg) { throw Error(msg); }

// Kind of a loaded value, for messages: "a dict", "an int".
std::string kind_of(const c10::IValue& v) {
  if (v.isGenericDict()) return "a dict";
  if (v.isNone()) return "None";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isBool()) return "a bool";
  if (v.isString()) return "a string";
  if (v.isTuple()) return "a tuple";
  if (v.isList()) return "a list";
  if (v.isObject()) return "an object";
  return std::string("a ") + v.tagKind();
}

}  // namespace

namespace {

// What torch.save writes: stored members whose CRC-32 matches, and a data.pkl.
void check_members(const detail::ZipSource& src, const std::vector<detail::ZipEntry>& entries,
                   const std::string& source) {
  bool pickle = false;
  for (const detail::ZipEntry& e : entries) {
    // torch.save stores every member; LibTorch's reader is given only what checks out.
    if (e.method != 0)
      fail(fmt::format("{}: member '{}' is compressed, which torch.save never writes", source,
                       e.name));
    detail::stored_member(src, e, source);
    const std::string suffix = "/data.pkl";
    pickle = pickle || (e.name.size() >= suffix.size() &&
                        e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) == 0);
  }
  if (!pickle) fail(fmt::format("{}: a zip archive without data.pkl, not saved tensors", source));
}

void check_not_legacy(const std::string& head, const std::string& source) {
  if (head.size() >= sizeof kLegacySaveMagic &&
      std::equal(std::begin(kLegacySaveMagic), std::end(kLegacySaveMagic),
                 reinterpret_cast<const unsigned char*>(head.data()))) {
    fail(source +
         ": the file is in torch.save's legacy format (_use_new_zipfile_serialization=False), "
         "which LibTorch cannot read; save it again with torch.save's default format");
  }
}

}  // namespace

void check_saved_tensors_archive(const std::string& data, const std::string& source) {
  check_not_legacy(data, source);
  const detail::MemoryZipSource src(data);
  check_members(src, detail::read_zip_directory(src, source), source);
}

std::vector<at::Tensor> load_inputs_file(const std::string& path) {
  const std::string source = "--inputs '" + path + "'";
  std::shared_ptr<Archive> archive;
  try {
    {
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          static_cast<uint64_t>(st.st_size) > kMaxInputsBytes)
        fail(fmt::format("cannot read {}: it holds {}, more than the {} read", source,
                         detail::size_text(st.st_size), detail::size_text(kMaxInputsBytes)));
    }
    // The legacy format has no zip directory: said as such, not as a broken zip.
    if (std::ifstream head(path, std::ios::binary); head) {
      std::string first(sizeof kLegacySaveMagic, '\0');
      head.read(first.data(), static_cast<std::streamsize>(first.size()));
      first.resize(static_cast<size_t>(head.gcount()));
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) check_not_legacy(first, source);
    }
    archive = std::make_shared<Archive>(path, "--inputs");
    check_members(*archive, archive->entries(), "cannot read " + source);
  } catch (const Error& e) {
    fail(std::string(e.what()) + "; " + kHow);
  }
  c10::IValue value;
  try {
    // Through the checked archive (every read bounded, records remembered), as
    // torch::pickle_load reads a buffer.
    caffe2::serialize::PyTorchStreamReader reader(archive);
    value = torch::jit::readArchiveAndTensors("data", "", "", c10::nullopt, c10::nullopt,
                                              c10::nullopt, reader);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    if (what.size() > 300) what = what.substr(0, 300) + "...";
    // LibTorch 1.x's unpickler lacks APPEND and SETITEM, which Python writes for a list of one
    // element and a dict of one key.
    const std::string old_unpickler =
        what.find("Unknown opcode") != std::string::npos
            ? "; this LibTorch cannot read every pickle opcode Python writes (LibTorch 1.x: a "
              "list of one element or a dict of one key), save a tensor or a tuple"
            : "";
    fail("cannot read " + source + " as saved tensors (" + what + ")" + old_unpickler + "; " +
         kHow);
  }
  std::vector<c10::IValue> items;
  if (value.isTensor()) {
    items.push_back(value);
  } else if (value.isTuple()) {
    items = value.toTupleRef().elements().vec();
  } else if (value.isList()) {
    items = value.toList().vec();
  } else {
    fail(source + " holds " + kind_of(value) + "; " + kHow);
  }
  if (items.empty()) fail(source + " holds an empty " + kind_of(value).substr(2) + "; " + kHow);
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].isTensor() || !items[i].toTensor().defined()) {
      fail(source + ": element " + std::to_string(i) + " of the " + kind_of(value).substr(2) +
           " is " + kind_of(items[i]) + ", not a tensor; " + kHow);
    }
    check_tensor(items[i].toTensor(), *archive, "element " + std::to_string(i),
                 "save the inputs with their data, on the CPU (x.cpu())");
    tensors.push_back(items[i].toTensor().detach());
  }
  return tensors;
}

}  // namespace flopsprof::cli
