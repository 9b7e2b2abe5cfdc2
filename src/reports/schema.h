// The JSON documents' versions, one constant each: the writers stamp them, `flopsprof diff`'s
// reader accepts up to them (docs/json.md, docs/diff.md).
#pragma once

#include <string>

namespace flopsprof::detail {

/// `schema_version` of a profile's JSON (reports/report_json.cpp); the reader reads 1 to this.
constexpr int kProfileSchemaVersion = 2;

/// `diff_schema_version` of `flopsprof diff --json` (compare/diff_json.cpp).
constexpr int kDiffSchemaVersion = 1;

/// A module's name as the reports show it: the root (name "") is "(root)".
inline std::string module_label(const std::string& name) { return name.empty() ? "(root)" : name; }

}  // namespace flopsprof::detail
