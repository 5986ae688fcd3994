// CacheTransfer: one copy between memory tiers (or into a live-state slot) that the cache's
// bookkeeping decided and an executor must perform on its buffers. The cache appends them in the
// order it made the decisions (admission promotions and restores, demotions while making room);
// an executor performs them in that order, all before the forward pass of the step they come with,
// so a slot or page freed and reused inside one step is read before it is overwritten.
#pragma once

#include <cstdint>

namespace ds {

enum class TransferKind : uint8_t {
  Page,        // KV page: tier src_tier page `src` -> tier dst_tier page `dst` (all MLA layers)
  Checkpoint,  // checkpoint slot `src` of src_tier -> checkpoint slot `dst` of dst_tier
  Restore,     // checkpoint slot `src` of src_tier -> live-state slot `dst` (device)
};
const char* to_string(TransferKind kind);

struct CacheTransfer {
  TransferKind kind = TransferKind::Page;
  int8_t src_tier = 0;  // 0 device, 1 host
  int8_t dst_tier = 0;
  int32_t src = -1;  // page id or checkpoint slot in src_tier
  int32_t dst = -1;  // page id, checkpoint slot or live slot in dst_tier
};

// A checkpoint slot in one tier (tier -1: none).
struct CheckpointRef {
  int8_t tier = -1;
  int32_t slot = -1;
  bool valid() const { return tier >= 0 && slot >= 0; }
};

// A KDA state position the forward pass must write into a device checkpoint slot.
struct PlannedCheckpoint {
  int64_t position = 0;  // tokens: the state after consuming this many tokens (page-aligned)
  int32_t slot = -1;     // device checkpoint slot
  bool operator==(const PlannedCheckpoint&) const = default;
};

}  // namespace ds
