// The capture stage's failure paths, run against the fault-injection build of the observer
// (flopsprof_capture_faults: the library's objects with src/capture/observer.cpp compiled with
// FLOPSPROF_CAPTURE_FAULTS). This binary also replaces operator new, to fail allocations on one
// thread on demand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <thread>

#include "capture/attention_mask.h"
#include "capture/observer.h"
#include "capture/session.h"
#include "flopsprof/flopsprof.h"

namespace {
thread_local bool t_fail_new = false;  // operator new throws on this thread while set
}  // namespace

void* operator new(std::size_t n) {
  if (t_fail_new) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The other unaligned forms too, so that every block this binary frees with the free() above came
// from the malloc() here: std::stable_sort's buffer is a nothrow new returned by a sized delete,
// and AddressSanitizer reports a block of its own operator new freed here as a mismatch.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (t_fail_new) return nullptr;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

namespace d = flopsprof::detail;
using flopsprof::FlopsProfiler;

// A start callback that fails midway (an out-of-memory while capturing arguments) leaves nothing
// behind: the op is not recorded, the thread's depth counters and open op are unchanged, later
// ops are counted as usual, and the failure is reported once.
TEST(Capture, AFailedStartCallbackIsAllOrNothing) {
  torch::nn::Sequential model(torch::nn::Linear(4, 4), torch::nn::Linear(4, 4));
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({2, 4});
  FlopsProfiler prof(model);
  prof.start_profile();
  d::g_fail_captures = 1;  // the first counted op with arguments: 0's addmm
  model->forward(x);
  d::g_fail_captures = 0;
  model->forward(x);
  prof.stop_profile();
  // first forward: layer 0's addmm lost (2*4*4 MACs), layer 1 counted; second forward: both
  EXPECT_EQ(prof.get_total_macs(), 3u * (2 * 4 * 4));
  EXPECT_EQ(prof.get_module_macs("1"), 2u * (2 * 4 * 4));
  bool reported = false;
  for (const std::string& p : prof.result().problems)
    reported |= p.find("could not be recorded") != std::string::npos;
  EXPECT_TRUE(reported);
}

// The second of a slot's two callback registrations fails: the first is removed with it, so the
// slot's next profile records each op once (a leftover callback would record it twice) and
// nothing stays registered after end_profile.
TEST(Capture, ARegistrationFailingMidwayLeavesNoCallbackBehind) {
  const bool callbacks_before = at::hasGlobalCallbacks();
  torch::nn::Linear model(4, 4);
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({2, 4});
  FlopsProfiler prof(model);
  // A first profile measures the path's own cost once per process (capture/calibration.h),
  // which registers callbacks of its own: done before the fault, the fault hits the profile's.
  prof.start_profile();
  prof.stop_profile();
  prof.reset_profile();
  ASSERT_EQ(at::hasGlobalCallbacks(), callbacks_before);
  d::g_fail_registrations = 1;
  EXPECT_ANY_THROW(prof.start_profile());
  d::g_fail_registrations = 0;
  EXPECT_FALSE(prof.is_running());
  EXPECT_EQ(at::hasGlobalCallbacks(), callbacks_before) << "the failed start left a callback";
  prof.start_profile();
  model->forward(x);
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_macs(), 2u * 4 * 4) << "addmm: batch 2 x in 4 x out 4, counted once";
  prof.end_profile();
  EXPECT_EQ(at::hasGlobalCallbacks(), callbacks_before);
}

// stop_observing promises that afterwards no thread is inside a callback that may use the
// session, and it must keep that promise with no memory to spare: here no allocation on the
// stopping thread succeeds. The other thread leaves its callback only after stop_observing has
// begun; whatever the scheduling, stop_observing may return only after it left.
TEST(Capture, StopWaitsForAThreadInsideACallbackEvenWithoutMemory) {
  d::Session session;
  d::start_observing(&session, /*all_threads=*/true, d::CaptureRequest::kRecordFunction);
  std::atomic<bool> inside{false}, entered{false}, stopping{false}, left{false};
  std::thread worker([&] {
    d::CallbackGuard guard;  // inside a callback, as an op's would be
    entered = guard.ok();
    inside = true;
    while (!stopping) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the stop begin
    left = true;
  });  // the guard ends here: the thread leaves the callback
  while (!inside) std::this_thread::yield();
  EXPECT_TRUE(entered.load());
  stopping = true;
  t_fail_new = true;
  d::stop_observing(&session);
  t_fail_new = false;
  EXPECT_TRUE(left.load()) << "stop_observing returned while a thread was inside a callback";
  worker.join();
}

