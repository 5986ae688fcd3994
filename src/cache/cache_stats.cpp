#include "cache/cache_stats.h"

#include "cache/cache_transfer.h"

namespace ds {

const char* to_string(EvictReason reason) {
  switch (reason) {
    case EvictReason::KvDemoted:
      return "kv-demoted";
    case EvictReason::KvDropped:
      return "kv-dropped";
    case EvictReason::CheckpointDemoted:
      return "checkpoint-demoted";
    case EvictReason::CheckpointDropped:
      return "checkpoint-dropped";
    case EvictReason::Count:
      break;
  }
  return "?";
}

const char* to_string(TransferKind kind) {
  switch (kind) {
    case TransferKind::Page:
      return "page";
    case TransferKind::Checkpoint:
      return "checkpoint";
    case TransferKind::Restore:
      return "restore";
  }
  return "?";
}

}  // namespace ds
