// One profiler's recording: the capture stage's whole lifecycle (start, stop, restart, discard,
// end), its records, its clock, its device timing and device records. The facade
// (src/profiler/profiler.cpp) only calls it; nothing else starts or stops callbacks for a profile.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/calibration.h"
#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture/module_index.h"
#include "capture/observer.h"
#include "capture/session.h"
#include "records/events.h"
#include "records/gpu.h"

namespace flopsprof::detail {

/// How a recording observes the program (from ProfilerOptions).
struct RecordingSetup {
  bool all_threads = true;    ///< every thread, or the calling thread and those it propagates to
  bool track_memory = false;  ///< c10's memory-reporting observer
  bool read_masks = false;    ///< ProfilerOptions::read_attention_masks
  CaptureRequest capture = CaptureRequest::kAuto;  ///< ProfilerOptions::capture
  GpuTimingRequest timing;                         ///< the device to time, and how
};

/// How the last start captured ops: the path, why kAuto did not take the interceptor, and the
/// interceptor's coverage counts (Session::threads_joined, coverage_gaps).
struct CaptureInfo {
  bool dispatch = false;
  std::string note;
  uint32_t threads_joined = 0, coverage_gaps = 0;
  /// The path's calibrated cost per record (calibrated false: latencies cannot be corrected, and
  /// `uncorrected` says why).
  CaptureCost cost;
  std::string uncorrected;
  /// Non-empty when the profile started right after flopsprof's one-off work (SetupWork), with no
  /// call of a built-in module between them: what ran, and that the first ops' latencies read
  /// high for it.
  std::string cold_start;
};

/// A stopped recording's records: its session (which owns the thread buffers that hold them),
/// its clock and the device records flushed once at the stop.
struct Collection {
  std::unique_ptr<Session> session;
  int64_t stop = 0, origin = 0;  ///< timestamps (session units)
  double ns_per_tick = 1.0;
  std::string timer;  ///< the clock's name ("... (calibrated TSC)")
  std::optional<GpuCollection> gpu;
  std::vector<RegionWindow> regions;  ///< the region windows (open ones closed at the stop)
};

/// The records to read: copies of a running session's (taken while other threads keep
/// recording), or a stopped one's in place.
struct RecordsView {
  std::vector<std::unique_ptr<ThreadEvents>> copies;
  std::vector<const ThreadEvents*> threads;
};

/// The problems seen while collecting `records`: ops still open when read, ops or scopes that
/// could not be recorded, ops with more arguments than captured. One line each, or none.
std::vector<std::string> capture_problems(const RecordsView& records);

/// Not thread-safe: one profiler's calls, as FlopsProfiler's. The callbacks it registers run on
/// every observed thread and never touch this object, only the session.
class Recording {
 public:
  explicit Recording(std::shared_ptr<Timer> timer);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  /// Does the one-off work a start on `capture`'s path needs ahead of it (prepare_capture), so
  /// that its caches are warm again by the start if the program runs in between.
  void prepare(CaptureRequest capture) noexcept;
  /// Starts observing `index`'s model (kept by the caller until end() or the next start) with
  /// `setup`: all or nothing; on an error nothing stays registered or started, and it throws.
  /// The previous recording's records are dropped, their thread buffers reused.
  void start(const ModelIndex& index, const RecordingSetup& setup);
  /// Stops observing; on a CUDA device synchronizes once first; flushes CUPTI's records or reads
  /// the device events once. The records are then collected().
  void stop();
  /// While running: drops what was recorded and starts again with the same index and setup.
  void restart();
  /// Drops the collected records (keeping their thread buffers for the next start).
  void discard() noexcept;
  /// Stops whatever runs and drops everything (nothing stays registered).
  void end() noexcept;

  bool running() const { return running_; }
  /// The last stopped recording's (empty before the first stop, after discard() and end()).
  const Collection& collected() const { return collected_; }
  /// The running session's records (copies), or the collected ones.
  RecordsView records() const;
  /// The running session's clock: now, its origin and its rate.
  int64_t now() const { return session_->now(); }
  int64_t origin() const { return session_->tick0; }
  double ns_per_tick() const { return session_->ns_per_tick(); }
  /// The running session's slot (StepScope's lookup), -1 when not running.
  int slot() const { return session_ ? session_->slot : -1; }
  /// The clock's name, "(calibrated TSC)" added when timestamps are TSC ticks.
  std::string timer_name() const;
  /// Wall clock (ns since the epoch) when the last start's clock started.
  int64_t wall0_ns() const { return wall0_ns_; }
  /// The device timing chosen at start (its device name, properties, timing and reason).
  const GpuSelection& gpu() const { return gpu_; }
  /// How the running or last stopped recording captured ops.
  CaptureInfo capture() const;
  /// Opens an optimizer-step record of this recording on the calling thread (FlopsProfiler::
  /// step_scope); a handle with session 0 when not running or it could not be recorded.
  ScopeHandle open_step();

  /// Opens a window of region `name` (FlopsProfiler::region) at now; returns its index, or -1
  /// when not running. Throws `Error` while another window is open (regions do not overlap).
  int open_region(std::string name, uint64_t tokens);
  /// Closes window `index` of the recording `generation` (a window of a recording since
  /// restarted, stopped or ended is left alone); idempotent.
  void close_region(int index, uint64_t generation) noexcept;
  /// Adds `tokens` to window `index` of recording `generation` (none: it is gone).
  void add_region_tokens(int index, uint64_t generation, uint64_t tokens) noexcept;
  /// Changes at every start, restart, stop and end: what a region handle checks.
  uint64_t generation() const { return generation_; }
  /// The running recording's region windows (open ones with end 0), or the collected ones.
  const std::vector<RegionWindow>& regions() const {
    return running_ ? regions_ : collected_.regions;
  }

 private:
  void begin();
  void halt() noexcept;
  void release_session() noexcept;
  void note_uncorrected(const Session& s, bool stopped);
  void note_cold_start();
  void drop_events(const std::vector<std::unique_ptr<ThreadBuffer>>& buffers) noexcept;

  std::shared_ptr<Timer> timer_;
  const ModelIndex* index_ = nullptr;
  RecordingSetup setup_;
  std::unique_ptr<Session> session_;  // the running recording's
  Collection collected_;
  GpuSelection gpu_;
  std::unique_ptr<DeviceEvents> events_;  // active device-event timing, if any
  bool running_ = false;
  std::string capture_note_;  // why the last start did not use the interceptor
  CaptureCost cost_;          // the running or last profile's path's cost per record
  std::string uncorrected_;   // why its latencies cannot be corrected
  std::string cold_start_;    // CaptureInfo::cold_start
  int64_t wall0_ns_ = 0;
  std::vector<RegionWindow> regions_;  // the running recording's
  uint64_t generation_ = 0;
};

}  // namespace flopsprof::detail
