// Known zero-FLOP ops: views, copies, indexing, embedding lookups, concatenation, dropout masks,
// random number draws and tensor state queries,
// factories. They are counted as a known 0 (and hide what they call), not as "no formula".
#include "formulas/common.h"

namespace flopsprof::detail {

void register_zero_formulas() {
  // zero: 0 FLOPs, 0 MACs, whatever the shapes
  FormulaFn zero = [](const OpInputs&) -> std::optional<FlopCount> { return FlopCount{}; };
  for (const char* op :
       {// views and reshapes
        "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias",
        "aten::view_as", "aten::reshape_as", "aten::flatten", "aten::unflatten", "aten::squeeze",
        "aten::squeeze_", "aten::unsqueeze", "aten::unsqueeze_", "aten::transpose",
        "aten::transpose_", "aten::t", "aten::t_", "aten::permute", "aten::expand",
        "aten::expand_as", "aten::as_strided", "aten::alias", "aten::detach", "aten::detach_",
        "aten::movedim", "aten::swapaxes", "aten::numpy_T", "aten::unfold", "aten::lift_fresh",
        "aten::view_as_real", "aten::view_as_complex",
        // copies and conversions
        "aten::contiguous", "aten::clone", "aten::copy_", "aten::to", "aten::_to_copy",
        "aten::type_as", "aten::resize_", "aten::set_", "aten::requires_grad_",
        // indexing and selection
        "aten::slice", "aten::select", "aten::narrow", "aten::split", "aten::split_with_sizes",
        "aten::chunk", "aten::unsafe_split", "aten::unsafe_split_with_sizes", "aten::unsafe_chunk",
        "aten::unbind", "aten::index", "aten::index_select", "aten::gather", "aten::masked_select",
        "aten::masked_fill", "aten::masked_fill_", "aten::where", "aten::embedding", "aten::take",
        "aten::item", "aten::_local_scalar_dense",
        // backward of selections: a zero tensor with the gradient copied into the selected part
        "aten::slice_backward", "aten::select_backward", "aten::is_nonzero", "aten::equal",
        "aten::size", "aten::stride",
        // joining and layout
        "aten::cat", "aten::_cat", "aten::stack", "aten::repeat", "aten::tile", "aten::flip",
        "aten::roll", "aten::pad", "aten::constant_pad_nd", "aten::reflection_pad1d",
        "aten::reflection_pad2d", "aten::reflection_pad3d", "aten::replication_pad1d",
        "aten::replication_pad2d", "aten::replication_pad3d", "aten::zero_", "aten::fill_",
        // dropout (masks are not counted)
        "aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::alpha_dropout",
        "aten::native_dropout", "aten::bernoulli_",
        // factories
        "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
        "aten::new_empty_strided", "aten::zeros", "aten::zeros_like", "aten::ones",
        "aten::ones_like", "aten::full", "aten::full_like", "aten::new_zeros", "aten::new_ones",
        "aten::new_full", "aten::arange", "aten::scalar_tensor", "aten::result_type",
        "aten::linspace", "aten::eye", "aten::tensor", "aten::_pad_enum",
        // random numbers and state (drawing, not arithmetic on the model's data)
        "aten::randn", "aten::randn_like", "aten::rand", "aten::rand_like", "aten::randint",
        "aten::randint_like", "aten::randperm", "aten::normal", "aten::normal_", "aten::uniform_",
        "aten::bernoulli", "aten::random_", "aten::exponential_", "aten::multinomial",
        "aten::feature_dropout_", "aten::alpha_dropout_", "aten::feature_alpha_dropout",
        "aten::feature_alpha_dropout_", "aten::cudnn_is_acceptable", "aten::is_same_size",
        "aten::_has_compatible_shallow_copy_type", "aten::retains_grad", "aten::_version",
        "aten::output_nr", "aten::data", "aten::set_data", "aten::_shape_as_tensor", "aten::dim",
        "aten::numel", "aten::is_floating_point", "aten::is_complex", "aten::_nnz"}) {
    add_builtin_constant_formula(op, zero);
  }
}

}  // namespace flopsprof::detail
