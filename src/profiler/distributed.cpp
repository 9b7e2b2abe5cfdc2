// gather_profile: every rank's profile through the job's c10d store (see flopsprof/distributed.h).
#include "flopsprof/distributed.h"

#include <unistd.h>

#include <atomic>
#include <map>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "aggregation/ranks.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// The store's own message: its first line (c10::Error appends a C++ backtrace of ~2.5 KB).
std::string store_message(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    return detail::first_line(c10->what_without_backtrace());
  }
  return detail::first_line(e.what());
}

[[noreturn]] void store_lost(int rank, const char* doing, const std::exception& e) {
  throw Error(fmt::format(
      "gather_profile: store connection lost on rank {} while {}: {}. The process that hosts the "
      "store (a TCPStore's server rank) has exited or the connection failed: keep every rank "
      "alive until gather_profile() has returned on all of them.",
      rank, doing, store_message(e)));
}

// Runs one store call; any failure of the store itself is reported as a lost connection (a
// std::exception from c10d never leaves gather_profile()).
template <typename F>
auto store_call(int rank, const char* doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    store_lost(rank, doing, e);
  }
}

// Waits for `keys` (one per rank). On a timeout names the ranks whose keys are missing; when the
// store itself fails (its host exited: the wait ends at once, long before the timeout), says so
// with the store's own message instead.
void wait_all(c10d::Store& store, const std::vector<std::string>& keys, int rank,
              std::chrono::milliseconds timeout, const char* what) {
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    std::string missing;
    for (size_t r = 0; r < keys.size(); ++r) {
      bool there = false;
      try {
        there = store.check({keys[r]});
      } catch (const std::exception&) {  // the store is gone, not a rank
        store_lost(rank, fmt::format("waiting for the ranks' {}s", what).c_str(), e);
      }
      if (!there) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    if (missing.empty()) {  // every key is there: the wait failed for another reason
      store_lost(rank, fmt::format("waiting for the ranks' {}s", what).c_str(), e);
    }
    throw Error(fmt::format(
        "gather_profile: rank(s) {} did not send their {} within {} ms; every rank must call "
        "gather_profile() after stop_profile() (or raise GatherOptions::timeout). ({})",
        missing, what, timeout.count(), store_message(e)));
  }
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace

DistributedStats gather_profile(FlopsProfiler& prof, c10d::Store& store, int rank, int world_size,
                                const GatherOptions& options) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw Error(
        fmt::format("gather_profile: rank {} of world size {} is invalid", rank, world_size));
  }
  if (options.dst_rank < 0 || options.dst_rank >= world_size) {
    throw Error(fmt::format("gather_profile: dst_rank {} is not a rank of world size {}",
                            options.dst_rank, world_size));
  }
  if (prof.is_running()) {
    throw Error("gather_profile: the profile is still running; call stop_profile() first");
  }
  const ProfileResult& own = prof.result();  // throws when nothing was profiled
  prof.set_rank(rank, world_size, options.backend);
  // Each call is a new round, so that repeated gathers in one job never read stale keys (every
  // rank calls it the same number of times).
  static std::atomic<int> rounds{0};
  const int round = rounds.fetch_add(1);
  const std::string base = fmt::format("{}/{}/", options.key_prefix, round);
  auto keys = [&](const char* what) {
    std::vector<std::string> k;
    for (int r = 0; r < world_size; ++r) k.push_back(fmt::format("{}{}/{}", base, what, r));
    return k;
  };

  detail::RankProfile mine =
      detail::make_rank_profile(own, rank, world_size, host_name(), static_cast<int64_t>(getpid()));
  // 1. Headers: every rank checks every other, so a mismatch is an error on every rank.
  const std::vector<std::string> header_keys = keys("header");
  store_call(rank, "sending its header",
             [&] { store.set(header_keys[rank], bytes(detail::encode_header(mine))); });
  wait_all(store, header_keys, rank, options.timeout, "header");
  std::vector<std::string> headers;
  for (const std::string& k : header_keys) {
    headers.push_back(text(store_call(rank, "reading the headers", [&] { return store.get(k); })));
  }
  const std::string mismatch = detail::header_mismatch(mine, headers);
  if (!mismatch.empty()) throw Error("gather_profile: " + mismatch);

  // 2. Profiles, to the ranks that combine them.
  const std::vector<std::string> profile_keys = keys("profile");
  store_call(rank, "sending its profile",
             [&] { store.set(profile_keys[rank], bytes(detail::encode_rank(mine))); });
  if (!options.all_ranks && rank != options.dst_rank) {
    return detail::combine_ranks({mine}, options.straggler_threshold, options.backend);
  }
  wait_all(store, profile_keys, rank, options.timeout, "profile");
  std::vector<detail::RankProfile> all;
  for (const std::string& k : profile_keys) {
    all.push_back(detail::decode_rank(
        text(store_call(rank, "reading the profiles", [&] { return store.get(k); }))));
  }
  DistributedStats stats =
      detail::combine_ranks(std::move(all), options.straggler_threshold, options.backend);
  prof.attach_distributed(stats);
  return stats;
}

}  // namespace flopsprof
