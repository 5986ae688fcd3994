#include "sched/request.h"

namespace ds {

const char* to_string(RequestStatus status) {
  switch (status) {
    case RequestStatus::waiting:
      return "waiting";
    case RequestStatus::running:
      return "running";
    case RequestStatus::preempted:
      return "preempted";
    case RequestStatus::finished:
      return "finished";
    case RequestStatus::aborted:
      return "aborted";
  }
  return "unknown";
}

}  // namespace ds
