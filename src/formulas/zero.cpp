// Known zero-FLOP ops: views, copies, indexing, embedding lookups, concatenation, a dropout's mask,
// random number draws, tensor state queries and factories. They are counted as a known 0 (and hide
// what they call), not as "no formula". Views and metadata queries also move no bytes.
// Bytes of the rest: copies read the input and write the copy (reshape and contiguous copy only a
// non-contiguous input; to() only when the dtype changes or a copy is asked for); gather-like ops
// (embedding, index_select, gather, take) read the indices and the rows or elements they touch,
// not the whole table; scatter-like ops (scatter_, index_add_, index_copy_, ...) write what they
// touch; fills and random draws write their output; factories write what they create.
#include <algorithm>
#include <cmath>

#include "formulas/common.h"

namespace flopsprof::detail {

namespace {

uint64_t bytes_of(uint64_t elements, DType dtype) {
  return sat_mul(elements, element_bytes(dtype));
}
uint64_t tensor_out(const OpInputs& in, size_t i) {
  return bytes_of(count_of(in.shape(i)), in[i].dtype);
}

// A copy of self (read once at the memory it covers, written whole) as `dtype`.
ByteCount copy_of(const OpInputs& in, DType dtype) {
  return ByteCount{arg_bytes(in, 0), bytes_of(count_of(in.shape(0)), dtype)};
}

// reshape, flatten, contiguous: a view of a contiguous input (nothing moves), else a copy.
std::optional<ByteCount> copy_if_strided(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  if (in[0].contiguous) return ByteCount{};
  return copy_of(in, in[0].dtype);
}

// clone(self, memory_format), _to_copy(self, dtype?, ...)
std::optional<ByteCount> clone_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return copy_of(in, in[0].dtype);
}
std::optional<ByteCount> to_copy_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return copy_of(in, dtype_arg(in, 1, in[0].dtype));
}

// to(self, ...): a copy when the dtype changes or `copy` is true, else self (nothing moves). The
// overloads, told apart by their arguments: to.other(self, other, non_blocking, copy, format),
// to.dtype(self, dtype, non_blocking, copy, format), to.device(self, device, dtype, non_blocking,
// copy, format), to.dtype_layout(self, dtype, layout, device, pin_memory, non_blocking, copy,
// format). A change of device alone is not seen (the device is not captured).
std::optional<ByteCount> to_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  const DType from = in[0].dtype;
  DType to = from;
  bool copy = false;
  if (in.is_tensor(1)) {
    to = in[1].dtype;
    copy = in.boolean(3).value_or(false);
  } else if (in.size() == 5) {
    to = dtype_arg(in, 1, from);
    copy = in.boolean(3).value_or(false);
  } else if (in.size() == 6) {
    to = dtype_arg(in, 2, from);
    copy = in.boolean(4).value_or(false);
  } else if (in.size() == 8) {
    to = dtype_arg(in, 1, from);
    copy = in.boolean(6).value_or(false);
  }
  if (to == from && !copy) return ByteCount{};
  return copy_of(in, to);
}

// type_as(self, other): a copy when the dtypes differ
std::optional<ByteCount> type_as_bytes(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
  if (in[0].dtype == in[1].dtype) return ByteCount{};
  return copy_of(in, in[1].dtype);
}

// copy_(self, src, non_blocking): reads src, writes self
std::optional<ByteCount> copy_bytes(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
  return ByteCount{arg_bytes(in, 1), arg_bytes(in, 0)};
}

// Fills and random draws in place: write self; read only the other tensors (a tensor p or value).
std::optional<ByteCount> fill_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  uint64_t read = 0;
  for (size_t i = 1; i < in.size(); ++i) read = sat_add(read, arg_bytes(in, i));
  return ByteCount{read, arg_bytes(in, 0)};
}

