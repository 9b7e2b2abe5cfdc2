// sympy expressions as torch.export writes symbolic sizes (io/sym_expr.h).
#include "io/sym_expr.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "flopsprof/error.h"

namespace flopsprof::detail {
namespace {

// A parse of sympy's srepr form: Name(args...), 'string', integers, key=value (skipped).
class ExprParser {
 public:
  ExprParser(const std::string& text, const std::map<std::string, int64_t>& symbols)
      : t_(text), symbols_(symbols) {}

  int64_t parse() {
    const int64_t v = value();
    skip_space();
    if (p_ != t_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("the symbolic size \"" + t_ + "\" cannot be evaluated (" + what + ")");
  }
  void skip_space() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool eat(char c) {
    skip_space();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  std::string identifier() {
    skip_space();
    size_t b = p_;
    while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_'))
      ++p_;
    return t_.substr(b, p_ - b);
  }
  std::string quoted() {
    skip_space();
    if (p_ >= t_.size() || (t_[p_] != '\'' && t_[p_] != '"')) fail("a symbol without a name");
    const char q = t_[p_++];
    size_t b = p_;
    while (p_ < t_.size() && t_[p_] != q) ++p_;
    if (p_ >= t_.size()) fail("an unterminated name");
    return t_.substr(b, p_++ - b);
  }
  int64_t number() {
    skip_space();
    size_t b = p_;
    if (p_ < t_.size() && (t_[p_] == '-' || t_[p_] == '+')) ++p_;
    while (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) ++p_;
    if (b == p_) fail("a number expected");
    try {
      return std::stoll(t_.substr(b, p_ - b));
    } catch (const std::exception&) {
      fail("a number out of range");
    }
  }
  // Skips a `key=value` argument (Symbol's assumptions).
  void skip_keyword() {
    while (p_ < t_.size() && t_[p_] != ',' && t_[p_] != ')') ++p_;
  }
  static int64_t checked(__int128 v, ExprParser* self) {
    if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
      self->fail("a value past 64 bits");
    return static_cast<int64_t>(v);
  }
  std::vector<int64_t> arguments() {
    std::vector<int64_t> out;
    if (eat(')')) return out;
    do {
      skip_space();
      // key=value: an identifier followed by '='
      size_t save = p_;
      std::string id = identifier();
      if (!id.empty() && eat('=')) {
        skip_keyword();
        continue;
      }
      p_ = save;
      out.push_back(value());
    } while (eat(','));
    if (!eat(')')) fail("')' expected");
    return out;
  }
  int64_t value() {
    // Nested calls recurse: a hostile expression must not exhaust the stack.
    if (++depth_ > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
    const int64_t v = call();
    --depth_;
    return v;
  }
  int64_t call() {
    skip_space();
    if (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '-'))
      return number();
    const std::string f = identifier();
    if (f.empty()) fail("an expression expected");
    if (!eat('(')) fail("'(' expected after " + f);
    if (f == "Symbol") {
      const std::string name = quoted();
      while (eat(',')) {
        identifier();
        if (eat('=')) skip_keyword();
      }
      if (!eat(')')) fail("')' expected");
      auto it = symbols_.find(name);
      if (it == symbols_.end()) fail("no value for the symbol " + name);
      return it->second;
    }
    if (f == "Integer") {
      const int64_t v = number();
      if (!eat(')')) fail("')' expected");
      return v;
    }
    const std::vector<int64_t> a = arguments();
    auto need = [&](size_t n) {
      if (a.size() != n) fail(f + " with " + std::to_string(a.size()) + " arguments");
    };
    if (f == "Add" || f == "Mul") {
      if (a.empty()) fail(f + " with no arguments");
      __int128 v = a[0];
      for (size_t k = 1; k < a.size(); ++k) v = checked(f == "Add" ? v + a[k] : v * a[k], this);
      return checked(v, this);
    }
    if (f == "Max" || f == "Min") {
      if (a.empty()) fail(f + " with no arguments");
      int64_t v = a[0];
      for (int64_t x : a) v = f == "Max" ? std::max(v, x) : std::min(v, x);
      return v;
    }
    if (f == "Neg") {
      need(1);
      return checked(-static_cast<__int128>(a[0]), this);
    }
    if (f == "Pow") {
      need(2);
      if (a[1] < 0) fail("a negative power");
      if (a[0] == 0 || a[0] == 1) return a[1] == 0 ? 1 : a[0];
      if (a[0] == -1) return a[1] % 2 == 0 ? 1 : -1;
      __int128 v = 1;  // |base| >= 2: past 64 bits within 64 steps
      for (int64_t k = 0; k < a[1]; ++k) v = checked(v * a[0], this);
      return static_cast<int64_t>(v);
    }
    if (f == "FloorDiv" || f == "CeilDiv" || f == "CleanDiv" || f == "IntTrueDiv" || f == "Mod" ||
        f == "PythonMod") {
      need(2);
      if (a[1] == 0) fail("a division by 0");
      // In 128 bits: INT64_MIN / -1 does not fit in 64.
      __int128 q = static_cast<__int128>(a[0]) / a[1], r = static_cast<__int128>(a[0]) % a[1];
      if (r != 0 && ((r < 0) != (a[1] < 0))) {  // Python's floor semantics
        --q;
        r += a[1];
      }
      if (f == "Mod" || f == "PythonMod") return checked(r, this);
      if (f == "CeilDiv") return checked(r != 0 ? q + 1 : q, this);
      return checked(q, this);
    }
    fail("the function " + f + " is not known");
  }

  static constexpr int kMaxDepth = 256;
  const std::string& t_;
  const std::map<std::string, int64_t>& symbols_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

// The symbols an expression names (Symbol('s0', ...)).
std::vector<std::string> symbols_in(const std::string& expr) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = expr.find("Symbol(", at)) != std::string::npos) {
    at += 7;
    while (at < expr.size() && expr[at] == ' ') ++at;
    if (at >= expr.size() || (expr[at] != '\'' && expr[at] != '"')) continue;
    const char q = expr[at++];
    size_t end = expr.find(q, at);
    if (end == std::string::npos) break;
    out.push_back(expr.substr(at, end - at));
    at = end;
  }
  return out;
}

int64_t evaluate_sym_expr(const std::string& expr, const std::map<std::string, int64_t>& symbols) {
  return ExprParser(expr, symbols).parse();
}

}  // namespace flopsprof::detail
