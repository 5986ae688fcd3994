// Helpers for the model tests: temporary folders, raw safetensors files written byte by byte,
// rewriting a fixture checkpoint with edits, and "throws ds::Error containing ..." checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "model/safetensors.h"

namespace ds::test {

inline std::string golden_dir(const std::string& name) {
  return std::string(DS_TEST_DATA_DIR) + "/golden/" + name;
}

// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ds_model_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_json(const std::string& path, const nlohmann::json& j) {
  write_bytes(path, j.dump(2));
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_bytes(path));
}

// 8-byte LE length + header text + `data_bytes` zero bytes.
inline std::string raw_safetensors(const std::string& header_text, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header_text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char(uint8_t(n >> (8 * i)));
  return out + header_text + std::string(data_bytes, '\0');
}

// Runs `fn`, expects a ds::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected ds::Error containing \"" << *parts.begin() << "\"";
  } catch (const ds::Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line message: " << msg;
  }
}

// One tensor of a rewritten checkpoint (owns its bytes).
struct OwnedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

inline std::vector<OwnedTensor> load_all(const std::string& file) {
  auto f = SafetensorsFile::open(file);
  std::vector<OwnedTensor> out;
  for (const auto& [name, t] : f->tensors())
    out.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)});
  return out;
}

inline void save_all(const std::string& file, const std::vector<OwnedTensor>& ts) {
  std::vector<TensorToWrite> w;
  for (const OwnedTensor& t : ts) w.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
  write_safetensors(file, w);
}

// Copies a fixture folder's config.json and model.safetensors into `dir`, passing the tensors through `edit`.
inline void copy_checkpoint(const std::string& fixture, const std::string& dir,
                            const std::function<void(std::vector<OwnedTensor>&)>& edit) {
  std::vector<OwnedTensor> ts = load_all(golden_dir(fixture) + "/model.safetensors");
  edit(ts);
  save_all(dir + "/model.safetensors", ts);
  write_bytes(dir + "/config.json", read_bytes(golden_dir(fixture) + "/config.json"));
}

}  // namespace ds::test