// dropout(input, p, train): the output when training with p > 0, else self comes back (nothing
// moves); in place: self read and written. native_dropout also writes its bool mask.
BytesFn dropout_bytes(bool self_only, bool mask) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    const bool train = in.boolean(2).value_or(true);
    const double p = in.scalar(1).value_or(0.5);
    if (!mask && (!train || p == 0)) return ByteCount{};
    if (self_only) return in_place(in, 0);
    ByteCount b = copy_of(in, in[0].dtype);
    if (mask) b.written = sat_add(b.written, count_of(in.shape(0)));
    return b;
  };
}

// Gather-like: `rows` rows of `row_elements` elements of the table's dtype read (the rows
// touched, at most the table's), plus the index tensor; each lookup written.
ByteCount gathered(const OpInputs& in, size_t table, size_t index, uint64_t lookups,
                   uint64_t table_rows, uint64_t row_elements) {
  const uint64_t row_bytes = bytes_of(row_elements, in[table].dtype);
  return ByteCount{sat_add(arg_bytes(in, index), sat_mul(std::min(lookups, table_rows), row_bytes)),
                   sat_mul(lookups, row_bytes)};
}

// embedding(weight[R, D], indices, ...): one row of D per index
std::optional<ByteCount> embedding_bytes(const OpInputs& in) {
  IntSpan w = in.shape(0);
  if (w.size() != 2 || !in.is_tensor(1)) return std::nullopt;
  return gathered(in, 0, 1, count_of(in.shape(1)), u(w[0]), u(w[1]));
}

// index_select(self, dim, index): one slice of self along dim per index
std::optional<ByteCount> index_select_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0);
  auto dim = in.integer(1);
  if (!in.is_tensor(0) || !in.is_tensor(2) || !dim) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t d = *dim < 0 ? *dim + rank : *dim;
  const uint64_t rows =
      rank == 0 ? 1 : u(x[static_cast<size_t>(std::clamp<int64_t>(d, 0, rank - 1))]);
  const uint64_t row = rows == 0 ? 0 : count_of(x) / rows;
  return gathered(in, 0, 2, count_of(in.shape(2)), rows, row);
}

// index(self, indices: Tensor?[]): integer indices pick one element of self per index over the
// dims they index, and the whole of the dims they do not (None entries, trailing dims): numel =
// k x those dims, k the indices' element count (all index tensors of one count: broadcast ones
// of different shapes are not told apart, nor are boolean masks, whose count is data-dependent:
// nullopt, reads only).
std::optional<ByteCount> index_bytes(const OpInputs& in) {
  if (!in.is_tensor(0) || in[1].kind != ArgKind::kTensorList || in[1].shape.empty())
    return std::nullopt;
  if (in[1].dtype == DType::kBool || in[1].dtype == DType::kUInt8) return std::nullopt;
  const IntSpan self = in.shape(0), numels = in[1].shape;
  if (numels.size() > self.size()) return std::nullopt;
  int64_t k = -1;
  uint64_t rest = 1;
  for (size_t d = 0; d < self.size(); ++d) {
    const int64_t n = d < numels.size() ? numels[d] : -1;
    if (n < 0) {
      rest = sat_mul(rest, u(self[d]));
    } else if (k < 0) {
      k = n;
    } else if (n != k) {
      return std::nullopt;
    }
  }
  if (k < 0) return std::nullopt;
  const uint64_t picked = sat_mul(u(k), rest);
  return gathered(in, 0, 1, picked, count_of(self), 1);
}

// gather(self, dim, index) / take(self, index): one element of self per index
BytesFn element_gather(size_t index) {
  return [index](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0) || !in.is_tensor(index)) return std::nullopt;
    return gathered(in, 0, index, count_of(in.shape(index)), count_of(in.shape(0)), 1);
  };
}

