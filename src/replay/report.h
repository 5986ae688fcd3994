// Replay reports: terminal tables, one JSON document ({"runs": [...]}), CSV, and the SVG plots
// (hit rate vs concurrency; output tok/s per GPU vs interactivity). Pure formatting of RunMetrics:
// nothing here runs the simulation. Rates are written as fractions in [0, 1] in JSON/CSV and as
// percentages in tables.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "replay/run_metrics.h"

namespace ds {

std::string runs_json(const std::vector<RunMetrics>& runs);   // {"runs": [{...}, ...]}, indented
std::string runs_csv(const std::vector<RunMetrics>& runs);    // header + one line per run
std::string runs_table(const std::vector<RunMetrics>& runs);  // one row per run, every metric
// Compact comparison: one row per concurrency, one column group per config label.
std::string runs_side_by_side(const std::vector<RunMetrics>& runs);

std::string hit_rate_plot_svg(const std::vector<RunMetrics>& runs);          // x: concurrency (log2)
std::string throughput_plot_svg(const std::vector<RunMetrics>& runs);        // x: interactivity
std::string ttft_throughput_plot_svg(const std::vector<RunMetrics>& runs);   // TTFT p50 vs out tok/s/GPU
std::string checkpoint_bytes_plot_svg(const std::vector<RunMetrics>& runs);  // bytes per hit token vs conc

// The report files of a replay (replay.json, replay.csv, hit_rate.svg, throughput.svg,
// ttft_throughput.svg, checkpoint_bytes.svg under one folder), opened before the work: the constructor
// creates the folder and a temporary beside each file, so an unwritable location fails before the sweep runs.
// write() replaces every file atomically (core/file_io.h); files of a run that never reaches write() are not
// touched.
class ReportFiles {
 public:
  explicit ReportFiles(const std::string& dir);  // throws ds::Error naming the folder and errno
  // Writes and publishes all six; returns their paths. Call once.
  std::vector<std::string> write(const std::vector<RunMetrics>& runs);

 private:
  std::string dir_;
  std::vector<std::unique_ptr<AtomicFile>> files_;  // in the order of kReportFileNames
};

// ReportFiles(dir).write(runs): for callers that have nothing to check before the work.
std::vector<std::string> write_reports(const std::vector<RunMetrics>& runs, const std::string& dir);

}  // namespace ds
