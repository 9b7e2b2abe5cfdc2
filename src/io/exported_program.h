// torch.export's saved programs (.pt2, PyTorch 2.6's layout): the program JSON read into plain
// data (its graph's nodes, tensor metadata, module stacks and parameters), symbolic sizes
// resolved. No weights are read. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "flopsprof/formulas.h"
#include "io/sym_expr.h"
#include "io/zip_archive.h"

namespace flopsprof::detail {

/// A tensor's metadata (Graph.tensor_values), sizes resolved.
struct ExportedTensor {
  DType dtype = DType::kUnknown;
  std::vector<int64_t> sizes;
  bool contiguous = true;  ///< strides are row-major's (sizes 1 ignored)
  int64_t covered = -1;    ///< a broadcast view (a stride 0 over a size > 1): its elements
                           ///< in memory; -1 otherwise
  bool requires_grad = false;
};

/// One input of a node, as serialized (an argument with its default value is absent).
struct ExportedArg {
  enum class Kind : uint8_t {
    kNone,
    kTensor,           ///< `tensors[0]`
    kTensors,          ///< `tensors`
    kOptionalTensors,  ///< `tensors`, "" for None
    kInt,              ///< `i` (a SymInt resolved; a dtype, layout or memory format as c10's int)
    kInts,             ///< `ints`
    kFloat,            ///< `d`
    kFloats,           ///< `floats`
    kBool,             ///< `b`
    kString,           ///< `s`
    kOther,            ///< a device, a graph, a custom object, ...
  };
  std::string name;  ///< the schema's argument name
  Kind kind = Kind::kNone;
  std::vector<std::string> tensors;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string s;
};

/// One node of the graph.
struct ExportedNode {
  std::string target;    ///< as serialized: "torch.ops.aten.linear.default"
  std::string op;        ///< "aten::linear" (empty: not an operator overload)
  std::string overload;  ///< "" for "default", "Tensor", ...
  std::vector<ExportedArg> inputs;
  /// Its nn_module_stack: (dotted path, type's qualified name), outermost first; empty: the root's
  /// own op.
  std::vector<std::pair<std::string, std::string>> modules;
};

/// A parameter or buffer of the program, from its graph signature (its data is never read).
struct ExportedParameter {
  std::string fqn;     ///< "layers.0.attention.wq.weight"
  std::string tensor;  ///< its graph input (into ExportedProgram::tensors)
  bool buffer = false;
  /// An earlier parameter of the list that is the same tensor (tied weights: GPT-2's lm_head and
  /// wte), as the archive's state dict says; -1: none, or not known (`ExportedProgram::ties`).
  int same_as = -1;
};

/// A saved exported program.
struct ExportedProgram {
  int schema_major = 0, schema_minor = 0;
  std::string torch_version;  ///< as saved ("" when absent)
  std::string root_type;      ///< the root module's type ("__main__.Llama"), "" when unknown
  std::map<std::string, ExportedTensor> tensors;
  std::vector<ExportedNode> nodes;
  std::vector<ExportedParameter> parameters;
  /// Whether tied parameters are known: the archive's state dict was read for them (its
  /// serialized_state_dict.pt's pickle; no tensor data). False: absent (a PT2 archive spec's
  /// layout), or not readable (the reason in `problems` when some parameters could be tied).
  bool ties_known = false;
  std::vector<std::string> user_inputs;  ///< tensor names of the user's inputs (others: "")
  /// The symbols of the program's sizes and the values used for them (--dim, or the hint).
  std::map<std::string, int64_t> symbols;
  std::vector<std::string> problems;
};

/// The schema majors this reader knows (PyTorch 2.6 writes 8).
constexpr int kExportedSchemaMajor = 8;

/// Reads the program of the .pt2 archive in `source` (`name` names it in errors). Symbolic sizes
/// take `dims[symbol]`, else the hint saved with them. Throws `Error` naming `name` and the fix
/// for: not a zip archive, no program member (a TorchScript file, a later archive layout), a
/// member deflated or corrupt, JSON that does not parse or has not the 2.6 schema's shape, an
/// unknown schema major, a size whose symbol has neither a --dim nor a hint, a --dim naming no
/// symbol of the program. Cost: reads the program member (a few MB for a 7 B LLM) once.
ExportedProgram read_exported_program(const ZipSource& source, const std::string& name,
                                      const std::map<std::string, int64_t>& dims);

/// Whether the archive in `source` holds an exported program (a serialized_exported_program.json
/// member, or a PT2 archive's models/<name>.json). Throws as read_zip_directory.
bool is_exported_program(const ZipSource& source, const std::string& name);

}  // namespace flopsprof::detail
