// The HTML report: one self-contained file (data embedded, script and style inline, no network).
#pragma once

#include <string>

#include "flopsprof/report.h"

namespace flopsprof::detail {

/// Escapes JSON text for a <script type="application/json"> element: '<', '>' and '&' become
/// \u003c, \u003e, \u0026 (only inside JSON strings, where they can occur), so no name from the
/// model can close the element or open a comment.
std::string json_for_script(const std::string& json);

/// The page: summary, module icicle (width: FLOPs, fwd or bwd latency; colour: achieved FLOP/s),
/// module table (sort, filter, depth limit), op table (no-formula ops highlighted), memory
/// footprint (with track_memory) and the batch-size sweep when `sweep_csv` (BatchSweep::csv())
/// is given. Every model-provided string is inserted as text, never as markup.
std::string html_report(const ProfileResult& result, const std::vector<BatchSweepRow>& sweep = {});

/// The page's data (report_html_data.cpp), JSON: every number the page shows with its text,
/// formatted by flopsprof/format.h's functions; the script lays them out. Not the profile's JSON
/// (docs/json.md): the page names none of its keys.
std::string html_page_data(const ProfileResult& result, const std::vector<BatchSweepRow>& sweep);

/// The page's script (JavaScript, report_html_script.cpp), inserted inline by html_report().
const char* html_report_script();

}  // namespace flopsprof::detail
