// The program JSON of PyTorch 2.6's .pt2 layout read into plain data (exported_program_json.h).
#include "io/exported_program_json.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <set>

#include "flopsprof/error.h"
#include "io/sym_expr.h"

namespace flopsprof::detail {
namespace {

using json = nlohmann::json;

// ---- the program JSON -------------------------------------------------------------------------

class Reader {
 public:
  Reader(const std::string& name, const std::map<std::string, int64_t>& dims)
      : name_(name), dims_(dims) {}

  ExportedProgram read(const json& doc) {
    ExportedProgram p;
    if (!doc.is_object()) bad("the document is not a JSON object");
    const json& sv = at(doc, "schema_version", "the document");
    const int64_t major = integer(at(sv, "major", "schema_version"), "schema_version.major");
    const int64_t minor = integer(at(sv, "minor", "schema_version"), "schema_version.minor");
    if (major < 0 || major > 1000000 || minor < 0 || minor > 1000000)
      bad("schema_version is out of range");
    p.schema_major = static_cast<int>(major);
    p.schema_minor = static_cast<int>(minor);
    if (p.schema_major != kExportedSchemaMajor) {
      throw Error(name_ + ": an exported program of schema " + std::to_string(p.schema_major) +
                  "." + std::to_string(p.schema_minor) + ", which this flopsprof does not read " +
                  "(it reads schema " + std::to_string(kExportedSchemaMajor) +
                  ".x, PyTorch 2.6's torch.export.save); save it with PyTorch 2.6");
    }
    if (auto it = doc.find("torch_version"); it != doc.end() && it->is_string())
      p.torch_version = it->get<std::string>();
    const json& gm = at(doc, "graph_module", "the document");
    const json& g = at(gm, "graph", "graph_module");
    sym_ints_ = &at(g, "sym_int_values", "graph");
    const json& tv = at(g, "tensor_values", "graph");
    if (!tv.is_object()) bad("graph.tensor_values is not an object");
    collect_symbol_hints(tv);
    for (auto it = tv.begin(); it != tv.end(); ++it)
      p.tensors[it.key()] = tensor(it.value(), it.key());
    const json& nodes = at(g, "nodes", "graph");
    if (!nodes.is_array()) bad("graph.nodes is not an array");
    p.nodes.reserve(nodes.size());
    for (const json& n : nodes) p.nodes.push_back(node(n, p));
    signature(at(gm, "signature", "graph_module"), p);
    for (const ExportedParameter& q : p.parameters) {
      if (!p.tensors.count(q.tensor)) bad("the parameter " + q.fqn + " has no tensor metadata");
    }
    for (const auto& [sym, v] : dims_) {
      if (!seen_symbols_.count(sym)) {
        std::string known;
        for (const std::string& s : seen_symbols_) known += (known.empty() ? "" : ", ") + s;
        throw Error(
            name_ + ": --dim " + sym + "=" + std::to_string(v) +
            " names no symbol of the program (" +
            (known.empty() ? std::string("its sizes are all static") : "its symbols: " + known) +
            ")");
      }
    }
    p.symbols = used_;
    for (const std::string& e : hint_fallbacks_) {
      p.problems.push_back("exported program: the size " + e +
                           " has a function flopsprof does not evaluate; its value at export (its "
                           "hint) was used");
    }
    p.root_type = root_type_;
    return p;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw Error(name_ + ": not an exported program this flopsprof reads (" + what +
                "); save it with PyTorch 2.6's torch.export.save");
  }
  const json& at(const json& j, const char* key, const std::string& where) const {
    if (!j.is_object()) bad(where + " is not an object");
    auto it = j.find(key);
    if (it == j.end()) bad(where + " has no \"" + key + "\"");
    return *it;
  }
  int64_t integer(const json& j, const std::string& where) const {
    if (!j.is_number_integer()) bad(where + " is not an integer");
    return j.get<int64_t>();
  }
  // A float: a number, or a non-finite one as with_json_non_finite left it.
  double real(const json& j, const std::string& where) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (j.is_string() && j.get<std::string>() == "Infinity")
      return std::numeric_limits<double>::infinity();
    if (j.is_string() && j.get<std::string>() == "-Infinity")
      return -std::numeric_limits<double>::infinity();
    bad(where + " is not a number");
  }
  // A module path (or a parameter's): the module tree is built from its dotted prefixes, so a
  // hostile one must not make it deep or large.
  void check_path(const std::string& path, const std::string& where) const {
    if (path.size() > 4096 || std::count(path.begin(), path.end(), '.') > 256)
      bad(where + ": a module path longer than 4,096 characters or 256 levels");
  }
  // A serialized union: its one key.
  std::pair<std::string, const json*> one_of(const json& j, const std::string& where) const {
    if (!j.is_object() || j.size() != 1) bad(where + " is not a one-key union");
    return {j.begin().key(), &j.begin().value()};
  }

