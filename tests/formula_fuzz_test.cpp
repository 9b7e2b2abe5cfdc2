// The formulas under a seeded random loop (the alternative to libFuzzer): shapes and
// arguments drawn across the whole int64 range, each result checked against a 128-bit reference
// computed here. A formula must return the exact count, throw Error for a count past 64 bits, or
// decline (n/a) — never wrap, never crash (ASan/UBSan runs this too). Bounded: 200,000 draws.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "flopsprof/formulas.h"
#include "flopsprof/report.h"
#include "test_args.h"

namespace flopsprof {
namespace {

using testing::Args;
using u128 = unsigned __int128;

constexpr u128 kMax = UINT64_MAX;

// One dimension: small, large, 0, 1, negative, near the limits.
int64_t draw_dim(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
      return static_cast<int64_t>(rng() % 64);
    case 3:
      return static_cast<int64_t>(rng() % 100000);
    case 4:
      return static_cast<int64_t>(rng() >> (1 + rng() % 62));  // any magnitude
    case 5:
      return INT64_MAX - static_cast<int64_t>(rng() % 4);
    case 6:
      return -static_cast<int64_t>(rng() % 8);
    default:
      return int64_t{1} << (rng() % 63);
  }
}

// Checks one formula result against the 128-bit reference `flops` (and `macs`).
void expect_exact_or_overflow(const char* op, const Args& args, u128 macs, u128 flops) {
  std::optional<FlopCount> c;
  try {
    c = compute_flops(op, args.inputs());
  } catch (const Error&) {
    EXPECT_TRUE(flops > kMax || macs > kMax) << op << ": threw for a count that fits";
    return;
  }
  if (!c) return;  // declined (n/a): allowed for inputs the formula does not understand
  ASSERT_LE(flops, kMax) << op << ": a count past 64 bits was returned instead of an overflow";
  EXPECT_EQ(c->macs, static_cast<uint64_t>(macs)) << op;
  EXPECT_EQ(c->flops, static_cast<uint64_t>(flops)) << op;
}

u128 nn(int64_t v) { return v < 0 ? 0 : static_cast<u128>(v); }  // negative sizes count as 0

TEST(FormulaFuzz, GemmFamilyMatchesA128BitReference) {
  std::mt19937_64 rng(20261122);
  for (int i = 0; i < 50000; ++i) {
    const int64_t m = draw_dim(rng), k = draw_dim(rng), n = draw_dim(rng);
    // mm(a[m,k], b[k,n]): MACs m*n*k, FLOPs 2*MACs
    u128 macs = nn(m) * nn(n);
    macs = macs > kMax ? kMax + 1 : macs * nn(k);
    expect_exact_or_overflow("aten::mm", Args().tensor({m, k}).tensor({k, n}), macs,
                             macs > kMax ? macs : 2 * macs);
    // addmm(bias[n], a[m,k], b[k,n]): + m*n bias adds
    const u128 out = nn(m) * nn(n);
    expect_exact_or_overflow("aten::addmm",
                             Args().tensor({n}).tensor({m, k}).tensor({k, n}).i(1).i(1), macs,
                             macs > kMax ? macs : 2 * macs + out);
  }
}

TEST(FormulaFuzz, ConvNeverWrapsOrCrashes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50000; ++i) {
    const int64_t n = draw_dim(rng) % 1000, c = 1 + rng() % 8, l = draw_dim(rng);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 5), s = draw_dim(rng), p = draw_dim(rng);
    Args a = Args().tensor({n, c, l}).tensor({4, c, k}).none().list({s}).list({p}).list({1}).i(1);
    try {
      std::optional<FlopCount> r = compute_flops("aten::conv1d", a.inputs());
      if (!r) continue;
      // reference: out = (l + 2p - (k-1) - 1) / s + 1, MACs = n*4*out*c*k
      if (s < 1) ADD_FAILURE() << "stride " << s << " was counted";
      const __int128 out =
          (static_cast<__int128>(l) + 2 * static_cast<__int128>(p) - (k - 1) - 1) / s + 1;
      ASSERT_GE(out, 0) << "a negative output size was counted";
      const u128 macs = nn(n) * 4 * static_cast<u128>(out) * static_cast<u128>(c * k);
      ASSERT_LE(macs, kMax) << "a count past 64 bits was returned instead of an overflow";
      EXPECT_EQ(r->macs, static_cast<uint64_t>(macs)) << "l=" << l << " p=" << p << " s=" << s;
    } catch (const Error&) {
      // an overflow, reported as n/a with a problem line: fine
    }
  }
}

TEST(FormulaFuzz, PointwiseAndUpsampleNeverWrapOrCrash) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 50000; ++i) {
    const int64_t a = draw_dim(rng), b = draw_dim(rng), c = draw_dim(rng);
    const u128 numel = nn(a) * nn(b) > kMax ? kMax + 1 : nn(a) * nn(b) * nn(c);
    expect_exact_or_overflow("aten::relu", Args().tensor({a, b, c}), 0, numel);
    const double scale = (rng() % 4 == 0) ? std::ldexp(1.0, static_cast<int>(rng() % 2000) - 1000)
                                          : static_cast<double>(rng() % 8) / 2;
    try {
      compute_flops(
          "aten::upsample_nearest2d",
          Args().tensor({1, 1, a % 4096, b % 4096}).none().dlist({scale, scale}).inputs());
    } catch (const Error&) {
    }
  }
}

TEST(FormulaFuzz, TheBackwardEstimateSaturatesInsteadOfWrapping) {
  ProfileResult r;
  r.flops = UINT64_MAX / 2 + 1;  // 2x is past 64 bits
  EXPECT_EQ(r.estimated_bwd_flops(), UINT64_MAX);
  r.flops = 10;
  r.recompute_flops = UINT64_MAX - 5;
  EXPECT_EQ(r.estimated_bwd_flops(), UINT64_MAX);
  r.recompute_flops = 5;
  EXPECT_EQ(r.estimated_bwd_flops(), 25u);
}

}  // namespace
}  // namespace flopsprof
