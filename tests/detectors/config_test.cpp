#include "detectors/config.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "tests/support/testing.h"

namespace medic::detectors {
namespace {

// The message parse() throws for `text`, or "" if it parses.
std::string error_of(const std::string& text) {
  try {
    DetectorConfig::parse(text, "t.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DetectorConfig, ShippedFileLoads) {
  const auto c = DetectorConfig::load_file(testing::source_dir() + "/data/detectors.json");
  EXPECT_EQ(c.optics.default_type, "400G-DR4");
  ASSERT_NE(c.optics.type_for(""), nullptr);
  EXPECT_DOUBLE_EQ(c.fec.limit_ber, 2.4e-4);
}

TEST(DetectorConfig, ShippedFileHasEveryDocumentedValue) {
  const auto c = DetectorConfig::load_file(testing::source_dir() + "/data/detectors.json");
  EXPECT_EQ(c.flap.penalty_per_flap, 1000);
  EXPECT_EQ(c.flap.half_life, std::chrono::seconds(60));
  EXPECT_EQ(c.flap.suppress, 2500);
  EXPECT_EQ(c.flap.reuse, 800);
  EXPECT_EQ(c.flap.max_penalty, 8000);
  EXPECT_EQ(c.flap.down_hold, std::chrono::seconds(30));
  EXPECT_EQ(c.optics.hysteresis_db, 0.5);
  EXPECT_EQ(c.optics.drift_db, 2.0);
  EXPECT_EQ(c.optics.drift_baseline, std::chrono::hours(6));
  EXPECT_EQ(c.optics.drift_recent, std::chrono::minutes(5));
  EXPECT_EQ(c.optics.drift_min_history, std::chrono::minutes(30));
  ASSERT_EQ(c.optics.types.size(), 5u);
  const OpticType& fr4 = c.optics.types.at("400G-FR4");
  EXPECT_EQ(fr4.name, "400G-FR4");
  EXPECT_DOUBLE_EQ(fr4.rx_power_dbm.alarm_low, -10.1);
  EXPECT_DOUBLE_EQ(fr4.tx_power_dbm.warn_low, -3.2);
  EXPECT_DOUBLE_EQ(fr4.max_link_loss_db, 4.0);
  // A threshold the file leaves out is no threshold.
  EXPECT_EQ(fr4.temperature_c.warn_low, -std::numeric_limits<double>::infinity());
  const OpticType& dac = c.optics.types.at("400G-DAC");
  EXPECT_EQ(dac.rx_power_dbm.warn_low, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(dac.rx_power_dbm.alarm_high, std::numeric_limits<double>::infinity());
  EXPECT_EQ(c.corruption.window, std::chrono::seconds(60));
  EXPECT_DOUBLE_EQ(c.corruption.corrupting, 1e-8);
  EXPECT_DOUBLE_EQ(c.corruption.critical, 1e-5);
  EXPECT_EQ(c.corruption.min_errors, 3);
  EXPECT_DOUBLE_EQ(c.corruption.discard_rate, 1e-6);
  EXPECT_DOUBLE_EQ(c.corruption.congestion_utilization, 0.6);
  EXPECT_EQ(c.fec.window, std::chrono::seconds(60));
  EXPECT_DOUBLE_EQ(c.fec.warning_ber, 1e-5);
  EXPECT_EQ(c.pfc.pause_rate, 500);
  EXPECT_EQ(c.pfc.sustain, std::chrono::seconds(30));
  EXPECT_EQ(c.stale.after, std::chrono::seconds(30));
}

TEST(DetectorConfig, EmptyObjectIsTheDefaults) {
  const auto c = DetectorConfig::parse("{}", "t.json");
  EXPECT_EQ(c.flap.suppress, FlapConfig{}.suppress);
  EXPECT_EQ(c.optics.default_type, "");
  EXPECT_TRUE(c.optics.types.empty());
  EXPECT_EQ(c.optics.type_for(""), nullptr);
  EXPECT_EQ(c.corruption.window, CorruptionConfig{}.window);
  EXPECT_EQ(c.stale.after, StaleConfig{}.after);
}

TEST(DetectorConfig, PartialSectionsKeepTheOtherDefaults) {
  const auto c = DetectorConfig::parse(R"({"flap": {"suppress": 3000, "half_life_s": 1.5}, "pfc": {"sustain_s": 0.25}})",
                                       "t.json");
  EXPECT_EQ(c.flap.suppress, 3000);
  EXPECT_EQ(c.flap.half_life, std::chrono::milliseconds(1500));
  EXPECT_EQ(c.flap.reuse, 800);
  EXPECT_EQ(c.pfc.sustain, std::chrono::milliseconds(250));
  EXPECT_EQ(c.pfc.pause_rate, 500);
}

TEST(DetectorConfig, CommentsAreAllowedEverywhere) {
  EXPECT_EQ(error_of(R"({"comment": "x", "flap": {"comment": "y"}, "optics": {"comment": 1, "default_type": "T",
                        "types": {"T": {"comment": "z", "rx_power_dbm": {"comment": "w", "warn_low": -7}}}}})"),
            "");
}

TEST(DetectorConfig, UnknownKeysAreNamedWithTheirPath) {
  EXPECT_EQ(error_of(R"({"flapp": {}})"), "t.json: $: unknown key \"flapp\"");
  EXPECT_EQ(error_of(R"({"flap": {"penalty": 1000}})"), "t.json: $.flap: unknown key \"penalty\"");
  EXPECT_EQ(error_of(R"({"optics": {"drift": 2}})"), "t.json: $.optics: unknown key \"drift\"");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"rx_power": {}}}}})"),
            "t.json: $.optics.types.T: unknown key \"rx_power\"");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"rx_power_dbm": {"low": -7}}}}})"),
            "t.json: $.optics.types.T.rx_power_dbm: unknown key \"low\"");
  EXPECT_EQ(error_of(R"({"corruption": {"window": 60}})"), "t.json: $.corruption: unknown key \"window\"");
  EXPECT_EQ(error_of(R"({"fec": {"limit": 1}})"), "t.json: $.fec: unknown key \"limit\"");
  EXPECT_EQ(error_of(R"({"pfc": {"rate": 1}})"), "t.json: $.pfc: unknown key \"rate\"");
  EXPECT_EQ(error_of(R"({"stale": {"after": 1}})"), "t.json: $.stale: unknown key \"after\"");
}

