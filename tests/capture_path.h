// Which capture path this test run's profiles take (ProfilerOptions::Capture). ctest runs the
// suites that capture twice: as they are (kAuto: the dispatcher interceptor) and with
// FLOPSPROF_TEST_CAPTURE=record_function, under which tests/capture_path.cpp keeps a
// record_function profile running on an idle thread of its own for the whole run, so that every
// kAuto profile follows it (profiles that overlap share one path). The library has no switch for
// this: it is the path choice a program makes when it runs two profiles.
#pragma once

#include <cstdlib>
#include <cstring>

#include <flopsprof/profiler.h>

namespace flopsprof_test {

/// Whether this run pins every profile to RecordFunction.
inline bool record_function_run() {
  const char* v = std::getenv("FLOPSPROF_TEST_CAPTURE");
  return v != nullptr && std::strcmp(v, "record_function") == 0;
}

/// The path a kAuto profile takes in this run, as Workload::capture names it.
inline const char* expected_capture() {
  return record_function_run() ? "record_function" : "dispatch";
}

/// Profiles this run leaves to the tests (the pin holds one slot).
inline int free_profile_slots() { return record_function_run() ? 3 : 4; }

}  // namespace flopsprof_test

/// Skips a test that needs a path the run pins away from (an explicit capture = dispatch), or
/// the whole set of profile slots.
#define FLOPSPROF_SKIP_IF_PINNED(why)                                 \
  do {                                                                \
    if (flopsprof_test::record_function_run()) GTEST_SKIP() << (why); \
  } while (0)
