#include <xten/core/allocator.h>

#include <xten/core/device_interface.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <xten/core/error.h>

namespace xten {
namespace {

// Note [CPU block cache]
// glibc serves large requests with fresh mmap'd pages, and the first write to each 4 KiB
// page faults: a new 64 MiB output costs ~16k faults, more time than the op that fills it.
// So blocks of at least kCacheMinBytes are kept when freed (by size, rounded up to
// kCacheGranule) and handed out again, up to kCacheMaxBytes cached in all; smaller blocks go
// straight to the C library, which already recycles them well. The threshold is glibc's
// default mmap threshold (128 KiB): at 1 MiB, a training step's 800 KB weight gradients went
// to glibc, which returned and refetched their pages every step (the MLP's backward took
// 1.3 ms with fresh gradients against 0.45 ms accumulating into existing ones; 0.41 ms now).
// A block returned to a full cache evicts the blocks returned longest ago (as many as it takes),
// never itself: the block a loop has just freed is the one its next iteration asks for. When the
// returned block was the one refused instead, a program that had once filled the cache with sizes
// it never asked for again (bench_sweep's setup) had every later output faulted in afresh: a
// float log over 4M elements took 2.7 ms, 1.5 of them the kernel clearing new pages.
constexpr size_t kCacheMinBytes = size_t{128} << 10;
constexpr size_t kCacheGranule = size_t{64} << 10;
constexpr size_t kCacheMaxBytes = size_t{1} << 30;

std::atomic<int64_t> g_cpu_allocated{0};

// Counts a CPU allocation (+) or free (-) and reports it (Note [Memory reports]).
void count_cpu(const void* p, int64_t bytes) {
  const int64_t total = g_cpu_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  report_memory(Device(kCPU), p, bytes, total);
}

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes == 0)
      return DataPtr(
          nullptr, nullptr, [](void*) {}, device);
    if (nbytes < kCacheMinBytes) {
      // malloc plus manual alignment: glibc's malloc fast path is several times cheaper
      // than its posix_memalign for small blocks (the per-op cost of tiny tensors). malloc's
      // (at least 8-byte) alignment leaves at least 8 bytes before the aligned address: the
      // size is kept there, for the free's count.
      void* raw = std::malloc(nbytes + kCpuAlignment);
      if (!raw) XTEN_FAIL(OutOfMemoryError, "cpu_allocator", "failed to allocate {} bytes", nbytes);
      void* a = aligned_in(raw);
      reinterpret_cast<uint64_t*>(a)[-1] = nbytes;
      count_cpu(a, static_cast<int64_t>(nbytes));
      return DataPtr(a, raw, &CpuAllocator::free_small, device);
    }
    const size_t size = round_up(nbytes, kCacheGranule);
    void* p = take_cached(size);
    if (!p) p = aligned(size, nbytes);
    count_cpu(p, static_cast<int64_t>(size));
    return DataPtr(p, new Block{p, size}, &CpuAllocator::give_back, device);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : cache_)
      for (const Cached& c : blocks) std::free(c.ptr);
    cache_.clear();
    cached_bytes_ = 0;
  }

 private:
  struct Block {
    void* ptr;
    size_t size;
  };
  static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
  static void* aligned_in(void* raw) {
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + kCpuAlignment) &
                                   ~(kCpuAlignment - 1));
  }
  static void free_small(void* raw) {
    void* a = aligned_in(raw);
    count_cpu(a, -static_cast<int64_t>(reinterpret_cast<uint64_t*>(a)[-1]));
    std::free(raw);
  }
  static void* aligned(size_t size, size_t requested) {
    void* p = nullptr;
    if (posix_memalign(&p, kCpuAlignment, size) != 0 || p == nullptr)
      XTEN_FAIL(OutOfMemoryError, "cpu_allocator", "failed to allocate {} bytes", requested);
    return p;
  }
  void* take_cached(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(size);
    if (it == cache_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back().ptr;  // the most recently returned: likeliest in cache
    it->second.pop_back();
    cached_bytes_ -= size;
    return p;
  }
  static void give_back(void* ctx) {
    std::unique_ptr<Block> b(static_cast<Block*>(ctx));
    count_cpu(b->ptr, -static_cast<int64_t>(b->size));
    CpuAllocator& self = *static_cast<CpuAllocator*>(cpu_allocator());
    if (b->size > kCacheMaxBytes) return std::free(b->ptr);
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(self.mutex_);
      while (self.cached_bytes_ + b->size > kCacheMaxBytes) evicted.push_back(self.evict_oldest());
      self.cache_[b->size].push_back({b->ptr, ++self.returns_});
      self.cached_bytes_ += b->size;
    }
    for (void* p : evicted) std::free(p);
  }
  // Takes the block returned longest ago out of the cache (the mutex held, the cache not empty);
  // the oldest of each size is at the front of its list.
  void* evict_oldest() {
    auto oldest = cache_.end();
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (!it->second.empty() &&
          (oldest == cache_.end() || it->second.front().order < oldest->second.front().order))
        oldest = it;
    void* p = oldest->second.front().ptr;
    oldest->second.pop_front();
    cached_bytes_ -= oldest->first;
    return p;
  }

  std::mutex mutex_;
  struct Cached {
    void* ptr;
    uint64_t order;  // when it was returned (returns_ then)
  };
  std::unordered_map<size_t, std::deque<Cached>> cache_;
  size_t cached_bytes_ = 0;
  uint64_t returns_ = 0;
};

std::array<std::atomic<Allocator*>, kNumDeviceTypes>& registry() {
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> r{};
  return r;
}

}  // namespace

namespace detail {
std::atomic<MemoryObserver> g_memory_observer{nullptr};
}

void set_memory_observer(MemoryObserver observer) {
  detail::g_memory_observer.store(observer, std::memory_order_release);
}

int64_t cpu_memory_allocated() {
  return g_cpu_allocated.load(std::memory_order_relaxed);
}

Allocator* cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator();  // never destroyed: tensors may outlive statics
  return a;
}

void empty_cpu_cache() {
  static_cast<CpuAllocator*>(cpu_allocator())->empty_cache();
}

Allocator* allocator_for(DeviceType type) {
  Allocator* a = registry()[static_cast<int>(type)].load(std::memory_order_acquire);
  return a ? a : device_interface(type).allocator();
}

void set_allocator(DeviceType type, Allocator* allocator) {
  registry()[static_cast<int>(type)].store(allocator, std::memory_order_release);
}

}  // namespace xten