TEST(DetectorConfig, WrongTypesAreNamedWithTheirPath) {
  EXPECT_EQ(error_of("[1, 2]"), "t.json: $: expected an object");
  EXPECT_EQ(error_of(R"({"flap": 3})"), "t.json: $.flap: expected an object");
  EXPECT_EQ(error_of(R"({"optics": {"types": []}})"), "t.json: $.optics.types: expected an object");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": 1}}})"), "t.json: $.optics.types.T: expected an object");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"laser_bias_ma": "high"}}}})"),
            "t.json: $.optics.types.T.laser_bias_ma: expected an object");
  EXPECT_EQ(error_of(R"({"optics": {"default_type": 4}})"), "t.json: $.optics.default_type: expected a string");
  EXPECT_EQ(error_of(R"({"flap": {"suppress": "2500"}})"),
            "t.json: $.flap.suppress: expected a finite number, got \"2500\"");
  EXPECT_EQ(error_of(R"({"fec": {"limit_ber": true}})"), "t.json: $.fec.limit_ber: expected a finite number, got true");
  EXPECT_EQ(error_of(R"({"stale": {"after_s": null}})"), "t.json: $.stale.after_s: expected a finite number, got null");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"temperature_c": {"warn_high": [70]}}}}})"),
            "t.json: $.optics.types.T.temperature_c.warn_high: expected a finite number, got [70]");
}

