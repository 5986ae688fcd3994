#include "kernels/cuda/kda_prefill_plan.h"

#include <algorithm>

namespace ds::cuda {
namespace {

constexpr int C = kKdaChunkTokens;

// One sequence cut into runs at the checkpoints that do not fall on a chunk boundary of their run
// (each run is chunked from its own start), then into pieces: the chunk list split evenly into
// `segments` ranges, each range split again where a run ends.
struct SeqChunks {
  std::vector<int64_t> chunk_off, chunk_len;        // token offset in the sequence and valid rows, per chunk
  std::vector<std::pair<int64_t, int64_t>> pieces;  // chunk ranges [lo, hi), in order
};

SeqChunks chunk_sequence(const KdaPrefillLaunch& a, int n, int ck_lo, int ck_hi, int segments) {
  const int64_t len = a.cu_seqlens[n + 1] - a.cu_seqlens[n];
  std::vector<int64_t> cuts = {0};  // run starts
  for (int i = ck_lo; i < ck_hi; ++i)
    if ((a.ck_after[i] - cuts.back()) % C != 0 && a.ck_after[i] != len) cuts.push_back(a.ck_after[i]);
  SeqChunks s;
  std::vector<int64_t> run_first_chunk;
  for (size_t r = 0; r < cuts.size(); ++r) {
    const int64_t b = cuts[r], e = r + 1 < cuts.size() ? cuts[r + 1] : len;
    run_first_chunk.push_back(int64_t(s.chunk_off.size()));
    for (int64_t o = b; o < e; o += C)
      s.chunk_off.push_back(o), s.chunk_len.push_back(std::min<int64_t>(C, e - o));
  }
  const int64_t nch = int64_t(s.chunk_off.size());
  if (nch == 0) {
    s.pieces.push_back({0, 0});  // an empty sequence: one piece that only copies its state
    return s;
  }
  for (int seg = 0; seg < segments; ++seg) {
    int64_t lo = nch * seg / segments;
    const int64_t hi = nch * (seg + 1) / segments;
    for (int64_t f : run_first_chunk)
      if (f > lo && f < hi) s.pieces.push_back({lo, f}), lo = f;
    if (lo < hi) s.pieces.push_back({lo, hi});
  }
  return s;
}

}  // namespace

KdaPrefillPlan plan_kda_prefill(const KdaPrefillLaunch& a, int segments) {
  const int N = a.N, S = std::max(segments, 1);
  std::vector<int> ck_first(size_t(N) + 1, 0);  // checkpoints are ordered by sequence
  for (int i = 0, n = 0; n <= N; ++n) {
    while (i < a.n_checkpoints && a.ck_seq[i] < n) ++i;
    ck_first[size_t(n)] = n == N ? a.n_checkpoints : i;
  }
  std::vector<SeqChunks> seqs;
  size_t n_segments = 1;
  for (int n = 0; n < N; ++n) {
    seqs.push_back(chunk_sequence(a, n, ck_first[size_t(n)], ck_first[size_t(n) + 1], S));
    n_segments = std::max(n_segments, seqs.back().pieces.size());
  }
  // Piece j of every sequence goes to segment j, so that a sequence's pieces run in order.
  std::vector<int> chunk_rows, pieces, ck_chunk, ck_slot;
  KdaPrefillPlan plan;
  for (size_t seg = 0; seg < n_segments; ++seg) {
    plan.chunk_begin.push_back(int64_t(chunk_rows.size() / 2));
    plan.piece_begin.push_back(int(pieces.size() / kPieceMetaInts));
    for (int n = 0; n < N; ++n) {
      const SeqChunks& sc = seqs[size_t(n)];
      if (seg >= sc.pieces.size()) continue;
      const auto [lo, hi] = sc.pieces[seg];
      const int64_t r0 = a.cu_seqlens[n];
      int m[kPieceMetaInts];
      m[kRow0] = int(r0 + (lo < hi ? sc.chunk_off[size_t(lo)] : 0));
      m[kLen] =
          lo < hi
              ? int(sc.chunk_off[size_t(hi - 1)] + sc.chunk_len[size_t(hi - 1)] - sc.chunk_off[size_t(lo)])
              : 0;
      m[kChunk0] = int(chunk_rows.size() / 2), m[kNChunks] = int(hi - lo);
      m[kInitSlot] = seg == 0 ? a.initial_slot[n] : a.final_slot[n], m[kFinalSlot] = a.final_slot[n];
      m[kCk0] = int(ck_chunk.size());
      for (int i = ck_first[size_t(n)]; i < ck_first[size_t(n) + 1]; ++i) {
        // The chunk that ends at the checkpoint (the one holding its last token).
        const int64_t last = a.ck_after[i] - 1;
        const int64_t c =
            std::upper_bound(sc.chunk_off.begin(), sc.chunk_off.end(), last) - sc.chunk_off.begin() - 1;
        if (c >= lo && c < hi) ck_chunk.push_back(int(c - lo)), ck_slot.push_back(a.ck_slot[i]);
      }
      m[kCk1] = int(ck_chunk.size());
      pieces.insert(pieces.end(), m, m + kPieceMetaInts);
      for (int64_t c = lo; c < hi; ++c) {
        chunk_rows.push_back(int(r0 + sc.chunk_off[size_t(c)]));
        chunk_rows.push_back(int(sc.chunk_len[size_t(c)]));
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
