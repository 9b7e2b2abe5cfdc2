// An op's typed arguments as the interceptor's unboxed kernels see them (ArgRef): each read as
// its boxed form would be, without boxing. Internal to the capture paths (capture/op_record.h);
// inlined into their hot paths.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/SymInt.h>
#include <c10/util/OptionalArrayRef.h>

namespace flopsprof::detail {

// ---------------------------------------------------------------------------------------------
// Typed arguments (the interceptor's unboxed kernels)

/// A typed op argument seen as its boxed form would be (c10::IValue's constructors: a Scalar as
/// a double, an int or a bool; a ScalarType, Layout or MemoryFormat as an int; nullopt as None),
/// without boxing: no allocation, no reference count. Points into the caller's arguments.
struct ArgRef {
  enum class Kind : uint8_t {
    kNone,
    kTensor,           ///< `tensor` (possibly undefined)
    kDouble,           ///< `d`
    kInt,              ///< `i`
    kBool,             ///< `b`
    kInts,             ///< `ints`, `n` of them (int[], a concrete SymInt[])
    kTensors,          ///< `tensors`, `n` of them (Tensor[])
    kOptionalTensors,  ///< `optional_tensors` (Tensor?[])
    kString,           ///< `c`: its first character (0: empty)
    kOther,            ///< anything else (a Device, a Generator, a complex Scalar)
  };
  Kind kind = Kind::kNone;
  uint32_t n = 0;
  union {
    const at::Tensor* tensor;
    double d;
    int64_t i;
    bool b;
    const int64_t* ints;
    const at::Tensor* tensors;
    const c10::List<c10::optional<at::Tensor>>* optional_tensors;
    char c;
  };
  ArgRef() : i(0) {}
};

inline ArgRef arg_ref(const at::Tensor& t) {
  ArgRef r;
  r.kind = ArgRef::Kind::kTensor;
  r.tensor = &t;
  return r;
}
inline ArgRef arg_ref(int64_t v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kInt;
  r.i = v;
  return r;
}
inline ArgRef arg_ref(double v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kDouble;
  r.d = v;
  return r;
}
inline ArgRef arg_ref(bool v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kBool;
  r.b = v;
  return r;
}
inline ArgRef arg_ref(const at::Scalar& s) {
  if (s.isFloatingPoint()) return arg_ref(s.toDouble());
  if (s.isBoolean()) return arg_ref(s.toBool());
  if (s.isIntegral(false)) return arg_ref(s.toLong());
  ArgRef r;  // complex, symbolic
  r.kind = ArgRef::Kind::kOther;
  return r;
}
inline ArgRef arg_ref(c10::ScalarType v) { return arg_ref(static_cast<int64_t>(v)); }
inline ArgRef arg_ref(c10::Layout v) { return arg_ref(static_cast<int64_t>(v)); }
inline ArgRef arg_ref(c10::MemoryFormat v) { return arg_ref(static_cast<int64_t>(v)); }
inline ArgRef arg_ref(c10::IntArrayRef v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kInts;
  r.ints = v.data();
  r.n = static_cast<uint32_t>(v.size());
  return r;
}
inline ArgRef arg_ref(at::TensorList v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kTensors;
  r.tensors = v.data();
  r.n = static_cast<uint32_t>(v.size());
  return r;
}
inline ArgRef arg_ref(const c10::List<c10::optional<at::Tensor>>& v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kOptionalTensors;
  r.optional_tensors = &v;
  return r;
}
inline ArgRef arg_ref(c10::string_view v) {
  ArgRef r;
  r.kind = ArgRef::Kind::kString;
  r.c = v.empty() ? 0 : v[0];
  return r;
}
inline ArgRef arg_ref(const c10::Device& /*v*/) {
  ArgRef r;
  r.kind = ArgRef::Kind::kOther;
  return r;
}
// A concrete SymInt (list) boxes as an int (list); a symbolic one as itself (not read).
inline ArgRef arg_ref(const c10::SymInt& v) {
#if TORCH_VERSION_MAJOR >= 2
  if (const auto i = v.maybe_as_int()) return arg_ref(*i);
#else
  if (!v.is_symbolic()) return arg_ref(v.as_int_unchecked());
#endif
  ArgRef r;
  r.kind = ArgRef::Kind::kOther;
  return r;
}
inline ArgRef arg_ref(c10::SymIntArrayRef v) {
  if (const auto ints = c10::asIntArrayRefSlowOpt(v)) return arg_ref(*ints);
  ArgRef r;
  r.kind = ArgRef::Kind::kOther;
  return r;
}
inline ArgRef arg_ref(const c10::OptionalArrayRef<int64_t>& v) {
  return v.has_value() ? arg_ref(*v) : ArgRef{};
}
inline ArgRef arg_ref(const c10::OptionalArrayRef<c10::SymInt>& v) {
  return v.has_value() ? arg_ref(*v) : ArgRef{};
}
template <class T>
ArgRef arg_ref(const c10::optional<T>& v) {
  return v.has_value() ? arg_ref(*v) : ArgRef{};
}

/// Whether arg_ref(T) reads a T as its boxed form would: the argument types an unboxed
/// interceptor kernel may have (a kernel with any other fails to compile).
template <class T, class = void>
struct has_arg_ref : std::false_type {};
template <class T>
struct has_arg_ref<T, std::void_t<decltype(arg_ref(std::declval<T>()))>> : std::true_type {};

}  // namespace flopsprof::detail