TEST(DetectorConfig, DurationsMustNotBeNegative) {
  EXPECT_EQ(error_of(R"({"flap": {"half_life_s": -1}})"), "t.json: $.flap.half_life_s: must not be negative");
  EXPECT_EQ(error_of(R"({"flap": {"down_hold_s": -0.5}})"), "t.json: $.flap.down_hold_s: must not be negative");
  EXPECT_EQ(error_of(R"({"optics": {"drift_min_history_s": -1}})"),
            "t.json: $.optics.drift_min_history_s: must not be negative");
  EXPECT_EQ(error_of(R"({"corruption": {"window_s": -60}})"), "t.json: $.corruption.window_s: must not be negative");
  EXPECT_EQ(error_of(R"({"fec": {"window_s": -60}})"), "t.json: $.fec.window_s: must not be negative");
  EXPECT_EQ(error_of(R"({"pfc": {"sustain_s": -1}})"), "t.json: $.pfc.sustain_s: must not be negative");
  EXPECT_EQ(error_of(R"({"stale": {"after_s": -1}})"), "t.json: $.stale.after_s: must not be negative");
  // Zero is not negative, but these must be positive.
  EXPECT_EQ(error_of(R"({"flap": {"half_life_s": 0}})"), "t.json: $.flap: flap.half_life_s must be positive");
  EXPECT_EQ(error_of(R"({"flap": {"down_hold_s": 0}})"), "t.json: $.flap: flap.down_hold_s must be positive");
  EXPECT_EQ(error_of(R"({"corruption": {"window_s": 0}})"), "t.json: $.corruption.window_s: must be positive");
  EXPECT_EQ(error_of(R"({"fec": {"window_s": 0}})"), "t.json: $.fec.window_s: must be positive");
  EXPECT_EQ(error_of(R"({"pfc": {"sustain_s": 0}})"), "t.json: $.pfc.sustain_s: must be positive");
  EXPECT_EQ(error_of(R"({"stale": {"after_s": 0}})"), "t.json: $.stale.after_s: must be positive");
  EXPECT_EQ(error_of(R"({"optics": {"drift_min_history_s": 0}})"), "");  // judge at once: allowed
}

TEST(DetectorConfig, FlapDampingMustBeConsistent) {
  EXPECT_EQ(error_of(R"({"flap": {"reuse": 2500}})"),
            "t.json: $.flap: flap.reuse must be positive and below flap.suppress");
  EXPECT_EQ(error_of(R"({"flap": {"suppress": 700}})"),
            "t.json: $.flap: flap.reuse must be positive and below flap.suppress");
  EXPECT_EQ(error_of(R"({"flap": {"reuse": 0}})"), "t.json: $.flap: flap.reuse must be positive and below flap.suppress");
  EXPECT_EQ(error_of(R"({"flap": {"max_penalty": 2499}})"),
            "t.json: $.flap: flap.max_penalty must be at least flap.suppress");
  EXPECT_EQ(error_of(R"({"flap": {"penalty_per_flap": -1}})"), "t.json: $.flap: flap.penalty_per_flap must be positive");
  EXPECT_EQ(error_of(R"({"flap": {"reuse": 2499, "max_penalty": 2500}})"), "");
}

TEST(DetectorConfig, BandsMustBeOrdered) {
  const std::string why = "thresholds must be ordered alarm_low <= warn_low < warn_high <= alarm_high";
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"rx_power_dbm": {"alarm_low": -5, "warn_low": -8}}}}})"),
            "t.json: $.optics.types.T.rx_power_dbm: " + why);
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"tx_power_dbm": {"warn_low": 1, "warn_high": 1}}}}})"),
            "t.json: $.optics.types.T.tx_power_dbm: " + why);
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"temperature_c": {"warn_high": 75, "alarm_high": 70}}}}})"),
            "t.json: $.optics.types.T.temperature_c: " + why);
  // An alarm_low needs a warn_low at or above it (a missing one is minus infinity).
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"laser_bias_ma": {"alarm_low": 1}}}}})"),
            "t.json: $.optics.types.T.laser_bias_ma: " + why);
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"laser_bias_ma": {"alarm_low": 1, "warn_low": 1}}}}})"), "");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"T": {"max_link_loss_db": 0}}}})"),
            "t.json: $.optics.types.T.max_link_loss_db: must be positive");
}

