#pragma once
// Random numbers: Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"), counter-based, so element i of a random op is a pure function of (seed, offset, i)
// and any device can compute the same value independently. The mapping from those to
// values is specified in docs/random.md; keep kernels and that page in step.
#include <array>
#include <cstdint>
#include <functional>
#include <mutex>

namespace xten {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

inline PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

// The four 32-bit words for element `index` of the op that drew `offset` under `seed`.
inline PhiloxCounter philox_words(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                        static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

struct PhiloxState {
  uint64_t seed;
  uint64_t offset;
};

// A seed and an offset that counts random ops: each op takes the current offset and moves it
// on by one, so successive ops draw from disjoint counter ranges.
class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;
  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed) {}

  void manual_seed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  // The state for one op, advancing the generator.
  PhiloxState next() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {seed_, offset_++};
  }

 private:
  std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_cpu_generator();

// Seeds the generators of every backend (core/device_interface.h).
void manual_seed_all_generators(uint64_t seed);

}  // namespace xten
