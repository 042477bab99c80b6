#pragma once
// Readers for image datasets stored as files (docs/data.md): the IDX format of MNIST and
// Fashion-MNIST (gzip-compressed or not; zlib reads both) and CIFAR-10's binary batches.
// A bad, truncated or mismatched file raises ValueError naming the file.
#include <string>
#include <utility>

#include <xten/data/dataset.h>

namespace xten::data {

// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// One IDX file as a tensor of its dtype (uint8, int8, int16, int32, float32, float64) and
// shape, read in full (a .gz file is inflated by zlib).
Tensor read_idx(const std::string& path);

// MNIST-layout files under `root`: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
// Inputs uint8 [N, 1, H, W], targets int64 [N] in [0, 10).
TensorDataset mnist(const std::string& root, bool train, Transform transform = {});

// One CIFAR-10 binary batch: records of a label byte and 3x32x32 pixel bytes (planes R, G, B).
// Returns inputs uint8 [N, 3, 32, 32] and targets int64 [N].
std::pair<Tensor, Tensor> read_cifar10(const std::string& path);

// CIFAR-10's binary release under `root`: data_batch_1..5.bin (train) or test_batch.bin.
TensorDataset cifar10(const std::string& root, bool train, Transform transform = {});

}  // namespace xten::data