TEST(DetectorConfig, DefaultTypeMustNameAType) {
  EXPECT_EQ(error_of(R"({"optics": {"default_type": "400G-XX", "types": {"400G-DR4": {}}}})"),
            "t.json: $.optics.default_type: names no type in $.optics.types: \"400G-XX\"");
  EXPECT_EQ(error_of(R"({"optics": {"default_type": "400G-DR4"}})"),
            "t.json: $.optics.default_type: names no type in $.optics.types: \"400G-DR4\"");
  EXPECT_EQ(error_of(R"({"optics": {"default_type": "400G-DR4", "types": {"400G-DR4": {}}}})"), "");
}

TEST(DetectorConfig, OpticsLimits) {
  EXPECT_EQ(error_of(R"({"optics": {"hysteresis_db": -0.1}})"), "t.json: $.optics.hysteresis_db: must not be negative");
  EXPECT_EQ(error_of(R"({"optics": {"drift_db": 0}})"), "t.json: $.optics.drift_db: must be positive");
  EXPECT_EQ(error_of(R"({"optics": {"drift_recent_s": 21600}})"),
            "t.json: $.optics.drift_recent_s: must be shorter than drift_baseline_s");
}

TEST(DetectorConfig, CorruptionBandsMustBeOrdered) {
  const std::string why = "t.json: $.corruption: need 0 < corrupting < critical < 1";
  EXPECT_EQ(error_of(R"({"corruption": {"corrupting": 1e-5, "critical": 1e-5}})"), why);
  EXPECT_EQ(error_of(R"({"corruption": {"corrupting": 1e-4}})"), why);
  EXPECT_EQ(error_of(R"({"corruption": {"corrupting": 0}})"), why);
  EXPECT_EQ(error_of(R"({"corruption": {"critical": 1}})"), why);
  EXPECT_EQ(error_of(R"({"corruption": {"min_errors": 0.5}})"), "t.json: $.corruption.min_errors: must be at least 1");
  EXPECT_EQ(error_of(R"({"corruption": {"congestion_utilization": 0}})"),
            "t.json: $.corruption.congestion_utilization: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"corruption": {"congestion_utilization": 1.5}})"),
            "t.json: $.corruption.congestion_utilization: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"corruption": {"congestion_utilization": 1}})"), "");
  // A discard rate of zero would report every busy port's zero discards.
  EXPECT_EQ(error_of(R"({"corruption": {"discard_rate": 0}})"), "t.json: $.corruption.discard_rate: must be in (0, 1)");
  EXPECT_EQ(error_of(R"({"corruption": {"discard_rate": -1e-6}})"),
            "t.json: $.corruption.discard_rate: must be in (0, 1)");
  EXPECT_EQ(error_of(R"({"corruption": {"discard_rate": 1}})"), "t.json: $.corruption.discard_rate: must be in (0, 1)");
}

TEST(DetectorConfig, FecLevelsMustBeOrdered) {
  const std::string why = "t.json: $.fec: need 0 < warning_ber < limit_ber < 1";
  EXPECT_EQ(error_of(R"({"fec": {"warning_ber": 2.4e-4}})"), why);
  EXPECT_EQ(error_of(R"({"fec": {"warning_ber": 1e-3}})"), why);
  EXPECT_EQ(error_of(R"({"fec": {"warning_ber": 0}})"), why);
  EXPECT_EQ(error_of(R"({"fec": {"limit_ber": 1}})"), why);
}

TEST(DetectorConfig, PfcLimits) {
  EXPECT_EQ(error_of(R"({"pfc": {"pause_rate": 0}})"), "t.json: $.pfc.pause_rate: must be positive");
}

