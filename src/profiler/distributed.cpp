// gather_profile: every rank's profile through the job's c10d store (see flopsprof/distributed.h).
#include "flopsprof/distributed.h"

#include <unistd.h>

#include <atomic>
#include <map>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "aggregation/ranks.h"
#include "flopsprof/error.h"

namespace flopsprof {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// Waits for `keys` (one per rank); on timeout names the ranks whose keys are missing.
void wait_all(c10d::Store& store, const std::vector<std::string>& keys,
              std::chrono::milliseconds timeout, const char* what) {
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    std::string missing;
    for (size_t r = 0; r < keys.size(); ++r) {
      bool there = false;
      try {
        there = store.check({keys[r]});
      } catch (...) {
      }
      if (!there) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    throw Error(fmt::format(
        "gather_profile: rank(s) {} did not send their {} within {} ms; every rank must call "
        "gather_profile() after stop_profile() (or raise GatherOptions::timeout). ({})",
        missing.empty() ? "?" : missing, what, timeout.count(), e.what()));
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
  store.set(header_keys[rank], bytes(detail::encode_header(mine)));
  wait_all(store, header_keys, options.timeout, "header");
  std::vector<std::string> headers;
  for (const std::string& k : header_keys) headers.push_back(text(store.get(k)));
  const std::string mismatch = detail::header_mismatch(mine, headers);
  if (!mismatch.empty()) throw Error("gather_profile: " + mismatch);

  // 2. Profiles, to the ranks that combine them.
  const std::vector<std::string> profile_keys = keys("profile");
  store.set(profile_keys[rank], bytes(detail::encode_rank(mine)));
  if (!options.all_ranks && rank != options.dst_rank) {
    return detail::combine_ranks({mine}, options.straggler_threshold, options.backend);
  }
  wait_all(store, profile_keys, options.timeout, "profile");
  std::vector<detail::RankProfile> all;
  for (const std::string& k : profile_keys) all.push_back(detail::decode_rank(text(store.get(k))));
  DistributedStats stats =
      detail::combine_ranks(std::move(all), options.straggler_threshold, options.backend);
  prof.attach_distributed(stats);
  return stats;
}

}  // namespace flopsprof
