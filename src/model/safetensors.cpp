#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/check.h"
#include "core/file_io.h"

namespace ds {

namespace {

using nlohmann::json;

// A JSON value for an error message, cut to one short line.
std::string brief(const json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `path` read-only into `f`; returns its size. Throws naming the file when it cannot be
// opened or stat'ed, is not a regular file, or is too short for the 8-byte header length.
size_t open_safetensors_file(const std::string& path, Fd& f) {
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) {
    const int err = errno;
    std::error_code ec;
    if (std::filesystem::is_symlink(path, ec) && !std::filesystem::exists(path, ec))
      fail("{} is a dangling symbolic link (to {})", path, std::filesystem::read_symlink(path, ec).string());
    fail("cannot open {}: {}", path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail("cannot stat {}: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("{} is not a regular file", path);
  const size_t size = size_t(st.st_size);
  if (size < 8) fail("{}: file is {} bytes, too short for the 8-byte header length", path, size);
  return size;
}

// Reads `n` bytes at `offset`; throws naming the file on short reads.
void pread_all(int fd, uint8_t* dst, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, dst, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      fail("{}: read failed at byte {}: {}", path, offset, got < 0 ? std::strerror(errno) : "EOF");
    dst += got;
    n -= size_t(got);
    offset += uint64_t(got);
  }
}

}  // namespace

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorRef::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open_header(const std::string& path) {
  Fd f;
  const size_t size = open_safetensors_file(path, f);
  uint8_t len_bytes[8];
  pread_all(f.fd, len_bytes, 8, 0, path);
  const uint64_t n = SafetensorsHeader::read_length(len_bytes);
  if (n > SafetensorsHeader::kMaxHeaderBytes)
    fail("{}: header length {} exceeds the {} byte limit", path, n, SafetensorsHeader::kMaxHeaderBytes);
  if (n > size - 8) fail("{}: header length {} runs past the end of the {} byte file", path, n, size);
  std::vector<uint8_t> head(size_t(8 + n));
  pread_all(f.fd, head.data(), head.size(), 0, path);
  SafetensorsHeader h = SafetensorsHeader::parse(head, size, path);
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->tensors_ = std::move(h.tensors);
  file->metadata_ = std::move(h.metadata);
  return file;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path, WeightMemory memory) {
  Fd f;
  const size_t size = open_safetensors_file(path, f);
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  if (memory == WeightMemory::HugePageCopy) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = (size + kHuge - 1) / kHuge * kHuge;
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) fail("cannot allocate {} bytes for {}: {}", bytes, path, std::strerror(errno));
    file->map_ = mem;  // unmapped by ~file from here on
    file->map_bytes_ = bytes;
    ::madvise(mem, bytes, MADV_HUGEPAGE);  // advice only: without THP the copy still works
    pread_all(f.fd, static_cast<uint8_t*>(mem), size, 0, path);
  } else {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (map == MAP_FAILED) fail("cannot mmap {} ({} bytes): {}", path, size, std::strerror(errno));
    file->map_ = map;
    file->map_bytes_ = size;
  }
  const auto* base = static_cast<const uint8_t*>(file->map_);
  SafetensorsHeader h = SafetensorsHeader::parse({base, size}, size, path);  // on throw, ~file unmaps
  for (auto& [name, t] : h.tensors) t.data = base + h.data_start + h.offset.at(name);
  file->tensors_ = std::move(h.tensors);
  file->metadata_ = std::move(h.metadata);
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_bytes_);
}

const TensorRef* SafetensorsFile::find(std::string_view name) const {
  auto it = tensors_.find(std::string(name));
  return it == tensors_.end() ? nullptr : &it->second;
}

// ---- WeightFiles ----------------------------------------------------------------------------

namespace {

// Shard file names listed by model.safetensors.index.json, each checked to be a plain file name.
std::map<std::string, std::vector<std::string>> read_index(const std::string& index_path) {
  const std::string text = read_file_capped(index_path, kMaxConfigFileBytes, "safetensors index");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: invalid JSON: {}", index_path, e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object())
    fail("{}: missing object `weight_map`", index_path);
  std::map<std::string, std::vector<std::string>> by_file;
  for (const auto& [name, file] : j.at("weight_map").items()) {
    if (!file.is_string())
      fail("{}: weight_map[`{}`] must be a file name, got {}", index_path, name, brief(file));
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." ||
        f == "..")
      fail("{}: weight_map[`{}`] = \"{}\" is not a plain file name in the checkpoint folder", index_path,
           name, f);
    by_file[f].push_back(name);
  }
  if (by_file.empty()) fail("{}: `weight_map` is empty", index_path);
  return by_file;
}

}  // namespace

