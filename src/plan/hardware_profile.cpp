#include "plan/hardware_profile.h"

#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "core/file_io.h"

namespace ds {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct NumberField {
  const char* key;
  double HardwareProfile::*member;
  bool must_be_positive;  // divided by somewhere
  bool is_fraction;       // in (0, 1]
};

constexpr NumberField kFields[] = {
    {"hbm_bytes", &HardwareProfile::hbm_bytes, true, false},
    {"hbm_bw_bytes_s", &HardwareProfile::hbm_bw_bytes_s, true, false},
    {"bf16_flops", &HardwareProfile::bf16_flops, true, false},
    {"fp8_flops", &HardwareProfile::fp8_flops, true, false},
    {"fp4_flops", &HardwareProfile::fp4_flops, false, false},
    {"nvlink_bw_bytes_s", &HardwareProfile::nvlink_bw_bytes_s, true, false},
    {"scaleout_bw_bytes_s", &HardwareProfile::scaleout_bw_bytes_s, false, false},
    {"host_dram_bytes", &HardwareProfile::host_dram_bytes, false, false},
    {"host_dram_bw_bytes_s", &HardwareProfile::host_dram_bw_bytes_s, false, false},
    {"host_link_bw_bytes_s", &HardwareProfile::host_link_bw_bytes_s, true, false},
    {"gemm_efficiency", &HardwareProfile::gemm_efficiency, true, true},
    {"attention_efficiency", &HardwareProfile::attention_efficiency, true, true},
    {"memory_efficiency", &HardwareProfile::memory_efficiency, true, true},
    {"comm_efficiency", &HardwareProfile::comm_efficiency, true, true},
    {"host_link_efficiency", &HardwareProfile::host_link_efficiency, true, true},
    {"comm_latency_s", &HardwareProfile::comm_latency_s, false, false},
    {"runtime_reserve_bytes", &HardwareProfile::runtime_reserve_bytes, false, false},
    {"step_overhead_s", &HardwareProfile::step_overhead_s, false, false},
    {"gpu_hour_usd", &HardwareProfile::gpu_hour_usd, false, false},
};

// Folders that may hold the bundled `profiles/` tree, most specific first.
std::vector<fs::path> data_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("DS_DATA_DIR"); env && *env) dirs.emplace_back(env);
  std::error_code ec;
#ifdef DS_BUNDLED_DATA_DIR
  dirs.emplace_back(DS_BUNDLED_DATA_DIR);  // the source tree's data/ folder, fixed at configure time
#endif
  std::vector<fs::path> starts;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  const fs::path cwd = fs::current_path(ec);
  if (!ec) starts.push_back(cwd);
  for (fs::path dir : starts) {
    for (int up = 0; up < 6 && !dir.empty(); ++up) {
      if (fs::is_directory(dir / "data" / "profiles", ec)) dirs.push_back(dir / "data");
      if (dir == dir.parent_path()) break;
      dir = dir.parent_path();
    }
  }
  return dirs;
}

}  // namespace

json read_json_file(const std::string& path) {
  const std::string text = read_file_capped(path, kMaxConfigFileBytes, "JSON file");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    if (!path.ends_with(".json"))
      fail("{} is not a JSON file (a profile name, a .json file or a folder with config.json)", path);
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

std::string resolve_profile(const std::string& kind, const std::string& name_or_path) {
  const std::string what = kind == "models" ? "model" : kind;
  DS_CHECK(!name_or_path.empty(), "empty {} profile name", what);
  std::error_code ec;
  if (fs::exists(name_or_path, ec)) return name_or_path;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  std::set<std::string> bundled;
  for (const fs::path& data : data_dirs()) {
    const fs::path dir = data / "profiles" / kind;
    for (const fs::path& cand : {dir / (name_or_path + ".json"), dir / name_or_path / "config.json"}) {
      if (!looks_like_path && fs::is_regular_file(cand, ec)) return cand.string();
    }
    if (bundled.empty() && fs::is_directory(dir, ec)) {
      for (const auto& e : fs::directory_iterator(dir, ec)) bundled.insert(e.path().stem().string());
    }
  }
  if (looks_like_path) fail("{} profile file {} does not exist", what, name_or_path);
  if (bundled.empty())
    fail("unknown {} profile \"{}\" (no bundled data/profiles/{} folder found; set DS_DATA_DIR)", what,
         name_or_path, kind);
  fail("unknown {} profile \"{}\" (bundled: {}; or give a path)", what, name_or_path,
       fmt::join(bundled, ", "));
}

double HardwareProfile::peak_flops(int bits) const {
  if (bits <= 4 && fp4_flops > 0) return fp4_flops;
  if (bits <= 8) return fp8_flops;
  return bf16_flops;
}

HardwareProfile HardwareProfile::from_json(const json& j, const std::string& src) {
  if (!j.is_object()) fail("{}: hardware profile must be a JSON object", src);
  HardwareProfile hw;
  for (const auto& [key, value] : j.items()) {
    bool known = key == "name" || key == "description" || key == "sources";
    for (const NumberField& f : kFields) known = known || key == f.key;
    if (!known) fail("{}: unknown key `{}` in hardware profile", src, key);
  }
  auto str = [&](const char* key) {
    if (!j.contains(key)) fail("{}: missing key `{}`", src, key);
    if (!j.at(key).is_string()) fail("{}: key `{}` must be a string, got {}", src, key, j.at(key).dump());
    return j.at(key).get<std::string>();
  };
  hw.name = str("name");
  hw.description = j.contains("description") ? str("description") : hw.name;
  for (const NumberField& f : kFields) {
    if (!j.contains(f.key)) fail("{}: missing key `{}`", src, f.key);
    const json& v = j.at(f.key);
    if (!v.is_number()) fail("{}: key `{}` must be a number, got {}", src, f.key, v.dump());
    hw.*f.member = v.get<double>();
  }
  if (!j.contains("sources") || !j.at("sources").is_object())
    fail("{}: missing object `sources` (one entry per number saying where it comes from)", src);
  for (const auto& [key, value] : j.at("sources").items()) {
    if (!value.is_string()) fail("{}: `sources.{}` must be a string, got {}", src, key, value.dump());
    hw.sources[key] = value.get<std::string>();
  }
  hw.validate(src);
  return hw;
}

void HardwareProfile::validate(const std::string& src) const {
  if (name.empty()) fail("{}: `name` is empty", src);
  for (const NumberField& f : kFields) {
    const double v = this->*f.member;
    if (!std::isfinite(v) || v < 0) fail("{}: `{}` must be finite and >= 0, got {}", src, f.key, v);
    if (f.must_be_positive && !(v > 0)) fail("{}: `{}` must be positive, got {}", src, f.key, v);
    if (f.is_fraction && v > 1) fail("{}: `{}` is an efficiency in (0, 1], got {}", src, f.key, v);
    if (!sources.contains(f.key))
      fail("{}: `sources.{}` is missing (every number needs a source)", src, f.key);
  }
  if (runtime_reserve_bytes >= hbm_bytes)
    fail("{}: `runtime_reserve_bytes` {} is not below `hbm_bytes` {}", src, runtime_reserve_bytes, hbm_bytes);
}

HardwareProfile HardwareProfile::load(const std::string& name_or_path) {
  const std::string path = resolve_profile("hardware", name_or_path);
  return from_json(read_json_file(path), path);
}

}  // namespace ds
