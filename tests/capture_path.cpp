// The record_function run's pin (tests/capture_path.h): a profile with capture = record_function
// of a module that never runs, started on an idle thread of its own (threads = kCallingThread: it
// observes nothing), kept running from before the first test until after the last.
#include "capture_path.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace {

class PinRecordFunction : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!flopsprof_test::record_function_run()) return;
    thread_ = std::thread([this] {
      flopsprof::ProfilerOptions options;
      options.capture = flopsprof::ProfilerOptions::Capture::kRecordFunction;
      options.threads = flopsprof::ProfilerOptions::Threads::kCallingThread;
      options.roofline.enabled = false;
      flopsprof::FlopsProfiler pin(torch::nn::Identity{}, options);
      pin.start_profile();
      std::unique_lock<std::mutex> lock(mu_);
      started_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return done_; });
      pin.end_profile();
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return started_; });
  }
  void TearDown() override {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, done_ = false;
};

::testing::Environment* const g_pin = ::testing::AddGlobalTestEnvironment(new PinRecordFunction);

}  // namespace
