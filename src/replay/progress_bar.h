// ProgressBar: a one-line progress bar on stderr, drawn only when stderr is a terminal (so pipes,
// CI logs and `--json` consumers never see it). Thread-safe: sweep workers call advance().
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace ds {

class ProgressBar {
 public:
  // enabled: draw at all (the caller may force it off); drawing also requires isatty(stderr).
  ProgressBar(int64_t total, std::string label, bool enabled = true);
  ~ProgressBar();                              // finishes the line if anything was drawn
  void advance(const std::string& what = "");  // one unit done; redraws
  bool drawing() const { return drawing_; }

 private:
  void draw(const std::string& what);
  std::mutex mutex_;
  int64_t total_ = 0;
  int64_t done_ = 0;
  std::string label_;
  bool drawing_ = false;
};

}  // namespace ds
