// How the diff's writers (text, JSON, HTML) name and show its values: one place for each.
#pragma once

#include <string>

#include "flopsprof/diff.h"

namespace flopsprof::detail {

/// Whether `v` is a decimal number as rules and options write it: [+-]digits[.digits][e[+-]digits]
/// (no hexadecimal, "inf", "nan" or spaces, which strtod alone would take).
bool is_decimal_number(const std::string& v);
/// "same", "changed", "added", "removed" (the JSON's `status`).
const char* status_name(DiffStatus s);
/// "+5.0%", "-12.3%"; "new" for +infinity (from 0), "gone" for -infinity.
std::string percent_text(double percent);
/// "+528", "-1.20 K", "0"; "n/a" when unknown.
std::string count_delta_text(const CountDelta& c);
/// "+41.44 us", "-801.00 ns", with " ~" inside the run-to-run spread; "n/a" when unknown.
std::string time_delta_text(const TimeDelta& t);
/// One side of a latency (`value`: `t.base` or `t.next`), n/a when `t` is not known (a profile
/// with no time).
std::string time_side_text(const TimeDelta& t, double value);
/// A latency's percent change, "" when not known.
std::string time_percent_text(const TimeDelta& t);
/// A region's rate or utilisation on one side: "1.98 K", "60.8%" (`fraction`); "n/a" for 0.
std::string rate_text(double v, bool fraction);
/// "+5.0%" of a rate known on both sides, "" otherwise.
std::string rate_percent_text(const RateDelta& r);
/// Whether the module is in both profiles (same or changed): its percents are defined.
bool in_both(const ModuleDiff& m);
/// "(root)" or its name, with " (was <base name>)" when renamed.
std::string module_label(const ModuleDiff& m);
/// Its type, "Linear -> Bilinear" when it changed under the same name.
std::string type_label(const ModuleDiff& m);
/// A module's share of the root's latency delta: "25.0%", "n/a" when not known (the root's delta
/// inside the noise).
std::string share_text(const ModuleDiff& m);
/// A backward or step total both profiles have none of (both 0): the text and HTML leave it out.
bool unused_training_total(const TotalDiff& t);
/// Text for HTML element content or an attribute value: & < > " ' escaped.
std::string html_escape(const std::string& s);

}  // namespace flopsprof::detail
