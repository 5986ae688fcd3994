// `deltaserve serve --model DIR`: the OpenAI-compatible HTTP server over a checkpoint folder on the
// model executor of --device (ModelExecutor on the CPU, GpuExecutor on one GPU). Startup reads the
// weights with a progress bar, prints the memory plan (KV pages, live state slots, checkpoint slots
// per tier), then serves until SIGINT/SIGTERM, which drains the in-flight requests and exits 0.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "commands.h"
#include "core/check.h"
#include "engine/clock.h"
#include "engine_flags.h"
#include "model/model_config.h"
#include "replay/progress_bar.h"
#include "server/http_server.h"
#include "server/serving_engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_files.h"

namespace ds::cli {
namespace {

struct ServeFlags {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string served_model_name;  // "" = the folder's name
  int64_t max_model_len = 0;      // 0 = the config's max_position_embeddings (or the KV budget)
  int http_threads = 128;
  EngineFlags engine;
};

// Reads every weight file once with a progress bar, so that loading shows progress and the pages
// are resident before the runner binds them.
void read_weights_with_progress(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  int64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".safetensors" &&
        e.path().filename() != "golden.safetensors") {
      files.push_back(e.path());
      total += int64_t(e.file_size());
    }
  constexpr int64_t kChunk = 16 << 20;
  ProgressBar bar(std::max<int64_t>(1, (total + kChunk - 1) / kChunk), "loading weights");
  std::vector<char> buf(static_cast<size_t>(kChunk));
  for (const auto& p : files) {
    std::ifstream in(p, std::ios::binary);
    DS_CHECK(in.good(), "cannot read {}", p.string());
    while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0)
      bar.advance(p.filename().string());
  }
}

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / double(1ull << 30));
}

void print_memory_plan(const EngineConfig& c, int64_t max_running) {
  const CacheModelSizes& s = c.cache.sizes;
  fmt::print("memory plan (page {} tokens; KV {} B/token; KDA live state {} B; checkpoint {} B):\n",
             c.cache.page_tokens, s.kv_bytes_per_token, s.live_state_bytes, s.checkpoint_bytes);
  for (const CacheTier& t : c.cache.tiers) {
    const int64_t page_bytes = s.kv_bytes_per_token * c.cache.page_tokens;
    const int64_t live = t.name == c.cache.tiers.front().name ? max_running * s.live_state_bytes : 0;
    fmt::print("  {:<5} {}: up to {} KV pages ({} tokens) or {} checkpoint slots; {} live state slots ({})\n",
               t.name, gib(double(t.capacity_bytes)), t.capacity_bytes / std::max<int64_t>(1, page_bytes),
               t.capacity_bytes / std::max<int64_t>(1, s.kv_bytes_per_token),
               t.capacity_bytes / std::max<int64_t>(1, s.checkpoint_bytes), live ? max_running : 0,
               gib(double(live)));
  }
}

