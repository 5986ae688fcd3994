#include "kernels/cuda/scratch_arena.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "kernels/cuda/cuda_check.h"

namespace ds::cuda {
namespace {

constexpr int64_t kAlign = 256;
thread_local ScratchArena* t_arena = nullptr;

}  // namespace

ScratchArena::ScratchArena(int64_t bytes) : capacity_((bytes + kAlign - 1) / kAlign * kAlign) {
  require(bytes >= 0, "scratch arena: negative size");
  if (capacity_ > 0) check(cudaMalloc(reinterpret_cast<void**>(&base_), size_t(capacity_)), "scratch arena");
}

ScratchArena::~ScratchArena() {
  for (const Block& b : blocks_)
    if (b.pooled && !b.free) cudaFreeAsync(b.ptr, cudaStreamPerThread);
  if (base_ != nullptr) cudaFree(base_);
}

void* ScratchArena::alloc(int64_t bytes) {
  const int64_t size = (bytes + kAlign - 1) / kAlign * kAlign;
  const int64_t offset = blocks_.empty() ? 0 : blocks_.back().offset + blocks_.back().bytes;
  Block b{offset, size, nullptr, false, offset + size > capacity_};
  if (b.pooled) {
    ++pooled_;
    check(cudaMallocAsync(&b.ptr, size_t(bytes), cudaStreamPerThread), "device alloc");
  } else {
    b.ptr = base_ + offset;
  }
  high_water_ = std::max(high_water_, offset + size);
  blocks_.push_back(b);
  return b.ptr;
}

bool ScratchArena::release(void* p) {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    if (it->ptr != p || it->free) continue;
    it->free = true;
    if (it->pooled) cudaFreeAsync(p, cudaStreamPerThread);
    while (!blocks_.empty() && blocks_.back().free) blocks_.pop_back();
    return true;
  }
  return false;
}

void ScratchArena::check_invariants() const {
  int64_t end = 0;
  for (const Block& b : blocks_) {
    require(b.offset == end && b.bytes % kAlign == 0 && b.pooled == (b.offset + b.bytes > capacity_),
            "scratch arena: block stack out of order");
    end = b.offset + b.bytes;
  }
  require(blocks_.empty() || !blocks_.back().free, "scratch arena: a free block on top");
  require(end <= high_water_, "scratch arena: high water below the live blocks");
}

ScratchArena* thread_arena() {
  return t_arena;
}

ArenaScope::ArenaScope(ScratchArena* a) : prev_(t_arena) {
  t_arena = a;
}

ArenaScope::~ArenaScope() {
  t_arena = prev_;
}

}  // namespace ds::cuda
