// A small streaming JSON writer (fmt-based), shared by the JSON report and the Chrome trace.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace flopsprof::detail {

/// Writes one JSON document; `indent` < 0: compact. Strings are escaped per RFC 8259.
class JsonWriter {
 public:
  explicit JsonWriter(int indent) : indent_(indent) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  /// Starts member `k` of the current object; the value follows.
  JsonWriter& key(std::string_view k) {
    separator();
    string(k);
    out_ += indent_ >= 0 ? ": " : ":";
    after_key_ = true;
    return *this;
  }
  void value(std::string_view s) {
    prefix();
    string(s);
  }
  void value(const char* s) { value(std::string_view(s)); }
  void value(bool b) {
    prefix();
    out_ += b ? "true" : "false";
  }
  void value(uint64_t v) {
    prefix();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void value(int64_t v) {
    prefix();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void value(int v) { value(static_cast<int64_t>(v)); }
  void value(double v) {
    prefix();
    if (std::isfinite(v)) {
      fmt::format_to(std::back_inserter(out_), "{}", v);
    } else {
      out_ += "null";
    }
  }
  void null() {
    prefix();
    out_ += "null";
  }
  template <class T>
  void member(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

  /// Appends `raw` as a value (it must already be valid JSON).
  void raw(std::string_view raw) {
    prefix();
    out_ += raw;
  }
  std::string take() { return std::move(out_); }

 private:
  void newline() {
    if (indent_ < 0) return;
    out_ += '\n';
    out_.append(static_cast<size_t>(indent_) * depth_, ' ');
  }
  // Before a value: a comma and a newline unless it follows its key.
  void separator() {
    if (!first_) out_ += ',';
    if (depth_ > 0) newline();
    first_ = false;
  }
  void prefix() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    separator();
  }
  void open(char c) {
    prefix();
    out_ += c;
    ++depth_;
    first_ = true;
  }
  void close(char c) {
    --depth_;
    if (!first_) newline();
    out_ += c;
    first_ = false;
  }
  void string(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      switch (ch) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(ch) < 0x20) {
            fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(ch));
          } else {
            out_ += ch;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  int indent_;
  size_t depth_ = 0;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace flopsprof::detail
