#include "trace/trace_files.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxDecompressedBytes = size_t{2} << 30;
constexpr size_t kTarBlock = 512;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_trace_name(std::string_view name) {
  std::string_view base = strip_gz(name);
  return ends_with(base, ".json") || ends_with(base, ".jsonl");
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path.string());
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("{}: read error", path.string());
  return data;
}

// Parses an octal tar header field (NUL/space padded).
uint64_t tar_octal(std::string_view field, const std::string& where) {
  uint64_t v = 0;
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  bool any = false;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v > (uint64_t{1} << 60)) fail("{}: tar size field overflows", where);
    v = v * 8 + static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < field.size(); ++i)
    if (field[i] != ' ' && field[i] != '\0') fail("{}: bad octal field in tar header", where);
  if (!any) fail("{}: empty octal field in tar header", where);
  return v;
}

std::string_view c_field(std::string_view block, size_t off, size_t len) {
  std::string_view f = block.substr(off, len);
  return f.substr(0, std::min(f.find('\0'), f.size()));
}

// Value of the "path" record of a PAX extended header body ("<len> path=<value>\n" records).
std::string pax_path(std::string_view body) {
  size_t p = 0;
  while (p < body.size()) {
    size_t sp = body.find(' ', p);
    if (sp == std::string_view::npos) break;
    size_t len = 0;
    for (size_t i = p; i < sp; ++i) {
      if (body[i] < '0' || body[i] > '9') return {};
      len = len * 10 + static_cast<size_t>(body[i] - '0');
      if (len > body.size()) return {};
    }
    if (len == 0 || p + len > body.size()) return {};
    std::string_view rec = body.substr(sp + 1, p + len - sp - 1);
    if (rec.substr(0, 5) == "path=") return std::string(rec.substr(5, rec.size() - 6));
    p += len;
  }
  return {};
}

void read_tar(std::string_view tar, const std::string& archive, std::vector<TraceFile>& out) {
  size_t off = 0;
  std::string long_name;
  for (int64_t entry = 0;; ++entry) {
    std::string where = fmt::format("{}: tar entry {}", archive, entry);
    if (off + kTarBlock > tar.size()) fail("{}: archive truncated (no end marker)", where);
    std::string_view hdr = tar.substr(off, kTarBlock);
    if (hdr.find_first_not_of('\0') == std::string_view::npos) return;  // end-of-archive block
    uint64_t sum = 0;
    for (size_t i = 0; i < kTarBlock; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(hdr[i]);
    if (sum != tar_octal(hdr.substr(148, 8), where)) fail("{}: header checksum mismatch", where);
    uint64_t size = tar_octal(hdr.substr(124, 12), where);
    off += kTarBlock;
    if (size > tar.size() - off) fail("{}: entry size {} runs past the end of the archive", where, size);
    std::string_view body = tar.substr(off, size);
    off += (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    char type = hdr[156];
    if (type == 'L') {  // GNU long name for the next entry
      long_name = std::string(body.substr(0, std::min(body.find('\0'), body.size())));
      continue;
    }
    if (type == 'x') {  // PAX header for the next entry
      long_name = pax_path(body);
      continue;
    }
    std::string name = std::move(long_name);
    long_name.clear();
    if (name.empty()) {
      std::string_view prefix = c_field(hdr, 345, 155);
      name = std::string(c_field(hdr, 0, 100));
      if (hdr.substr(257, 5) == "ustar" && !prefix.empty()) name = std::string(prefix) + "/" + name;
    }
    if ((type == '0' || type == '\0') && is_trace_name(name)) {
      std::string member = fmt::format("{}[{}]", archive, name);
      std::string text = is_gzip(body) ? gunzip(body, member) : std::string(body);
      out.push_back({std::move(member), std::move(text)});
    }
  }
}

}  // namespace

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string_view strip_gz(std::string_view name) {
  return ends_with(name, ".gz") ? name.substr(0, name.size() - 3) : name;
}

std::string gunzip(std::string_view data, const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) fail("{}: zlib init failed", name);
  auto fail_with = [&](std::string msg) {
    inflateEnd(&zs);
    throw Error(fmt::format("{}: {}", name, msg));
  };
  std::string out(std::max<size_t>(data.size() * 4, 1 << 16), '\0');
  size_t produced = 0;  // inflateReset (between gzip members) zeroes total_out, so count here
  size_t fed = 0;
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= kMaxDecompressedBytes)
        fail_with(fmt::format("decompresses to more than {} bytes", kMaxDecompressedBytes));
      out.resize(std::min(out.size() * 2, kMaxDecompressedBytes));
    }
    if (zs.avail_in == 0 && fed < data.size()) {
      size_t n = std::min<size_t>(data.size() - fed, UINT32_MAX);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + fed));
      zs.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    uInt room = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT32_MAX));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = room;
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0 && fed == data.size()) break;
      if (inflateReset(&zs) != Z_OK) fail_with("zlib reset failed");
      continue;  // concatenated gzip members
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      fail_with(fmt::format("corrupt compressed data ({})", zs.msg ? zs.msg : "unknown error"));
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && fed == data.size())
      fail_with("compressed data is truncated");
  }
  inflateEnd(&zs);
  out.resize(produced);
  return out;
}

std::vector<TraceFile> read_trace_files(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail("{}: no such file or directory", path);
  std::vector<TraceFile> out;
  if (fs::is_directory(st)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(path, ec))
      if (e.is_regular_file() && is_trace_name(e.path().filename().string())) files.push_back(e.path());
    if (ec) fail("{}: cannot list directory ({})", path, ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string data = read_file(f);
      std::string name = f.string();
      out.push_back({name, is_gzip(data) ? gunzip(data, name) : std::move(data)});
    }
    if (out.empty()) fail("{}: directory holds no .json / .jsonl trace files", path);
    return out;
  }
  std::string data = read_file(path);
  std::string_view base = strip_gz(path);
  if (ends_with(path, ".tgz") || ends_with(base, ".tar")) {
    std::string tar = is_gzip(data) ? gunzip(data, path) : std::move(data);
    read_tar(tar, path, out);
    std::sort(out.begin(), out.end(), [](const TraceFile& a, const TraceFile& b) { return a.name < b.name; });
    if (out.empty()) fail("{}: archive holds no .json / .jsonl trace files", path);
    return out;
  }
  out.push_back({path, is_gzip(data) ? gunzip(data, path) : std::move(data)});
  return out;
}

}  // namespace ds