// embedding_bag / _embedding_bag(weight[R, D], indices, offsets, scale_grad_by_freq, mode,
// sparse, per_sample_weights, include_last_offset, ...): reads the indices, offsets, weights and
// the rows touched; writes the bags [B, D] and the int64 bookkeeping it returns (offset2bag per
// index; bag_size, max_indices per bag, max_indices [B, D] in max mode).
std::optional<ByteCount> embedding_bag_bytes(const OpInputs& in) {
  IntSpan w = in.shape(0), idx = in.shape(1);
  if (w.size() != 2 || idx.empty()) return std::nullopt;
  const uint64_t lookups = count_of(idx);
  uint64_t bags = idx.size() == 2 ? u(idx[0]) : 0;
  if (idx.size() == 1 && in.is_tensor(2)) {
    bags = count_of(in.shape(2));
    if (in.boolean(7).value_or(false) && bags > 0) --bags;
  }
  const uint64_t d = u(w[1]);
  ByteCount b = gathered(in, 0, 1, lookups, u(w[0]), d);
  for (size_t i = 2; i < in.size(); ++i) b.read = sat_add(b.read, arg_bytes(in, i));
  const bool max_mode = in.integer(4).value_or(0) == 2;
  b.written = bytes_of(sat_mul(bags, d), in[0].dtype);
  b.written = sat_add(
      b.written, sat_mul(sat_add(lookups, sat_add(bags, max_mode ? sat_mul(bags, d) : bags)), 8));
  return b;
}

// slice_backward / select_backward(grad, input_sizes, ...): a zero tensor of input_sizes with
// the gradient copied into it
std::optional<ByteCount> selection_backward_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return ByteCount{arg_bytes(in, 0), bytes_of(count_of(in.int_list(1)), in[0].dtype)};
}

// cat / stack(tensors, dim): every tensor read, the result (as many bytes) written
std::optional<ByteCount> join_bytes(const OpInputs& in) {
  if (in[0].kind != ArgKind::kTensorList) return std::nullopt;
  return ByteCount{arg_bytes(in, 0), arg_bytes(in, 0)};
}

// repeat / tile(self, repeats): self's elements times the repeats
std::optional<ByteCount> repeat_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  uint64_t n = count_of(in.shape(0));
  for (int64_t r : in.int_list(1)) n = sat_mul(n, u(r));
  return ByteCount{arg_bytes(in, 0), bytes_of(n, in[0].dtype)};
}

// constant_pad_nd / pad / _pad_enum(self, pad, ...), reflection_pad* / replication_pad*(self,
// padding): the last dims grown by the (before, after) pairs of `pad`, last dim first
std::optional<ByteCount> pad_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0), pad = in.int_list(1);
  if (!in.is_tensor(0) || pad.size() / 2 > x.size()) return std::nullopt;
  uint64_t n = 1;
  for (size_t k = 0; k < x.size(); ++k) {  // k counts dims from the last
    int64_t size = x.back(k);
    if (2 * k + 1 < pad.size()) size += pad[2 * k] + pad[2 * k + 1];
    n = sat_mul(n, u(size));
  }
  return ByteCount{arg_bytes(in, 0), bytes_of(n, in[0].dtype)};
}

// The dtype a fill value gives full() when none is named: int -> int64, bool -> bool, else fp32.
DType fill_dtype(const OpInputs& in, size_t value) {
  switch (in[value].kind) {
    case ArgKind::kInt:
      return DType::kInt64;
    case ArgKind::kBool:
      return DType::kBool;
    default:
      return DType::kFloat32;
  }
}

// Factories from a size list (zeros, ones, randn, rand, randint, normal with a size): the first
// int list is the size; the dtype is the first integer argument after it (generators and
// layouts are not integers), else `fallback`.
BytesFn sized_factory(DType fallback) {
  return [fallback](const OpInputs& in) -> std::optional<ByteCount> {
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].kind != ArgKind::kIntList) continue;
      DType d = fallback;
      for (size_t j = i + 1; j < in.size(); ++j) {
        if (in[j].kind == ArgKind::kInt) {
          d = dtype_arg(in, j, fallback);
          break;
        }
      }
      return ByteCount{0, bytes_of(count_of(in[i].shape), d)};
    }
    return std::nullopt;
  };
}

