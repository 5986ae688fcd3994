#include "runner/logits_job.h"

#include <cctype>
#include <charconv>

#include "core/check.h"
#include "core/file_io.h"
#include "kernels/argmax.h"
#include "model/safetensors.h"

namespace ds {

LogitsJobResult run_logits_job(const ModelRunner& runner, const std::vector<int32_t>& tokens, int n_decode) {
  DS_CHECK(!tokens.empty(), "logits: the prompt has no tokens");
  DS_CHECK(n_decode >= 0, "logits: the number of decode steps must be >= 0, got {}", n_decode);
  LogitsJobResult r;
  r.vocab = runner.config().vocab_size;
  SequenceState st = runner.new_sequence();
  // One greedy loop: feed the prompt (all logits), then each argmax back (one row per step).
  std::vector<int32_t> feed = tokens;
  for (int j = 0; j <= n_decode; ++j) {
    ForwardBatch b;
    b.seqs.push_back({feed, &st, j == 0 ? LogitsWant::All : LogitsWant::Last, {}});
    std::vector<float> l = std::move(runner.forward(b).logits[0]);
    if (j == 0)
      r.logits = std::move(l);
    else
      r.decode_logits.insert(r.decode_logits.end(), l.begin(), l.end());
    if (j == n_decode) break;
    const float* last = j == 0 ? r.logits.data() + (int64_t(tokens.size()) - 1) * r.vocab
                               : r.decode_logits.data() + (j - 1) * r.vocab;
    r.decode_tokens.push_back(int32_t(argmax(f32_vec(last, r.vocab))));
    feed.assign(1, r.decode_tokens.back());
  }
  return r;
}

void write_logits_job(const std::string& path, const LogitsJobResult& r) {
  AtomicFile out(path);
  write_logits_job(out, r);
}

void write_logits_job(AtomicFile& file, const LogitsJobResult& r) {
  const int64_t T = int64_t(r.logits.size()) / r.vocab, N = int64_t(r.decode_tokens.size());
  std::vector<TensorToWrite> out;
  out.push_back({"logits", DType::F32, {T, r.vocab}, r.logits.data()});
  if (N > 0) {
    out.push_back({"decode_tokens", DType::I32, {N}, r.decode_tokens.data()});
    out.push_back({"decode_logits", DType::F32, {N, r.vocab}, r.decode_logits.data()});
  }
  write_safetensors(file, out);
}

std::vector<int32_t> parse_token_list(const std::string& text, const std::string& source) {
  std::vector<int32_t> ids;
  size_t i = 0, line = 1;
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == ',' || std::isspace(static_cast<unsigned char>(ch))) {
      line += ch == '\n';
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && text[j] != ',' && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    const std::string word = text.substr(i, j - i);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || ptr != word.data() + word.size() || v < 0 || v > INT32_MAX)
      fail("{}: line {}: `{}` is not a token id (a non-negative integer)", source, line, word);
    ids.push_back(int32_t(v));
    i = j;
  }
  DS_CHECK(!ids.empty(), "{}: no token ids", source);
  return ids;
}

std::vector<int32_t> read_token_file(const std::string& path) {
  return parse_token_list(read_file_capped(path, kMaxTokenFileBytes, "token file"), path);
}

}  // namespace ds
