// A pickle read for object identity only (io/pickle_scan.h).
#include "io/pickle_scan.h"

#include <cstring>
#include <vector>

namespace flopsprof::detail {
namespace {

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

  bool step(uint8_t op) {
    switch (op) {
      case 0x80:
        arg(1);
        return true;  // PROTO
      case 0x95:
        arg(8);
        return true;  // FRAME
      case '(':
        marks_.push_back(stack_.size());
        return true;  // MARK
      case '}':
      case ']':
      case ')':
      case 0x8f:  // EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, EMPTY_SET
      case 'N':
      case 0x88:
      case 0x89:  // NONE, NEWTRUE, NEWFALSE
        push_new();
        return true;
      case 'q':
        memo_put(arg(1));
        return true;  // BINPUT
      case 'r':
        memo_put(arg(4));
        return true;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        return true;  // MEMOIZE
      case 'h':
        memo_get(arg(1));
        return true;  // BINGET
      case 'j':
        memo_get(arg(4));
        return true;  // LONG_BINGET
      case 'p':
        memo_put(std::strtoull(std::string(line()).c_str(), nullptr, 10));
        return true;
      case 'g':
        memo_get(std::strtoull(std::string(line()).c_str(), nullptr, 10));
        return true;
      case 'X':
        string(bytes(arg(4)));
        return true;  // BINUNICODE
      case 0x8c:
        string(bytes(arg(1)));
        return true;  // SHORT_BINUNICODE
      case 0x8d:
        string(bytes(arg(8)));
        return true;  // BINUNICODE8
      case 'T':
      case 'B':
        bytes(arg(4));
        push_new();
        return true;  // BINSTRING, BINBYTES
      case 'U':
      case 'C':
        bytes(arg(1));
        push_new();
        return true;  // SHORT_BINSTRING, _BINBYTES
      case 0x8e:
      case 0x96:
        bytes(arg(8));
        push_new();
        return true;  // BINBYTES8, BYTEARRAY8
      case 'V':
      case 'S':
        string(line());
        return true;  // UNICODE, STRING (protocol 0)
      case 'I':
      case 'L':
      case 'F':
        line();
        push_new();
        return true;  // INT, LONG, FLOAT
      case 'J':
        arg(4);
        push_new();
        return true;  // BININT
      case 'K':
        arg(1);
        push_new();
        return true;  // BININT1
      case 'M':
        arg(2);
        push_new();
        return true;  // BININT2
      case 'G':
        arg(8);
        push_new();
        return true;  // BINFLOAT
      case 0x8a:
        bytes(arg(1));
        push_new();
        return true;  // LONG1
      case 0x8b:
        bytes(arg(4));
        push_new();
        return true;  // LONG4
      case 'c':
        line();
        line();
        push_new();
        return true;  // GLOBAL
      case 0x93:
        pop();
        pop();
        push_new();
        return true;  // STACK_GLOBAL
      case 0x85:
        pop();
        push_new();
        return true;  // TUPLE1
      case 0x86:
        pop();
        pop();
        push_new();
        return true;  // TUPLE2
      case 0x87:
        pop();
        pop();
        pop();
        push_new();
        return true;  // TUPLE3
      case 't':
      case 'l':
      case 'd':
      case 0x91:  // TUPLE, LIST, DICT, FROZENSET
        pop_mark();
        push_new();
        return true;
      case 'R':
      case 0x81:
        pop();
        pop();
        push_new();
        return true;  // REDUCE, NEWOBJ
      case 0x92:
        pop();
        pop();
        pop();
        push_new();
        return true;  // NEWOBJ_EX
      case 'Q':
        pop();
        push_new();
        return true;  // BINPERSID
      case 'P':
        line();
        push_new();
        return true;  // PERSID
      case 'b':
        pop();
        return true;  // BUILD
      case 'a':
        pop();
        return true;  // APPEND
      case 'e':
      case 0x90:
        pop_mark();
        return true;  // APPENDS, ADDITEMS
      case 's': {     // SETITEM
        const uint64_t v = pop(), k = pop();
        set_items({k, v}, stack_.size() == 1);
        return true;
      }
      case 'u': {  // SETITEMS
        std::vector<uint64_t> kv = pop_mark();
        set_items(kv, stack_.size() == 1);
        return true;
      }
      case '0':
        pop();
        return true;  // POP
      case '2': {     // DUP
        if (stack_.empty()) return false;
        push(stack_.back());
        return true;
      }
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
