// Calibration of a hardware profile's efficiencies against published serving measurements, kept
// as data (data/calibration/<name>.json: deployments, measured points, their sources, and which
// points are fitted, held out or only checked). Each point is a fixed-length random benchmark
// replayed through the real scheduler on the simulated executor (bench harness), so calibration
// exercises the same code as every other replay. `fit_calibration` adjusts the listed efficiency
// fields on the "fit" points' TTFT and TPOT only (coordinate-wise golden-section search on the sum
// of squared log errors); held-out and check points are never seen by the fit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "plan/hardware_profile.h"
#include "replay/replay_setup.h"

namespace ds {

struct CalibrationPoint {
  std::string id;
  std::string role;                        // "fit" | "held_out" | "check"
  std::string trace;                       // random:input=...,output=...,n=...
  ReplaySetup setup;                       // one concurrency, one cache variant, bench harness
  std::map<std::string, double> measured;  // ttft_p50_s, tpot_p50_s, total_tok_s_per_gpu
};

struct CalibrationSet {
  std::string name, source, hardware;
  std::vector<std::string> fit_params;  // HardwareProfile fields the fit may change
  std::vector<CalibrationPoint> points;
};

// A bundled name (data/calibration/<name>.json) or a path. Throws ds::Error naming the file and
// key on bad input.
CalibrationSet load_calibration(const std::string& name_or_path);

struct CalibrationResult {
  std::string id, role;
  std::map<std::string, double> measured, predicted;
  double error(const std::string& metric) const;  // predicted / measured - 1
};

// Replays every point on `hw`.
std::vector<CalibrationResult> replay_calibration(const CalibrationSet& set, const HardwareProfile& hw);

struct CalibrationFit {
  HardwareProfile hw;  // `start` with the fitted fields replaced
  double loss = 0;     // sum of squared log errors over the fit points' TTFT and TPOT
  int evaluations = 0;
};
CalibrationFit fit_calibration(const CalibrationSet& set, const HardwareProfile& start);
// The value of a fittable field (as listed in CalibrationSet::fit_params) of `hw`.
double calibration_field(const HardwareProfile& hw, const std::string& name);

// Human table (id, role, metric, measured, predicted, error %) and a JSON document.
std::string calibration_table(const std::vector<CalibrationResult>& results);
std::string calibration_json(const std::vector<CalibrationResult>& results);

}  // namespace ds
