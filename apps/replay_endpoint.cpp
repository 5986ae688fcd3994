#include "replay_endpoint.h"

#include <fmt/format.h>

#include <optional>

#include "core/check.h"
#include "replay/endpoint_replay.h"
#include "replay/progress_bar.h"
#include "replay/report.h"
#include "trace/trace.h"

namespace ds::cli {

void add_endpoint_options(CLI::App& cmd, EndpointFlags& f) {
  cmd.add_option("--endpoint", f.endpoint,
                 "replay against an OpenAI-compatible server at http://HOST:PORT instead of the simulator "
                 "(--model = served model name, default the first of /v1/models)");
  cmd.add_flag("--text-prompts", f.text_prompts,
               "endpoint: send deterministic text per hash block instead of token-id prompts");
  cmd.add_option("--vocab-size", f.vocab_size,
                 "endpoint: token ids modulo this (default: the server's vocab_size, else 32000)");
  cmd.add_option("--max-output-tokens", f.max_output_tokens,
                 "cap on each turn's output tokens (0 = recorded)");
  cmd.add_option("--request-timeout", f.request_timeout_s, "endpoint: seconds before a request fails");
}

void run_endpoint_replay_cli(const CLI::App& cmd, const EndpointFlags& f, const ReplaySetup& setup,
                             const std::string& trace_spec, bool skip_bad,
                             const std::vector<int>& concurrency, bool json, const std::string& out_dir) {
  DS_CHECK(f.vocab_size >= 0 && f.vocab_size < (int64_t(1) << 31),
           "--vocab-size must be in [0, 2^31), got {}", f.vocab_size);
  DS_CHECK(f.max_output_tokens >= 0, "--max-output-tokens must be >= 0, got {}", f.max_output_tokens);
  DS_CHECK(f.request_timeout_s > 0, "--request-timeout must be > 0, got {}", f.request_timeout_s);
  // The report files are opened before any work, so a bad --out fails now, not after the run.
  std::optional<ReportFiles> reports;
  if (!json || !out_dir.empty()) reports.emplace(out_dir.empty() ? "replay-out" : out_dir);
  EndpointConfig ep;
  ep.url = f.endpoint;
  ep.text_prompts = f.text_prompts;
  ep.request_timeout_s = f.request_timeout_s;
  const EndpointModel card = query_endpoint_model(ep);
  ep.model = cmd.count("--model") ? setup.model : card.id;
  TraceOptions topt;
  topt.skip_bad = skip_bad;
  const Trace trace = load_trace(trace_spec, topt);
  const int64_t vocab = f.vocab_size > 0 ? f.vocab_size : card.vocab_size > 0 ? card.vocab_size : 32000;
  if (!trace.closed_loop && cmd.count("--concurrency") > 0)
    fail("--concurrency does not apply to {}: it is an open-loop trace (requests arrive at their timestamps)",
         trace.source);
  std::vector<int> concs = trace.closed_loop ? concurrency : std::vector<int>{1};
  if (!json)
    fmt::print("trace {} ({} sessions) | endpoint {} model {} | {} prompts, ids mod {}\n", trace.source,
               trace.sessions.size(), ep.url, ep.model, f.text_prompts ? "text" : "token-id", vocab);
  std::vector<RunMetrics> runs;
  {
    ProgressBar bar(static_cast<int64_t>(concs.size()), "replay");
    for (size_t i = 0; i < concs.size(); ++i) {
      ReplayConfig rc;
      rc.label = "endpoint";
      rc.concurrency = concs[i];
      rc.seed = setup.seed;
      rc.duration_s = cmd.count("--duration") ? setup.duration_s : 0;  // wall seconds; 0 = whole trace
      rc.gpus = cmd.count("--gpus") ? setup.gpus : 1;
      rc.max_output_tokens = f.max_output_tokens;
      rc.vocab_size = int32_t(vocab);
      rc.token_salt = i;  // the first run sends the trace's own ids; later runs share no prefix with it
      runs.push_back(run_endpoint_replay(trace, rc, ep));
      bar.advance(fmt::format("c={} errors={}", concs[i], runs.back().n_errors));
    }
  }
  // Files first: a closed stdout (`| head`) must not lose them.
  const std::vector<std::string> files = reports ? reports->write(runs) : std::vector<std::string>{};
  if (json) {
    fmt::print("{}", runs_json(runs));
    return;
  }
  fmt::print("\n{}", runs_table(runs));
  for (const auto& r : runs)
    if (r.n_errors > 0)
      fmt::print("c={}: {} failed requests, first: {}\n", r.concurrency, r.n_errors, r.first_error);
  fmt::print("wrote");
  for (const auto& p : files) fmt::print(" {}", p);
  fmt::print("\n");
}

}  // namespace ds::cli
