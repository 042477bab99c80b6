#pragma once
// DataLoader: batches of a Dataset in a seeded order, built by worker threads ahead of the
// training loop (docs/data.md).
//
//   data::DataLoader loader(data::mnist(data::kFashionMnistDir, true, tf),
//                           data::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2));
//   for (data::Batch& batch : loader) { ... batch.data, batch.target ... }
//
// Each begin() runs one epoch. The order of epoch e is a permutation drawn from (seed, e),
// and sample i's random transforms draw from (seed, e, i): a seed fixes every batch, with any
// number of workers. Workers build whole batches; at most num_workers * prefetch_factor
// batches wait ahead of the loop, and they are handed out in order. Leaving the loop early
// (break, exception) stops and joins the workers; a worker's exception is rethrown by the
// loop at the batch it happened in.
#include <cstdint>
#include <memory>
#include <utility>

#include <xten/core/arg.h>
#include <xten/data/dataset.h>

namespace xten::data {

struct Batch {
  Tensor data;    // the examples' inputs stacked: [B, ...]
  Tensor target;  // their targets stacked: [B, ...]
};

// Which examples an epoch visits, in order (DataLoaderOptions::sampler).
class Sampler {
 public:
  virtual ~Sampler() = default;
  // The indices into a dataset of `dataset_size` examples that epoch `epoch` visits.
  virtual std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const = 0;
};

// One rank's share of the dataset in data-parallel training (torch's DistributedSampler): the
// epoch's order (a permutation drawn from (seed, epoch) when shuffling, the same on every rank)
// is padded by repeating its start to a multiple of num_replicas (or, with drop_last, cut to
// one), and rank r takes every num_replicas-th index from r. Every rank gets the same number of
// examples, so every rank runs the same number of steps. The DataLoader passes its own epoch:
// no set_epoch call is needed.
class DistributedSampler final : public Sampler {
 public:
  DistributedSampler(int64_t num_replicas, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const override;
  // The examples each rank gets per epoch.
  int64_t num_samples(int64_t dataset_size) const;

 private:
  int64_t num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
};

struct DataLoaderOptions {
  XTEN_ARG(int64_t, batch_size) = 1;
  XTEN_ARG(bool, shuffle) = false;
  XTEN_ARG(bool, drop_last) = false;       // drop a last batch smaller than batch_size
  XTEN_ARG(int64_t, num_workers) = 0;      // 0: batches are built on the loop's thread
  XTEN_ARG(int64_t, prefetch_factor) = 2;  // batches ahead per worker
  XTEN_ARG(uint64_t, seed) = 0;
  // The examples and order of each epoch (null: all, shuffled when `shuffle`); cannot be
  // combined with shuffle.
  XTEN_ARG(std::shared_ptr<const Sampler>, sampler);
};

// Stacks examples into a batch (data and targets each with torch's default_collate meaning).
Batch collate(const std::vector<Example>& examples);

class DataLoader {
  struct Epoch;

 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return index_ == other.index_; }
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    friend class DataLoader;
    Iterator(std::shared_ptr<Epoch> epoch, int64_t index);
    std::shared_ptr<Epoch> epoch_;
    int64_t index_;
    Batch batch_;
  };

  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  // Takes a dataset by value (TensorDataset, a dataset of one's own).
  template <class D, class = std::enable_if_t<std::is_base_of_v<Dataset, std::decay_t<D>>>>
  DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::make_shared<std::decay_t<D>>(std::forward<D>(dataset)), options) {}

  // Starts epoch epoch() (and counts it on): workers begin building its batches.
  Iterator begin();
  Iterator end() const;
  // Batches per epoch.
  int64_t size() const;
  // The epoch the next begin() runs; set it to resume in the middle of training.
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace xten::data