WeightFiles WeightFiles::open(const std::string& dir, const std::string& prefix, bool header_only,
                              WeightMemory memory) {
  namespace fs = std::filesystem;
  auto open_file = [&](const std::string& p) -> std::shared_ptr<SafetensorsFile> {
    return header_only ? SafetensorsFile::open_header(p) : SafetensorsFile::open(p, memory);
  };
  WeightFiles ck;
  std::error_code ec;
  // exists(symlink_status): a dangling link is found here and reported by the open that follows.
  auto present = [&](const fs::path& p) { return fs::exists(fs::symlink_status(p, ec)); };
  if (!fs::is_directory(dir, ec)) {
    if (!present(dir)) fail("checkpoint {} does not exist", dir);
    ck.files_.push_back(open_file(dir));
  } else if (const fs::path index = fs::path(dir) / "model.safetensors.index.json"; present(index)) {
    for (const auto& [file, names] : read_index(index.string())) {
      auto f = open_file((fs::path(dir) / file).string());
      for (const std::string& n : names) {
        if (!f->find(n))
          fail("{}: tensor `{}` is listed in the index but absent from {}", index.string(), n, file);
      }
      ck.files_.push_back(std::move(f));
    }
  } else if (const fs::path single = fs::path(dir) / "model.safetensors"; present(single)) {
    ck.files_.push_back(open_file(single.string()));
  } else {
    fail("checkpoint folder {} has neither model.safetensors nor model.safetensors.index.json", dir);
  }
  for (const auto& f : ck.files_) {
    for (const auto& [full, t] : f->tensors()) {
      const bool has_prefix = !prefix.empty() && full.starts_with(prefix);
      const std::string name = has_prefix ? full.substr(prefix.size()) : full;
      auto [it, inserted] = ck.by_name_.emplace(name, Entry{&t});
      if (!inserted)
        fail("checkpoint {}: tensor `{}` appears twice ({} and {})", dir, name, it->second.tensor->name,
             full);
      if (!prefix.empty() && !has_prefix) ck.unprefixed_.insert(name);
    }
  }
  return ck;
}

const TensorRef* WeightFiles::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.tensor;
}

const TensorRef& WeightFiles::require(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) fail("checkpoint: missing tensor `{}`", name);
  it->second.used = true;
  return *it->second.tensor;
}

const TensorRef& WeightFiles::get(std::string_view name, const std::vector<int64_t>& expected_shape) const {
  TensorRef want;
  want.shape = expected_shape;
  auto it = by_name_.find(name);
  if (it == by_name_.end())
    fail("checkpoint: missing tensor `{}` (expected shape {})", name, want.shape_str());
  const TensorRef& t = *it->second.tensor;
  if (t.shape != expected_shape)
    fail("checkpoint: tensor `{}` has shape {}, expected {}", name, t.shape_str(), want.shape_str());
  it->second.used = true;
  return t;
}

std::vector<std::string> WeightFiles::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : by_name_) out.push_back(n);
  return out;
}

std::vector<std::string> WeightFiles::unused_names() const {
  std::vector<std::string> out;
  for (const auto& [n, e] : by_name_) {
    if (!e.used) out.push_back(n);
  }
  return out;
}

// ---- conversion and writing -----------------------------------------------------------------

void tensor_to_f32(const TensorRef& t, std::span<float> out) {
  if (int64_t(out.size()) != t.numel())
    fail("tensor `{}`: {} elements, output buffer holds {}", t.name, t.numel(), out.size());
  if (!t.data && t.numel() > 0) fail("tensor `{}`: no data (opened header-only)", t.name);
  const size_t n = out.size();
  switch (t.dtype) {
    case DType::F32:
      if (n) std::memcpy(out.data(), t.data, n * 4);
      return;
    case DType::BF16:
    case DType::F16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = t.dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
      return;
    default:
      fail("tensor `{}`: dtype {} is not a float type (expected BF16, F16 or F32)", t.name,
           dtype_name(t.dtype));
  }
}

std::vector<float> tensor_to_f32(const TensorRef& t) {
  std::vector<float> out(size_t(std::max<int64_t>(t.numel(), 0)));
  tensor_to_f32(t, out);
  return out;
}

void write_safetensors(AtomicFile& out, const std::vector<TensorToWrite>& tensors) {
  const std::string& path = out.path();
  json header = json::object();
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      DS_CHECK(d >= 0, "write_safetensors {}: tensor `{}` has negative dimension {}", path, t.name, d);
      numel *= d;
    }
    const uint64_t bytes = uint64_t(numel) * dtype_size(t.dtype);
    DS_CHECK(bytes == 0 || t.data != nullptr, "write_safetensors {}: tensor `{}` has no data", path, t.name);
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - (text.size() % 8)) % 8, ' ');  // data area starts 8-byte aligned
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  out.write(len, 8);
  out.write(text);
  for (const TensorToWrite& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    out.write(t.data, size_t(numel) * dtype_size(t.dtype));
  }
  out.commit();
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors) {
  AtomicFile out(path);
  write_safetensors(out, tensors);
}

}  // namespace ds
