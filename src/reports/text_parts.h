// The text report's parts (report_text.cpp writes the summary, report_text_tables.cpp the tables
// after it): the label column, number helpers and the tables' writers. Internal.
#pragma once

#include <cstdint>
#include <string>

#include "flopsprof/report.h"

namespace flopsprof::detail::text {

/// Width of the summary's label column.
constexpr int kLabelWidth = 62;

/// "label:" padded to the label column, then `value` and a newline.
void line(std::string& out, const std::string& label, const std::string& value);
/// A fraction as a percentage with two decimals ("12.34%").
std::string percent(double fraction);
/// FLOP/s, or n/a where `seconds` is 0.
std::string rate(double flops_per_s, double seconds);
/// Bytes moved, in decimal units as bandwidth is ("1.23 GB").
std::string traffic(uint64_t bytes);
/// "45.0%" of a fraction.
std::string share(double fraction);
/// A point's share, or n/a where its time is unknown (RooflinePoint::timed).
std::string share(const RooflinePoint& p);
/// A time of `r`, or n/a where the profile has none (ProfileResult::timed: nothing ran).
std::string time_of(const ProfileResult& r, double seconds);
/// The memory level a point's bytes are placed against, on a machine with several ("" else).
std::string level_of(const RooflinePoint& p, const MachinePeaks& m);
/// "12.34 FLOP/B, memory-bound, 45.0% of the bandwidth", or the intensity alone.
std::string point_text(const RooflinePoint& p, const MachinePeaks& m);
/// A point's bound and share in a row: "memory L2 45.0%"; "!" after a share above its ceiling.
std::string bound_share(const RooflinePoint& p, const MachinePeaks& m);

/// The summary's roofline lines: bytes per phase, intensity, the ceilings and their sources, and
/// the share of them the model reached (report_text_roofline.cpp).
void roofline_summary(std::string& out, const ProfileResult& r);

// The tables, in the order format_text_report writes them.
void regions(std::string& out, const ProfileResult& r, const ReportOptions& o);
void aggregated(std::string& out, const ProfileResult& r, const ReportOptions& o);
void detailed(std::string& out, const ProfileResult& r, const ReportOptions& o);
void op_roofline(std::string& out, const ProfileResult& r);
void kernel_table(std::string& out, const ProfileResult& r, const ReportOptions& o);
void collectives(std::string& out, const ProfileResult& r);
void ranks(std::string& out, const DistributedStats& d, const ReportOptions& o);

}  // namespace flopsprof::detail::text
