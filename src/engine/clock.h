// Clock: the engine's notion of time. VirtualClock (simulation and reproducible replays) moves only
// when told: by each step's reported duration and by waits for the next arrival. WallClock reads
// the steady clock; a step's time has really passed, and waiting sleeps. Times in seconds since
// the clock was made.
#pragma once

#include <chrono>

namespace ds {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_s() const = 0;
  // A step that took duration_s (as the executor reports it) just ran.
  virtual void step_done(double duration_s) = 0;
  // Nothing to do before t_s: move (or sleep) until then. Never moves backwards.
  virtual void wait_until(double t_s) = 0;
};

class VirtualClock final : public Clock {
 public:
  double now_s() const override { return now_s_; }
  void step_done(double duration_s) override;
  void wait_until(double t_s) override;

 private:
  double now_s_ = 0;
};

class WallClock final : public Clock {
 public:
  WallClock() : start_(std::chrono::steady_clock::now()) {}
  double now_s() const override;
  void step_done(double) override {}
  void wait_until(double t_s) override;

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ds
