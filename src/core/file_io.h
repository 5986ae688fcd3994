// Files read and written safely. Reading is capped (a path to /dev/zero or a runaway file is an
// error, not an allocation of gigabytes) and names what failed with errno's text. Writing is
// atomic: bytes go to a temporary file in the target's directory, which is flushed, fsync'ed and
// renamed over the target, so readers see either the old file or the whole new one, and a crash,
// a full disk or Ctrl-C never leaves a truncated output behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ds {

inline constexpr int64_t kMaxConfigFileBytes = int64_t{64} << 20;  // JSON configs, profiles, indexes

// The whole file at `path` (`what` names it in errors: "model config", "token file", ...).
// Errors: missing or unreadable (with errno's text), a directory, or more than max_bytes bytes.
std::string read_file_capped(const std::string& path, int64_t max_bytes, std::string_view what);

// True when both paths name the same existing file (hard links and symlinks included).
bool same_file(const std::string& a, const std::string& b);

// Writes one output file atomically. The temporary file is created by the constructor, so an
// output location that cannot be written fails before any work; commit() publishes it; destroying
// the object without commit() removes the temporary. Not copyable.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);  // throws ds::Error naming the path and errno
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();  // flush, fsync, close, rename over the target, fsync the directory

  const std::string& path() const { return path_; }

 private:
  void discard() noexcept;

  std::string path_;  // the target
  std::string tmp_;   // the temporary beside it
  int fd_ = -1;
  int slot_ = -1;  // entry in the table of temporaries removed on SIGINT / SIGTERM
};

// Writes `bytes` to `path` atomically.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Removes every temporary file of an AtomicFile that has not been committed or discarded yet.
// Async-signal-safe (only unlink(2)): for a SIGINT / SIGTERM handler, so an interrupted run leaves
// nothing behind.
void remove_pending_temp_files() noexcept;

}  // namespace ds
