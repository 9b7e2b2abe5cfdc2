// Profile results rendered: the text report (DeepSpeed's layout), the JSON document, the HTML
// page. The result model is flopsprof/result.h, its number formatting flopsprof/format.h, the
// machine's ceilings and a device's datasheet flopsprof/roofline.h; this header includes them all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flopsprof/format.h"
#include "flopsprof/result.h"
#include "flopsprof/roofline.h"

namespace flopsprof {

/// Options of the text report, as DeepSpeed's `print_model_profile`.
struct ReportOptions {
  int header_step = 1;    ///< the step number in the header ("Profile Summary at step N")
  int module_depth = -1;  ///< deepest level printed in the tree and aggregation; -1: all
  int top_modules = 1;    ///< modules listed per depth in the aggregated view
  bool detailed = true;   ///< print the detailed module tree
  /// Roofline columns in the tree after DeepSpeed's (bytes, intensity, bound, share of the
  /// ceiling), and the top ops on the roofline; false: DeepSpeed's fields only. The summary's
  /// bytes and peaks lines are printed either way.
  bool roofline = true;
};

/// Renders DeepSpeed's three sections: summary, aggregated top modules per depth, detailed tree.
/// Throws `Error` for invalid options (module_depth < -1, top_modules < 1).
std::string format_text_report(const ProfileResult& result, const ReportOptions& options = {});

/// The profile as JSON (schema in docs/json.md, `schema_version` 2). `indent` < 0: compact.
std::string to_json(const ProfileResult& result, int indent = 2);
/// One batch size of a sweep.
struct BatchSweepRow {
  int64_t batch_size = 0;
  int64_t fwd_peak_bytes = 0;    ///< peak net bytes during a forward without grad
  int64_t train_peak_bytes = 0;  ///< peak net bytes during forward + backward (0 if not run)
  uint64_t fwd_flops = 0;
  double fwd_latency_s = 0;
};

/// The self-contained HTML report of `result` (see FlopsProfiler::html), with an optional
/// batch-size sweep (BatchSweep::rows, from flopsprof/sweep.h).
std::string to_html(const ProfileResult& result, const std::vector<BatchSweepRow>& sweep = {});

}  // namespace flopsprof
