// BlockPool and StatePool: O(1) allocate/free, refcounts, free list, limits, invariant checks.
#include <gtest/gtest.h>

#include "cache/block_pool.h"
#include "cache/state_pool.h"
#include "core/check.h"

namespace ds {
namespace {

TEST(BlockPool, AllocatesUpToMaxThenReusesFreedPagesLifo) {
  BlockPool pool(3);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.n_used(), 3);
  EXPECT_TRUE(pool.unref(1));
  EXPECT_TRUE(pool.unref(0));
  EXPECT_EQ(pool.allocate(), 0);  // last freed first
  EXPECT_EQ(pool.allocate(), 1);
  pool.check_invariants();
}

TEST(BlockPool, RefcountKeepsPageUntilLastOwnerLeaves) {
  BlockPool pool(2);
  const int32_t p = pool.allocate();
  pool.ref(p);
  pool.ref(p);
  EXPECT_EQ(pool.refcount(p), 3);
  EXPECT_FALSE(pool.unref(p));
  EXPECT_FALSE(pool.unref(p));
  EXPECT_EQ(pool.n_used(), 1);
  EXPECT_TRUE(pool.unref(p));
  EXPECT_EQ(pool.n_used(), 0);
  EXPECT_EQ(pool.refcount(p), 0);
  pool.check_invariants();
}

TEST(BlockPool, MisuseThrowsInsteadOfCorrupting) {
  BlockPool pool(2);
  const int32_t p = pool.allocate();
  EXPECT_TRUE(pool.unref(p));
  EXPECT_THROW(pool.unref(p), Error);  // double free
  EXPECT_THROW(pool.ref(p), Error);    // ref of a free page
  EXPECT_THROW(pool.ref(7), Error);    // out of range
  EXPECT_THROW(BlockPool(-1), Error);
  pool.check_invariants();
}

TEST(StatePool, LiveAndCheckpointSlotsAreIndependent) {
  StatePool pool(2, 1);
  const int32_t a = pool.allocate_live();
  const int32_t b = pool.allocate_live();
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.allocate_live(), -1);
  const int32_t c = pool.allocate_checkpoint();
  EXPECT_EQ(c, 0);
  EXPECT_EQ(pool.allocate_checkpoint(), -1);
  EXPECT_EQ(pool.n_live(), 2);
  EXPECT_EQ(pool.n_checkpoints(), 1);
  pool.free_live(a);
  EXPECT_FALSE(pool.live_in_use(a));
  EXPECT_TRUE(pool.checkpoint_in_use(c));
  EXPECT_THROW(pool.free_live(a), Error);
  EXPECT_THROW(pool.free_checkpoint(5), Error);
  pool.free_checkpoint(c);
  EXPECT_EQ(pool.allocate_checkpoint(), 0);
  pool.check_invariants();
}

}  // namespace
}  // namespace ds
