#pragma once
// Random draws of the data pipeline: the shuffle order and random transforms
// (docs/data.md, "Reproducibility"). Each is a pure function of (seed, stream, draw number)
// through the same Philox generator as the tensor ops (docs/random.md), so a DataLoader seed
// fixes every epoch's order and every sample's augmentation, whatever the number of workers.
#include <cstdint>

namespace xten::data {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0, uint64_t stream = 0) : seed_(seed), stream_(stream) {}
  uint32_t next_u32();
  // Uniform in [0, 1), 53 random bits.
  double uniform();
  // Uniform in [low, high), without modulo bias; high > low.
  int64_t integer(int64_t low, int64_t high);

 private:
  uint64_t seed_, stream_, count_ = 0;
};

// A seed derived from `seed` for the purpose `key` (splitmix64 of both): the shuffle and the
// samples draw from unrelated keys.
uint64_t derive_seed(uint64_t seed, uint64_t key);

// The generator random transforms draw from on this thread. The DataLoader installs one per
// sample (seeded by loader seed, epoch and sample index); elsewhere it is a thread's own
// generator seeded with 0.
Rng& sample_rng();

// Installs `rng` as this thread's sample_rng() for a scope.
class SampleRngGuard {
 public:
  explicit SampleRngGuard(Rng rng);
  ~SampleRngGuard();
  SampleRngGuard(const SampleRngGuard&) = delete;
  SampleRngGuard& operator=(const SampleRngGuard&) = delete;

 private:
  Rng saved_;
};

}  // namespace xten::data
