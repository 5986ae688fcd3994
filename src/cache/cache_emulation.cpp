#include "cache/cache_emulation.h"

#include "cache/sglang_cache.h"
#include "cache/vllm_cache.h"
#include "core/check.h"

namespace ds {

std::unique_ptr<CacheEmulation> make_cache_emulation(const CacheConfig& config) {
  if (config.cache_model == "deltaserve") return nullptr;
  config.validate();
  if (config.cache_model == "vllm") return std::make_unique<VllmCache>(config);
  if (config.cache_model == "sglang") return std::make_unique<SglangCache>(config);
  fail("cache config: unknown cache_model '{}' (deltaserve, vllm, sglang)", config.cache_model);
}

}  // namespace ds
