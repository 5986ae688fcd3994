// Test helper for the grouped expert GEMM tests on CUDA: a routing of T tokens × k slots over E experts
// with a large group (expert 0 takes slot 0 of every token: several 128-row tiles), an empty one
// (expert 1) and the rest spread, grouped by moe_group, with host and device copies.
#pragma once

#include <random>
#include <vector>

#include "core/tensor_view.h"
#include "kernels/memory.h"
#include "kernels/moe.h"

namespace ds::test {

struct GroupsCase {
  std::vector<int32_t> off, active, tok, pos;
  Buffer doff, dact, dtok, dpos;

  MoeGroups view(Device d) {
    auto v = [&](std::vector<int32_t>& h, const Buffer& b) {
      return TensorView::contiguous(d == Device::Cpu ? static_cast<void*>(h.data()) : b.data(), DType::I32,
                                    {int64_t(h.size())}, d);
    };
    return {v(off, doff), v(active, dact), v(tok, dtok), v(pos, dpos)};
  }
};

inline GroupsCase make_groups_case(int64_t T, int64_t k, int64_t E, uint32_t seed) {
  const int64_t n = T * k;
  std::mt19937 rng(seed);
  std::vector<int32_t> expert(static_cast<size_t>(n));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j)
      expert[size_t(t * k + j)] = j == 0 ? 0 : int32_t(2 + (t * 7 + j * 13 + int64_t(rng() % 3)) % (E - 2));
  GroupsCase g;
  g.off.resize(size_t(E + 1)), g.active.resize(size_t(E + 1));
  g.tok.resize(size_t(n)), g.pos.resize(size_t(n));
  moe_group(TensorView::contiguous(expert.data(), DType::I32, {T, k}, Device::Cpu), E, g.view(Device::Cpu));
  g.doff = Buffer::from_host<int32_t>(Device::Cuda, g.off);
  g.dact = Buffer::from_host<int32_t>(Device::Cuda, g.active);
  g.dtok = Buffer::from_host<int32_t>(Device::Cuda, g.tok);
  g.dpos = Buffer::from_host<int32_t>(Device::Cuda, g.pos);
  return g;
}

}  // namespace ds::test
