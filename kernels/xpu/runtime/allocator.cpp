// The XPU caching allocator. Note [Caching allocator] in docs/xpu_runtime.md:
// - sizes round up to 512 B; requests <= 1 MiB come from 2 MiB segments (the small pool),
//   larger ones from segments of their own, rounded to 2 MiB (the large pool);
// - a free block is found by (stream, size) best fit and split if the rest is worth keeping;
//   freed blocks go back to the pool as they are, and free neighbours are merged only when no
//   block fits a request (or on empty_cache), so that a steady malloc/free of one size is
//   two set operations;
// - a block is reused only by the stream it was allocated on, since work on that stream is
//   ordered; record_stream() adds streams, and such a block waits on events from each before
//   it returns to the pool;
// - when the driver is out of memory: free the cached segments, synchronize, retry once, then
//   OutOfMemoryError with the request and the statistics.
#include <deque>
#include <set>

#include <xten/kernels/xpu/runtime/device_state.h>

namespace xten::xpu {
namespace {

constexpr size_t kRound = 512;
constexpr size_t kSmallRequest = 1 << 20;   // <= this: small pool
constexpr size_t kSmallSegment = 2 << 20;   // small pool segment size
constexpr size_t kLargeRounding = 2 << 20;  // large segments round to this

size_t round_up(size_t n, size_t m) {
  return (n + m - 1) / m * m;
}

struct Block;
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const;
};
using Pool = std::set<Block*, BlockOrder>;

struct Block {
  int device;
  StreamImpl* stream;
  size_t size;
  char* ptr;
  bool small;
  bool allocated = false;
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
  std::vector<StreamImpl*> stream_uses;  // other streams that used it (record_stream)
  Pool::node_type node;  // the pool's tree node while out of the pool: reused, not reallocated
};

bool BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

// Moving blocks in and out of a pool without allocating tree nodes.
Block* take(Pool& pool, Pool::iterator it) {
  Block* b = *it;
  b->node = pool.extract(it);
  return b;
}
void put(Pool& pool, Block* b) {
  if (b->node.empty()) {
    pool.insert(b);
  } else {
    b->node.value() = b;
    pool.insert(std::move(b->node));
  }
}

struct Stat {
  int64_t current = 0, peak = 0;
  void add(int64_t n) {
    current += n;
    peak = std::max(peak, current);
  }
};

struct Pending {
  Block* block;
  std::vector<ze_event_handle_t> events;
};

void delete_block(void* ctx);

class DeviceAllocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}

  Block* malloc(size_t request, StreamImpl* stream) {
    const size_t size = round_up(std::max<size_t>(request, 1), kRound);
    const bool small = size <= kSmallRequest;
    std::lock_guard<std::mutex> lock(mutex_);
    process_pending();
    auto& pool = small ? small_free_ : large_free_;
    Block key{device_, stream, size, nullptr, small, false, nullptr, nullptr, {}, {}};
    Block* b = nullptr;
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) {
      coalesce(pool);
      it = pool.lower_bound(&key);
    }
    if (it != pool.end() && (*it)->stream == stream) {
      b = take(pool, it);
    } else {
      b = new_segment(small ? kSmallSegment : round_up(size, kLargeRounding), small, stream,
                      request);
    }
    const size_t rest = b->size - size;
    if (small ? rest >= kRound : rest > kSmallRequest) {  // split: the rest stays free
      auto* r = new Block{device_, stream, rest, b->ptr + size, small};
      r->prev = b;
      r->next = b->next;
      if (b->next) b->next->prev = r;
      b->next = r;
      b->size = size;
      put(pool, r);
    }
    b->allocated = true;
    allocated_.add(static_cast<int64_t>(b->size));
    active_.add(1);
    ++num_allocs_;
    report_memory(Device(kXPU, device_), b->ptr, static_cast<int64_t>(b->size),
                  allocated_.current);  // Note [Memory reports]
    return b;
  }

  void free(Block* b) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!b->stream_uses.empty()) {
      Pending p{b, {}};
      for (StreamImpl* s : b->stream_uses) p.events.push_back(append_marker(s));
      b->stream_uses.clear();
      pending_.push_back(std::move(p));
      return;
    }
    release(b);
  }

  void record_stream(Block* b, StreamImpl* s) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (s == b->stream) return;
    for (StreamImpl* u : b->stream_uses)
      if (u == s) return;
    b->stream_uses.push_back(s);
  }

  // Frees every segment that is wholly unused.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    process_pending();
    release_cached_segments();
  }

  std::map<std::string, int64_t> stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {{"allocated_bytes.current", allocated_.current},
            {"allocated_bytes.peak", allocated_.peak},
            {"reserved_bytes.current", reserved_.current},
            {"reserved_bytes.peak", reserved_.peak},
            {"active_blocks.current", active_.current},
            {"active_blocks.peak", active_.peak},
            {"segments.current", segments_.current},
            {"segments.peak", segments_.peak},
            {"num_allocs", num_allocs_},
            {"num_frees", num_frees_},
            {"num_alloc_retries", num_retries_},
            {"num_ooms", num_ooms_},
            {"pending_frees", static_cast<int64_t>(pending_.size())}};
  }

  void reset_peaks() {
    std::lock_guard<std::mutex> lock(mutex_);
    allocated_.peak = allocated_.current;
    reserved_.peak = reserved_.current;
    active_.peak = active_.current;
    segments_.peak = segments_.current;
  }

 private:
  Block* new_segment(size_t bytes, bool small, StreamImpl* stream, size_t request) {
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void* p = nullptr;
    ze_result_t r =
        zeMemAllocDevice(ze_context(device_), &desc, bytes, kRound, ze_device(device_), &p);
    if (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY || r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY) {
      ++num_retries_;  // free what is cached, let queued work finish, try once more
      release_cached_segments();
      mutex_.unlock();
      try {
        synchronize(device_);
      } catch (...) {
        mutex_.lock();
        throw;
      }
      mutex_.lock();
      process_pending();
      release_cached_segments();
      r = zeMemAllocDevice(ze_context(device_), &desc, bytes, kRound, ze_device(device_), &p);
    }
    if (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY || r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY ||
        r == ZE_RESULT_ERROR_UNSUPPORTED_SIZE) {
      ++num_ooms_;
      XTEN_FAIL(OutOfMemoryError, "xpu",
                "out of memory on xpu:{}: tried to allocate {} bytes (segment of {}); {} bytes "
                "allocated, {} reserved by xten, device total {} bytes",
                device_, request, bytes, allocated_.current, reserved_.current,
                get_device_properties(device_).total_memory);
    }
    XTEN_CHECK(r == ZE_RESULT_SUCCESS, DeviceError, "xpu", "zeMemAllocDevice({} bytes) failed: {}",
               bytes, ze_result_name(r));
    reserved_.add(static_cast<int64_t>(bytes));
    segments_.add(1);
    return new Block{device_, stream, bytes, static_cast<char*>(p), small};
  }

  void release(Block* b) {
    b->allocated = false;
    allocated_.add(-static_cast<int64_t>(b->size));
    active_.add(-1);
    ++num_frees_;
    report_memory(Device(kXPU, device_), b->ptr, -static_cast<int64_t>(b->size),
                  allocated_.current);
    put(b->small ? small_free_ : large_free_, b);
  }

  // Merges every run of free neighbours within a segment into one block.
  static void coalesce(Pool& pool) {
    std::vector<Block*> heads;
    for (Block* b : pool)
      if (!b->prev || b->prev->allocated) heads.push_back(b);
    if (heads.size() == pool.size()) return;  // nothing adjacent
    pool.clear();
    for (Block* b : heads) {
      while (b->next && !b->next->allocated) {
        Block* n = b->next;
        b->size += n->size;
        b->next = n->next;
        if (n->next) n->next->prev = b;
        delete n;
      }
      pool.insert(b);
    }
  }

  void process_pending() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      bool done = true;
      for (ze_event_handle_t e : it->events)
        done = done && zeEventQueryStatus(e) == ZE_RESULT_SUCCESS;
      if (!done) {
        ++it;
        continue;
      }
      for (ze_event_handle_t e : it->events) release_event(device_, e, false);
      release(it->block);
      it = pending_.erase(it);
    }
  }

  void release_cached_segments() {
    for (auto* pool : {&small_free_, &large_free_}) {
      coalesce(*pool);
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        XTEN_ZE_CHECK(zeMemFree(ze_context(device_), b->ptr));
        reserved_.add(-static_cast<int64_t>(b->size));
        segments_.add(-1);
        it = pool->erase(it);
        delete b;
      }
    }
  }

  int device_;
  std::mutex mutex_;
  Pool small_free_, large_free_;
  std::deque<Pending> pending_;
  Stat allocated_, reserved_, active_, segments_;
  int64_t num_allocs_ = 0, num_frees_ = 0, num_retries_ = 0, num_ooms_ = 0;
};

