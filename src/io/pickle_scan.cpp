// A pickle read for object identity only (io/pickle_scan.h).
#include "io/pickle_scan.h"

#include <cstring>
#include <vector>

namespace flopsprof::detail {
namespace {

// What an opcode reads after it.
enum class Operand : uint8_t {
  kNone,
  kArg1,
  kArg2,
  kArg4,
  kArg8,  // a little-endian integer of 1, 2, 4, 8 bytes
  kBytes1,
  kBytes4,
  kBytes8,    // that many bytes, counted by an integer of 1, 4, 8 bytes
  kLine,      // a line (protocol 0)
  kTwoLines,  // two lines (GLOBAL: module, name)
};

// Opcodes whose object is opaque: their operand, how many objects they pop, whether they push.
struct SimpleOp {
  uint8_t op;
  Operand operand;
  uint8_t pops;
  bool push;
};
constexpr SimpleOp kSimpleOps[] = {
    {0x80, Operand::kArg1, 0, false},    // PROTO
    {0x95, Operand::kArg8, 0, false},    // FRAME
    {'}', Operand::kNone, 0, true},      // EMPTY_DICT
    {']', Operand::kNone, 0, true},      // EMPTY_LIST
    {')', Operand::kNone, 0, true},      // EMPTY_TUPLE
    {0x8f, Operand::kNone, 0, true},     // EMPTY_SET
    {'N', Operand::kNone, 0, true},      // NONE
    {0x88, Operand::kNone, 0, true},     // NEWTRUE
    {0x89, Operand::kNone, 0, true},     // NEWFALSE
    {'T', Operand::kBytes4, 0, true},    // BINSTRING
    {'B', Operand::kBytes4, 0, true},    // BINBYTES
    {'U', Operand::kBytes1, 0, true},    // SHORT_BINSTRING
    {'C', Operand::kBytes1, 0, true},    // SHORT_BINBYTES
    {0x8e, Operand::kBytes8, 0, true},   // BINBYTES8
    {0x96, Operand::kBytes8, 0, true},   // BYTEARRAY8
    {'I', Operand::kLine, 0, true},      // INT
    {'L', Operand::kLine, 0, true},      // LONG
    {'F', Operand::kLine, 0, true},      // FLOAT
    {'J', Operand::kArg4, 0, true},      // BININT
    {'K', Operand::kArg1, 0, true},      // BININT1
    {'M', Operand::kArg2, 0, true},      // BININT2
    {'G', Operand::kArg8, 0, true},      // BINFLOAT
    {0x8a, Operand::kBytes1, 0, true},   // LONG1
    {0x8b, Operand::kBytes4, 0, true},   // LONG4
    {'c', Operand::kTwoLines, 0, true},  // GLOBAL
    {0x93, Operand::kNone, 2, true},     // STACK_GLOBAL
    {0x85, Operand::kNone, 1, true},     // TUPLE1
    {0x86, Operand::kNone, 2, true},     // TUPLE2
    {0x87, Operand::kNone, 3, true},     // TUPLE3
    {'R', Operand::kNone, 2, true},      // REDUCE
    {0x81, Operand::kNone, 2, true},     // NEWOBJ
    {0x92, Operand::kNone, 3, true},     // NEWOBJ_EX
    {'Q', Operand::kNone, 1, true},      // BINPERSID
    {'P', Operand::kLine, 0, true},      // PERSID
    {'b', Operand::kNone, 1, false},     // BUILD
    {'a', Operand::kNone, 1, false},     // APPEND
    {'0', Operand::kNone, 1, false},     // POP
};

class Scanner {
 public:
  explicit Scanner(std::string_view b) : b_(b) {}

  std::optional<std::map<std::string, uint64_t>> run() {
    while (p_ < b_.size()) {
      const uint8_t op = static_cast<uint8_t>(b_[p_++]);
      if (op == '.') return ok_ ? std::optional(std::move(items_)) : std::nullopt;
      if (!step(op) || !ok_) return std::nullopt;
    }
    return std::nullopt;  // no STOP
  }

