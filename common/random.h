// splitmix64 (Steele, Lea, Flood 2014): a cheap 64-bit mix whose outputs for consecutive
// inputs look independent, and the small generator built on it. Its sequence is the same
// on every platform (the standard distributions are not), so a plan or a benchmark drawn
// from a seed is reproducible anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace medic {

// splitmix64's finalizer over x + the golden-ratio increment.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t z = mix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
    return z;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n); n > 0. The modulo bias is below 2^-40 for the sizes used here.
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

}  // namespace medic
