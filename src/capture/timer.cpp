// Timer backends: the host steady clock and a deterministic step clock for tests.
#include <atomic>
#include <chrono>

#include "flopsprof/timer.h"

namespace flopsprof {
namespace {

class HostTimer final : public Timer {
 public:
  const char* name() const noexcept override { return "host steady_clock"; }
  int64_t now_ns() noexcept override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

class StepTimer final : public Timer {
 public:
  StepTimer(int64_t step, int64_t start) : step_(step), next_(start) {}
  const char* name() const noexcept override { return "step clock (deterministic)"; }
  int64_t now_ns() noexcept override {
    return next_.fetch_add(step_, std::memory_order_relaxed) + step_;
  }

 private:
  int64_t step_;
  std::atomic<int64_t> next_;
};

}  // namespace

namespace detail {
bool is_host_timer(const Timer* timer) noexcept {
  return dynamic_cast<const HostTimer*>(timer) != nullptr;
}
}  // namespace detail

std::shared_ptr<Timer> make_host_timer() { return std::make_shared<HostTimer>(); }

std::shared_ptr<Timer> make_step_timer(int64_t step_ns, int64_t start_ns) {
  return std::make_shared<StepTimer>(step_ns, start_ns);
}

}  // namespace flopsprof