 private:
  // A little-endian unsigned argument of `n` bytes.
  uint64_t arg(size_t n) {
    if (p_ + n > b_.size()) return fail();
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(b_[p_ + k])) << (8 * k);
    p_ += n;
    return v;
  }
  std::string_view bytes(uint64_t n) {
    if (n > b_.size() - p_) {
      fail();
      return {};
    }
    std::string_view s = b_.substr(p_, n);
    p_ += n;
    return s;
  }
  std::string_view line() {
    const size_t e = b_.find('\n', p_);
    if (e == std::string_view::npos) {
      fail();
      return {};
    }
    std::string_view s = b_.substr(p_, e - p_);
    p_ = e + 1;
    return s;
  }
  uint64_t fail() {
    ok_ = false;
    return 0;
  }
  uint64_t make() { return next_++; }
  void push(uint64_t id) { stack_.push_back(id); }
  void push_new() { push(make()); }
  uint64_t pop() {
    if (stack_.size() <= floor()) return fail();
    const uint64_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // Pops back to the last mark; returns what was above it, in order.
  std::vector<uint64_t> pop_mark() {
    if (marks_.empty()) {
      fail();
      return {};
    }
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint64_t> out(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return out;
  }
  void memo_put(uint64_t index) {
    if (stack_.empty()) {
      fail();
      return;
    }
    memo_[index] = stack_.back();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) {
      fail();
      return;
    }
    push(it->second);
  }
  void string(std::string_view s) {
    const uint64_t id = make();
    strings_[id] = std::string(s);
    push(id);
  }
  // key/value pairs set on the object under them: kept when it is the bottom object.
  void set_items(const std::vector<uint64_t>& kv, bool bottom) {
    if (kv.size() % 2 != 0) {
      fail();
      return;
    }
    if (!bottom) return;
    for (size_t k = 0; k + 1 < kv.size(); k += 2) {
      auto s = strings_.find(kv[k]);
      if (s != strings_.end()) items_[s->second] = kv[k + 1];
    }
  }

  // An opcode that reads its operand, pops `pops` objects and pushes a new one (or not).
  bool step(uint8_t op) {
    for (const SimpleOp& o : kSimpleOps) {
      if (o.op != op) continue;
      operand(o.operand);
      for (int k = 0; k < o.pops; ++k) pop();
      if (o.push) push_new();
      return true;
    }
    return structural(op);
  }

  void operand(Operand o) {
    switch (o) {
      case Operand::kNone:
        return;
      case Operand::kArg1:
        arg(1);
        return;
      case Operand::kArg2:
        arg(2);
        return;
      case Operand::kArg4:
        arg(4);
        return;
      case Operand::kArg8:
        arg(8);
        return;
      case Operand::kBytes1:
        bytes(arg(1));
        return;
      case Operand::kBytes4:
        bytes(arg(4));
        return;
      case Operand::kBytes8:
        bytes(arg(8));
        return;
      case Operand::kLine:
        line();
        return;
      case Operand::kTwoLines:
        line();
        line();
        return;
    }
  }

  // The opcodes that mark, memoize, name strings or set items (what identity needs).
  bool structural(uint8_t op) {
    switch (op) {
      case '(':  // MARK
        marks_.push_back(stack_.size());
        return true;
      case 'q':  // BINPUT
        memo_put(arg(1));
        return true;
      case 'r':  // LONG_BINPUT
        memo_put(arg(4));
        return true;
      case 0x94:  // MEMOIZE
        memo_put(memo_.size());
        return true;
      case 'h':  // BINGET
        memo_get(arg(1));
        return true;
      case 'j':  // LONG_BINGET
        memo_get(arg(4));
        return true;
      case 'p':  // PUT
        memo_put(std::strtoull(std::string(line()).c_str(), nullptr, 10));
        return true;
      case 'g':  // GET
        memo_get(std::strtoull(std::string(line()).c_str(), nullptr, 10));
        return true;
      case 'X':  // BINUNICODE
        string(bytes(arg(4)));
        return true;
      case 0x8c:  // SHORT_BINUNICODE
        string(bytes(arg(1)));
        return true;
      case 0x8d:  // BINUNICODE8
        string(bytes(arg(8)));
        return true;
      case 'V':
      case 'S':  // UNICODE, STRING (protocol 0)
        string(line());
        return true;
      case 't':
      case 'l':
      case 'd':
      case 0x91:  // TUPLE, LIST, DICT, FROZENSET
        pop_mark();
        push_new();
        return true;
      case 'e':
      case 0x90:  // APPENDS, ADDITEMS
        pop_mark();
        return true;
      case 's': {  // SETITEM
        const uint64_t v = pop(), k = pop();
        set_items({k, v}, stack_.size() == 1);
        return true;
      }
      case 'u': {  // SETITEMS
        std::vector<uint64_t> kv = pop_mark();
        set_items(kv, stack_.size() == 1);
        return true;
      }
      case '2':  // DUP
        if (stack_.empty()) return false;
        push(stack_.back());
        return true;
      default:
        return false;
    }
  }

  std::string_view b_;
  size_t p_ = 0;
  bool ok_ = true;
  uint64_t next_ = 1;
  std::vector<uint64_t> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, uint64_t> memo_;
  std::map<uint64_t, std::string> strings_;
  std::map<std::string, uint64_t> items_;
};

}  // namespace

std::optional<std::map<std::string, uint64_t>> pickled_dict_identities(std::string_view pickle) {
  return Scanner(pickle).run();
}

}  // namespace flopsprof::detail
