// --inputs FILE: the forward's arguments from tensors saved by torch.save / torch::pickle_save,
// checked as a zip archive before LibTorch reads a byte of it.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace flopsprof::cli {

/// The largest --inputs file read: 64 GiB (the tensors are loaded whole).
constexpr uint64_t kMaxInputsBytes = uint64_t{64} << 30;

/// The tensors saved in `path`: a tensor is one argument, a tuple or list of tensors one argument
/// each; on the CPU, detached. The file must be a regular file of at most kMaxInputsBytes and a
/// zip archive whose every member lies inside it and whose stored members match their CRC-32
/// (torch.save's default format); only then does LibTorch's reader open it (by path). Throws
/// `Error` naming the file, what is wrong and how to save it.
std::vector<at::Tensor> load_inputs_file(const std::string& path);

/// Whether `data` (a file's bytes) is a zip archive LibTorch may read: `Error` naming `source`
/// and the fault otherwise. The fuzz target's entry point (tests/fuzz/).
void check_saved_tensors_archive(const std::string& data, const std::string& source);

}  // namespace flopsprof::cli
