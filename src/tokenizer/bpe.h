// Byte-level BPE by rank, as tiktoken does it: a piece that is itself a token is that token;
// otherwise start from single bytes and repeatedly merge the adjacent pair whose concatenation
// has the lowest rank (the leftmost one on equal ranks) until no adjacent pair is a token.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_ranks.h"

namespace ds::tok {

// Appends the ids of `piece` (non-empty) to `out`. Every single byte of `piece` must be a token
// (checked: throws ds::Error naming the byte otherwise).
void bpe_encode_piece(const BpeRanks& ranks, std::string_view piece, std::vector<int32_t>& out);

// Plain reference: recomputes every adjacent pair's rank after each merge (O(n^2) lookups).
// Tests and the fuzz target compare bpe_encode_piece against it.
void bpe_encode_piece_ref(const BpeRanks& ranks, std::string_view piece, std::vector<int32_t>& out);

}  // namespace ds::tok
