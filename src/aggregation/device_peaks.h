// A GPU's roofline ceilings from its datasheet or its properties.
#pragma once

#include "flopsprof/roofline.h"
#include "records/gpu.h"

namespace flopsprof::detail {

/// A CUDA device's ceilings: its datasheet's figures when the name is in flopsprof's table
/// (H100 SXM/PCIe, H200, A100; "device table"), else computed from its properties ("device
/// properties": FP32 lanes x 2 x SMs x clock; 2 x memory clock x bus width / 8), each ceiling on
/// its own. The table gives tf32 (DType::kTFloat32: the fp32 work LibTorch runs on TF32 tensor
/// cores) its own peak; from properties it has none (fp32's is used). Pure.
MachinePeaks gpu_peaks(const GpuDeviceProperties& props);

}  // namespace flopsprof::detail
