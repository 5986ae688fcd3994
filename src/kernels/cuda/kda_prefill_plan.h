// Internal to src/kernels/cuda: the host-side plan of one chunked KDA prefill call — the chunk
// table of the prep kernel, the per-piece table of the recurrence kernel and the checkpoint table,
// uploaded as one int32 blob.
//
// A sequence is chunked from its start in 16-token chunks, except that a checkpoint which does not
// fall on a chunk boundary ends a run: the chunk holding its last token is cut short there and the
// next run is chunked from that position (the state after a short chunk is exact). The call may be
// cut into S segments: the chunk list of a sequence of n chunks is split into S ranges
// [s·n/S, (s+1)·n/S), each range again where a run ends (a piece never spans two runs, since the
// recurrence assumes a piece's chunks are 16 rows apart), and piece j of every sequence goes to
// segment j, whose chunks are numbered after those of segment j − 1. The prep kernel of segment
// j + 1 can then run while the recurrence walks segment j; a sequence's later pieces start from
// its final slot, where the previous piece left the state.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cuda/kda_launch.h"

namespace ds::cuda {

constexpr int kKdaChunkTokens = 16;

// Per-piece metadata of the recurrence kernel (int32 each): first row and valid rows of the piece,
// index of its first chunk record, chunks, initial slot (−1: zero state), final slot, and its
// range of the checkpoint table [ck0, ck1) (chunk index within the piece, slot).
enum KdaPieceMeta { kRow0, kLen, kChunk0, kNChunks, kInitSlot, kFinalSlot, kCk0, kCk1, kPieceMetaInts };

struct KdaPrefillPlan {
  std::vector<int> blob;  // chunk rows [n_chunks][2] | pieces | ck chunk | ck slot
  int64_t n_chunks = 0;   // chunk records
  int64_t pieces_at = 0, ck_chunk_at = 0, ck_slot_at = 0;  // offsets into blob (ints)
  std::vector<int64_t> chunk_begin;  // [S + 1]: segment s owns chunks [chunk_begin[s], chunk_begin[s + 1])
  std::vector<int> piece_begin;      // [S + 1]: and pieces [piece_begin[s], piece_begin[s + 1])
  int segments() const { return int(piece_begin.size()) - 1; }
};

// The plan for `a` cut into `segments` (>= 1) segments, or more where checkpoints off the chunk
// grid split a range. Empty sequences get one piece (no chunks) in segment 0, so that their final
// slot receives the initial state.
KdaPrefillPlan plan_kda_prefill(const KdaPrefillLaunch& a, int segments);

}  // namespace ds::cuda