// One allocator per device, made once for all devices (never destroyed, like the runtime),
// so that the hot path takes no lock to find it.
const std::vector<DeviceAllocator*>& allocators() {
  // Never destroyed: threads may allocate and free until the process ends (docs/xpu_runtime.md,
  // Note [Exit with work in flight]).
  static const auto* all = [] {
    auto* v = new std::vector<DeviceAllocator*>;
    for (int d = 0; d < device_count(); ++d) v->push_back(new DeviceAllocator(d));
    return v;
  }();
  return *all;
}
DeviceAllocator& allocator_of(int device) {
  return *allocators()[static_cast<size_t>(normalize_device(device))];
}

void delete_block(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  allocators()[static_cast<size_t>(b->device)]->free(b);  // a valid index by construction
}

class XpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    const int d = normalize_device(device.has_index() ? device.index() : -1);
    if (nbytes == 0)
      return DataPtr(
          nullptr, nullptr, [](void*) {}, Device(kXPU, d));
    Block* b = allocators()[static_cast<size_t>(d)]->malloc(nbytes, get_current_stream(d).impl());
    return DataPtr(b->ptr, b, delete_block, Device(kXPU, d));
  }
};

}  // namespace

Allocator* caching_allocator() {
  static XpuAllocator* a = new XpuAllocator;  // never destroyed (see allocators())
  return a;
}

