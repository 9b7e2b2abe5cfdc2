// The KV cache stage (aggregation/kv_cache.h) on synthetic records: which ops' bytes are a
// cache's, by storage identity, module, time order and size; what is not a cache's.
#include <gtest/gtest.h>

#include "aggregation/kv_cache.h"
#include "test_names.h"

namespace flopsprof::detail {
namespace {

// One thread's records, built op by op: tensors [1, 2, S, 8] fp32 (64 bytes per token), each
// with the storage identity the capture records for the ops that touch a cache.
struct Thread {
  ThreadEvents events;
  ThreadAttribution at;
  std::vector<OpCount> counts;
  testing::Names* names;

  // A tensor argument of `tokens` tokens in storage `id` (0: none recorded).
  void tensor(int64_t tokens, int64_t id) {
    ArgRecord a;
    a.kind = ArgKind::kTensor;
    a.dtype = DType::kFloat32;
    a.count = 4;
    a.offset = events.dims.size();
    for (int64_t d : {int64_t{1}, int64_t{2}, tokens, int64_t{8}}) events.dims.push_back(d);
    if (id != 0) {
      events.dims.push_back(id);
      a.tensor_flags |= kArgStorage;
    }
    events.args.push_back(a);
  }
  // A tensor list whose first tensor has `first_tokens` tokens in storage `id`.
  void list(int64_t total_bytes, int64_t first_tokens, int64_t id) {
    ArgRecord a;
    a.kind = ArgKind::kTensorList;
    a.dtype = DType::kFloat32;
    a.count = 2;
    a.offset = events.dims.size();
    events.dims.push_back(total_bytes);
    events.dims.push_back(id);
    events.dims.push_back(first_tokens * 64);
    a.tensor_flags |= kArgStorage;
    events.args.push_back(a);
  }
  // An op at `tick` of `module` whose arguments were just added (from `args_begin`).
  void op(const char* name, int64_t tick, int module, uint32_t args_begin, uint64_t read,
          uint64_t written) {
    RawEvent e;
    e.name_id = names->id(name);
    e.start_tick = tick;
    e.end_tick = tick + 1;
    e.args_begin = args_begin;
    e.args_count = static_cast<uint16_t>(events.args.size() - args_begin);
    events.events.push_back(e);
    at.phase.push_back(Phase::kForward);
    at.module.push_back(module);
    OpCount c;
    c.bytes = OpCount::kBytesKnown;
    c.bytes_read = read;
    c.bytes_written = written;
    counts.push_back(c);
  }
  uint32_t next() const { return static_cast<uint32_t>(events.args.size()); }
  // sdpa(q, k, v): q of 1 token, k and v of `tokens` in storages `k_id`, `v_id`.
  void attention(int64_t tick, int module, int64_t tokens, int64_t k_id, int64_t v_id) {
    const uint32_t b = next();
    tensor(1, 0);
    tensor(tokens, k_id);
    tensor(tokens, v_id);
    op("aten::scaled_dot_product_attention", tick, module, b, 0, 0);
  }
};

std::vector<std::vector<KvBytes>> run(Thread& t) {
  Attribution at;
  at.threads.push_back(t.at);
  OpCounts counts;
  counts.threads.push_back(t.counts);
  return kv_cache_bytes({&t.events}, *t.names, at, counts);
}

TEST(KvCache, GrownByCatReadsTheOldCacheAndWritesTheNew) {
  testing::Names names;
  Thread t{{}, {}, {}, &names};
  t.attention(10, 1, 4, 100, 200);  // prefill: K in 100, V in 200, 4 tokens (256 B each)
  uint32_t b = t.next();
  t.list(256 + 64, 4, 100);  // cat(K of 4 tokens, new): reads 320, writes 320
  t.op("aten::cat", 20, 1, b, 320, 320);
  t.attention(30, 1, 5, 101, 201);
  // Not a cache: a cat in another module, a cat whose first tensor has other bytes (a reused
  // identity, or a slice of the cache), and a cat of a storage never read as keys or values.
  b = t.next();
  t.list(512, 4, 100);
  t.op("aten::cat", 40, 2, b, 512, 512);
  b = t.next();
  t.list(512, 3, 100);
  t.op("aten::cat", 41, 1, b, 512, 512);
  b = t.next();
  t.list(512, 4, 999);
  t.op("aten::cat", 42, 1, b, 512, 512);
  const std::vector<std::vector<KvBytes>> kv = run(t);
  ASSERT_EQ(kv.size(), 1u);
  ASSERT_EQ(kv[0].size(), 6u);
  EXPECT_EQ(kv[0][0].read, 512u);  // the prefill's K and V
  EXPECT_EQ(kv[0][1].read, 256u);  // the cat: the old cache
  EXPECT_EQ(kv[0][1].written, 320u);
  EXPECT_EQ(kv[0][2].read, 640u);
  for (size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(kv[0][i].read + kv[0][i].written, 0u) << i;
  }
}

TEST(KvCache, PreallocatedWritesInPlaceBeforeTheAttentionReads) {
  testing::Names names;
  Thread t{{}, {}, {}, &names};
  uint32_t b = t.next();
  t.tensor(1, 100);  // copy_(cache slot, k): its self in the cache's storage
  t.tensor(1, 0);
  t.op("aten::copy_", 10, 1, b, 64, 64);
  t.attention(20, 1, 5, 100, 200);  // reads 5 tokens of K and of V
  // Not a cache write: a copy_ into the cache's storage after the last read, and one in another
  // module.
  b = t.next();
  t.tensor(1, 100);
  t.tensor(1, 0);
  t.op("aten::copy_", 30, 1, b, 64, 64);
  b = t.next();
  t.tensor(1, 200);
  t.tensor(1, 0);
  t.op("aten::copy_", 5, 2, b, 64, 64);
  const std::vector<std::vector<KvBytes>> kv = run(t);
  ASSERT_EQ(kv[0].size(), 4u);
  EXPECT_EQ(kv[0][0].written, 64u);
  EXPECT_EQ(kv[0][0].read, 0u);  // it reads the new token, not the cache
  EXPECT_EQ(kv[0][1].read, 640u);
  EXPECT_EQ(kv[0][2].written, 0u);
  EXPECT_EQ(kv[0][3].written, 0u);
}

TEST(KvCache, WorkOutsideTheModelAndThreadsWithoutCachesHaveNone) {
  testing::Names names;
  Thread t{{}, {}, {}, &names};
  t.attention(10, -2, 4, 100, 200);  // outside the model
  Thread quiet{{}, {}, {}, &names};
  const uint32_t b = quiet.next();
  quiet.tensor(4, 0);
  quiet.op("aten::relu", 5, 1, b, 256, 256);
  Attribution at;
  at.threads = {t.at, quiet.at};
  OpCounts counts;
  counts.threads = {t.counts, quiet.counts};
  const std::vector<std::vector<KvBytes>> kv =
      kv_cache_bytes({&t.events, &quiet.events}, names, at, counts);
  ASSERT_EQ(kv.size(), 2u);
  EXPECT_TRUE(kv[0].empty());
  EXPECT_TRUE(kv[1].empty());
}

}  // namespace
}  // namespace flopsprof::detail
