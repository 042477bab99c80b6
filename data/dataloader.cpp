#include <xten/data/dataloader.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include <xten/core/error.h>
#include <xten/core/parallel.h>
#include <xten/data/random.h>
#include <xten/dispatch/ops.h>

namespace xten::data {
namespace {
// derive_seed keys: one for the epoch orders, one per epoch for its samples.
constexpr uint64_t kOrderKey = 0, kSampleKeyBase = 1;

int64_t batches_per_epoch(int64_t examples, const DataLoaderOptions& options) {
  const int64_t b = options.batch_size();
  return options.drop_last() ? examples / b : (examples + b - 1) / b;
}

// A permutation of [0, n) drawn from (seed, epoch).
std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  Rng rng(derive_seed(seed, kOrderKey), static_cast<uint64_t>(epoch));
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.integer(0, i + 1)]);
  return order;
}
}  // namespace

DistributedSampler::DistributedSampler(int64_t num_replicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  XTEN_CHECK(num_replicas >= 1, ValueError, "DistributedSampler",
             "num_replicas must be at least 1, but got {}", num_replicas);
  XTEN_CHECK(rank >= 0 && rank < num_replicas, ValueError, "DistributedSampler",
             "rank must be in [0, {}), but got {}", num_replicas, rank);
}

int64_t DistributedSampler::num_samples(int64_t n) const {
  return drop_last_ ? n / num_replicas_ : (n + num_replicas_ - 1) / num_replicas_;
}

std::vector<int64_t> DistributedSampler::indices(int64_t n, int64_t epoch) const {
  std::vector<int64_t> order(n);
  if (shuffle_) {
    order = permutation(n, seed_, epoch);
  } else {
    std::iota(order.begin(), order.end(), 0);
  }
  const int64_t per_rank = num_samples(n), total = per_rank * num_replicas_;
  if (n == 0) return {};
  if (total > n)
    for (int64_t i = n; i < total; ++i) order.push_back(order[(i - n) % n]);
  order.resize(total);
  std::vector<int64_t> mine;
  mine.reserve(per_rank);
  for (int64_t i = rank_; i < total; i += num_replicas_) mine.push_back(order[i]);
  return mine;
}

Batch collate(const std::vector<Example>& examples) {
  XTEN_CHECK(!examples.empty(), ValueError, "collate", "no examples to collate");
  std::vector<Tensor> data, targets;
  data.reserve(examples.size());
  targets.reserve(examples.size());
  for (const Example& e : examples) {
    data.push_back(e.data);
    targets.push_back(e.target);
  }
  return {stack(data), stack(targets)};
}

// One pass over the dataset: its order, its workers and the batches they have built.
struct DataLoader::Epoch {
  Epoch(std::shared_ptr<const Dataset> dataset_, const DataLoaderOptions& options_, int64_t epoch_)
      : dataset(std::move(dataset_)), options(options_), epoch(epoch_) {
    const int64_t n = dataset->size();
    if (options.sampler()) {
      order = options.sampler()->indices(n, epoch);
      for (int64_t i : order)
        XTEN_CHECK(i >= 0 && i < n, IndexError, "DataLoader",
                   "the sampler gave index {}, outside the dataset's [0, {})", i, n);
    } else if (options.shuffle()) {
      order = permutation(n, options.seed(), epoch);
    } else {
      order.resize(n);
      std::iota(order.begin(), order.end(), 0);
    }
    num_batches = batches_per_epoch(static_cast<int64_t>(order.size()), options);
    for (int64_t w = 0; w < options.num_workers(); ++w)
      workers.emplace_back([this, w] { work(w); });
  }

