// Helpers for the trace tests: paths of the bundled data, temp files, and a tiny ustar writer.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace ds::test {

inline std::string bundled(const std::string& file) {
  return std::string(DS_SOURCE_DIR) + "/data/traces/" + file;
}

// A fresh empty directory under the gtest temp dir, named after the running test.
inline std::filesystem::path temp_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(testing::TempDir()) /
                              fmt::format("ds_trace_{}_{}", info->test_suite_name(), info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

inline std::string gzip_bytes(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// ustar archive of (name, contents) regular files.
inline std::string make_tar(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string tar;
  for (const auto& [name, body] : files) {
    std::string h(512, '\0');
    name.copy(h.data(), std::min<size_t>(name.size(), 99));
    std::snprintf(h.data() + 100, 8, "%07o", 0644);
    std::snprintf(h.data() + 108, 8, "%07o", 0);
    std::snprintf(h.data() + 116, 8, "%07o", 0);
    std::snprintf(h.data() + 124, 12, "%011zo", body.size());
    std::snprintf(h.data() + 136, 12, "%011o", 0);
    h[156] = '0';
    std::string(
        "ustar\0"
        "00",
        8)
        .copy(h.data() + 257, 8);
    std::fill(h.begin() + 148, h.begin() + 156, ' ');
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h.data() + 148, 8, "%06o", sum);
    tar += h;
    tar += body;
    tar.append((512 - body.size() % 512) % 512, '\0');
  }
  tar.append(1024, '\0');
  return tar;
}

}  // namespace ds::test