// Thread buffers live in sessions only: a stopped session's buffers become the next session's
// spares (warm memory and name caches); without memory to grow the spare list they are freed,
// never leaked or thrown out of the noexcept stop and reset paths.
TEST(Capture, AStoppedSessionsBuffersAreTheNextOnesSparesAndNoMemoryFreesThem) {
  d::Session earlier;
  earlier.buffers.push_back(std::make_unique<d::ThreadBuffer>());
  earlier.spares.push_back(std::make_unique<d::ThreadBuffer>());
  const d::ThreadBuffer* used = earlier.buffers[0].get();
  d::Session next;
  next.reuse_buffers(earlier);
  EXPECT_TRUE(earlier.buffers.empty());
  EXPECT_TRUE(earlier.spares.empty());
  ASSERT_EQ(next.spares.size(), 2u);
  EXPECT_EQ(next.spares[0].get(), used);

  next.buffers.push_back(std::make_unique<d::ThreadBuffer>());
  next.spares.shrink_to_fit();  // adding one more must grow the list
  t_fail_new = true;
  next.recycle();
  t_fail_new = false;
  EXPECT_TRUE(next.buffers.empty());
  EXPECT_EQ(next.spares.size(), 2u);  // the recorded buffer was freed, the spares kept
}

// A record's data identity is the tensor object it read, kept allocated (a weak reference, not
// its memory) until the model's next op that reads data is recorded, so that no tensor in
// between takes its address; discarding the records lets go of it.
TEST(Capture, ARecordsDatumIsHeldOnlyWhileTheRecordsAreKept) {
  torch::manual_seed(0);
  torch::nn::Linear lin(4, 4);
  torch::Tensor x = torch::randn({2, 4});
  auto weak = [&] { return x.getIntrusivePtr().weak_use_count(); };
  const size_t alone = weak();
  flopsprof::FlopsProfiler prof(lin);
  prof.start_profile();
  // Inside an observed call of the profiled model (the Linear's built-in forward): its data is
  // never compared with another op's (rule 9), so not held.
  lin->forward(x);
  EXPECT_EQ(weak(), alone);
  // The caller's op on x, outside the model's calls: held, once for the same datum.
  (void)(x * 2);
  (void)(x * 2);
  EXPECT_EQ(weak(), alone + 1);
  prof.stop_profile();
  prof.reset_profile();  // the records are discarded
  EXPECT_EQ(weak(), alone);
  prof.start_profile();
  (void)(x * 2);
  EXPECT_EQ(weak(), alone + 1);
  // The model's first op that reads data (addmm on x) is the comparison rule 9 makes: recorded,
  // the caller's data before it is let go, so that a profile of many forwards holds no tensor
  // objects among the program's freed activations (they fragmented the heap: fresh pages, page
  // faults, in every profiled forward).
  lin->forward(x);
  EXPECT_EQ(weak(), alone);
  (void)(x * 2);
  EXPECT_EQ(weak(), alone + 1);
  prof.end_profile();
  EXPECT_EQ(weak(), alone);
}

}  // namespace

namespace {

// The opt-in read of an attention mask (capture/attention_mask.h): entries that keep a pair, over
// the mask's shape, whatever its layout.
TEST(Capture, AttentionMaskEntriesKeptByLayoutAndDtype) {
  // A causal band of width 2 over [6, 6]: query i keeps keys i-1 and i: 1 + 5 * 2 = 11.
  torch::Tensor band = torch::ones({6, 6}, torch::kBool).tril().triu(-1);
  ASSERT_EQ(band.sum().item<int64_t>(), 11);
  EXPECT_EQ(d::kept_mask_entries(band), 11u);
  // Transposed (strided, not contiguous): the same count.
  EXPECT_EQ(d::kept_mask_entries(band.t()), 11u);
  // A broadcast view [4, 6, 6] (stride 0 over the 4): each stored entry counts 4 times.
  EXPECT_EQ(d::kept_mask_entries(band.expand({4, 6, 6})), 44u);
  // A slice [2:5, :]: rows 2, 3, 4 keep 2 each.
  EXPECT_EQ(d::kept_mask_entries(band.slice(0, 2, 5)), 6u);
  // Additive: 0 keeps; -inf, the dtype's lowest value and -1e4 discard; -100 keeps (exp(-100) is
  // not 0 in fp32).
  torch::Tensor additive =
      torch::tensor({0.0f, -INFINITY, std::numeric_limits<float>::lowest(), -1e4f, -100.0f, 3.0f});
  EXPECT_EQ(d::kept_mask_entries(additive), 3u);
  EXPECT_EQ(d::kept_mask_entries(additive.to(torch::kHalf).index({torch::indexing::Slice(0, 2)})),
            1u);
  EXPECT_EQ(d::kept_mask_entries(additive.to(torch::kBFloat16)), 3u);
  EXPECT_EQ(d::kept_mask_entries(additive.to(torch::kDouble)), 3u);
  // A scalar, an empty mask, and what cannot be read.
  EXPECT_EQ(d::kept_mask_entries(torch::tensor(true)), 1u);
  EXPECT_EQ(d::kept_mask_entries(torch::ones({0, 6}, torch::kBool)), 0u);
  EXPECT_FALSE(
      d::kept_mask_entries(torch::ones({6, 6}, torch::dtype(torch::kBool).device(torch::kMeta))));
  EXPECT_FALSE(d::kept_mask_entries(torch::ones({6, 6}, torch::kInt)));
  EXPECT_FALSE(d::kept_mask_entries(torch::Tensor()));
  EXPECT_FALSE(d::kept_mask_entries(band.to_sparse()));
}

}  // namespace
