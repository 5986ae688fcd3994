// Safe file I/O: capped reads name the file and errno's text (a directory, /dev/zero, a dangling
// link), atomic writes replace a file whole or not at all (failed write, full file-size limit, no
// commit, a signal's cleanup), and an unwritable location fails before anything is written.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/check.h"
#include "core/file_io.h"
#include "error_message.h"

namespace ds {
namespace {

using ds::testing::error_message;

namespace fs = std::filesystem;

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ds_file_io_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  int n_entries() const { return int(std::distance(fs::directory_iterator(dir_), fs::directory_iterator())); }

  fs::path dir_;
};

TEST_F(FileIo, ReadNamesWhatFailed) {
  write_file_atomic(path("a.json"), "{}");
  EXPECT_EQ(read_file_capped(path("a.json"), 100, "config"), "{}");
  EXPECT_EQ(error_message([&] { read_file_capped(path("missing.json"), 100, "config"); }),
            "cannot open config " + path("missing.json") + ": No such file or directory");
  EXPECT_EQ(error_message([&] { read_file_capped(dir_.string(), 100, "config"); }),
            "config " + dir_.string() + " is a directory, expected a file");
  fs::create_symlink(path("gone.json"), path("link.json"));
  EXPECT_NE(error_message([&] {
              read_file_capped(path("link.json"), 100, "config");
            }).find("dangling symbolic link"),
            std::string::npos);
  EXPECT_EQ(error_message([&] { read_file_capped("/dev/zero", 1 << 20, "token file"); }),
            "token file /dev/zero is larger than the 1048576 byte limit");
}

TEST_F(FileIo, AtomicWriteReplacesWholeFilesOnly) {
  const std::string p = path("out.bin");
  write_file_atomic(p, "old contents");
  {
    AtomicFile f(p);
    f.write("new");
    EXPECT_EQ(slurp(p), "old contents");  // nothing visible before commit
    EXPECT_EQ(n_entries(), 2);            // the target and one temporary beside it
  }                                       // destroyed without commit: the temporary goes
  EXPECT_EQ(slurp(p), "old contents");
  EXPECT_EQ(n_entries(), 1);
  AtomicFile g(p);
  g.write("new contents");
  g.commit();
  EXPECT_EQ(slurp(p), "new contents");
  EXPECT_EQ(n_entries(), 1);
}

TEST_F(FileIo, FullDiskKeepsThePreviousFileAndNamesErrno) {
  const std::string p = path("report.json");
  write_file_atomic(p, "previous good file");
  // A file-size limit stands in for a full disk: write(2) fails with EFBIG instead of ENOSPC.
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* prev = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string err = error_message([&] { write_file_atomic(p, std::string(1 << 16, 'x')); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, prev);
  EXPECT_EQ(err, "cannot write " + p + ": File too large");
  EXPECT_EQ(slurp(p), "previous good file");
  EXPECT_EQ(n_entries(), 1);  // no temporary left behind
}

TEST_F(FileIo, UnwritableLocationFailsAtOpen) {
  write_file_atomic(path("afile"), "x");
  EXPECT_EQ(error_message([&] { AtomicFile f(path("afile") + "/out.json"); }),
            "cannot write " + path("afile") + "/out.json: " + path("afile") + " is not a directory");
  EXPECT_EQ(error_message([&] { AtomicFile f(path("nodir") + "/out.json"); }),
            "cannot write " + path("nodir") + "/out.json: directory " + path("nodir") + " does not exist");
  EXPECT_EQ(error_message([&] { AtomicFile f(dir_.string()); }),
            "output " + dir_.string() + " is a directory, expected a file name");
}

TEST_F(FileIo, SignalCleanupRemovesPendingTemporaries) {
  AtomicFile f(path("interrupted.json"));
  f.write("half");
  EXPECT_EQ(n_entries(), 1);
  remove_pending_temp_files();  // what the CLI's SIGINT handler calls
  EXPECT_EQ(n_entries(), 0);
  EXPECT_FALSE(fs::exists(path("interrupted.json")));
}

TEST_F(FileIo, SameFileSeesThroughLinks) {
  write_file_atomic(path("a"), "x");
  fs::create_symlink(path("a"), path("b"));
  fs::create_hard_link(path("a"), path("c"));
  EXPECT_TRUE(same_file(path("a"), path("b")));
  EXPECT_TRUE(same_file(path("c"), path("b")));
  EXPECT_FALSE(same_file(path("a"), path("missing")));
}

}  // namespace
}  // namespace ds
