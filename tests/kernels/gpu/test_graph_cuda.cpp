// StepGraph's scratch arena on CUDA (kernels/cuda/scratch_arena.h): the block stack, its reuse and
// overflow count, and a recorded step whose scratch comes from the arena computing what the same
// work computes eagerly. ctest label "gpu"; skipped without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/scratch_arena.h"
#include "kernels/elementwise.h"
#include "kernels/graph.h"
#include "kernels/memory.h"

namespace ds {
namespace {

class GraphCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

TEST_F(GraphCuda, ArenaStacksBlocksAndCountsOverflow) {
  cuda::ScratchArena a(1024);
  char* p0 = static_cast<char*>(a.alloc(100));  // [0, 256)
  char* p1 = static_cast<char*>(a.alloc(300));  // [256, 768)
  EXPECT_EQ(p1 - p0, 256);
  a.check_invariants();
  EXPECT_TRUE(a.release(p0));  // below a live block: kept until p1 goes
  EXPECT_FALSE(a.release(p0));
  char* p2 = static_cast<char*>(a.alloc(256));  // [768, 1024): the last that fits
  EXPECT_EQ(p2 - p0, 768);
  EXPECT_EQ(a.pooled_requests(), 0);
  void* p3 = a.alloc(8);  // past the capacity: from the pool, counted
  EXPECT_EQ(a.pooled_requests(), 1);
  EXPECT_EQ(a.high_water_bytes(), 1024 + 256);
  a.check_invariants();
  int probe = 0;
  EXPECT_FALSE(a.release(&probe));
  EXPECT_TRUE(a.release(p2));
  EXPECT_TRUE(a.release(p3));
  EXPECT_TRUE(a.release(p1));  // the stack empties: p0's memory is free again
  a.check_invariants();
  EXPECT_EQ(static_cast<char*>(a.alloc(1000)), p0);
  EXPECT_EQ(a.high_water_bytes(), 1024 + 256);
  cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "arena test");
}

// A recorded step that allocates scratch in a nested, non-LIFO order (a block freed below a live
// one, then memory reused after the stack empties) replays to the eager result every time.
TEST_F(GraphCuda, StepFromArenaMatchesEager) {
  constexpr int64_t n = 1000;
  std::vector<float> xh(n);
  for (int64_t i = 0; i < n; ++i) xh[size_t(i)] = float(i % 7) - 3.0f;
  const Buffer x = Buffer::from_host<float>(Device::Cuda, xh);
  Buffer y(Device::Cuda, n * 4);
  const auto row = [](const Buffer& b) {
    return TensorView::matrix(b.data(), DType::F32, 1, n, -1, Device::Cuda);
  };
  const auto body = [&] {
    y.zero();
    Buffer a(Device::Cuda, n * 4);
    cast_rows(row(x), row(a));  // a = x
    {
      Buffer b(Device::Cuda, n * 4);
      Buffer c(Device::Cuda, n * 4);
      cast_rows(row(a), row(b));
      add_rows(row(a), row(b));  // b = 2x
      cast_rows(row(b), row(c));
      add_rows(row(b), row(c));  // c = 4x
      b = Buffer();              // freed below the live c
      add_rows(row(c), row(y));  // y = 4x
      Buffer d(Device::Cuda, n * 4);
      cast_rows(row(c), row(d));
      add_rows(row(d), row(y));  // y = 8x
    }
    Buffer e(Device::Cuda, 3 * n * 4);  // the freed blocks' memory again
    cast_rows(row(a), row(e));
    add_rows(row(e), row(y));  // y = 9x
  };
  body();
  const std::vector<float> eager = y.to_host<float>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(eager[size_t(i)], 9.0f * xh[size_t(i)]);
  y.zero();
  StepGraph g;
  g.capture(Device::Cuda, body);
  for (int rep = 0; rep < 3; ++rep) {
    g.replay();
    EXPECT_EQ(y.to_host<float>(), eager) << "replay " << rep;
  }
}

}  // namespace
}  // namespace ds
