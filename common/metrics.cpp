#include "common/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

namespace medic::metrics {

Counter& Counter::operator++() {
  c_->Increment();
  return *this;
}

Counter& Counter::operator+=(double v) {
  if (v > 0) c_->Increment(v);
  return *this;
}

uint64_t Counter::value() const { return static_cast<uint64_t>(c_->Value()); }

void Gauge::set(double v) { g_->Set(v); }
double Gauge::value() const { return g_->Value(); }

void GaugeFamily::replace(const std::vector<std::pair<Labels, double>>& members) {
  std::vector<Labels> now;
  now.reserve(members.size());
  for (const auto& [labels, v] : members) {
    f_->Add(labels).Set(v);
    now.push_back(labels);
  }
  std::sort(now.begin(), now.end());
  for (const auto& old : present_) {
    if (!std::binary_search(now.begin(), now.end(), old)) f_->Remove(&f_->Add(old));
  }
  present_ = std::move(now);
}

void Histogram::observe(double v) { h_->Observe(v); }

uint64_t Histogram::count() const { return h_->Collect().histogram.sample_count; }
double Histogram::sum() const { return h_->Collect().histogram.sample_sum; }

std::vector<double> seconds_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 600};
}

Registry::Registry() : r_(std::make_shared<prometheus::Registry>()) {}
Registry::~Registry() = default;

Counter Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  return Counter(prometheus::BuildCounter().Name(name).Help(help).Register(*r_).Add(labels));
}

Gauge Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  return Gauge(prometheus::BuildGauge().Name(name).Help(help).Register(*r_).Add(labels));
}

GaugeFamily Registry::gauge_family(const std::string& name, const std::string& help) {
  return GaugeFamily(prometheus::BuildGauge().Name(name).Help(help).Register(*r_));
}

Histogram Registry::histogram(const std::string& name, const std::string& help, const std::vector<double>& buckets,
                              const Labels& labels) {
  return Histogram(prometheus::BuildHistogram().Name(name).Help(help).Register(*r_).Add(labels, buckets));
}

std::string Registry::render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, r_->Collect());
  return out.str();
}

}  // namespace medic::metrics
