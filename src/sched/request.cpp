#include "sched/request.h"

namespace ds {

const char* to_string(RequestStatus status) {
  switch (status) {
    case RequestStatus::Waiting:
      return "waiting";
    case RequestStatus::Running:
      return "running";
    case RequestStatus::Preempted:
      return "preempted";
    case RequestStatus::Finished:
      return "finished";
    case RequestStatus::Aborted:
      return "aborted";
  }
  return "unknown";
}

}  // namespace ds