  int64_t sym_expr(const json& e, const std::string& where) {
    const std::string expr = at(e, "expr_str", where).is_string()
                                 ? at(e, "expr_str", where).get<std::string>()
                                 : std::string();
    if (expr.empty()) bad(where + " has no expression");
    const std::vector<std::string> syms = symbols_in(expr);
    // Each symbol's value: its --dim, else its own hint (that of a size that is the bare symbol,
    // symbol_hints_), so that a --dim for one symbol of an expression is never dropped.
    std::map<std::string, int64_t> values;
    std::string missing;
    bool any_given = false;
    for (const std::string& s : syms) {
      seen_symbols_.insert(s);
      if (auto d = dims_.find(s); d != dims_.end()) {
        values[s] = d->second;
        any_given = true;
      } else if (auto h = symbol_hints_.find(s); h != symbol_hints_.end()) {
        values[s] = h->second;
      } else if (missing.find(s) == std::string::npos) {
        missing += (missing.empty() ? "" : ", ") + s;
      }
    }
    std::optional<int64_t> hint;
    if (auto h = e.find("hint"); h != e.end() && h->is_object()) {
      auto [k, v] = one_of(*h, where + ".hint");
      if (k == "as_int" && v->is_number_integer()) hint = v->get<int64_t>();
    }
    if (missing.empty() && (any_given || !hint)) {
      try {
        const int64_t v = evaluate_sym_expr(expr, values);
        for (const auto& [s, x] : values) used_[s] = x;
        return v;
      } catch (const Error& err) {
        if (!hint || any_given) throw Error(name_ + ": " + err.what());
        // A function this evaluator lacks, with nothing given: the size export saw.
        hint_fallbacks_.insert(expr);
        return *hint;
      }
    }
    if (hint && !any_given) {  // every symbol at its hint: the size export saw
      for (const auto& [s, x] : values) used_.emplace(s, x);
      return *hint;
    }
    throw Error(name_ + ": the size " + expr + " needs a value for " + missing +
                "; give it with --dim NAME=VALUE");
  }
  // The hint of each size that is a bare symbol (Symbol('s0', ...)): every symbol's own value at
  // export, for expressions evaluated with some symbols given.
  void collect_symbol_hints(const json& tensor_values) {
    for (auto it = tensor_values.begin(); it != tensor_values.end(); ++it) {
      auto sizes = it.value().find("sizes");
      if (!it.value().is_object() || sizes == it.value().end() || !sizes->is_array()) continue;
      for (const json& s : *sizes) {
        if (!s.is_object() || s.size() != 1 || !s.contains("as_expr")) continue;
        const json& e = s["as_expr"];
        if (!e.is_object() || !e.contains("expr_str") || !e["expr_str"].is_string()) continue;
        const std::string expr = e["expr_str"].get<std::string>();
        const std::vector<std::string> syms = symbols_in(expr);
        auto h = e.find("hint");
        if (syms.size() != 1 || expr.rfind("Symbol(", 0) != 0 || h == e.end() || !h->is_object() ||
            !h->contains("as_int") || !(*h)["as_int"].is_number_integer())
          continue;
        symbol_hints_.emplace(syms[0], (*h)["as_int"].get<int64_t>());
      }
    }
  }
  // A SymInt: {"as_int": n} or {"as_expr": {...}}.
  int64_t sym_int(const json& j, const std::string& where) {
    auto [k, v] = one_of(j, where);
    if (k == "as_int") return integer(*v, where);
    if (k == "as_expr") return sym_expr(*v, where);
    bad(where + " is a " + k);
  }
  // A SymIntArgument: {"as_int": n} or {"as_name": a sym_int_values key}.
  int64_t sym_int_argument(const json& j, const std::string& where) {
    auto [k, v] = one_of(j, where);
    if (k == "as_int") return integer(*v, where);
    if (k == "as_name" && v->is_string()) {
      auto it = sym_ints_->find(v->get<std::string>());
      if (it == sym_ints_->end()) bad(where + " names an unknown symbolic int");
      return sym_int(*it, where);
    }
    bad(where + " is a " + k);
  }

