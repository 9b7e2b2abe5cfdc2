// The JSON key of a member, read from its field table (reports/profile_fields.h): for a writer
// that names a field of the profile's JSON (the HTML page's data-key, which its browser test
// looks up in the JSON) without spelling the key a second time. Internal.
#pragma once

#include <string>
#include <string_view>
#include <typeinfo>

#include "reports/profile_fields.h"

namespace flopsprof::detail::fields {

/// A visitor that walks a table and keeps the key of the member at `target`.
class KeyOf {
 public:
  /// `target`: the member's address and type (a struct's first member shares its address).
  KeyOf(const ProfileResult& r, const void* target, const std::type_info& type)
      : r_(r), target_(target), type_(type) {}
  const ProfileResult& result() const { return r_; }
  const std::string& key() const { return key_; }

  // Every kind that holds a member: its key when the member is the target.
  template <class T, class... Rest>
  void count(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void integer(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void text(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T>
  void text_or_null(std::string_view k, const T& v) {
    match(k, &v);
  }
  template <class T>
  void text_if_any(std::string_view k, const T& v) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void flag(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void seconds(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void timed(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void timed_rate(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void number(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void known(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void known_count(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void dtype(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T>
  void convention(std::string_view k, const T& v) {
    match(k, &v);
  }
  template <class T>
  void by_dtype(std::string_view k, const T& v) {
    match(k, &v);
  }
  template <class T>
  void rates(std::string_view k, const T& v) {
    match(k, &v);
  }
  template <class T>
  void spread(std::string_view k, const T& v) {
    match(k, &v);
  }
  template <class T, class... Rest>
  void strings(std::string_view k, const T& v, const Rest&...) {
    match(k, &v);
  }
  template <class T>
  void share(std::string_view k, const T& share, bool, const std::string&) {
    match(k, &share);
  }
  template <class P, class... Rest>
  void roofline(const std::string& prefix, const P& p, const Rest&...) {
    fields::roofline(*this, prefix, p);
  }
  // Kinds that hold no member of the struct itself (computed, or a nested table's).
  template <class T>
  void derived(std::string_view, const T&) {}
  void parent(std::string_view, int) {}
  template <class T>
  void regions(std::string_view, const T&) {}
  template <class... A>
  void list(const A&...) {}
  template <class... A>
  void slim_ops(const A&...) {}

 private:
  template <class T>
  void match(std::string_view k, const T* member) {
    if (member == target_ && typeid(T) == type_ && key_.empty()) key_ = std::string(k);
  }
  const ProfileResult& r_;
  const void* target_;
  const std::type_info& type_;
  std::string key_;
};

/// The key `table` gives the member `member` of `s` ("" when the table has none).
template <class S, class M, class Table>
std::string key_of(const ProfileResult& r, const S& s, const M& member, Table table) {
  KeyOf v(r, &member, typeid(M));
  table(v, s);
  return v.key();
}

}  // namespace flopsprof::detail::fields
