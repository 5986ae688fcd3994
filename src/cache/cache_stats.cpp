#include "cache/cache_stats.h"

namespace ds {

const char* to_string(EvictReason reason) {
  switch (reason) {
    case EvictReason::kv_demoted:
      return "kv-demoted";
    case EvictReason::kv_dropped:
      return "kv-dropped";
    case EvictReason::checkpoint_demoted:
      return "checkpoint-demoted";
    case EvictReason::checkpoint_dropped:
      return "checkpoint-dropped";
    case EvictReason::count:
      break;
  }
  return "?";
}

}  // namespace ds
