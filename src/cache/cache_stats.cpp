#include "cache/cache_stats.h"

#include "cache/cache_transfer.h"

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

const char* to_string(TransferKind kind) {
  switch (kind) {
    case TransferKind::page:
      return "page";
    case TransferKind::checkpoint:
      return "checkpoint";
    case TransferKind::restore:
      return "restore";
  }
  return "?";
}

}  // namespace ds
