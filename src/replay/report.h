// Replay reports: terminal tables, one JSON document ({"runs": [...]}), CSV, and the SVG plots
// (hit rate vs concurrency; output tok/s per GPU vs interactivity). Pure formatting of RunMetrics:
// nothing here runs the simulation. Rates are written as fractions in [0, 1] in JSON/CSV and as
// percentages in tables.
#pragma once

#include <string>
#include <vector>

#include "replay/run_metrics.h"

namespace ds {

std::string runs_json(const std::vector<RunMetrics>& runs);   // {"runs": [{...}, ...]}, indented
std::string runs_csv(const std::vector<RunMetrics>& runs);    // header + one line per run
std::string runs_table(const std::vector<RunMetrics>& runs);  // one row per run, every metric
// Compact comparison: one row per concurrency, one column group per config label.
std::string runs_side_by_side(const std::vector<RunMetrics>& runs);

std::string hit_rate_plot_svg(const std::vector<RunMetrics>& runs);    // x: concurrency (log2)
std::string throughput_plot_svg(const std::vector<RunMetrics>& runs);  // x: interactivity

// Writes replay.json, replay.csv, hit_rate.svg, throughput.svg under `dir` (created if missing).
// Returns the paths written. Throws ds::Error naming the path on I/O failure.
std::vector<std::string> write_reports(const std::vector<RunMetrics>& runs, const std::string& dir);

}  // namespace ds