// *_like(self, ..., dtype at `dtype_at`): self's shape
BytesFn like_factory(int dtype_at) {
  return [dtype_at](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    const DType d =
        dtype_at >= 0 ? dtype_arg(in, static_cast<size_t>(dtype_at), in[0].dtype) : in[0].dtype;
    return ByteCount{0, bytes_of(count_of(in.shape(0)), d)};
  };
}

// new_zeros / new_ones / new_full(self, size, [fill,] dtype?): size given, self's dtype by default
BytesFn new_factory(size_t dtype_at) {
  return [dtype_at](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    return ByteCount{0, bytes_of(count_of(in.int_list(1)), dtype_arg(in, dtype_at, in[0].dtype))};
  };
}

// full(size, fill_value, dtype?, ...)
std::optional<ByteCount> full_bytes(const OpInputs& in) {
  if (in[0].kind != ArgKind::kIntList) return std::nullopt;
  return ByteCount{0, bytes_of(count_of(in.int_list(0)), dtype_arg(in, 2, fill_dtype(in, 1)))};
}

// arange(end | start, end | start, end, step, dtype, layout, device, pin_memory): told apart by
// their count; int64 when every bound is an integer, else fp32
std::optional<ByteCount> arange_bytes(const OpInputs& in) {
  if (in.size() < 5 || in.size() > 7) return std::nullopt;
  const size_t bounds = in.size() - 4;
  double v[3] = {0, 0, 1};
  bool integral = true;
  for (size_t i = 0; i < bounds; ++i) {
    auto x = in.scalar(i);
    if (!x) return std::nullopt;
    integral = integral && in[i].kind == ArgKind::kInt;
    v[bounds == 1 ? 1 : i] = *x;
  }
  if (v[2] == 0) return std::nullopt;
  const double count = std::ceil((v[1] - v[0]) / v[2]);
  if (!(count >= 0) || count > 9.2e18) return std::nullopt;
  const DType d = dtype_arg(in, bounds, integral ? DType::kInt64 : DType::kFloat32);
  return ByteCount{0, bytes_of(static_cast<uint64_t>(count), d)};
}

// Scatter-like, in place: write the `touched` elements of self; read the indices, `src` (the
// touched elements of it) and, when accumulating, the touched elements of self.
ByteCount scattered(const OpInputs& in, size_t index, int src, uint64_t touched, bool accumulate) {
  const uint64_t es = element_bytes(in[0].dtype);
  ByteCount b{arg_bytes(in, index), sat_mul(touched, es)};
  if (src >= 0 && in.is_tensor(static_cast<size_t>(src)))
    b.read = sat_add(b.read, bytes_of(touched, in[static_cast<size_t>(src)].dtype));
  if (accumulate) b.read = sat_add(b.read, sat_mul(touched, es));
  return b;
}

// scatter_ / scatter_add_ / scatter_reduce_(self, dim, index, src|value, ...): one element per
// index; the out-of-place forms copy self first (read and written whole).
BytesFn scatter_bytes(bool accumulate, bool out_of_place) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0) || !in.is_tensor(2)) return std::nullopt;
    ByteCount b = scattered(in, 2, 3, count_of(in.shape(2)), accumulate);
    if (out_of_place) b = ByteCount{sat_add(b.read, arg_bytes(in, 0)), tensor_out(in, 0)};
    return b;
  };
}

// index_add_ / index_copy_(self, dim, index, source, ...): the source's elements
BytesFn index_source_bytes(bool accumulate, bool out_of_place) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0) || !in.is_tensor(2) || !in.is_tensor(3)) return std::nullopt;
    ByteCount b = scattered(in, 2, 3, count_of(in.shape(3)), accumulate);
    if (out_of_place) b = ByteCount{sat_add(b.read, arg_bytes(in, 0)), tensor_out(in, 0)};
    return b;
  };
}

