#include <xten/data/readers.h>

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include <xten/core/error.h>
#include <xten/dispatch/ops.h>

namespace xten::data {
namespace {

// The whole content of `path`, inflated when it is gzip data (zlib passes other files
// through unchanged).
std::vector<uint8_t> read_all(const std::string& path, const char* op) {
  gzFile f = gzopen(path.c_str(), "rb");
  XTEN_CHECK(f != nullptr, ValueError, op, "cannot open '{}': {}", path, std::strerror(errno));
  std::vector<uint8_t> bytes;
  constexpr size_t kChunk = 1 << 20;
  while (true) {
    const size_t at = bytes.size();
    bytes.resize(at + kChunk);
    const int n = gzread(f, bytes.data() + at, kChunk);
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(f, &code);
      gzclose(f);
      XTEN_FAIL(ValueError, op, "'{}' is not readable: {}", path, why);
    }
    bytes.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
  }
  // A gzip stream cut short reads as a short file: zlib reports it at the end.
  int code = Z_OK;
  const std::string why = gzerror(f, &code);
  gzclose(f);
  XTEN_CHECK(code == Z_OK || code == Z_STREAM_END, ValueError, op, "'{}' is corrupt: {}", path,
             why);
  return bytes;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

std::string existing(const std::string& root, const std::string& name, const char* op) {
  for (const std::string& candidate : {root + "/" + name + ".gz", root + "/" + name}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  XTEN_FAIL(ValueError, op, "neither '{0}/{1}.gz' nor '{0}/{1}' exists", root, name);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  constexpr const char* op = "read_idx";
  const std::vector<uint8_t> bytes = read_all(path, op);
  XTEN_CHECK(bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0, ValueError, op,
             "'{}' is not an IDX file: it must start with two zero bytes, a type and a rank",
             path);
  ScalarType dtype;
  switch (bytes[2]) {
    case 0x08: dtype = kByte; break;
    case 0x09: dtype = kChar; break;
    case 0x0B: dtype = kShort; break;
    case 0x0C: dtype = kInt; break;
    case 0x0D: dtype = kFloat; break;
    case 0x0E: dtype = kDouble; break;
    default:
      XTEN_FAIL(ValueError, op, "'{}' has the unknown IDX type code 0x{:02x}", path, bytes[2]);
  }
  const int rank = bytes[3];
  XTEN_CHECK(rank >= 1 && bytes.size() >= 4 + 4 * size_t(rank), ValueError, op,
             "'{}' is truncated or has rank {}: its header needs {} bytes, the file has {}", path,
             rank, 4 + 4 * rank, bytes.size());
  std::vector<int64_t> shape(rank);
  uint64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    shape[d] = big_endian_u32(&bytes[4 + 4 * d]);
    numel *= static_cast<uint64_t>(shape[d]);
    XTEN_CHECK(numel <= bytes.size(), ValueError, op,
               "'{}' is truncated: its header says shape {}, more elements than the file has bytes",
               path, IntArrayRef(shape.data(), d + 1));
  }
  const size_t item = element_size(dtype), header = 4 + 4 * size_t(rank);
  const size_t expected = header + numel * item;
  XTEN_CHECK(bytes.size() == expected, ValueError, op,
             "'{}' has {} bytes, but an IDX file of shape {} and dtype {} has {}{}", path,
             bytes.size(), IntArrayRef(shape), to_string(dtype), expected,
             bytes.size() < expected ? " (truncated)" : " (trailing data)");
  Tensor out = empty(shape, dtype);
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const uint8_t* src = bytes.data() + header;
  // IDX stores multi-byte values big-endian.
  for (size_t i = 0; i < numel; ++i) {
    for (size_t b = 0; b < item; ++b) dst[i * item + b] = src[i * item + item - 1 - b];
  }
  return out;
}

TensorDataset mnist(const std::string& root, bool train, Transform transform) {
  constexpr const char* op = "mnist";
  const std::string split = train ? "train" : "t10k";
  const std::string images_path = existing(root, split + "-images-idx3-ubyte", op);
  const std::string labels_path = existing(root, split + "-labels-idx1-ubyte", op);
  Tensor images = read_idx(images_path), labels = read_idx(labels_path);
  XTEN_CHECK(images.dtype() == kByte && images.dim() == 3, ValueError, op,
             "'{}' must hold uint8 images [N, H, W], but holds {} {}", images_path,
             to_string(images.dtype()), images.sizes());
  XTEN_CHECK(labels.dtype() == kByte && labels.dim() == 1, ValueError, op,
             "'{}' must hold uint8 labels [N], but holds {} {}", labels_path,
             to_string(labels.dtype()), labels.sizes());
  XTEN_CHECK(images.size(0) == labels.size(0), ValueError, op,
             "'{}' has {} images but '{}' has {} labels", images_path, images.size(0),
             labels_path, labels.size(0));
  const uint8_t* l = labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < labels.size(0); ++i) {
    XTEN_CHECK(l[i] < 10, ValueError, op, "'{}': label {} of example {} is not in [0, 10)",
               labels_path, int(l[i]), i);
  }
  return TensorDataset(images.unsqueeze(1), labels.to(kLong), std::move(transform));
}

std::pair<Tensor, Tensor> read_cifar10(const std::string& path) {
  constexpr const char* op = "read_cifar10";
  constexpr size_t kPixels = 3 * 32 * 32, kRecord = 1 + kPixels;
  const std::vector<uint8_t> bytes = read_all(path, op);
  XTEN_CHECK(!bytes.empty() && bytes.size() % kRecord == 0, ValueError, op,
             "'{}' has {} bytes, which is not a whole number of {}-byte CIFAR-10 records", path,
             bytes.size(), kRecord);
  const int64_t n = static_cast<int64_t>(bytes.size() / kRecord);
  Tensor images = empty({n, 3, 32, 32}, kByte), labels = empty({n}, kLong);
  auto* img = images.data_ptr<uint8_t>();
  auto* lab = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* record = bytes.data() + i * kRecord;
    XTEN_CHECK(record[0] < 10, ValueError, op, "'{}': label {} of record {} is not in [0, 10)",
               path, int(record[0]), i);
    lab[i] = record[0];
    std::memcpy(img + i * kPixels, record + 1, kPixels);
  }
  return {images, labels};
}

TensorDataset cifar10(const std::string& root, bool train, Transform transform) {
  std::vector<std::string> names;
  if (train) {
    for (int b = 1; b <= 5; ++b) names.push_back("data_batch_" + std::to_string(b) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  std::vector<Tensor> images, labels;
  for (const std::string& name : names) {
    const std::string path = root + "/" + name;
    XTEN_CHECK(std::filesystem::exists(path), ValueError, "cifar10", "'{}' does not exist", path);
    auto [x, y] = read_cifar10(path);
    images.push_back(x);
    labels.push_back(y);
  }
  return TensorDataset(cat(images), cat(labels), std::move(transform));
}

}  // namespace xten::data