uint64_t memory_allocated(int device) {
  return static_cast<uint64_t>(memory_stats(device)["allocated_bytes.current"]);
}
uint64_t max_memory_allocated(int device) {
  return static_cast<uint64_t>(memory_stats(device)["allocated_bytes.peak"]);
}
uint64_t memory_reserved(int device) {
  return static_cast<uint64_t>(memory_stats(device)["reserved_bytes.current"]);
}
uint64_t max_memory_reserved(int device) {
  return static_cast<uint64_t>(memory_stats(device)["reserved_bytes.peak"]);
}
void reset_peak_memory_stats(int device) {
  allocator_of(device).reset_peaks();
}
std::map<std::string, int64_t> memory_stats(int device) {
  return allocator_of(device).stats();
}
void empty_cache() {
  for (int d = 0; d < device_count(); ++d) allocator_of(d).empty_cache();
}

void record_stream(const Tensor& t, const Stream& stream) {
  XTEN_CHECK(t.defined() && t.device().type() == kXPU, ValueError, "record_stream",
             "expected an XPU tensor, but got one on {}",
             t.defined() ? t.device().str() : "(undefined)");
  const DataPtr& p = t.storage().data_ptr();
  if (!p.get()) return;  // zero bytes: nothing to protect
  XTEN_CHECK(p.deleter() == delete_block, ValueError, "record_stream",
             "the tensor's memory does not come from the XPU caching allocator");
  auto* b = static_cast<Block*>(p.context());
  XTEN_CHECK(stream.device_index() == b->device, ValueError, "record_stream",
             "stream is on xpu:{} but the tensor on xpu:{}", stream.device_index(), b->device);
  allocator_of(b->device).record_stream(b, stream.impl());
}

}  // namespace xten::xpu