// index_fill_(self, dim, index, value): one slice of self along dim per index
std::optional<ByteCount> index_fill_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0);
  auto dim = in.integer(1);
  if (!in.is_tensor(0) || !in.is_tensor(2) || !dim || x.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t d = std::clamp<int64_t>(*dim < 0 ? *dim + rank : *dim, 0, rank - 1);
  const uint64_t rows = u(x[static_cast<size_t>(d)]);
  const uint64_t row = rows == 0 ? 0 : count_of(x) / rows;
  return scattered(in, 2, 3, sat_mul(count_of(in.shape(2)), row), false);
}

// index_put_(self, indices, values, accumulate): one element per value (the indices, a list of
// optional tensors, are not captured); a single value broadcast to unknown positions: unknown.
std::optional<ByteCount> index_put_bytes(const OpInputs& in) {
  if (!in.is_tensor(0) || !in.is_tensor(2)) return std::nullopt;
  const uint64_t n = count_of(in.shape(2));
  if (n <= 1) return std::nullopt;
  return scattered(in, 2, -1, n, in.boolean(3).value_or(false));
}

}  // namespace

void register_zero_bytes() {
  for (const char* op : {"aten::reshape", "aten::reshape_as", "aten::flatten", "aten::unflatten",
                         "aten::contiguous"}) {
    add_builtin_bytes(op, copy_if_strided);
  }
  add_builtin_bytes("aten::clone", clone_bytes);
  add_builtin_bytes("aten::_to_copy", to_copy_bytes);
  add_builtin_bytes("aten::to", to_bytes);
  add_builtin_bytes("aten::type_as", type_as_bytes);
  add_builtin_bytes("aten::copy_", copy_bytes);
  for (const char* op : {"aten::zero_", "aten::fill_", "aten::bernoulli_", "aten::normal_",
                         "aten::uniform_", "aten::random_", "aten::exponential_"}) {
    add_builtin_bytes(op, fill_bytes);
  }
  for (const char* op : {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout",
                         "aten::feature_alpha_dropout"}) {
    add_builtin_bytes(op, dropout_bytes(false, false));
  }
  for (const char* op : {"aten::dropout_", "aten::feature_dropout_", "aten::alpha_dropout_",
                         "aten::feature_alpha_dropout_"}) {
    add_builtin_bytes(op, dropout_bytes(true, false));
  }
  add_builtin_bytes("aten::native_dropout", dropout_bytes(false, true));
  add_builtin_bytes("aten::embedding", embedding_bytes);
  add_builtin_bytes("aten::index_select", index_select_bytes);
  add_builtin_bytes("aten::index", index_bytes);
  for (const char* op : {"aten::triu", "aten::tril"}) add_builtin_bytes(op, clone_bytes);
  for (const char* op : {"aten::triu_", "aten::tril_"}) {
    add_builtin_bytes(op, [](const OpInputs& in) -> std::optional<ByteCount> {
      if (!in.is_tensor(0)) return std::nullopt;
      return in_place(in, 0);
    });
  }
  add_builtin_bytes("aten::gather", element_gather(2));
  add_builtin_bytes("aten::take", element_gather(1));
  for (const char* op :
       {"aten::embedding_bag", "aten::_embedding_bag", "aten::_embedding_bag_forward_only"}) {
    add_builtin_bytes(op, embedding_bag_bytes);
  }
  add_builtin_bytes("aten::masked_fill", [](const OpInputs& in) -> std::optional<ByteCount> {
    std::optional<uint64_t> n = broadcast_count(in, {0, 1});
    if (!in.is_tensor(0) || !n) return std::nullopt;
    return reads_inputs_writes(in, *n, in[0].dtype);
  });
  add_builtin_bytes("aten::masked_fill_", [](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0)) return std::nullopt;
    return in_place(in, 0);
  });
  add_builtin_bytes("aten::slice_backward", selection_backward_bytes);
  add_builtin_bytes("aten::select_backward", selection_backward_bytes);
  // equal: tensors of different sizes are unequal without a read (ATen checks the sizes first);
  // of the same sizes, both are read (at most: the comparison stops at a difference)
  add_builtin_bytes("aten::equal", [](const OpInputs& in) -> std::optional<ByteCount> {
    if (in.size() >= 2 && in.is_tensor(0) && in.is_tensor(1) &&
        !std::equal(in[0].shape.begin(), in[0].shape.end(), in[1].shape.begin(),
                    in[1].shape.end())) {
      return ByteCount{0, 0};
    }
    return ByteCount{input_bytes(in), 0};
  });
  for (const char* op : {"aten::cat", "aten::_cat", "aten::stack"})
    add_builtin_bytes(op, join_bytes);
  for (const char* op : {"aten::repeat", "aten::tile"}) add_builtin_bytes(op, repeat_bytes);
  for (const char* op : {"aten::flip", "aten::roll"}) add_builtin_bytes(op, same_as(0));
  for (const char* op :
       {"aten::pad", "aten::constant_pad_nd", "aten::_pad_enum", "aten::reflection_pad1d",
        "aten::reflection_pad2d", "aten::reflection_pad3d", "aten::replication_pad1d",
        "aten::replication_pad2d", "aten::replication_pad3d"}) {
    add_builtin_bytes(op, pad_bytes);
  }
  // factories
  for (const char* op : {"aten::zeros", "aten::ones", "aten::randn", "aten::rand"}) {
    add_builtin_bytes(op, sized_factory(DType::kFloat32));
  }
  add_builtin_bytes("aten::randint", sized_factory(DType::kInt64));
  add_builtin_bytes("aten::full", full_bytes);
  for (const char* op :
       {"aten::zeros_like", "aten::ones_like", "aten::randn_like", "aten::rand_like"}) {
    add_builtin_bytes(op, like_factory(1));
  }
  add_builtin_bytes("aten::full_like", like_factory(2));
  add_builtin_bytes("aten::randint_like", like_factory(-1));
  add_builtin_bytes("aten::new_zeros", new_factory(2));
  add_builtin_bytes("aten::new_ones", new_factory(2));
  add_builtin_bytes("aten::new_full", new_factory(3));
  add_builtin_bytes("aten::arange", arange_bytes);
  add_builtin_bytes("aten::scalar_tensor", [](const OpInputs& in) -> std::optional<ByteCount> {
    return ByteCount{0, element_bytes(dtype_arg(in, 1, DType::kFloat32))};
  });
  add_builtin_bytes("aten::linspace", [](const OpInputs& in) -> std::optional<ByteCount> {
    auto steps = in.integer(2);
    if (!steps) return std::nullopt;
    return ByteCount{0, bytes_of(u(*steps), dtype_arg(in, 3, DType::kFloat32))};
  });
  add_builtin_bytes("aten::eye", [](const OpInputs& in) -> std::optional<ByteCount> {
    auto n = in.integer(0);
    if (!n) return std::nullopt;
    const bool square = in.size() == 5;
    const int64_t m = square ? *n : in.integer(1).value_or(*n);
    return ByteCount{
        0, bytes_of(sat_mul(u(*n), u(m)), dtype_arg(in, square ? 1 : 2, DType::kFloat32))};
  });
  add_builtin_bytes("aten::randperm", [](const OpInputs& in) -> std::optional<ByteCount> {
    auto n = in.integer(0);
    if (!n) return std::nullopt;
    return ByteCount{0, bytes_of(u(*n), dtype_arg(in, 1, DType::kInt64))};
  });
  add_builtin_bytes("aten::bernoulli", same_as(0));
  add_builtin_bytes("aten::normal", [](const OpInputs& in) -> std::optional<ByteCount> {
    if (in.is_tensor(0) || in.is_tensor(1)) {
      std::optional<uint64_t> n = broadcast_count(in, {0, 1});
      if (!n) return std::nullopt;
      return reads_inputs_writes(in, *n, result_dtype(in, {0, 1}));
    }
    return sized_factory(DType::kFloat32)(in);
  });
  add_builtin_bytes("aten::multinomial", [](const OpInputs& in) -> std::optional<ByteCount> {
    IntSpan p = in.shape(0);
    auto samples = in.integer(1);
    if (p.empty() || !samples || p.back(0) == 0) return std::nullopt;
    return ByteCount{input_bytes(in), sat_mul(sat_mul(count_of(p) / u(p.back(0)), u(*samples)), 8)};
  });
  // scatter-like
  add_builtin_bytes("aten::scatter_", scatter_bytes(false, false));
  add_builtin_bytes("aten::scatter", scatter_bytes(false, true));
  add_builtin_bytes("aten::scatter_add_", scatter_bytes(true, false));
  add_builtin_bytes("aten::scatter_add", scatter_bytes(true, true));
  add_builtin_bytes("aten::scatter_reduce_", scatter_bytes(true, false));
  add_builtin_bytes("aten::scatter_reduce", scatter_bytes(true, true));
  add_builtin_bytes("aten::index_add_", index_source_bytes(true, false));
  add_builtin_bytes("aten::index_add", index_source_bytes(true, true));
  add_builtin_bytes("aten::index_copy_", index_source_bytes(false, false));
  add_builtin_bytes("aten::index_copy", index_source_bytes(false, true));
  add_builtin_bytes("aten::index_fill_", index_fill_bytes);
  add_builtin_bytes("aten::index_put_", index_put_bytes);
  add_builtin_bytes("aten::_index_put_impl_", index_put_bytes);
  add_builtin_bytes("aten::put_", [](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(0) || !in.is_tensor(1)) return std::nullopt;
    return scattered(in, 1, 2, count_of(in.shape(1)), in.boolean(3).value_or(false));
  });
}

