#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/check.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// Temporaries of live AtomicFiles, readable from a signal handler: a fixed table of paths, each
// published by its flag after the path is written.
constexpr int kMaxPending = 32;
constexpr size_t kMaxPathBytes = 4096;
std::array<std::atomic<bool>, kMaxPending> g_pending_used{};
std::array<std::array<char, kMaxPathBytes>, kMaxPending> g_pending_path{};

int register_pending(const std::string& tmp) {
  if (tmp.size() + 1 > kMaxPathBytes) return -1;
  for (int i = 0; i < kMaxPending; ++i) {
    bool expected = false;
    if (g_pending_used[size_t(i)].load() ||
        !g_pending_used[size_t(i)].compare_exchange_strong(expected, true))
      continue;
    std::memcpy(g_pending_path[size_t(i)].data(), tmp.c_str(), tmp.size() + 1);
    return i;
  }
  return -1;  // table full: the file is still written atomically, only not cleaned on a signal
}

void unregister_pending(int slot) {
  if (slot >= 0) g_pending_used[size_t(slot)].store(false);
}

}  // namespace

std::string read_file_capped(const std::string& path, int64_t max_bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::error_code ec;
    if (fs::is_symlink(path, ec) && !fs::exists(path, ec))
      fail("{} {} is a dangling symbolic link (to {})", what, path, fs::read_symlink(path, ec).string());
    fail("cannot open {} {}: {}", what, path, errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail("{} {} is a directory, expected a file", what, path);
  }
  std::string data;
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t got = ::read(fd, buf.data(), buf.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("cannot read {} {}: {}", what, path, errno_text(err));
    }
    if (got == 0) break;
    if (int64_t(data.size()) + got > max_bytes) {
      ::close(fd);
      fail("{} {} is larger than the {} byte limit", what, path, max_bytes);
    }
    data.append(buf.data(), size_t(got));
  }
  ::close(fd);
  return data;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  DS_CHECK(!path_.empty(), "output path is empty");
  const fs::path target(path_);
  std::error_code ec;
  if (fs::is_directory(target, ec)) fail("output {} is a directory, expected a file name", path_);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    if (fs::exists(dir, ec)) fail("cannot write {}: {} is not a directory", path_, dir.string());
    fail("cannot write {}: directory {} does not exist", path_, dir.string());
  }
  std::string templ = (dir / fmt::format(".{}.tmp.XXXXXX", target.filename().string())).string();
  fd_ = ::mkstemp(templ.data());
  if (fd_ < 0)
    fail("cannot write {}: cannot create a file in {}: {}", path_, dir.string(), errno_text(errno));
  tmp_ = templ;
  slot_ = register_pending(tmp_);
  // mkstemp creates 0600; outputs get the usual 0666 & ~umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  unregister_pending(slot_);
  slot_ = -1;
}

void AtomicFile::write(const void* data, size_t n) {
  DS_CHECK(fd_ >= 0, "write to {} after commit", path_);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd_, p, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      discard();
      fail("cannot write {}: {}", path_, errno_text(err));
    }
    p += put;
    n -= size_t(put);
  }
}

void AtomicFile::commit() {
  DS_CHECK(fd_ >= 0, "commit of {} twice", path_);
  auto check = [&](bool ok, const char* step) {
    if (ok) return;
    const int err = errno;
    discard();
    fail("cannot write {}: {} failed: {}", path_, step, errno_text(err));
  };
  check(::fsync(fd_) == 0, "fsync");
  const int fd = fd_;
  fd_ = -1;
  check(::close(fd) == 0, "close");
  check(::rename(tmp_.c_str(), path_.c_str()) == 0, "rename");
  tmp_.clear();
  unregister_pending(slot_);
  slot_ = -1;
  // Make the rename itself durable (best effort: some file systems refuse fsync on a directory).
  const fs::path target(path_);
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

void remove_pending_temp_files() noexcept {
  for (int i = 0; i < kMaxPending; ++i)
    if (g_pending_used[size_t(i)].load()) ::unlink(g_pending_path[size_t(i)].data());
}

}  // namespace ds