  ~Epoch() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    space.notify_all();
    for (std::thread& t : workers) t.join();
  }

  Batch build(int64_t batch) const {
    const int64_t b = options.batch_size();
    const int64_t begin = batch * b, end = std::min<int64_t>(begin + b, order.size());
    const uint64_t sample_seed = derive_seed(options.seed(), kSampleKeyBase + epoch);
    std::vector<Example> examples;
    examples.reserve(end - begin);
    for (int64_t i = begin; i < end; ++i) {
      SampleRngGuard guard(Rng(sample_seed, static_cast<uint64_t>(order[i])));
      examples.push_back(dataset->get(order[i]));
    }
    return collate(examples);
  }

  // Worker w builds batches w, w + W, w + 2W, ..., each once it is within the prefetch window.
  void work(int64_t w) {
    // Per-example ops are small: one thread each, beside the training loop's OpenMP team.
    ThreadLimitGuard one_thread(1);
    const int64_t stride = options.num_workers();
    const int64_t window = options.num_workers() * options.prefetch_factor();
    for (int64_t batch = w; batch < num_batches; batch += stride) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        space.wait(lock, [&] { return stopping || batch < next + window; });
        if (stopping) return;
      }
      Result r;
      try {
        r.batch = build(batch);
      } catch (...) {
        r.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        ready_batches.emplace(batch, std::move(r));
      }
      ready.notify_all();
    }
  }

  Batch take(int64_t batch) {
    if (workers.empty()) return build(batch);
    Result r;
    {
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] { return ready_batches.count(batch) != 0; });
      auto it = ready_batches.find(batch);
      r = std::move(it->second);
      ready_batches.erase(it);
      next = batch + 1;
    }
    space.notify_all();
    if (r.error) std::rethrow_exception(r.error);
    return std::move(r.batch);
  }

  struct Result {
    Batch batch;
    std::exception_ptr error;
  };

  std::shared_ptr<const Dataset> dataset;
  DataLoaderOptions options;
  int64_t epoch;
  std::vector<int64_t> order;
  int64_t num_batches = 0;

  std::mutex mutex;
  std::condition_variable ready, space;
  std::map<int64_t, Result> ready_batches;
  int64_t next = 0;  // the batch the loop takes next
  bool stopping = false;
  std::vector<std::thread> workers;  // last: started once everything above exists
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  XTEN_CHECK(dataset_ != nullptr, ValueError, "DataLoader", "the dataset is null");
  XTEN_CHECK(options_.batch_size() >= 1, ValueError, "DataLoader",
             "batch_size must be >= 1, but got {}", options_.batch_size());
  XTEN_CHECK(options_.num_workers() >= 0, ValueError, "DataLoader",
             "num_workers must be >= 0, but got {}", options_.num_workers());
  XTEN_CHECK(options_.prefetch_factor() >= 1, ValueError, "DataLoader",
             "prefetch_factor must be >= 1, but got {}", options_.prefetch_factor());
  XTEN_CHECK(!(options_.sampler() && options_.shuffle()), ValueError, "DataLoader",
             "sampler option is mutually exclusive with shuffle");
}

int64_t DataLoader::size() const {
  const int64_t n = dataset_->size();
  return batches_per_epoch(
      options_.sampler() ? static_cast<int64_t>(options_.sampler()->indices(n, 0).size()) : n,
      options_);
}

DataLoader::Iterator DataLoader::begin() {
  auto epoch = std::make_shared<Epoch>(dataset_, options_, epoch_++);
  return Iterator(std::move(epoch), 0);
}

DataLoader::Iterator DataLoader::end() const {
  return Iterator(nullptr, size());
}

DataLoader::Iterator::Iterator(std::shared_ptr<Epoch> epoch, int64_t index)
    : epoch_(std::move(epoch)), index_(index) {
  if (epoch_ && index_ < epoch_->num_batches) batch_ = epoch_->take(index_);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  XTEN_CHECK(epoch_ && index_ < epoch_->num_batches, IndexError, "DataLoader::Iterator",
             "incremented past the end of the epoch");
  ++index_;
  batch_ = {};
  if (index_ < epoch_->num_batches) {
    batch_ = epoch_->take(index_);
  } else {
    epoch_.reset();  // the epoch is over: join its workers now
  }
  return *this;
}

}  // namespace xten::data
