// Retention and eviction policies in isolation: positions, reasons, parsing, score ordering.
#include <gtest/gtest.h>

#include "cache/eviction_policy.h"
#include "cache/retention_policy.h"
#include "core/check.h"

namespace ds {
namespace {

std::vector<int64_t> positions(const RetentionPolicy& p, RetentionContext ctx, int64_t begin, int64_t end) {
  std::vector<WantedCheckpoint> w;
  p.wanted(ctx, begin, end, w);
  std::vector<int64_t> out;
  for (auto& c : w) out.push_back(c.position);
  return out;
}

TEST(Retention, EveryBlockIsEveryPageBoundaryInRange) {
  auto p = make_retention_policy("every-block", 4);
  EXPECT_EQ(positions(*p, {4, 18, 0}, 0, 18), (std::vector<int64_t>{4, 8, 12, 16}));
  EXPECT_EQ(positions(*p, {4, 18, 0}, 5, 12), (std::vector<int64_t>{8, 12}));
  EXPECT_EQ(positions(*p, {4, 18, 0}, 8, 8), (std::vector<int64_t>{}));
}

TEST(Retention, IntervalPlusPromptEndRoundedDown) {
  auto p = make_retention_policy("interval:8", 4);
  EXPECT_EQ(positions(*p, {4, 22, 0}, 0, 22), (std::vector<int64_t>{8, 16, 20}));
  EXPECT_EQ(positions(*p, {4, 18, 0}, 0, 18), (std::vector<int64_t>{8, 16}));  // end 16 on the grid: once
  EXPECT_EQ(positions(*p, {4, 14, 0}, 0, 40), (std::vector<int64_t>{8, 12, 16, 24, 32, 40}));
  EXPECT_EQ(positions(*p, {4, 22, 0}, 16, 22), (std::vector<int64_t>{20}));
  EXPECT_TRUE(p->allows(CheckpointReason::Interval, 16));
  EXPECT_FALSE(p->allows(CheckpointReason::Interval, 12));
  EXPECT_TRUE(p->allows(CheckpointReason::PromptEnd, 12));
  EXPECT_FALSE(p->allows(CheckpointReason::Block, 8));
}

TEST(Retention, PromptEndSemanticNone) {
  auto pe = make_retention_policy("prompt-end", 4);
  EXPECT_EQ(positions(*pe, {4, 18, 12}, 0, 18), (std::vector<int64_t>{16}));
  EXPECT_EQ(positions(*pe, {4, 3, 0}, 0, 3), (std::vector<int64_t>{}));  // shorter than a page
  auto sem = make_retention_policy("semantic", 4);
  EXPECT_EQ(positions(*sem, {4, 18, 12}, 0, 18), (std::vector<int64_t>{12}));
  EXPECT_EQ(positions(*sem, {4, 18, 12}, 12, 18), (std::vector<int64_t>{}));  // already past it
  EXPECT_TRUE(sem->keeps_decode_end());
  EXPECT_FALSE(pe->keeps_decode_end());
  auto none = make_retention_policy("none", 4);
  EXPECT_EQ(positions(*none, {4, 18, 12}, 0, 18), (std::vector<int64_t>{}));
  EXPECT_FALSE(none->allows(CheckpointReason::PromptEnd, 16));
}

TEST(Retention, BoundaryAwareAndJunction) {
  auto ba = make_retention_policy("boundary-aware", 4);
  EXPECT_EQ(positions(*ba, {4, 18, 12}, 0, 18), (std::vector<int64_t>{12, 16}));  // branch, prompt end
  EXPECT_EQ(positions(*ba, {4, 18, 0}, 0, 18), (std::vector<int64_t>{16}));
  EXPECT_FALSE(ba->keeps_decode_end());
  EXPECT_FALSE(ba->allows(CheckpointReason::DecodeEnd, 20));
  // While the cache sees prompts leave cached paths inside them: + the last 32K multiple below the
  // prompt end (the tail state), also below a fork.
  EXPECT_EQ(positions(*ba, {4, 70001, 0, true}, 0, 70001), (std::vector<int64_t>{65536, 70000}));
  EXPECT_EQ(positions(*ba, {4, 70001, 66000, true}, 0, 70001), (std::vector<int64_t>{65536, 66000, 70000}));
  EXPECT_EQ(positions(*ba, {4, 70001, 0, true}, 65536, 70001), (std::vector<int64_t>{70000}));
  EXPECT_EQ(positions(*ba, {4, 20000, 0, true}, 0, 20000), (std::vector<int64_t>{20000}));  // none below
  EXPECT_EQ(positions(*ba, {4, 70001, 0, false}, 0, 70001), (std::vector<int64_t>{70000}));
  EXPECT_TRUE(ba->allows(CheckpointReason::Interval, 65536));
  auto bad = make_retention_policy("boundary-aware:decode", 4);  // + the end of decoding
  EXPECT_EQ(positions(*bad, {4, 18, 12}, 0, 18), (std::vector<int64_t>{12, 16}));
  EXPECT_TRUE(bad->keeps_decode_end());
  EXPECT_TRUE(bad->allows(CheckpointReason::DecodeEnd, 20));
  EXPECT_EQ(bad->name(), "boundary-aware:decode");
  auto ba8 = make_retention_policy("boundary-aware:8", 4);  // + the interval grid
  EXPECT_EQ(positions(*ba8, {4, 22, 12}, 0, 22), (std::vector<int64_t>{8, 12, 16, 20}));
  EXPECT_TRUE(ba8->allows(CheckpointReason::Interval, 16));
  EXPECT_THROW(make_retention_policy("boundary-aware:6", 4), Error);
  auto j = make_retention_policy("junction", 4);
  EXPECT_EQ(positions(*j, {4, 18, 12}, 0, 18), (std::vector<int64_t>{12, 16}));
  EXPECT_FALSE(j->keeps_decode_end());
}

TEST(Retention, BadSpecsNameTheSpec) {
  EXPECT_THROW(make_retention_policy("interval:30", 64), Error);  // not a page multiple
  EXPECT_THROW(make_retention_policy("interval:", 64), Error);
  EXPECT_THROW(make_retention_policy("interval:-64", 64), Error);
  EXPECT_THROW(make_retention_policy("interval:64x", 64), Error);
  try {
    make_retention_policy("everything", 64);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'everything'"), std::string::npos);
  }
}

TEST(Eviction, ParsesSpecsAndSaysWhatItDrops) {
  CacheModelSizes s{1, 4, 0, 0, 0};
  EXPECT_FALSE(make_eviction_policy("leaf-lru", s, 4)->evicts_checkpoints_alone());
  EXPECT_TRUE(make_eviction_policy("consumed-state-lru", s, 4)->evicts_checkpoints_alone());
  EXPECT_TRUE(make_eviction_policy("flop-per-byte:0.5", s, 4)->evicts_checkpoints_alone());
  EXPECT_TRUE(make_eviction_policy("seglen:0.85:32", s, 4)->evicts_checkpoints_alone());
  EXPECT_THROW(make_eviction_policy("flop-per-byte:x", s, 4), Error);
  EXPECT_THROW(make_eviction_policy("seglen:2", s, 4), Error);
  EXPECT_THROW(make_eviction_policy("flop-per-bytes", s, 4), Error);
  EXPECT_THROW(make_eviction_policy("mru", s, 4), Error);
  auto ba = make_eviction_policy("boundary-aware", s, 4);
  EXPECT_FALSE(ba->evicts_checkpoints_alone());
  EXPECT_TRUE(ba->drops_stranded_first());
  EXPECT_FALSE(ba->uses_arrivals());
  EXPECT_TRUE(make_eviction_policy("boundary-aware:queue", s, 4)->uses_arrivals());
  EXPECT_FALSE(make_eviction_policy("boundary-aware:queue", s, 4)->arrivals_only_under_overload());
  const auto qo = make_eviction_policy("boundary-aware:queue-overload", s, 4);
  EXPECT_TRUE(qo->uses_arrivals() && qo->arrivals_only_under_overload() && qo->holds_paths());
  EXPECT_EQ(qo->name(), "boundary-aware:queue-overload");
  EXPECT_FALSE(ba->blocks_only_behind_queue());
  auto queued = make_eviction_policy("boundary-aware:queued", s, 4);
  EXPECT_EQ(queued->name(), "boundary-aware:queued");
  EXPECT_TRUE(queued->blocks_only_behind_queue() && queued->holds_paths());
  EXPECT_FALSE(queued->uses_arrivals());
  EXPECT_THROW(make_eviction_policy("boundary-aware:x", s, 4), Error);
  EXPECT_FALSE(make_eviction_policy("leaf-lru", s, 4)->drops_stranded_first());
  EXPECT_LT(ba->kv_score(3, 0.9f), ba->kv_score(4, 0.0f));  // recency first, value breaks ties
}

TEST(Eviction, FlopPerByteValuesLongerReplayHigherAndAlphaTradesRecency) {
  CacheModelSizes s{1, 4, 0, 0, 0};
  auto p = make_eviction_policy("flop-per-byte:100", s, 4);
  const float v_long = p->checkpoint_value(32, 32), v_short = p->checkpoint_value(4, 4);
  EXPECT_GT(v_long, v_short);
  EXPECT_LT(v_long, 1.0f);
  // Older long-replay checkpoint outranks a newer short one when alpha is large...
  EXPECT_GT(p->checkpoint_score(1, v_long), p->checkpoint_score(5, v_short));
  // ...and recency wins at alpha 0.
  auto r = make_eviction_policy("flop-per-byte:0", s, 4);
  EXPECT_LT(r->checkpoint_score(1, v_long), r->checkpoint_score(5, v_short));
}

TEST(Eviction, SegLenRanksByReplayLength) {
  CacheModelSizes s{1, 4, 0, 0, 0};
  auto p = make_eviction_policy("seglen:0", s, 4);
  EXPECT_GT(p->checkpoint_score(1, p->checkpoint_value(64, 64)),
            p->checkpoint_score(9, p->checkpoint_value(8, 8)));
}

}  // namespace
}  // namespace ds
