// deltaserve — one CLI for replay, planning, model runs and benchmarks.
#include <fmt/format.h>
#include <malloc.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <system_error>

#include "commands.h"
#include "core/check.h"
#include "core/file_io.h"

namespace {

// SIGINT / SIGTERM: remove the temporaries of outputs not yet written, then die of the signal as
// usual. Outputs are only ever replaced whole, so an interrupted run leaves nothing partial.
extern "C" void on_terminate_signal(int sig) {
  ds::remove_pending_temp_files();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

constexpr int kExitBrokenPipe = 128 + SIGPIPE;  // what a shell reports for a process killed by SIGPIPE

bool is_broken_pipe(const std::system_error& e) {
  return e.code() == std::errc::broken_pipe;
}

}  // namespace

int main(int argc, char** argv) {
  // The CPU forward allocates and frees activation buffers of up to tens of MB per layer and step.
  // Keep freed memory in the heap for the next step instead of mapping fresh, zeroed pages each
  // time (glibc serves blocks above its mmap threshold with mmap/munmap: a page fault per 4 KiB on
  // first touch cost ~15% of a 4096-token prefill). The resident size stays at its high-water mark.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  CLI::App app{
      "deltaserve: serving engine and simulator for delta-rule hybrid models (Kimi Linear, Kimi K3)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  ds::cli::register_replay(app);
  ds::cli::register_plan(app);
  ds::cli::register_calibrate(app);
  ds::cli::register_logits(app);
  ds::cli::register_generate(app);
  ds::cli::register_serve(app);
  ds::cli::register_bench(app);
  // A closed stdout (`deltaserve replay | head -1`) must not kill the process before its output
  // files are written: ignore SIGPIPE and end quietly at the first failed write instead.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, on_terminate_signal);
  std::signal(SIGTERM, on_terminate_signal);
  try {
    app.parse(argc, argv);
    if (std::fflush(stdout) != 0 && errno == EPIPE) return kExitBrokenPipe;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);                        // --help
    fmt::print(stderr, "deltaserve: error: {} (see --help)\n", e.what());  // bad flag: one line, exit 1
    return 1;
  } catch (const ds::Error& e) {
    fmt::print(stderr, "deltaserve: error: {}\n", e.what());
    return 1;
  } catch (const std::system_error& e) {
    if (is_broken_pipe(e)) return kExitBrokenPipe;  // the reader went away: nothing more to say
    fmt::print(stderr, "deltaserve: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "deltaserve: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
