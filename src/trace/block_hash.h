// Hash mixing for trace block ids and prompt token ids. Owns the one rule that turns a trace's
// per-session ("local") hash id into a global 64-bit block id, and a block id plus a position
// into a token id in [0, 2^31). Pure functions: same inputs give the same outputs everywhere.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/hash.h"

namespace ds {

// 64-bit FNV-1a of a string, then mixed: the namespace of a session named `name`.
constexpr uint64_t name_namespace(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return splitmix64(h);
}

// Global block id of a trace-local hash id inside namespace `ns`; injective in local_id for a
// fixed ns, and ids of different namespaces collide only by 64-bit chance.
constexpr uint64_t namespaced_block_id(uint64_t ns, uint64_t local_id) {
  return splitmix64(ns ^ splitmix64(local_id + 0x5bd1e995ULL));
}

// A block id that no trace hash id produces (by 64-bit chance): the unhashed partial last block
// of request number `ordinal` inside namespace `ns`.
constexpr uint64_t unique_tail_block_id(uint64_t ns, uint64_t ordinal) {
  return splitmix64(splitmix64(ns + 0x7461696cULL) ^ (ordinal * kGoldenGamma + 1));
}

// Token id of position `pos` (0-based, < block_tokens) inside the block with id `block_id`.
// `block_base` = splitmix64(block_id), hoisted out of a loop over the block's positions.
constexpr int32_t block_token_id_at(uint64_t block_base, int64_t pos) {
  return static_cast<int32_t>(splitmix64(block_base + static_cast<uint64_t>(pos)) >> 33);  // [0, 2^31)
}
constexpr int32_t block_token_id(uint64_t block_id, int64_t pos) {
  return block_token_id_at(splitmix64(block_id), pos);
}

}  // namespace ds
