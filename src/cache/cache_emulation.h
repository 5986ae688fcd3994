// CacheEmulation: the interface of an emulated engine cache (vLLM's hybrid allocator, SGLang's Mamba
// radix cache). HybridCache forwards every call to one when CacheConfig::cache_model names it, so the
// same scheduler and executor drive every cache model. The contract of each method is HybridCache's
// (hybrid_cache.h). Simulation only: ids are bookkeeping for the simulated executor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cache/hybrid_cache.h"

namespace ds {

class CacheEmulation {
 public:
  virtual ~CacheEmulation() = default;
  virtual const CacheConfig& config() const = 0;
  virtual CacheHit match(std::span<const int32_t> prompt) const = 0;
  virtual std::optional<Admission> admit(std::span<const int32_t> prompt) = 0;
  virtual bool reserve(SeqId seq, int64_t n_tokens_total) = 0;
  virtual std::vector<PlannedCheckpoint> plan_checkpoints(SeqId seq, int64_t begin, int64_t end) = 0;
  virtual CommitReport commit(SeqId seq, std::span<const int32_t> tokens, int64_t n_computed) = 0;
  virtual void finish(SeqId seq, std::span<const int32_t> all_tokens) = 0;
  virtual void abort(SeqId seq) = 0;
  virtual std::vector<CacheTransfer> take_transfers() = 0;
  virtual std::span<const int32_t> page_table(SeqId seq) const = 0;
  virtual int32_t live_slot(SeqId seq) const = 0;
  virtual int64_t n_running() const = 0;
  virtual const CacheStats& stats() const = 0;
  virtual int64_t bookkeeping_bytes() const = 0;
  virtual void check_invariants() const = 0;
};

// The emulation CacheConfig::cache_model names ("vllm", "sglang"); nullptr for "deltaserve" (the
// native cache). Throws ds::Error on an unknown name or a bad emulation config.
std::unique_ptr<CacheEmulation> make_cache_emulation(const CacheConfig& config);

}  // namespace ds
