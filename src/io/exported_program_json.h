// The program JSON of PyTorch 2.6's .pt2 layout (torch/_export/serde/schema.py, schema 8.x) read
// into plain data (io/exported_program.h), key by key: a foreign or corrupt document is refused
// with the key at fault.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "io/exported_program.h"

namespace flopsprof::detail {

/// The program in `doc` (the archive's serialized_exported_program.json, parsed), `name` the
/// archive's for messages, `dims` the sizes given for its symbolic dimensions (s0 = 8).
/// Throws Error naming the archive and what is wrong.
ExportedProgram program_from_json(const nlohmann::json& doc, const std::string& name,
                                  const std::map<std::string, int64_t>& dims);

}  // namespace flopsprof::detail
