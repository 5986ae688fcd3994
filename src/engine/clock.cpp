#include "engine/clock.h"

#include <thread>

#include "core/check.h"

namespace ds {

void VirtualClock::step_done(double duration_s) {
  DS_CHECK(duration_s >= 0, "clock: negative step duration {} s", duration_s);
  now_s_ += duration_s;
}

void VirtualClock::wait_until(double t_s) {
  if (t_s > now_s_) now_s_ = t_s;
}

double WallClock::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void WallClock::wait_until(double t_s) {
  const double dt = t_s - now_s();
  if (dt > 0) std::this_thread::sleep_for(std::chrono::duration<double>(dt));
}

}  // namespace ds