TEST(DetectorConfig, InvalidJson) {
  EXPECT_EQ(error_of("{\"flap\": "),
            "t.json: line 1, column 10: invalid JSON: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal");
  // A number too large for a double is the file's fault, not a crash.
  EXPECT_EQ(error_of(R"({"corruption": {"min_errors": 1e999}})"),
            "t.json: invalid JSON: [json.exception.out_of_range.406] number overflow parsing '1e999'");
  EXPECT_EQ(error_of(""),
            "t.json: line 1, column 1: invalid JSON: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal");
}

TEST(DetectorConfig, FilesAreNamedInTheirErrors) {
  testing::TempDir dir;
  const std::string path = dir.file("detectors.json");
  testing::write_file(path, R"({"fec": {"warning_ber": 1e-3}})");
  try {
    DetectorConfig::load_file(path);
    FAIL() << "loaded a bad file";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": $.fec: need 0 < warning_ber < limit_ber < 1");
  }
  const std::string missing = dir.file("missing.json");
  try {
    DetectorConfig::load_file(missing);
    FAIL() << "loaded a missing file";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
  }
}

TEST(DetectorConfig, ValidateNamesItsSource) {
  DetectorConfig c;
  c.fec.limit_ber = c.fec.warning_ber;
  try {
    c.validate("medicd --detectors");
    FAIL() << "validated";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "medicd --detectors: $.fec: need 0 < warning_ber < limit_ber < 1");
  }
  EXPECT_NO_THROW(DetectorConfig{}.validate());
}


TEST(DetectorConfig, AbsurdThresholdsAreRefused) {
  EXPECT_EQ(error_of(R"({"flap": {"penalty_per_flap": 1e308}})"), "t.json: $.flap.penalty_per_flap: must be at most 1000000000, got 1e+308");
  EXPECT_EQ(error_of(R"({"flap": {"half_life_s": 1e308}})"), "t.json: $.flap.half_life_s: must be at most 2592000, got 1e+308");
  EXPECT_EQ(error_of(R"({"corruption": {"min_errors": 1e308}})"), "t.json: $.corruption.min_errors: must be at most 1000000000, got 1e+308");
  EXPECT_EQ(error_of(R"({"pfc": {"pause_rate": 1e308}})"), "t.json: $.pfc.pause_rate: must be at most 10000000000, got 1e+308");
  EXPECT_EQ(error_of(R"({"stale": {"after_s": 1e12}})"), "t.json: $.stale.after_s: must be at most 2592000, got 1e+12");
  EXPECT_EQ(error_of(R"({"probe": {"latency_factor": 1e308}})"), "t.json: $.probe.latency_factor: must be at most 10000, got 1e+308");
  EXPECT_EQ(error_of(R"({"optics": {"types": {"x": {"rx_power_dbm": {"alarm_low": -1e308, "warn_low": -7, "warn_high": 4, "alarm_high": 5}}}}})"),
            "t.json: $.optics.types.x.rx_power_dbm.alarm_low: must be in [-60, 30], got -1e+308");
  EXPECT_EQ(error_of(R"({"stale": {"outage_share": 0}})"), "t.json: $.stale.outage_share: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"stale": {"outage_min_devices": 2.5}})"),
            "t.json: $.stale.outage_min_devices: expected a whole number in [0, 1000000000], got 2.5");
  EXPECT_EQ(error_of(R"({"probe": {"outage_min_sessions": 0}})"), "t.json: $.probe.outage_min_sessions: must be in [1, 1000000], got 0");
}

TEST(DetectorConfig, OnlyVersionOneIsRead) {
  EXPECT_EQ(error_of(R"({"version": 2})"), "t.json: $.version: unsupported version 2 (this build reads version 1)");
  EXPECT_EQ(error_of(R"({"version": "1"})"), "t.json: $.version: unsupported version \"1\" (this build reads version 1)");
  EXPECT_NO_THROW(DetectorConfig::parse(R"({"version": 1})", "t.json"));
}

}  // namespace
}  // namespace medic::detectors
