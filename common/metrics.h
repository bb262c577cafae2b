// Metrics, declared once per module in one registry (prometheus-cpp) and rendered by
// medicd's /metrics in the Prometheus text format. A module declares its metrics as a
// struct of handles built from the registry it is given; it counts on them, tests read
// them back, and nothing copies one metric into another.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace prometheus {
template <typename T>
class Family;
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace medic::metrics {

using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  explicit Counter(prometheus::Counter& c) : c_(&c) {}
  Counter& operator++();
  Counter& operator+=(double v);
  uint64_t value() const;
  operator uint64_t() const { return value(); }  // NOLINT: reads like the number it counts

 private:
  prometheus::Counter* c_;
};

class Gauge {
 public:
  explicit Gauge(prometheus::Gauge& g) : g_(&g) {}
  void set(double v);
  double value() const;
  operator double() const { return value(); }  // NOLINT

 private:
  prometheus::Gauge* g_;
};

class Histogram {
 public:
  explicit Histogram(prometheus::Histogram& h) : h_(&h) {}
  void observe(double v);
  // How many observations, and their sum (what the exposition says).
  uint64_t count() const;
  double sum() const;

 private:
  prometheus::Histogram* h_;
};

// A gauge whose members come and go (one per open incident, one per SLO): each replace()
// sets the members given and removes the ones given last time that are not given now.
class GaugeFamily {
 public:
  explicit GaugeFamily(prometheus::Family<prometheus::Gauge>& f) : f_(&f) {}
  void replace(const std::vector<std::pair<Labels, double>>& members);
  size_t size() const { return present_.size(); }

 private:
  prometheus::Family<prometheus::Gauge>* f_;
  std::vector<Labels> present_;
};

// Buckets for durations in seconds, from 1 ms to about 10 minutes.
std::vector<double> seconds_buckets();

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The same name with the same help returns the same family; labels pick its member.
  Counter counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  GaugeFamily gauge_family(const std::string& name, const std::string& help);
  Histogram histogram(const std::string& name, const std::string& help, const std::vector<double>& buckets,
                      const Labels& labels = {});

  // Every metric in the Prometheus text exposition format (version 0.0.4).
  std::string render() const;

 private:
  std::shared_ptr<prometheus::Registry> r_;
};

}  // namespace medic::metrics
