// RetentionPolicy: which page-aligned positions of a sequence get a KDA checkpoint (the executor
// emits the state there inside the forward pass; the cache stores it at commit). Positions are
// always multiples of page_tokens: a wanted position is rounded DOWN to the page grid.
// Specs: every-block | interval:N (N a multiple of page_tokens; + the prompt end) | semantic
// (Marconi: branch points found at admission + the last decoded token) | prompt-end | junction
// (vLLM's retention 0: prompt end + the shared-prefix junction) | boundary-aware[:N|:decode]
// (branch point + prompt end, + the last 32K multiple below the prompt end while prompts fork
// inside cached paths; with N also every N tokens; with decode also the end of decoding) | none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/prefix_tree.h"

namespace ds {

// What the policy may look at for one sequence (all in tokens).
struct RetentionContext {
  int64_t page_tokens = 64;
  int64_t prompt_tokens = 0;  // prompt length (the prompt end is rounded down to a page)
  int64_t branch_tokens = 0;  // semantic: branch point found at admission (0 = none)
  // The cache's observation: prompts lately left cached paths inside them (at a page with no
  // state, the path going on past it) and memory is not overloaded (boundary-aware's tail state).
  bool forks_mid_path = false;
};

struct WantedCheckpoint {
  int64_t position = 0;  // tokens, multiple of page_tokens, > 0
  CheckpointReason reason = CheckpointReason::Block;
};

class RetentionPolicy {
 public:
  virtual ~RetentionPolicy() = default;
  virtual std::string name() const = 0;
  // Appends the wanted positions p with begin < p <= end, ascending, one entry per position.
  virtual void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
                      std::vector<WantedCheckpoint>& out) const = 0;
  // Whether the finished sequence keeps a checkpoint at its last computed token (rounded down).
  virtual bool keeps_decode_end() const { return false; }
  // Whether a stored checkpoint at `position` with `reason` is one this policy can create.
  virtual bool allows(CheckpointReason reason, int64_t position) const = 0;
};

// Parses a spec (see the file comment); ds::Error naming the spec on anything else.
std::unique_ptr<RetentionPolicy> make_retention_policy(const std::string& spec, int64_t page_tokens);

}  // namespace ds