  ExportedTensor tensor(const json& t, const std::string& tname) {
    const std::string where = "the tensor " + tname;
    ExportedTensor out;
    out.dtype = dtype(integer(at(t, "dtype", where), where + ".dtype"));
    const json& sizes = at(t, "sizes", where);
    if (!sizes.is_array()) bad(where + ".sizes is not an array");
    uint64_t elements = 1;
    for (const json& s : sizes) {
      const int64_t v = sym_int(s, where + ".sizes");
      if (v < 0) bad(where + " has a negative size");
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(v), &elements) ||
          elements > (uint64_t{1} << 62))
        bad(where + " has more than 2^62 elements");
      out.sizes.push_back(v);
    }
    if (auto st = t.find("strides");
        st != t.end() && st->is_array() && st->size() == out.sizes.size()) {
      std::vector<int64_t> strides;
      bool known = true;
      for (const json& s : *st) {
        auto [k, v] = one_of(s, where + ".strides");
        if (k == "as_int" && v->is_number_integer()) {
          strides.push_back(v->get<int64_t>());
        } else {
          known = false;  // symbolic strides: take the layout as contiguous
          break;
        }
      }
      if (known) {
        int64_t expected = 1, covered = 1;
        bool expanded = false;
        for (size_t d = out.sizes.size(); d-- > 0;) {
          if (out.sizes[d] != 1 && strides[d] != expected) out.contiguous = false;
          if (strides[d] == 0 && out.sizes[d] > 1) {
            expanded = true;
          } else if (__builtin_mul_overflow(covered, out.sizes[d], &covered)) {
            covered = 0;  // a size 0 elsewhere let the others grow: the tensor is empty
          }
          if (__builtin_mul_overflow(expected, out.sizes[d], &expected)) break;
        }
        if (expanded) out.covered = covered;
      }
    }
    if (auto rg = t.find("requires_grad"); rg != t.end() && rg->is_boolean())
      out.requires_grad = rg->get<bool>();
    return out;
  }

  // torch/_export/serde/schema.py's ScalarType to flopsprof's.
  static DType dtype(int64_t v) {
    switch (v) {
      case 1:
        return DType::kUInt8;
      case 2:
        return DType::kInt8;
      case 3:
        return DType::kInt16;
      case 4:
        return DType::kInt32;
      case 5:
        return DType::kInt64;
      case 6:
        return DType::kFloat16;
      case 7:
        return DType::kFloat32;
      case 8:
        return DType::kFloat64;
      case 10:
        return DType::kComplex64;
      case 11:
        return DType::kComplex128;
      case 12:
        return DType::kBool;
      case 13:
        return DType::kBFloat16;
      default:
        return DType::kUnknown;
    }
  }
  // The same enum as c10::ScalarType's int (what an op's dtype argument is, boxed).
  static int64_t c10_scalar_type(int64_t v) {
    static const int64_t table[] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15};
    if (v >= 1 && v <= 13) return table[v];
    if (v == 28) return 27;  // uint16
    return -1;
  }

  ExportedArg argument(const json& j, const std::string& where) {
    ExportedArg a;
    auto [k, v] = one_of(j, where);
    using K = ExportedArg::Kind;
    auto tensor_name = [&](const json& t) {
      const json& n = at(t, "name", where);
      if (!n.is_string()) bad(where + ": a tensor without a name");
      return n.get<std::string>();
    };
    if (k == "as_none") {
      a.kind = K::kNone;
    } else if (k == "as_tensor") {
      a.kind = K::kTensor;
      a.tensors.push_back(tensor_name(*v));
    } else if (k == "as_tensors" || k == "as_optional_tensors") {
      if (!v->is_array()) bad(where + " is not a list");
      a.kind = k == "as_tensors" ? K::kTensors : K::kOptionalTensors;
      for (const json& t : *v) {
        if (k == "as_tensors") {
          a.tensors.push_back(tensor_name(t));
        } else {
          auto [ok, ov] = one_of(t, where);
          a.tensors.push_back(ok == "as_tensor" ? tensor_name(*ov) : std::string());
        }
      }
    } else if (k == "as_int" || k == "as_sym_int") {
      a.kind = K::kInt;
      a.i = k == "as_int" ? integer(*v, where) : sym_int_argument(*v, where);
    } else if (k == "as_ints" || k == "as_sym_ints") {
      if (!v->is_array()) bad(where + " is not a list");
      a.kind = K::kInts;
      for (const json& x : *v)
        a.ints.push_back(k == "as_ints" ? integer(x, where) : sym_int_argument(x, where));
    } else if (k == "as_float" || k == "as_sym_float") {
      a.kind = K::kFloat;
      if (k == "as_float") {
        a.d = real(*v, where);
      } else {
        a.kind = K::kOther;  // a symbolic float: no formula reads one
      }
    } else if (k == "as_floats") {
      if (!v->is_array()) bad(where + " is not a list");
      a.kind = K::kFloats;
      for (const json& x : *v) {
        a.floats.push_back(real(x, where));
      }
    } else if (k == "as_bool") {
      if (!v->is_boolean()) bad(where + " is not a boolean");
      a.kind = K::kBool;
      a.b = v->get<bool>();
    } else if (k == "as_string") {
      if (!v->is_string()) bad(where + " is not a string");
      a.kind = K::kString;
      a.s = v->get<std::string>();
    } else if (k == "as_scalar_type") {
      a.kind = K::kInt;
      a.i = c10_scalar_type(integer(*v, where));
    } else if (k == "as_layout" || k == "as_memory_format") {
      a.kind = K::kInt;  // their values are not read by any formula
      a.i = integer(*v, where);
    } else {
      a.kind = K::kOther;  // a device, a graph, a custom object, an operator, lists of bools
    }
    return a;
  }

  // "L__self__,,__main__.Llama;L__self__layers.0,layers.0,__main__.Block": entries by ';',
  // fields by ',' outside parentheses (a Sequential's slice: "layer.slice(1, None, None)").
  std::vector<std::pair<std::string, std::string>> module_stack(const std::string& s,
                                                                const std::string& where) {
    std::vector<std::pair<std::string, std::string>> out;
    size_t b = 0;
    while (b <= s.size()) {
      size_t e = s.find(';', b);
      if (e == std::string::npos) e = s.size();
      const std::string entry = s.substr(b, e - b);
      b = e + 1;
      if (entry.empty()) continue;
      std::vector<std::string> fields;
      int depth = 0;
      std::string cur;
      for (char c : entry) {
        if (c == '(') ++depth;
        if (c == ')') --depth;
        if (c == ',' && depth == 0) {
          fields.push_back(cur);
          cur.clear();
        } else {
          cur += c;
        }
      }
      fields.push_back(cur);
      if (fields.size() != 3) bad(where + ": a module stack entry without key, path and type");
      // An op export placed outside every module (sym_size of an input).
      if (fields[0] == "_empty_nn_module_stack_from_metadata_hook") continue;
      if (fields[1].empty()) {  // the root itself
        if (root_type_.empty()) root_type_ = fields[2];
        continue;
      }
      check_path(fields[1], where);
      out.emplace_back(fields[1], fields[2]);
    }
    return out;
  }

  ExportedNode node(const json& n, const ExportedProgram& p) {
    ExportedNode out;
    const json& target = at(n, "target", "a node");
    if (!target.is_string()) bad("a node's target is not a string");
    out.target = target.get<std::string>();
    const std::string where = "the node " + out.target;
    // torch.ops.<namespace>.<name>.<overload>
    if (out.target.rfind("torch.ops.", 0) == 0) {
      const std::string rest = out.target.substr(10);
      const size_t d1 = rest.find('.');
      const size_t d2 = d1 == std::string::npos ? d1 : rest.find('.', d1 + 1);
      if (d1 != std::string::npos) {
        out.op = rest.substr(0, d1) + "::" +
                 rest.substr(d1 + 1, d2 == std::string::npos ? std::string::npos : d2 - d1 - 1);
        out.overload = d2 == std::string::npos ? "" : rest.substr(d2 + 1);
        if (out.overload == "default") out.overload.clear();
      }
    }
    const json& inputs = at(n, "inputs", where);
    if (!inputs.is_array()) bad(where + ": inputs is not an array");
    for (const json& in : inputs) {
      const json& nm = at(in, "name", where + "'s input");
      ExportedArg a = argument(at(in, "arg", where + "'s input"), where + "'s input");
      a.name = nm.is_string() ? nm.get<std::string>() : std::string();
      for (const std::string& t : a.tensors) {
        if (!t.empty() && !p.tensors.count(t)) bad(where + " reads the unknown tensor " + t);
      }
      out.inputs.push_back(std::move(a));
    }
    if (auto md = n.find("metadata"); md != n.end() && md->is_object()) {
      if (auto st = md->find("nn_module_stack"); st != md->end() && st->is_string())
        out.modules = module_stack(st->get<std::string>(), where);
    }
    return out;
  }

  void signature(const json& sig, ExportedProgram& p) {
    const json& specs = at(sig, "input_specs", "graph_module.signature");
    if (!specs.is_array()) bad("input_specs is not an array");
    for (const json& s : specs) {
      auto [k, v] = one_of(s, "an input spec");
      auto tensor_arg = [&](const json& arg) -> std::string {
        const json& nm = at(arg, "name", "an input spec's arg");
        if (!nm.is_string()) bad("an input spec's tensor has no name");
        return nm.get<std::string>();
      };
      if (k == "parameter" || k == "buffer") {
        ExportedParameter q;
        q.buffer = k == "buffer";
        q.tensor = tensor_arg(at(*v, "arg", "an input spec"));
        const json& f = at(*v, q.buffer ? "buffer_name" : "parameter_name", "an input spec");
        if (!f.is_string()) bad("an input spec's name is not a string");
        q.fqn = f.get<std::string>();
        check_path(q.fqn, "the parameter " + q.fqn.substr(0, 100));
        p.parameters.push_back(std::move(q));
      } else if (k == "user_input") {
        auto [ak, av] = one_of(at(*v, "arg", "a user input"), "a user input");
        p.user_inputs.push_back(ak == "as_tensor" ? tensor_arg(*av) : std::string());
      }
    }
  }

  const std::string& name_;
  const std::map<std::string, int64_t>& dims_;
  const json* sym_ints_ = nullptr;
  std::set<std::string> seen_symbols_;
  std::map<std::string, int64_t> symbol_hints_;
  std::set<std::string> hint_fallbacks_;
  std::map<std::string, int64_t> used_;
  std::string root_type_;
};

}  // namespace

ExportedProgram program_from_json(const nlohmann::json& doc, const std::string& name,
                                  const std::map<std::string, int64_t>& dims) {
  return Reader(name, dims).read(doc);
}

}  // namespace flopsprof::detail
