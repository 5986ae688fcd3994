#include "replay/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ds {

ProgressBar::ProgressBar(int64_t total, std::string label, bool enabled)
    : total_(std::max<int64_t>(total, 1)), label_(std::move(label)) {
  drawing_ = enabled && isatty(fileno(stderr)) != 0;
  if (drawing_) draw("");
}

ProgressBar::~ProgressBar() {
  if (drawing_) fmt::print(stderr, "\n");
}

void ProgressBar::advance(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = std::min(done_ + 1, total_);
  if (drawing_) draw(what);
}

void ProgressBar::draw(const std::string& what) {
  constexpr int kWidth = 30;
  int filled = static_cast<int>(kWidth * done_ / total_);
  fmt::print(stderr, "\r{} [{}{}] {}/{} {:<40.40}", label_, std::string(filled, '#'),
             std::string(kWidth - filled, '.'), done_, total_, what);
  std::fflush(stderr);
}

}  // namespace ds
