// sympy expressions as torch.export writes symbolic sizes ("Mul(Integer(64), Symbol('s0',
// positive=True, integer=True))"): their symbols, and their value. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace flopsprof::detail {

/// The symbols `expr` names (Symbol('s0', ...)), in order, repeats kept.
std::vector<std::string> symbols_in(const std::string& expr);

/// The value of a sympy expression as torch.export writes one: Integer, Symbol, Add, Mul, Pow,
/// FloorDiv, CeilDiv, CleanDiv, IntTrueDiv, Mod, PythonMod, Max, Min, Neg, with Python's floor
/// semantics. `symbols` gives each symbol's value. Throws `Error` naming the expression (and
/// --dim) for anything else, an unknown symbol, a division by 0 or a value past 64 bits.
int64_t evaluate_sym_expr(const std::string& expr, const std::map<std::string, int64_t>& symbols);

}  // namespace flopsprof::detail
