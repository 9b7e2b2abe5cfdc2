// profile_exported's pipeline after the archive is read (flopsprof/exported.h): for tests that
// feed it a program read from memory.
#pragma once

#include <string>

#include "flopsprof/exported.h"
#include "io/exported_program.h"

namespace flopsprof::detail {

/// The profile of `program` (`label` names it in errors), as profile_exported's.
ProfileResult profile_program(const ExportedProgram& program, const std::string& label,
                              const ExportedOptions& options);

}  // namespace flopsprof::detail
