// Builds the plain module tree and the parameter-ownership index from a torch::nn::Module.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>

#include "records/module_tree.h"

namespace torch::nn {
class Module;
}

namespace flopsprof::detail {

struct ModelIndex {
  ModuleTree tree;
  /// (storage of a parameter or buffer, owner set id)
  std::vector<std::pair<const void*, int32_t>> owner_entries;
  /// module -> first tree index (a module registered twice has two nodes)
  std::unordered_map<const torch::nn::Module*, int32_t> by_ptr;
  /// RecordFunction user-scope name per node ("BertLayer: encoder.layer.0")
  std::vector<std::string> scope_names;
  /// The device of the model's first parameter (in parameters() order) not on the CPU or meta,
  /// as c10::DeviceType's integer and index; {-1, -1}: a CPU (or meta) model.
  int device_type = -1, device_index = -1;
  /// Whether a parameter or buffer of the model is on the meta device.
  bool meta = false;
};

/// Walks `named_modules()` of `root`. Throws Error when an `ignore_types` entry matches no module.
ModelIndex build_model_index(const torch::nn::Module& root,
                             const std::vector<std::string>& ignore_types);

/// "torch::nn::LinearImpl" -> "Linear"; "(anonymous namespace)::BertLayerImpl" -> "BertLayer".
std::string display_type_name(const std::string& cpp_type_name);

DType to_dtype(c10::ScalarType type) noexcept;

}  // namespace flopsprof::detail
