// The mergeable ranks of a byte-level BPE: token bytes <-> rank (= token id), as in tiktoken's
// `.tiktoken` / Kimi's `tiktoken.model` file (one "<base64 bytes> <rank>" per line). Lookup by
// bytes is an open-addressing hash table over one byte arena (the BPE hot path).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds::tok {

class BpeRanks {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  static constexpr uint32_t kMaxRank = (1u << 24) - 1;  // sanity bound on file contents

  // Parses the line format; errors name `source` and the 1-based line.
  static BpeRanks parse(std::string_view text, std::string_view source);
  static BpeRanks load(const std::string& path);
  // From explicit (bytes, rank) pairs (tests, generated vocabularies).
  static BpeRanks from_pairs(const std::vector<std::pair<std::string, uint32_t>>& pairs,
                             std::string_view source);

  uint32_t rank(std::string_view bytes) const;  // kNone when absent
  bool has_rank(uint32_t rank) const { return rank < n_ids() && offsets_[rank] != kHole; }
  std::string_view bytes(uint32_t rank) const;                      // rank must exist
  uint32_t n_ids() const { return uint32_t(offsets_.size()) - 1; }  // max rank + 1
  size_t size() const { return n_tokens_; }                         // number of ranks present
  bool has_all_bytes() const;                                       // every single byte is a token

  // Serialises back to the line format (ascending rank).
  std::string to_text() const;

 private:
  static constexpr uint64_t kHole = ~uint64_t(0);
  void build_index(std::string_view source);

  std::string arena_;              // token bytes, concatenated in rank order
  std::vector<uint64_t> offsets_;  // [n_ids + 1]: start of rank r in arena_, kHole when absent
  std::vector<uint32_t> ends_;     // [n_ids]: end of rank r in arena_
  std::vector<uint32_t> slots_;    // hash table of ranks, kNone = empty; size is a power of two
  size_t n_tokens_ = 0;
};

std::string base64_encode(std::string_view bytes);
// Standard alphabet with '=' padding; nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace ds::tok
