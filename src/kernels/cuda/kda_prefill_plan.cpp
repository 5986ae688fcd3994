#include "kernels/cuda/kda_prefill_plan.h"

#include <algorithm>

namespace ds::cuda {

KdaPrefillPlan plan_kda_prefill(const KdaPrefillLaunch& a, int segments) {
  const int N = a.N, S = std::max(segments, 1);
  constexpr int C = kKdaChunkTokens;
  std::vector<int> chunk_rows, pieces, ck_chunk, ck_slot;
  std::vector<int> ck_first(size_t(N) + 1, 0);  // checkpoints are ordered by sequence
  for (int i = 0, n = 0; n <= N; ++n) {
    while (i < a.n_checkpoints && a.ck_seq[i] < n) ++i;
    ck_first[size_t(n)] = n == N ? a.n_checkpoints : i;
  }
  KdaPrefillPlan plan;
  for (int s = 0; s < S; ++s) {
    plan.chunk_begin.push_back(int64_t(chunk_rows.size() / 2));
    plan.piece_begin.push_back(int(pieces.size() / kPieceMetaInts));
    for (int n = 0; n < N; ++n) {
      const int64_t r0 = a.cu_seqlens[n], len = a.cu_seqlens[n + 1] - r0, nch = (len + C - 1) / C;
      const int64_t lo = nch * s / S, hi = nch * (s + 1) / S;
      if (lo == hi && !(nch == 0 && s == 0)) continue;
      int m[kPieceMetaInts];
      m[kRow0] = int(r0 + lo * C), m[kLen] = int(std::min(len - lo * C, (hi - lo) * C));
      m[kChunk0] = int(chunk_rows.size() / 2), m[kNChunks] = int(hi - lo);
      m[kInitSlot] = lo == 0 ? a.initial_slot[n] : a.final_slot[n], m[kFinalSlot] = a.final_slot[n];
      m[kCk0] = int(ck_chunk.size());
      for (int i = ck_first[size_t(n)]; i < ck_first[size_t(n) + 1]; ++i) {
        const int64_t c = (a.ck_after[i] + C - 1) / C - 1;  // the chunk after which the state is due
        if (c >= lo && c < hi) ck_chunk.push_back(int(c - lo)), ck_slot.push_back(a.ck_slot[i]);
      }
      m[kCk1] = int(ck_chunk.size());
      pieces.insert(pieces.end(), m, m + kPieceMetaInts);
      for (int64_t c = lo; c < hi; ++c) {
        chunk_rows.push_back(int(r0 + c * C));
        chunk_rows.push_back(int(std::min<int64_t>(C, len - c * C)));
      }
    }
  }
  plan.chunk_begin.push_back(int64_t(chunk_rows.size() / 2));
  plan.piece_begin.push_back(int(pieces.size() / kPieceMetaInts));
  plan.n_chunks = int64_t(chunk_rows.size() / 2);
  plan.pieces_at = int64_t(chunk_rows.size());
  plan.ck_chunk_at = plan.pieces_at + int64_t(pieces.size());
  plan.ck_slot_at = plan.ck_chunk_at + int64_t(ck_chunk.size());
  plan.blob.reserve(size_t(plan.ck_slot_at) + ck_slot.size());
  for (const std::vector<int>* v : {&chunk_rows, &pieces, &ck_chunk, &ck_slot})
    plan.blob.insert(plan.blob.end(), v->begin(), v->end());
  return plan;
}

}  // namespace ds::cuda
