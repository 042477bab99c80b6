#include <xten/data/dataset.h>

#include <xten/core/error.h>
#include <xten/dispatch/ops.h>

namespace xten::data {

TensorDataset::TensorDataset(Tensor data, Tensor targets, Transform transform)
    : data_(std::move(data)), targets_(std::move(targets)), transform_(std::move(transform)) {
  XTEN_CHECK(data_.defined() && targets_.defined(), ValueError, "TensorDataset",
             "data and targets must be defined tensors");
  XTEN_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, ValueError, "TensorDataset",
             "data and targets need a leading example dim, but got shapes {} and {}",
             data_.sizes(), targets_.sizes());
  XTEN_CHECK(data_.size(0) == targets_.size(0), ValueError, "TensorDataset",
             "data has {} examples but targets has {}", data_.size(0), targets_.size(0));
}

Example TensorDataset::get(int64_t index) const {
  XTEN_CHECK(index >= 0 && index < size(), IndexError, "TensorDataset::get",
             "index must be in [0, {}), but got {}", size(), index);
  Tensor x = data_.select(0, index);
  if (transform_) x = transform_(x);
  return {x, targets_.select(0, index)};
}

TensorDataset TensorDataset::with_transform(Transform transform) const {
  return TensorDataset(data_, targets_, std::move(transform));
}

TensorDataset TensorDataset::slice(int64_t start, int64_t length) const {
  XTEN_CHECK(start >= 0 && length >= 0 && start + length <= size(), IndexError,
             "TensorDataset::slice", "[{}, {}) is not inside the dataset's [0, {})", start,
             start + length, size());
  return TensorDataset(data_.narrow(0, start, length), targets_.narrow(0, start, length),
                       transform_);
}

}  // namespace xten::data