void register_zero_formulas() {
  // zero: 0 FLOPs, 0 MACs, whatever the shapes
  FormulaFn zero = [](const OpInputs&) -> std::optional<FlopCount> { return FlopCount{}; };
  // Views and metadata: no FLOPs and no bytes moved, so the observer records no arguments.
  for (const char* op :
       {// views
        "aten::view", "aten::_unsafe_view", "aten::_reshape_alias", "aten::view_as",
        "aten::squeeze", "aten::squeeze_", "aten::unsqueeze", "aten::unsqueeze_", "aten::transpose",
        "aten::transpose_", "aten::t", "aten::t_", "aten::permute", "aten::expand",
        "aten::expand_as", "aten::broadcast_to", "aten::broadcast_tensors", "aten::as_strided",
        "aten::alias", "aten::detach", "aten::detach_", "aten::movedim", "aten::swapaxes",
        "aten::numpy_T", "aten::unfold", "aten::lift_fresh", "aten::view_as_real",
        "aten::view_as_complex", "aten::slice", "aten::select", "aten::narrow", "aten::split",
        "aten::split_with_sizes", "aten::chunk", "aten::unsafe_split",
        "aten::unsafe_split_with_sizes", "aten::unsafe_chunk", "aten::unbind",
        // metadata and state
        "aten::resize_", "aten::resize_as_", "aten::set_", "aten::requires_grad_", "aten::item",
        "aten::_local_scalar_dense", "aten::is_nonzero", "aten::size", "aten::stride",
        "aten::result_type", "aten::cudnn_is_acceptable", "aten::is_same_size",
        "aten::_has_compatible_shallow_copy_type", "aten::retains_grad", "aten::_version",
        "aten::output_nr", "aten::data", "aten::set_data", "aten::_shape_as_tensor", "aten::dim",
        "aten::numel", "aten::is_floating_point", "aten::is_complex", "aten::_nnz",
        // allocation without writing
        "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
        "aten::new_empty_strided"}) {
    add_builtin_constant_formula(op, zero);
  }
  // No FLOPs, but they read and write data (their bytes: op_bytes rules): arguments recorded.
  for (const char* op :
       {// reshapes that copy a non-contiguous input, copies and conversions
        "aten::reshape", "aten::reshape_as", "aten::flatten", "aten::unflatten", "aten::contiguous",
        "aten::clone", "aten::copy_", "aten::to", "aten::_to_copy", "aten::type_as",
        // indexing and selection; triangles (a copy with zeros)
        "aten::triu", "aten::tril", "aten::triu_", "aten::tril_", "aten::index",
        "aten::index_select", "aten::gather", "aten::masked_select", "aten::masked_fill",
        "aten::masked_fill_", "aten::where", "aten::embedding", "aten::take",
        // backward of selections: a zero tensor with the gradient copied into the selected part
        "aten::slice_backward", "aten::select_backward", "aten::equal",
        // joining and layout
        "aten::cat", "aten::_cat", "aten::stack", "aten::repeat", "aten::tile", "aten::flip",
        "aten::roll", "aten::pad", "aten::constant_pad_nd", "aten::reflection_pad1d",
        "aten::reflection_pad2d", "aten::reflection_pad3d", "aten::replication_pad1d",
        "aten::replication_pad2d", "aten::replication_pad3d", "aten::zero_", "aten::fill_",
        // a dropout's mask (dropout itself: pointwise.cpp)
        "aten::bernoulli_",
        // factories that write their output
        "aten::zeros", "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::full",
        "aten::full_like", "aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::arange",
        "aten::scalar_tensor", "aten::linspace", "aten::eye", "aten::tensor", "aten::_pad_enum",
        // random numbers (drawing, not arithmetic on the model's data)
        "aten::randn", "aten::randn_like", "aten::rand", "aten::rand_like", "aten::randint",
        "aten::randint_like", "aten::randperm", "aten::normal", "aten::normal_", "aten::uniform_",
        "aten::bernoulli", "aten::random_", "aten::exponential_", "aten::multinomial"}) {
    add_builtin_formula(op, zero);
  }
  // Scatter-like writes: a copy of each element into place (0 FLOPs), or with accumulation one
  // add per element accumulated (scatter_add: per index element; index_add: per source element;
  // scatter_reduce: one reduction step per index element; index_put_ with accumulate: per value).
  for (const char* op : {"aten::scatter", "aten::scatter_", "aten::index_copy", "aten::index_copy_",
                         "aten::index_fill", "aten::index_fill_"}) {
    add_builtin_formula(op, zero);
  }
  auto per_element_of = [](size_t arg) -> FormulaFn {
    return [arg](const OpInputs& in) -> std::optional<FlopCount> {
      if (!in.is_tensor(arg)) return std::nullopt;
      return FlopCount{in.numel(arg), 0};
    };
  };
  for (const char* op : {"aten::scatter_add", "aten::scatter_add_", "aten::scatter_reduce",
                         "aten::scatter_reduce_"}) {
    add_builtin_formula(op, per_element_of(2));
  }
  for (const char* op : {"aten::index_add", "aten::index_add_"}) {
    add_builtin_formula(op, per_element_of(3));
  }
  for (const char* op : {"aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}) {
    add_builtin_formula(op, [](const OpInputs& in) -> std::optional<FlopCount> {
      if (!in.is_tensor(2)) return std::nullopt;
      return FlopCount{in.boolean(3).value_or(false) ? in.numel(2) : 0, 0};
    });
  }
}

}  // namespace flopsprof::detail
