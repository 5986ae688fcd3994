// `deltaserve calibrate`: replays published serving measurements (data/profiles/calibration/) on
// the simulator and prints predicted vs measured; `--fit` re-fits the listed efficiency fields of
// the hardware profile on the "fit" points and prints the values to store in the profile.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "replay/calibration.h"

namespace ds::cli {
namespace {

struct CalibrateArgs {
  std::string points = "kimi-k3-b300-sglang";
  std::string hardware;  // "" = the set's
  bool fit = false;
  bool json = false;
};

void run_calibrate(const CalibrateArgs& a) {
  const CalibrationSet set = load_calibration(a.points);
  HardwareProfile hw = HardwareProfile::load(a.hardware.empty() ? set.hardware : a.hardware);
  if (a.fit) {
    const CalibrationFit fit = fit_calibration(set, hw);
    fmt::print("fitted on the 'fit' points' TTFT and TPOT ({} evaluations, loss {:.5f}):\n", fit.evaluations,
               fit.loss);
    for (const std::string& f : set.fit_params)
      fmt::print("  {:<22} {:.6g} -> {:.6g}\n", f, calibration_field(hw, f), calibration_field(fit.hw, f));
    hw = fit.hw;
  }
  const auto results = replay_calibration(set, hw);
  if (a.json) {
    fmt::print("{}", calibration_json(results));
    return;
  }
  fmt::print("calibration set {} on {}\nsource: {}\n\n{}", set.name, hw.name, set.source,
             calibration_table(results));
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate", "Replay published serving measurements on the simulator: predicted vs measured");
  auto args = std::make_shared<CalibrateArgs>();
  cmd->add_option("--points", args->points, "calibration set name (data/profiles/calibration/) or JSON path")
      ->capture_default_str();
  cmd->add_option("--hardware", args->hardware, "hardware profile (default: the set's)");
  cmd->add_flag("--fit", args->fit, "re-fit the set's listed efficiency fields on its 'fit' points first");
  cmd->add_flag("--json", args->json, "print predicted vs measured as JSON");
  cmd->callback([args] { run_calibrate(*args); });
}

}  // namespace ds::cli
