// Inputs by path: directories, .tar, .tar.gz, .gz, and their errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/check.h"
#include "trace/trace.h"
#include "trace/trace_files.h"
#include "trace_test_util.h"

namespace ds {
namespace {

const std::string kSession = R"({"id":"x","requests":[{"t":0,"in":128,"out":2,"hash_ids":[1,2]}]})";
const std::string kLine = "{\"timestamp\":0,\"input_length\":10,\"output_length\":1,\"hash_ids\":[1]}\n";

std::string error_of(const std::string& spec, const TraceOptions& opt = {}) {
  try {
    load_trace(spec, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TraceFiles, DirectoryOfSessionsSortedByName) {
  auto dir = test::temp_dir();
  test::write_file(dir / "b.json", kSession);
  test::write_file(dir / "a.json.gz",
                   test::gzip_bytes(R"({"requests":[{"t":0,"in":1,"out":1,"hash_ids":[]}]})"));
  test::write_file(dir / "README.md", "ignored");
  Trace t = load_trace(dir.string());
  ASSERT_EQ(t.sessions.size(), 2u);
  EXPECT_EQ(t.sessions[0].id, "a");  // no `id` field: file stem
  EXPECT_EQ(t.sessions[1].id, "x");
  EXPECT_EQ(t.source, dir.string());
}

TEST(TraceFiles, TarAndTarGz) {
  auto dir = test::temp_dir();
  std::string tar = test::make_tar({{"d/s2.json", kSession}, {"d/notes.txt", "x"}, {"d/s1.json", kSession}});
  test::write_file(dir / "t.tar", tar);
  test::write_file(dir / "t.tar.gz", test::gzip_bytes(tar));
  for (const char* name : {"t.tar", "t.tar.gz"}) {
    std::vector<TraceFile> files = read_trace_files((dir / name).string());
    ASSERT_EQ(files.size(), 2u) << name;
    EXPECT_EQ(files[0].name, (dir / name).string() + "[d/s1.json]");
    EXPECT_EQ(files[1].text, kSession);
  }
}

TEST(TraceFiles, SingleFilesPlainOrGzipped) {
  auto dir = test::temp_dir();
  test::write_file(dir / "m.jsonl", kLine + kLine);
  test::write_file(dir / "m2.jsonl.gz", test::gzip_bytes(kLine));
  test::write_file(dir / "s.json", kSession);
  EXPECT_EQ(load_trace((dir / "m.jsonl").string()).sessions.size(), 2u);
  EXPECT_EQ(load_trace((dir / "m2.jsonl.gz").string()).sessions.size(), 1u);
  EXPECT_EQ(load_trace((dir / "s.json").string()).sessions.size(), 1u);
}

TEST(TraceFiles, Errors) {
  auto dir = test::temp_dir();
  std::string missing = (dir / "nope.json").string();
  EXPECT_EQ(error_of(missing), missing + ": no such file or directory");
  test::write_file(dir / "x.csv", "a,b\n");
  EXPECT_EQ(error_of((dir / "x.csv").string()),
            (dir / "x.csv").string() +
                ": unknown trace format (expected .json Claude Code session, .jsonl Mooncake, .tar, .tar.gz "
                "or a directory)");
  std::string tar = test::make_tar({{"s.json", kSession}});
  test::write_file(dir / "trunc.tar", tar.substr(0, 540));
  EXPECT_EQ(error_of((dir / "trunc.tar").string()),
            (dir / "trunc.tar").string() + ": tar entry 0: entry size 65 runs past the end of the archive");
  std::string bad_sum = tar;
  bad_sum[0] = 'S';
  test::write_file(dir / "sum.tar", bad_sum);
  EXPECT_EQ(error_of((dir / "sum.tar").string()),
            (dir / "sum.tar").string() + ": tar entry 0: header checksum mismatch");
  std::string gz = test::gzip_bytes(kLine + kLine + kLine);
  test::write_file(dir / "cut.jsonl.gz", gz.substr(0, gz.size() - 12));
  EXPECT_EQ(error_of((dir / "cut.jsonl.gz").string()),
            (dir / "cut.jsonl.gz").string() + ": compressed data is truncated");
  std::string corrupt = gz;
  corrupt[12] ^= 0x55;
  corrupt[13] ^= 0x55;
  test::write_file(dir / "bad.jsonl.gz", corrupt);
  EXPECT_NE(error_of((dir / "bad.jsonl.gz").string()).find(": corrupt compressed data"), std::string::npos);
  auto empty = dir / "empty";
  std::filesystem::create_directories(empty);
  EXPECT_EQ(error_of(empty.string()), empty.string() + ": directory holds no .json / .jsonl trace files");
  auto mixed = dir / "mixed";
  std::filesystem::create_directories(mixed);
  test::write_file(mixed / "a.json", kSession);
  test::write_file(mixed / "b.jsonl", kLine);
  EXPECT_EQ(error_of(mixed.string()),
            (mixed / "b.jsonl").string() +
                ": cannot mix Claude Code (.json) and Mooncake (.jsonl) files in one trace");
  test::write_file(dir / "allbad.jsonl", "x\ny\n");
  TraceOptions skip;
  skip.skip_bad = true;
  EXPECT_EQ(
      error_of((dir / "allbad.jsonl").string(), skip),
      (dir / "allbad.jsonl").string() + ": trace holds no valid requests (2 malformed records skipped)");
  EXPECT_EQ(error_of("bundled:../etc"),
            "trace `bundled:../etc`: expected bundled:<file name in data/traces>");
}

TEST(TraceFiles, SkipBadThroughLoadTraceCountsRecords) {
  auto dir = test::temp_dir();
  test::write_file(dir / "m.jsonl", kLine + "{bad\n" + kLine + "{\"timestamp\":0}\n");
  TraceOptions opt;
  opt.skip_bad = true;
  Trace t = load_trace((dir / "m.jsonl").string(), opt);
  EXPECT_EQ(t.sessions.size(), 2u);
  EXPECT_EQ(t.n_skipped_bad, 2);
  EXPECT_EQ(error_of((dir / "m.jsonl").string()), (dir / "m.jsonl").string() + ":2: expected a member name");
}

TEST(TraceFiles, DataDirFromEnvironment) {
  auto dir = test::temp_dir();
  std::filesystem::create_directories(dir / "traces");
  test::write_file(dir / "traces" / "claude_code_sample.tar.gz",
                   test::gzip_bytes(test::make_tar({{"s/x.json", kSession}})));
  ASSERT_EQ(setenv("DELTASERVE_DATA_DIR", dir.c_str(), 1), 0);
  Trace t = load_trace("default");
  std::string found = bundled_trace_dir();
  unsetenv("DELTASERVE_DATA_DIR");
  EXPECT_EQ(found, (dir / "traces").string());
  ASSERT_EQ(t.sessions.size(), 1u);
  EXPECT_EQ(t.sessions[0].id, "x");
  EXPECT_EQ(t.source, "bundled:claude_code_sample.tar.gz");
  // Without the variable the source tree's copy is found again.
  EXPECT_EQ(bundled_trace_dir(), std::string(DS_SOURCE_DIR) + "/data/traces");
}

}  // namespace
}  // namespace ds