void run(const ServeFlags& f) {
  DS_CHECK(f.port >= 0 && f.port < 65536, "--port must be in [0, 65535], got {}", f.port);
  DS_CHECK(f.http_threads >= 1 && f.http_threads <= 4096, "--http-threads must be in [1, 4096], got {}",
           f.http_threads);
  DS_CHECK(f.max_model_len >= 0, "--max-model-len must be >= 0, got {}", f.max_model_len);
  // Signals are taken by sigwait() below: block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const ModelConfig mc = ModelConfig::load(f.model);
  tok::LoadedTokenizer lt;
  std::optional<tok::ChatTemplate> chat;
  ServerConfig sc;
  if (tok::has_tokenizer_files(f.model)) {
    lt = tok::load_tokenizer_dir(f.model, mc.vocab_size);
    chat = tok::ChatTemplate::make(*lt.tokenizer, lt.config, &sc.no_chat_reason);
  } else {
    sc.no_tokenizer_reason = fmt::format("{} has no {}", f.model, tok::kTiktokenFile);
    sc.no_chat_reason = sc.no_tokenizer_reason;
  }
  if (!f.engine.device.on_cuda()) read_weights_with_progress(f.model);  // the GPU upload has its own bar
  ModelBackend backend = load_model_backend(f.model, f.engine);
  const EngineConfig ec = model_engine_config(backend.sizes, f.engine);
  print_memory_plan(ec, f.engine.max_running);

  sc.model_name =
      f.served_model_name.empty() ? std::filesystem::path(f.model).filename().string() : f.served_model_name;
  if (sc.model_name.empty()) sc.model_name = std::filesystem::path(f.model).parent_path().filename().string();
  sc.vocab_size = int32_t(mc.vocab_size);
  const CacheModelSizes& s = ec.cache.sizes;
  sc.max_request_tokens = (ec.cache.tiers.front().capacity_bytes - s.live_state_bytes) /
                          std::max<int64_t>(1, s.kv_bytes_per_token);
  sc.max_model_len = f.max_model_len > 0          ? f.max_model_len
                     : mc.max_position_tokens > 0 ? std::min(mc.max_position_tokens, sc.max_request_tokens)
                                                  : sc.max_request_tokens;
  if (mc.eos_token_id >= 0) sc.eos_token_ids.push_back(mc.eos_token_id);
  if (lt.tokenizer) {
    if (auto id = lt.tokenizer->special_id(lt.config.eos_token)) sc.eos_token_ids.push_back(*id);
    if (chat) sc.eos_token_ids.push_back(chat->end_id());
  }
  std::sort(sc.eos_token_ids.begin(), sc.eos_token_ids.end());
  sc.eos_token_ids.erase(std::unique(sc.eos_token_ids.begin(), sc.eos_token_ids.end()),
                         sc.eos_token_ids.end());
  sc.http_threads = f.http_threads;

  WallClock clock;
  ServingEngine engine(ec, *backend.exec, clock);
  OpenAiServer server(sc, engine, lt.tokenizer.get(), chat ? &*chat : nullptr);
  const int port = server.bind(f.host, f.port);
  fmt::print("model {} | vocab {} | max_model_len {} | tokenizer: {} | chat: {}\n", sc.model_name,
             sc.vocab_size, sc.max_model_len, lt.tokenizer ? "yes" : sc.no_tokenizer_reason,
             chat ? "yes" : sc.no_chat_reason);
  fmt::print(
      "serving on http://{}:{}  (POST /v1/completions, /v1/chat/completions; GET /v1/models, /health, "
      "/metrics)\n",
      f.host, port);
  std::fflush(stdout);
  std::thread http([&] { server.run(); });
  int sig = 0;
  sigwait(&sigs, &sig);
  fmt::print("{}: draining {} in-flight requests\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
             engine.n_in_flight());
  std::fflush(stdout);
  server.begin_drain();
  engine.wait_idle();
  if (!server.wait_responses_written(30))
    fmt::print("some clients did not read their responses within 30 s\n");
  server.stop();
  http.join();
  engine.stop();
  fmt::print("stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* cmd = app.add_subcommand(
      "serve", "OpenAI-compatible HTTP server over a checkpoint folder (--device cpu|cuda)");
  cmd->add_option("--model", f->model,
                  "Hugging Face checkpoint folder (config.json, *.safetensors, tiktoken.model)")
      ->required();
  cmd->add_option("--host", f->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f->port, "port (0 = any free port, printed at start)")->capture_default_str();
  cmd->add_option("--served-model-name", f->served_model_name,
                  "model id in the API (default: the folder name)");
  cmd->add_option("--max-model-len", f->max_model_len,
                  "prompt + output tokens per request (default: the config's, capped by the KV budget)");
  cmd->add_option("--http-threads", f->http_threads, "connections served at once")->capture_default_str();
  add_engine_flags(*cmd, f->engine);
  cmd->callback([f] { run(*f); });
}

}  // namespace ds::cli
