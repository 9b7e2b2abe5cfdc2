// torch.export's saved programs: the .pt2 archive's members found and read (the program JSON
// itself is read by exported_program_json.cpp).
#include "io/exported_program.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flopsprof/error.h"
#include "io/exported_program_json.h"
#include "io/pickle_scan.h"

namespace flopsprof::detail {
namespace {

using json = nlohmann::json;

constexpr const char* kProgramMember = "serialized_exported_program.json";

// Python's json module writes the non-finite floats (a mask's fill value) as Infinity, -Infinity
// and NaN, which JSON lacks: outside strings they become the strings "Infinity" (after the sign
// as "-Infinity") and null, which the float reader takes back.
std::string with_json_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (text.compare(i, 9, "-Infinity") == 0 || text.compare(i, 8, "Infinity") == 0) {
      const bool negative = c == '-';
      out += negative ? "\"-Infinity\"" : "\"Infinity\"";
      i += negative ? 8 : 7;
    } else if (text.compare(i, 3, "NaN") == 0) {
      out += "null";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

bool ends_with_member(const std::string& n, const char* member) {
  const size_t len = std::char_traits<char>::length(member);
  return n.size() >= len && n.compare(n.size() - len, len, member) == 0 &&
         (n.size() == len || n[n.size() - len - 1] == '/');
}

// The program JSONs of an archive: PyTorch 2.6's <root>/serialized_exported_program.json, or the
// PT2 archive spec's (later PyTorch: an archive_format member) <root>/models/<name>.json, one per
// program.
std::vector<const ZipEntry*> program_members(const std::vector<ZipEntry>& entries) {
  std::vector<const ZipEntry*> out;
  bool spec = false;
  for (const ZipEntry& e : entries) {
    if (ends_with_member(e.name, kProgramMember)) return {&e};
    spec = spec || ends_with_member(e.name, "archive_format");
  }
  if (!spec) return out;
  for (const ZipEntry& e : entries) {
    const size_t at = e.name.find("models/");
    if (at != std::string::npos && (at == 0 || e.name[at - 1] == '/') && e.name.size() > 5 &&
        e.name.compare(e.name.size() - 5, 5, ".json") == 0 &&
        e.name.find('/', at + 7) == std::string::npos)
      out.push_back(&e);
  }
  return out;
}

// A member of an archive as an archive of its own (torch.save's zip inside a .pt2).
class SliceSource : public ZipSource {
 public:
  SliceSource(const ZipSource& outer, uint64_t offset, uint64_t size)
      : outer_(outer), offset_(offset), size_(size) {}
  uint64_t size() const override { return size_; }
  std::string read(uint64_t offset, uint64_t n) const override {
    return outer_.read(offset_ + offset, n);
  }

 private:
  const ZipSource& outer_;
  uint64_t offset_, size_;
};

// Which parameters are one tensor: torch.save writes a tensor once and refers to it under its
// other names (the pickle's memo). Reads the state dict's directory and its data.pkl only.
void find_ties(const ZipSource& source, const std::vector<ZipEntry>& entries,
               const std::string& name, ExportedProgram& p) {
  const ZipEntry* sd = nullptr;
  for (const ZipEntry& e : entries) {
    if (ends_with_member(e.name, "serialized_state_dict.pt")) sd = &e;
  }
  std::string why;
  std::optional<std::map<std::string, uint64_t>> ids;
  try {
    // A PT2 archive spec's layout keeps its weights apart, with a config this reader does not read.
    if (sd == nullptr) throw Error("the archive has no serialized_state_dict.pt");
    if (sd->method != 0) throw Error("its state dict is compressed");
    const SliceSource inner(source, sd->data_offset, sd->size);
    const std::string label = name + "'s serialized_state_dict.pt";
    const std::vector<ZipEntry> members = read_zip_directory(inner, label);
    const ZipEntry* pkl = nullptr;
    for (const ZipEntry& e : members) {
      if (ends_with_member(e.name, "data.pkl")) pkl = &e;
    }
    if (pkl == nullptr) throw Error("its state dict has no data.pkl");
    ids = pickled_dict_identities(stored_member(inner, *pkl, label));
    if (!ids) why = "its state dict's pickle is not one this reader follows";
  } catch (const Error& e) {
    why = e.what();
  }
  if (!ids) {
    // Said only where it matters: two parameters of one shape and dtype may be one tensor.
    std::set<std::pair<DType, std::vector<int64_t>>> seen;
    bool could = false;
    for (const ExportedParameter& q : p.parameters) {
      const ExportedTensor& t = p.tensors.at(q.tensor);
      could = could || !seen.insert({t.dtype, t.sizes}).second;
    }
    if (could) {
      p.problems.push_back(
          "exported program: which parameters are one tensor (tied weights) is not known (" + why +
          "): each parameter name is counted, so a tied weight is counted twice in the params");
    }
    return;
  }
  p.ties_known = true;
  std::map<uint64_t, int> first;
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    auto it = ids->find(p.parameters[i].fqn);
    if (it == ids->end()) continue;
    auto [f, inserted] = first.emplace(it->second, static_cast<int>(i));
    if (!inserted) p.parameters[i].same_as = f->second;
  }
}

}  // namespace

bool is_exported_program(const ZipSource& source, const std::string& name) {
  return !program_members(read_zip_directory(source, name)).empty();
}

ExportedProgram read_exported_program(const ZipSource& source, const std::string& name,
                                      const std::map<std::string, int64_t>& dims) {
  const std::vector<ZipEntry> entries = read_zip_directory(source, name);
  const std::vector<const ZipEntry*> members = program_members(entries);
  if (members.empty()) {
    throw Error(name + ": no " + std::string(kProgramMember) +
                " (nor a PT2 archive's models/<name>.json) in the archive: not a program saved by "
                "torch.export.save (a TorchScript file is profiled by running it: "
                "torch::jit::load and flopsprof::JitModel, or `flopsprof MODEL --input ...`)");
  }
  if (members.size() > 1) {
    std::string names;
    for (const ZipEntry* m : members) names += (names.empty() ? "" : ", ") + m->name;
    throw Error(name + ": the archive holds " + std::to_string(members.size()) + " programs (" +
                names +
                "); this reader takes an archive of one program: save "
                "each with torch.export.save");
  }
  const ZipEntry* e = members[0];
  const std::string text = stored_member(source, *e, name);
  json doc = json::parse(with_json_non_finite(text), nullptr, false);
  if (doc.is_discarded()) {
    throw Error(name + ": its " + e->name +
                " is not valid JSON (a truncated or corrupt archive); save it again");
  }
  ExportedProgram p = program_from_json(doc, name, dims);
  find_ties(source, entries, name, p);
  return p;
}

}  // namespace flopsprof::detail
