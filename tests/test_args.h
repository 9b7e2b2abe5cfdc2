// Test helper: builds OpInputs from literal shapes and scalars. Copyable: views are rebuilt from
// owned data by inputs().
#pragma once

#include <vector>

#include "flopsprof/formulas.h"

namespace flopsprof::testing {

class Args {
 public:
  Args& tensor(std::vector<int64_t> shape, DType dtype = DType::kFloat32) {
    ArgView v;
    v.kind = ArgKind::kTensor;
    v.dtype = dtype;
    return add(v, std::move(shape));
  }
  Args& none() { return add(ArgView{}); }
  Args& undefined() {
    ArgView v;
    v.kind = ArgKind::kUndefinedTensor;
    return add(v);
  }
  Args& i(int64_t value) {
    ArgView v;
    v.kind = ArgKind::kInt;
    v.i = value;
    return add(v);
  }
  Args& d(double value) {
    ArgView v;
    v.kind = ArgKind::kDouble;
    v.d = value;
    return add(v);
  }
  Args& b(bool value) {
    ArgView v;
    v.kind = ArgKind::kBool;
    v.b = value;
    return add(v);
  }
  Args& list(std::vector<int64_t> values) {
    ArgView v;
    v.kind = ArgKind::kIntList;
    return add(v, std::move(values));
  }
  Args& dlist(std::vector<double> values) {
    ArgView v;
    v.kind = ArgKind::kDoubleList;
    std::vector<int64_t> placeholder(values.size());  // shape.size() is the list length
    return add(v, std::move(placeholder), std::move(values));
  }
  /// A tensor list of `count` tensors holding `bytes` bytes in all (shapes are not captured).
  Args& tensor_list(int64_t count, uint64_t bytes, DType dtype = DType::kFloat32) {
    ArgView v;
    v.kind = ArgKind::kTensorList;
    v.i = count;
    v.extent = bytes;
    v.dtype = dtype;
    return add(v);
  }
  /// A list of optional tensors (`Tensor?[]`): each element's element count (-1 for None),
  /// `bytes` in all, the first tensor's dtype.
  Args& optional_tensor_list(std::vector<int64_t> numels, uint64_t bytes,
                             DType dtype = DType::kInt64) {
    ArgView v;
    v.kind = ArgKind::kTensorList;
    v.i = static_cast<int64_t>(numels.size());
    v.extent = bytes;
    v.dtype = dtype;
    return add(v, std::move(numels));
  }
  /// Marks the last tensor: a broadcast view whose memory covers `elements` elements.
  Args& expanded(uint64_t elements) {
    items_.back().view.extent = elements;
    items_.back().view.contiguous = false;
    return *this;
  }
  /// Marks the last tensor: an attention mask the capture read, `entries` of which keep a pair.
  Args& kept(uint64_t entries) {
    items_.back().view.kept = entries;
    return *this;
  }
  /// Marks the last tensor: not contiguous (a transpose, a slice).
  Args& strided() {
    items_.back().view.contiguous = false;
    return *this;
  }
  /// Marks the last tensor: the same tensor as an earlier argument.
  Args& repeated() {
    items_.back().view.repeated = true;
    return *this;
  }
  Args& str(char first) {
    ArgView v;
    v.kind = ArgKind::kString;
    v.i = first;
    return add(v);
  }
  OpInputs inputs() const {
    views_.clear();
    for (const Item& it : items_) {
      ArgView v = it.view;
      v.shape = IntSpan(it.ints.data(), it.ints.size());
      v.dlist = it.doubles.data();
      if (v.kind == ArgKind::kTensor && v.extent == 0) {  // as captured: its element count
        v.extent = 1;
        for (int64_t d : it.ints) v.extent *= static_cast<uint64_t>(d);
      }
      views_.push_back(v);
    }
    return OpInputs(views_.data(), views_.size());
  }

 private:
  struct Item {
    ArgView view;
    std::vector<int64_t> ints;
    std::vector<double> doubles;
  };
  Args& add(ArgView v, std::vector<int64_t> ints = {}, std::vector<double> doubles = {}) {
    items_.push_back(Item{v, std::move(ints), std::move(doubles)});
    return *this;
  }
  std::vector<Item> items_;
  mutable std::vector<ArgView> views_;
};

/// Runs the registered formula for `op` and returns its count; throws if there is none.
inline FlopCount count(const char* op, const Args& args) {
  std::optional<FlopCount> c = compute_flops(op, args.inputs());
  if (!c) throw Error(std::string("no count for ") + op);
  return *c;
}

}  // namespace flopsprof::testing
