#include "tokenizer/bpe.h"

#include <string>

#include "core/check.h"

namespace ds::tok {

namespace {

uint32_t byte_rank(const BpeRanks& ranks, std::string_view piece, size_t i) {
  const uint32_t r = ranks.rank(piece.substr(i, 1));
  DS_CHECK(r != BpeRanks::kNone, "tokenizer vocabulary has no token for byte 0x{:02x}", uint8_t(piece[i]));
  return r;
}

}  // namespace

void bpe_encode_piece(const BpeRanks& ranks, std::string_view piece, std::vector<int32_t>& out) {
  if (const uint32_t whole = ranks.rank(piece); whole != BpeRanks::kNone) {
    out.push_back(int32_t(whole));
    return;
  }
  if (piece.size() == 1) {
    out.push_back(int32_t(byte_rank(ranks, piece, 0)));
    return;
  }
  // parts[i] = (start of part i, rank of part i merged with part i+1); two sentinels at the end.
  struct Part {
    uint32_t start;
    uint32_t rank;
  };
  std::vector<Part> parts;
  parts.reserve(piece.size() + 1);
  for (size_t i = 0; i + 1 < piece.size(); ++i)
    parts.push_back({uint32_t(i), ranks.rank(piece.substr(i, 2))});
  parts.push_back({uint32_t(piece.size() - 1), BpeRanks::kNone});
  parts.push_back({uint32_t(piece.size()), BpeRanks::kNone});
  // Rank of parts i and i+1 merged with part i+2 (called before part i+1 is removed).
  auto merged_rank = [&](size_t i) {
    if (i + 3 >= parts.size()) return BpeRanks::kNone;
    return ranks.rank(piece.substr(parts[i].start, parts[i + 3].start - parts[i].start));
  };
  for (;;) {
    uint32_t best = BpeRanks::kNone;
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i].rank < best) {
        best = parts[i].rank;
        at = i;
      }
    }
    if (best == BpeRanks::kNone) break;
    if (at > 0) parts[at - 1].rank = merged_rank(at - 1);
    parts[at].rank = merged_rank(at);
    parts.erase(parts.begin() + long(at) + 1);
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string_view tok = piece.substr(parts[i].start, parts[i + 1].start - parts[i].start);
    const uint32_t r = tok.size() == 1 ? byte_rank(ranks, tok, 0) : ranks.rank(tok);
    out.push_back(int32_t(r));
  }
}

void bpe_encode_piece_ref(const BpeRanks& ranks, std::string_view piece, std::vector<int32_t>& out) {
  if (const uint32_t whole = ranks.rank(piece); whole != BpeRanks::kNone) {
    out.push_back(int32_t(whole));
    return;
  }
  std::vector<std::string> toks;
  for (size_t i = 0; i < piece.size(); ++i) {
    byte_rank(ranks, piece, i);
    toks.emplace_back(piece.substr(i, 1));
  }
  for (;;) {
    uint32_t best = BpeRanks::kNone;
    size_t at = 0;
    for (size_t i = 0; i + 1 < toks.size(); ++i) {
      const uint32_t r = ranks.rank(toks[i] + toks[i + 1]);
      if (r < best) {
        best = r;
        at = i;
      }
    }
    if (best == BpeRanks::kNone) break;
    toks[at] += toks[at + 1];
    toks.erase(toks.begin() + long(at) + 1);
  }
  for (const auto& t : toks) out.push_back(int32_t(ranks.rank(t)));
}

}  // namespace ds::tok
