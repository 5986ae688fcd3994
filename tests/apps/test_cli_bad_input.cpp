// The CLI under bad input: each case is one line on stderr naming the flag or file and exit 1;
// outputs are checked before the work, written atomically, never the inputs; a closed stdout or a
// SIGINT loses or leaves nothing partial; settings that would be ignored are refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;

const std::string kCli = DS_CLI;
const std::string kTiny = std::string(DS_TEST_DATA_DIR) + "/golden/kimi-linear-tiny";
const std::string kSmallTrace =
    "--trace synthetic:sessions=4,turns=3,input=2000,output=20,system=500,context=100000 --duration 30";

struct CliRun {
  int status = -1;  // exit status, or 128 + signal
  std::string output;
};

// Runs `deltaserve <args>` through the shell in `dir`, stdout and stderr together.
CliRun run_in(const fs::path& dir, const std::string& args, const std::string& shell_tail = "") {
  const std::string cmd = "cd '" + dir.string() + "' && '" + kCli + "' " + args + " 2>&1" + shell_tail;
  FILE* p = ::popen(("bash -c \"" + cmd + "\"").c_str(), "r");
  CliRun r;
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

class Cli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ds_cli_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliRun run(const std::string& args, const std::string& shell_tail = "") {
    return run_in(dir_, args, shell_tail);
  }
  // Expects exit 1 and exactly "deltaserve: error: <message>\n".
  void expect_error(const std::string& args, const std::string& message) {
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_EQ(r.output, "deltaserve: error: " + message + "\n") << args;
  }
  // Expects exit 1 and one error line containing `part`.
  void expect_error_has(const std::string& args, const std::string& part) {
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("deltaserve: error: ", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(part), std::string::npos) << args << "\n" << r.output;
  }
  std::vector<std::string> entries(const fs::path& d) const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }

  fs::path dir_;
};

const std::vector<std::string> kReportFiles = {"checkpoint_bytes.svg", "hit_rate.svg",
                                               "replay.csv",           "replay.json",
                                               "throughput.svg",       "ttft_throughput.svg"};

TEST_F(Cli, ModelTargetsAreNamedRight) {
  fs::create_directories(dir_ / "cfgdir" / "config.json");
  fs::create_directories(dir_ / "dangling");
  fs::copy_file(kTiny + "/config.json", dir_ / "dangling" / "config.json");
  fs::create_symlink("/nonexistent/model.safetensors", dir_ / "dangling" / "model.safetensors");
  const std::string tokens = " --tokens 1,2 --out l.safetensors";
  expect_error("logits --model " + kTiny + "/model.safetensors" + tokens,
               "model " + kTiny +
                   "/model.safetensors is a file; expected a checkpoint folder (config.json + "
                   "*.safetensors)");
  expect_error("logits --model cfgdir" + tokens,
               "model config cfgdir/config.json is a directory, expected a file");
  expect_error("logits --model dangling" + tokens,
               "dangling/model.safetensors is a dangling symbolic link (to /nonexistent/model.safetensors)");
  expect_error("logits --model nowhere" + tokens, "model nowhere does not exist");
  expect_error("plan --model " + kTiny + "/model.safetensors",
               kTiny +
                   "/model.safetensors is not a JSON file (a profile name, a .json file or a folder with "
                   "config.json)");
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(kTiny + "/config.json"));
  cfg["num_experts"] = -1;
  std::ofstream(dir_ / "neg.json") << cfg.dump();
  expect_error_has("plan --model neg.json",
                   "neg.json: config: `num_experts` must be >= 0 (0: no MoE layers), got -1");
}

TEST_F(Cli, LogitsNeverOverwritesItsInputsAndChecksTheOutputFirst) {
  fs::copy(kTiny, dir_ / "m");
  const auto before = fs::file_size(dir_ / "m" / "model.safetensors");
  expect_error(
      "logits --model m --tokens 1,2 --out m/model.safetensors",
      "--out m/model.safetensors is one of the inputs (m/model.safetensors); write the logits elsewhere");
  std::ofstream(dir_ / "ids.txt") << "1\n2\n";
  expect_error("logits --model m --tokens-file ids.txt --out ids.txt",
               "--out ids.txt is one of the inputs (ids.txt); write the logits elsewhere");
  EXPECT_EQ(fs::file_size(dir_ / "m" / "model.safetensors"), before);
  // The output location fails before the model is even read.
  expect_error("logits --model nowhere --tokens 1 --out nodir/l.safetensors",
               "cannot write nodir/l.safetensors: directory nodir does not exist");
  expect_error("logits --model m --tokens-file /dev/zero --out l.safetensors",
               "token file /dev/zero is larger than the 268435456 byte limit");
  const CliRun ok = run("logits --model m --tokens 1,2,3 --out l.safetensors");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"ids.txt", "l.safetensors", "m"}));  // no temporaries
}

