// The multi-rank stage on synthetic ranks: encoding, the header check, per-module min / mean /
// max, the slowest rank, stragglers and the modules that account for them.
#include <gtest/gtest.h>

#include "aggregation/ranks.h"
#include "flopsprof/error.h"

namespace {

using flopsprof::detail::RankProfile;
namespace d = flopsprof::detail;

// A 3-module model (root, "fc", "block") on `rank`; block's fwd latency given.
RankProfile rank_with(int rank, int world, double block_fwd_s, double fc_fwd_s = 0.002) {
  RankProfile p;
  p.world_size = world;
  p.signature = 42;
  p.stats.rank = rank;
  p.stats.host = "host\twith\ttabs";
  p.stats.pid = 1000 + rank;
  p.stats.forward_calls = 1;
  p.stats.fwd_latency_s = 0.001 + fc_fwd_s + block_fwd_s;
  p.stats.bwd_latency_s = 0.004;
  p.stats.step_latency_s = 0.001;
  p.stats.iteration_latency_s = p.stats.fwd_latency_s + 0.004 + 0.001;
  p.stats.flops = 1000;
  p.modules = {{"", "Net", 0, 1, 1000, 10, p.stats.fwd_latency_s, 0.004},
               {"fc", "Linear", 1, 1, 600, 6, fc_fwd_s, 0.002},
               {"block", "Block", 1, 1, 400, 4, block_fwd_s, 0.002}};
  return p;
}

TEST(Ranks, EncodeDecodeRoundTripsEveryField) {
  RankProfile p = rank_with(3, 4, 0.0123456789);
  p.modules[1].name = "odd\nname\\with\tescapes";
  RankProfile q = d::decode_rank(d::encode_rank(p));
  EXPECT_EQ(q.stats.rank, 3);
  EXPECT_EQ(q.world_size, 4);
  EXPECT_EQ(q.signature, 42u);
  EXPECT_EQ(q.stats.host, p.stats.host);
  EXPECT_EQ(q.stats.pid, 1003);
  EXPECT_DOUBLE_EQ(q.stats.iteration_latency_s, p.stats.iteration_latency_s);
  ASSERT_EQ(q.modules.size(), 3u);
  EXPECT_EQ(q.modules[1].name, "odd\nname\\with\tescapes");
  EXPECT_DOUBLE_EQ(q.modules[2].fwd_s, 0.0123456789);
  EXPECT_EQ(q.modules[2].flops, 400u);
  EXPECT_THROW(d::decode_rank("garbage"), flopsprof::Error);
  EXPECT_THROW(d::decode_rank("flopsprof-rank 1\nrank\t1\n"), flopsprof::Error);
}

TEST(Ranks, HeadersMustAgreeOnModelStepsAndWorldSize) {
  RankProfile a = rank_with(0, 2, 0.001), b = rank_with(1, 2, 0.001);
  EXPECT_EQ(d::header_mismatch(a, {d::encode_header(a), d::encode_header(b)}), "");
  b.signature = 43;
  EXPECT_NE(d::header_mismatch(a, {d::encode_header(a), d::encode_header(b)})
                .find("rank 1 profiled a different model than rank 0"),
            std::string::npos);
  b = rank_with(1, 2, 0.001);
  b.stats.forward_calls = 2;
  EXPECT_NE(d::header_mismatch(a, {d::encode_header(a), d::encode_header(b)})
                .find("profiled 2 forward calls"),
            std::string::npos);
  b = rank_with(1, 3, 0.001);
  EXPECT_NE(d::header_mismatch(a, {d::encode_header(a), d::encode_header(b)}).find("world size"),
            std::string::npos);
}

TEST(Ranks, PerModuleMinMeanMaxAndTheSlowestRank) {
  // block fwd: 1, 2, 2.2, 10 ms on ranks 0..3
  std::vector<RankProfile> ranks = {rank_with(2, 4, 0.0022), rank_with(0, 4, 0.001),
                                    rank_with(3, 4, 0.010), rank_with(1, 4, 0.002)};
  flopsprof::DistributedStats s = d::combine_ranks(ranks, 0.10, "gloo");
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.data_parallel_size, 4);
  ASSERT_EQ(s.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(s.ranks[r].rank, r);  // sorted by rank
  const flopsprof::RankModuleStats& block = s.modules[2];
  EXPECT_EQ(block.name, "block");
  EXPECT_DOUBLE_EQ(block.fwd_min_s, 0.001);
  EXPECT_DOUBLE_EQ(block.fwd_max_s, 0.010);
  EXPECT_DOUBLE_EQ(block.fwd_mean_s, (0.001 + 0.002 + 0.0022 + 0.010) / 4);
  EXPECT_EQ(block.slowest_rank, 3);
  EXPECT_TRUE(block.same_flops);
  // iterations: 0.008 + block -> 9, 10, 10.2, 18 ms; lower median 10 ms; rank 3 is 80% over;
  // rank 2's block (4.2 ms fwd + bwd vs a median of 4) is 5% over: not a straggler
  ASSERT_EQ(s.stragglers.size(), 1u);
  const flopsprof::Straggler& st = s.stragglers[0];
  EXPECT_EQ(st.rank, 3);
  EXPECT_EQ(st.what, "iteration");
  EXPECT_DOUBLE_EQ(st.value_s, 0.018);
  EXPECT_DOUBLE_EQ(st.median_s, 0.010);
  EXPECT_NEAR(st.over_median, 0.018 / 0.010 - 1, 1e-12);  // 80% over, computed once
  // block's fwd + bwd median: 0.002 + 0.002 = 4 ms; rank 3: 12 ms -> 8 ms over, the whole excess
  ASSERT_EQ(st.modules.size(), 1u);
  EXPECT_EQ(st.modules[0].first, "block");
  EXPECT_NEAR(st.modules[0].second, 0.008, 1e-12);
}

TEST(Ranks, TwoRanksAndAModuleStragglerBelowTheIterationThreshold) {
  // two ranks: the lower median is the faster one; 5% slower overall is not a straggler
  std::vector<RankProfile> ranks = {rank_with(0, 2, 0.010), rank_with(1, 2, 0.0105)};
  EXPECT_TRUE(d::combine_ranks(ranks, 0.10, "gloo").stragglers.empty());
  // fc 2 ms -> 4 ms on rank 1 (iteration 18 -> 20 ms, +11% > 10%): an iteration straggler
  ranks = {rank_with(0, 2, 0.010), rank_with(1, 2, 0.010, 0.004)};
  flopsprof::DistributedStats s = d::combine_ranks(ranks, 0.10, "gloo");
  ASSERT_EQ(s.stragglers.size(), 1u);
  EXPECT_EQ(s.stragglers[0].rank, 1);
  ASSERT_EQ(s.stragglers[0].modules.size(), 1u);
  EXPECT_EQ(s.stragglers[0].modules[0].first, "fc");
  // with a 20% threshold the iteration (+11%) is fine, and fc's 2 ms excess (50% over its
  // median of 4 ms) is under half the threshold of the median iteration (10% of 18 = 1.8 ms)? No:
  // 2 ms >= 1.8 ms, so fc is a module straggler.
  s = d::combine_ranks(ranks, 0.20, "gloo");
  ASSERT_EQ(s.stragglers.size(), 1u);
  EXPECT_EQ(s.stragglers[0].what, "module fc");
  // with 30%: 2 ms < 15% of 18 ms = 2.7 ms: nothing
  EXPECT_TRUE(d::combine_ranks(ranks, 0.30, "gloo").stragglers.empty());
  // threshold 0.1 of a larger model: a module straggler without an iteration straggler
  // iteration 108 vs 118.5 ms (+9.7%); fc 4 vs 14.5 ms: 10.5 ms over, >= 5% of 108 ms
  ranks = {rank_with(0, 2, 0.100), rank_with(1, 2, 0.100, 0.0125)};
  s = d::combine_ranks(ranks, 0.10, "gloo");
  ASSERT_EQ(s.stragglers.size(), 1u);
  EXPECT_EQ(s.stragglers[0].what, "module fc");
  EXPECT_NEAR(s.stragglers[0].modules[0].second, 0.0105, 1e-12);
}

}  // namespace
