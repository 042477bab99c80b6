#pragma once
// Datasets: a size and an example per index (docs/data.md). TensorDataset holds all examples
// in two tensors (inputs [N, ...] and targets [N, ...]) and applies a transform to each input
// on get(); the readers (data/readers.h) return one.
#include <cstdint>
#include <functional>

#include <xten/core/tensor.h>

namespace xten::data {

struct Example {
  Tensor data;
  Tensor target;
};

// A transform maps one example's input to a new tensor (data/transforms.h).
using Transform = std::function<Tensor(const Tensor&)>;

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The example at `index` in [0, size()). Called from loader worker threads: must be safe to
  // call concurrently.
  virtual Example get(int64_t index) const = 0;
};

class TensorDataset : public Dataset {
 public:
  // data [N, ...] and targets [N, ...] of the same N; `transform` runs on data[i] in get(i).
  TensorDataset(Tensor data, Tensor targets, Transform transform = {});
  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }
  // The same examples with another transform (e.g. the training transform for a test split).
  TensorDataset with_transform(Transform transform) const;
  // Examples [start, start + length): a slice that shares memory with this dataset.
  TensorDataset slice(int64_t start, int64_t length) const;

 private:
  Tensor data_, targets_;
  Transform transform_;
};

}  // namespace xten::data
