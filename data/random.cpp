#include <xten/data/random.h>

#include <xten/core/error.h>
#include <xten/core/generator.h>

namespace xten::data {

uint32_t Rng::next_u32() {
  const uint64_t block = count_ / 4;
  const PhiloxCounter words = philox_words(seed_, stream_, block);
  return words[count_++ % 4];
}

double Rng::uniform() {
  const uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;  // 27 + 26 bits
  return static_cast<double>((hi << 26) | lo) * (1.0 / 9007199254740992.0);
}

int64_t Rng::integer(int64_t low, int64_t high) {
  XTEN_CHECK(high > low, ValueError, "Rng::integer", "expected low < high, but got [{}, {})",
             low, high);
  const uint64_t range = static_cast<uint64_t>(high - low);
  // The largest multiple of range below 2^64: draws at or above it are redrawn.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t r;
  do {
    r = (static_cast<uint64_t>(next_u32()) << 32) | next_u32();
  } while (r >= limit);
  return low + static_cast<int64_t>(r % range);
}

uint64_t derive_seed(uint64_t seed, uint64_t key) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (key + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {
thread_local Rng tls_sample_rng;
}

Rng& sample_rng() { return tls_sample_rng; }

SampleRngGuard::SampleRngGuard(Rng rng) : saved_(tls_sample_rng) { tls_sample_rng = rng; }
SampleRngGuard::~SampleRngGuard() { tls_sample_rng = saved_; }

}  // namespace xten::data