TEST_F(Cli, ReplayChecksItsOutputBeforeTheSweep) {
  std::ofstream(dir_ / "afile") << "x";
  const auto t0 = std::chrono::steady_clock::now();
  expect_error("replay --out afile", "report folder afile exists and is not a directory");
  expect_error("replay --out afile/sub", "cannot create report folder afile/sub: Not a directory");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            5.0);  // no sweep ran
}

TEST_F(Cli, IgnoredOrUnboundedSettingsAreRefused) {
  expect_error("plan --gpus 0", "--gpus must be >= 1, got 0");
  expect_error("plan --tp 0", "--tp must be >= 1, got 0");
  expect_error("plan --gpus 8 --tp 3", "--gpus 8 is not a multiple of --tp 3");
  expect_error("replay --gpus 0", "--gpus must be >= 1, got 0");
  expect_error("replay --duration inf", "--duration must be finite, > 0 and <= 1000000 s, got inf");
  expect_error("replay --duration nan", "--duration must be finite, > 0 and <= 1000000 s, got nan");
  expect_error_has("replay --seed -1", "--seed: must be >= 0, got -1");
  expect_error(
      "replay --trace bundled:mooncake_fast25_conversation_trace.jsonl.gz --concurrency 4",
      "--concurrency does not apply to bundled:mooncake_fast25_conversation_trace.jsonl.gz: it is an "
      "open-loop trace (requests arrive at their timestamps)");
  expect_error(
      "replay --kv-budget-tokens 9223372036854775807 --duration 10",
      "replay: a KV budget of 9223372036854775807 tokens x 13824 bytes per token exceeds the cache's "
      "1152921504606846976-byte tier limit");
  expect_error_has(
      "replay --trace synthetic:sessions=100000,turns=100000",
      "synthetic trace: sessions=100000 x turns=100000 with ~2219 block ids per prompt needs about");
  expect_error("bench cache --checkpoints -1", "--checkpoints must be >= 0, got -1");
  expect_error("bench floor --rounds 0", "--rounds must be in [1, 100], got 0");
  expect_error("bench gpu --model no_such_folder", "model no_such_folder does not exist");
  expect_error_has("bench gpu --model " + kTiny + " --config " + kTiny, "excludes");
  expect_error("replay --compare-sim h200", "--compare-sim needs --executor model");
}

TEST_F(Cli, DeviceFlagsAreChecked) {
  const std::string logits = "logits --model " + kTiny + " --tokens 1,2 --out l.safetensors";
  expect_error(logits + " --device tpu", "--device must be 'cpu' or 'cuda', got 'tpu'");
  expect_error(logits + " --precision bf16",
               "--precision bf16 needs --device cuda (the CPU model computes in f32)");
  expect_error("generate --model " + kTiny + " --tokens 1,2 --device tpu",
               "--device must be 'cpu' or 'cuda', got 'tpu'");
  EXPECT_FALSE(fs::exists(dir_ / "l.safetensors"));
}

TEST_F(Cli, RejectedRequestsAreReportedNotZeros) {
  const CliRun r = run("replay " + kSmallTrace + " --concurrency 2 --tiers hbm --kv-budget-tokens 64 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto run0 = nlohmann::json::parse(r.output)["runs"][0];
  EXPECT_EQ(run0["n_requests"], 0);
  EXPECT_GT(run0["n_rejected"].get<int>(), 0);
  EXPECT_TRUE(run0["ttft_p50_s"].is_null());
  EXPECT_TRUE(run0["realized_hit_rate"].is_null());
  const CliRun t = run("replay " + kSmallTrace + " --concurrency 2 --tiers hbm --kv-budget-tokens 64");
  EXPECT_NE(t.output.find("no measured requests ("), std::string::npos) << t.output;
}

TEST_F(Cli, ClosedStdoutKeepsTheReports) {
  // `| true` closes the pipe at once: every write to stdout fails with EPIPE (tens of KB of JSON).
  const CliRun r = run("replay " + kSmallTrace + " --concurrency 1,2,3,4 --json --out rep",
                       " | true; exit \\${PIPESTATUS[0]}");
  EXPECT_EQ(r.status, 141) << r.output;  // as if killed by SIGPIPE, but only after the files were written
  ASSERT_EQ(entries(dir_ / "rep"), kReportFiles);
  const auto doc = nlohmann::json::parse(std::ifstream(dir_ / "rep" / "replay.json"));
  EXPECT_EQ(doc["runs"].size(), 12u);
}

TEST_F(Cli, SigintLeavesNothingPartial) {
  const fs::path out = dir_ / "rep";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::chdir(dir_.c_str());
    ::execl(kCli.c_str(), kCli.c_str(), "replay", "--duration", "100000", "--out", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the run is under way (its report temporaries exist), then interrupt it.
  for (int i = 0; i < 200 && !(fs::exists(out) && entries(out).size() == kReportFiles.size()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(entries(out).size(), kReportFiles.size());
  ::kill(pid, SIGINT);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
  EXPECT_TRUE(entries(out).empty());  // no report, and no temporary left behind
}

}  // namespace
