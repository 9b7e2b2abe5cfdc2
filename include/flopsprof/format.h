// Numbers as the reports write them (DeepSpeed's units): counts scaled to K/M/G/T/P, durations
// in s/ms/us, rates, intensities and bandwidths, bytes. Pure functions, thread-safe. The HTML
// page's script formats with the same rules (its `flopsprofFormat`, which the browser test
// compares with these on one set of values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flopsprof {

/// "8.21 G": value scaled to K/M/G/T/P with `precision` decimals, as DeepSpeed's number_to_string.
std::string number_to_string(double value, int precision = 2);
/// "4.09 GMACs", "12 FLOPs", "1.23 GB/s": number_to_string(value) followed by `unit`, with no
/// space after a scale letter; just the number when `unit` is empty.
std::string number_to_string(double value, std::string_view unit);
/// "109.51 M"
std::string params_to_string(uint64_t params);
/// "4.09 GMACs"
std::string macs_to_string(uint64_t macs);
/// "8.21 G"
std::string flops_to_string(uint64_t flops);
/// "1.23 TFLOPS"
std::string flops_per_second_to_string(double flops_per_second);
/// "120.53 ms" (seconds in, unit chosen among s, ms, us)
std::string duration_to_string(double seconds);

/// "1.50 MiB" (binary units, as memory is counted; negative for memory freed)
std::string bytes_to_string(int64_t bytes);

/// "12.3 FLOP/B"
std::string intensity_to_string(double flops_per_byte);
/// "1.23 GB/s" (decimal units, as datasheets give bandwidth)
std::string bandwidth_to_string(double bytes_per_s);

}  // namespace flopsprof
