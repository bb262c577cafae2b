// The SLO report written out: JSON (the keys docs/formats.md lists), CSV (one row per SLO),
// Markdown (to paste into a review document) and one self-contained HTML file with the
// charts this module draws itself as SVG (no script, no external request, no inline style
// attribute: it renders under a Content-Security-Policy of default-src 'none' with the
// report's own stylesheet, and prints on A4).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "slo/report.h"

namespace medic::slo {

nlohmann::json report_json(const Report& r);
std::string report_csv(const Report& r);
std::string report_markdown(const Report& r);
// The whole document, its stylesheet inlined.
std::string report_html(const Report& r);
// The report's body alone (what the repair queue page shows under /slo) and its stylesheet.
std::string report_html_body(const Report& r);
const std::string& report_css();

// Budget consumed and remaining as shares of the allowed misses (nullopt: the objective
// allows none, and some were missed).
std::optional<double> budget_consumed(const SloLine& l);
std::optional<double> budget_remaining(const SloLine& l);

}  // namespace medic::slo
