// data/: the IDX and CIFAR-10 readers (on small files the tests write, and on Debian's
// Fashion-MNIST), the transforms, and the DataLoader (seeded order, workers, prefetch bound,
// early exit, errors).
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;
namespace tf = xten::data::transforms;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "xten_data_" + name;
  std::filesystem::create_directories(dir);
  return dir;
}

void write_file(const std::string& path, const std::string& bytes, bool gzip = false) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), int(bytes.size()));
    gzclose(f);
    return;
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// An IDX file: type code, dims, then `payload` (already big-endian).
std::string idx(uint8_t type, std::vector<uint32_t> dims, const std::string& payload) {
  std::string s = {0, 0, char(type), char(dims.size())};
  for (uint32_t d : dims) s += be32(d);
  return s + payload;
}

// n images of h x w where pixel (i, y, x) = i + y * w + x, and labels i % 10.
void write_mnist(const std::string& dir, const std::string& split, uint32_t n, uint32_t h,
                 uint32_t w, bool gzip) {
  std::string pixels, labels;
  for (uint32_t i = 0; i < n; ++i) {
    labels += char(i % 10);
    for (uint32_t p = 0; p < h * w; ++p) pixels += char((i + p) & 0xff);
  }
  const std::string ext = gzip ? ".gz" : "";
  write_file(dir + "/" + split + "-images-idx3-ubyte" + ext, idx(0x08, {n, h, w}, pixels), gzip);
  write_file(dir + "/" + split + "-labels-idx1-ubyte" + ext, idx(0x08, {n}, labels), gzip);
}

// Same dtype, shape and values.
bool equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         allclose(a.to(kDouble), b.to(kDouble), 0, 0);
}

}  // namespace

TEST(Rng, IsAPureFunctionOfSeedAndStream) {
  data::Rng a(5, 7), b(5, 7), c(5, 8), d(6, 7);
  std::vector<uint32_t> va, vb, vc, vd;
  for (int i = 0; i < 9; ++i) {
    va.push_back(a.next_u32()), vb.push_back(b.next_u32());
    vc.push_back(c.next_u32()), vd.push_back(d.next_u32());
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  EXPECT_NE(va, vd);
  data::Rng r(1);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 6000; ++i) {
    const int64_t k = r.integer(-2, 4);
    ASSERT_GE(k, -2);
    ASSERT_LT(k, 4);
    ++counts[k + 2];
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
  EXPECT_THROW_MSG(r.integer(3, 3), ValueError, "expected low < high, but got [3, 3)");
}

TEST(ReadIdx, ReadsEveryTypeRawAndGzipped) {
  const std::string dir = temp_dir("idx_types");
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "raw");
    const std::string p = dir + (gz ? "/a.gz" : "/a");
    write_file(p, idx(0x08, {2, 3}, std::string("\x00\x01\x02\xfd\xfe\xff", 6)), gz);
    Tensor u8 = data::read_idx(p);
    EXPECT_EQ(u8.dtype(), kByte);
    EXPECT_EQ(u8.sizes(), IntArrayRef({2, 3}));
    EXPECT_TRUE(equal(u8, tensor({0, 1, 2, 253, 254, 255}).reshape({2, 3}).to(kByte)));
    // int32 and float32 are stored big-endian.
    write_file(p, idx(0x0C, {2}, be32(uint32_t(-7)) + be32(70000)), gz);
    EXPECT_TRUE(equal(data::read_idx(p), tensor({-7, 70000}).to(kInt)));
    float f = 1.5f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    write_file(p, idx(0x0D, {1, 1}, be32(bits)), gz);
    EXPECT_EQ(data::read_idx(p).item<float>(), 1.5f);
    write_file(p, idx(0x09, {1}, std::string(1, char(-3))), gz);
    EXPECT_EQ(data::read_idx(p).dtype(), kChar);
    EXPECT_EQ(data::read_idx(p).item<int64_t>(), -3);
  }
}

TEST(ReadIdx, BadFilesRaiseNamingTheFile) {
  const std::string dir = temp_dir("idx_bad");
  const std::string p = dir + "/bad";
  EXPECT_THROW_MSG(data::read_idx(dir + "/missing"), ValueError,
                   "[read_idx] cannot open '" + dir + "/missing'");
  write_file(p, std::string("\x01\x00\x08\x01", 4) + be32(1) + "x");
  EXPECT_THROW_MSG(data::read_idx(p), ValueError, "'" + p + "' is not an IDX file");
  write_file(p, idx(0x0A, {1}, "x"));
  EXPECT_THROW_MSG(data::read_idx(p), ValueError, "'" + p + "' has the unknown IDX type code 0x0a");
  write_file(p, idx(0x08, {2, 3}, "abcde"));
  EXPECT_THROW_MSG(data::read_idx(p), ValueError,
                   "'" + p +
                       "' has 17 bytes, but an IDX file of shape (2, 3) and dtype Byte has "
                       "18 (truncated)");
  write_file(p, idx(0x08, {2}, "abc"));
  EXPECT_THROW_MSG(data::read_idx(p), ValueError, "(trailing data)");
  write_file(p, std::string("\x00\x00\x08\x03", 4) + be32(2));
  EXPECT_THROW_MSG(data::read_idx(p), ValueError, "is truncated or has rank 3");
  write_file(p, idx(0x08, {0xffffffffu, 0xffffffffu}, "ab"));
  EXPECT_THROW_MSG(data::read_idx(p), ValueError, "is truncated: its header says shape");
  // A gzip stream cut in half.
  write_file(p + ".gz", idx(0x08, {4096}, std::string(4096, 'q')), true);
  const std::string gz = read_file(p + ".gz");
  write_file(p + ".gz", gz.substr(0, gz.size() / 2));
  EXPECT_THROW(data::read_idx(p + ".gz"), ValueError);
}

TEST(Mnist, ReadsASplitAndChecksIt) {
  const std::string dir = temp_dir("mnist");
  write_mnist(dir, "train", 12, 3, 4, true);
  write_mnist(dir, "t10k", 5, 3, 4, false);
  data::TensorDataset train = data::mnist(dir, true), test = data::mnist(dir, false);
  EXPECT_EQ(train.size(), 12);
  EXPECT_EQ(test.size(), 5);
  EXPECT_EQ(train.data().sizes(), IntArrayRef({12, 1, 3, 4}));
  EXPECT_EQ(train.targets().dtype(), kLong);
  data::Example e = train.get(11);
  EXPECT_EQ(e.target.item<int64_t>(), 1);
  EXPECT_EQ(value_at(e.data, {0, 2, 3}), 11 + 2 * 4 + 3);
  EXPECT_THROW_MSG(train.get(12), IndexError, "index must be in [0, 12), but got 12");

  // Images and labels that disagree, a label out of range, a missing file.
  write_file(dir + "/t10k-labels-idx1-ubyte", idx(0x08, {4}, "\x01\x02\x03\x04"));
  EXPECT_THROW_MSG(data::mnist(dir, false), ValueError,
                   "has 5 images but '" + dir + "/t10k-labels-idx1-ubyte' has 4 labels");
  write_file(dir + "/t10k-labels-idx1-ubyte",
             idx(0x08, {5}, std::string("\x01\x02\x0c\x00\x00", 5)));
  EXPECT_THROW_MSG(data::mnist(dir, false), ValueError, "label 12 of example 2 is not in [0, 10)");
  std::filesystem::remove(dir + "/t10k-labels-idx1-ubyte");
  EXPECT_THROW_MSG(data::mnist(dir, false), ValueError,
                   "neither '" + dir + "/t10k-labels-idx1-ubyte.gz' nor");
}

TEST(Mnist, ReadsDebiansFashionMnist) {
  // Installed by scripts/setup.sh (dataset-fashion-mnist): 60,000 + 10,000 images, balanced.
  data::TensorDataset test = data::mnist(data::kFashionMnistDir, false);
  EXPECT_EQ(test.data().sizes(), IntArrayRef({10000, 1, 28, 28}));
  for (int64_t k = 0; k < 10; ++k) EXPECT_EQ((test.targets() == k).sum().item<int64_t>(), 1000);
  EXPECT_EQ(data::mnist(data::kFashionMnistDir, true).size(), 60000);
  // Pixels span [0, 255] and the mean is Fashion-MNIST's well-known 0.286.
  Tensor x = test.data().to(kFloat).div(255);
  EXPECT_NEAR(x.mean().item<double>(), 0.286, 0.002);
  EXPECT_EQ(test.data().amax().item<int64_t>(), 255);
}

TEST(Cifar10, ReadsBatchesAndChecksThem) {
  const std::string dir = temp_dir("cifar");
  auto records = [](int n, int first_label) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      s += char((first_label + i) % 10);
      for (int p = 0; p < 3072; ++p) s += char((i * 7 + p) & 0xff);
    }
    return s;
  };
  for (int b = 1; b <= 5; ++b)
    write_file(dir + "/data_batch_" + std::to_string(b) + ".bin", records(2, b));
  write_file(dir + "/test_batch.bin", records(3, 0));
  auto [x, y] = data::read_cifar10(dir + "/test_batch.bin");
  EXPECT_EQ(x.sizes(), IntArrayRef({3, 3, 32, 32}));
  EXPECT_TRUE(equal(y, tensor({0, 1, 2}).to(kLong)));
  // Plane order R, G, B: the second channel starts at byte 1024 of the record.
  EXPECT_EQ(value_at(x, {1, 1, 0, 0}), (7 + 1024) & 0xff);
  data::TensorDataset train = data::cifar10(dir, true);
  EXPECT_EQ(train.size(), 10);
  EXPECT_EQ(train.get(2).target.item<int64_t>(), 2);

  write_file(dir + "/test_batch.bin", records(3, 0).substr(0, 3073 * 2 + 5));
  EXPECT_THROW_MSG(data::cifar10(dir, false), ValueError,
                   "has 6151 bytes, which is not a whole number of 3073-byte CIFAR-10 records");
  std::string bad = records(2, 0);
  bad[3073] = 10;
  write_file(dir + "/test_batch.bin", bad);
  EXPECT_THROW_MSG(data::read_cifar10(dir + "/test_batch.bin"), ValueError,
                   "label 10 of record 1 is not in [0, 10)");
  std::filesystem::remove(dir + "/data_batch_3.bin");
  EXPECT_THROW_MSG(data::cifar10(dir, true), ValueError,
                   "'" + dir + "/data_batch_3.bin' does not exist");
}

TEST(Transforms, ToTensorAndNormalize) {
  Tensor chw = tensor({0, 51, 255, 102, 204, 153}).reshape({2, 1, 3}).to(kByte);
  Tensor f = tf::ToTensor()(chw);
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_TRUE(allclose(f, chw.to(kFloat) / 255.0));
  // HWC [1, 3, 2] -> CHW [2, 1, 3]; 2-D -> [1, H, W].
  EXPECT_TRUE(equal(tf::ToTensor("HWC")(chw.permute({1, 2, 0}).contiguous()), f));
  EXPECT_EQ(tf::ToTensor()(chw.select(0, 0)).sizes(), IntArrayRef({1, 1, 3}));
  Tensor n = tf::Normalize({0.5, 0.25}, {0.5, 2.0})(f);
  EXPECT_TRUE(allclose(n.select(0, 0), (f.select(0, 0) - 0.5) / 0.5));
  EXPECT_TRUE(allclose(n.select(0, 1), (f.select(0, 1) - 0.25) / 2.0));
  EXPECT_TRUE(allclose(tf::Normalize({0.5}, {0.5})(f), (f - 0.5) / 0.5));

  EXPECT_THROW_MSG(tf::ToTensor()(f), TypeError,
                   "[ToTensor] expected uint8 pixels, but got dtype Float");
  EXPECT_THROW_MSG(tf::ToTensor("NCHW"), ValueError, "layout must be \"CHW\" or \"HWC\"");
  EXPECT_THROW_MSG(tf::Normalize({0.5}, {0.0}), ValueError, "std must not contain 0");
  EXPECT_THROW_MSG(tf::Normalize({0.5, 0.5, 0.5}, {1, 1, 1})(f), ValueError,
                   "3 means for an image of 2 channels");
  EXPECT_THROW_MSG(tf::Normalize({0.5}, {1})(chw), TypeError, "apply ToTensor first");
}

TEST(Transforms, RandomCropFlipResizeAndCompose) {
  Tensor img = arange(2 * 4 * 5, kFloat).reshape({2, 4, 5});
  // p = 1 always flips, p = 0 never.
  EXPECT_TRUE(equal(tf::RandomHorizontalFlip(1.0)(img), img.flip({-1})));
  EXPECT_TRUE(equal(tf::RandomHorizontalFlip(0.0)(img), img));
  // A crop is a window of the padded image; the sample generator fixes which one.
  std::set<std::pair<double, double>> corners;
  for (uint64_t s = 0; s < 40; ++s) {
    data::SampleRngGuard guard(data::Rng(9, s));
    Tensor c = tf::RandomCrop({3, 4}, 1, -1.0)(img);
    ASSERT_EQ(c.sizes(), IntArrayRef({2, 3, 4}));
    Tensor padded = pad(img, {1, 1, 1, 1}, "constant", -1.0);
    bool found = false;
    for (int64_t t = 0; t <= 3 && !found; ++t)
      for (int64_t l = 0; l <= 3 && !found; ++l)
        found = equal(c, padded.narrow(1, t, 3).narrow(2, l, 4));
    EXPECT_TRUE(found);
    corners.insert({value_at(c, {0, 0, 0}), value_at(c, {0, 2, 3})});
    data::SampleRngGuard again(data::Rng(9, s));
    EXPECT_TRUE(equal(tf::RandomCrop({3, 4}, 1, -1.0)(img), c));
  }
  EXPECT_GT(corners.size(), 8u);  // many different windows over 40 seeds
  // Resize is upsample_bilinear2d on one image.
  Tensor r = tf::Resize(8, 10)(img);
  EXPECT_TRUE(equal(r, upsample_bilinear2d(img.unsqueeze(0), {8, 10}).squeeze(0)));
  EXPECT_EQ(tf::Resize(3)(img.select(0, 0)).sizes(), IntArrayRef({3, 3}));
  // Compose applies in order.
  Tensor u8 = img.to(kByte);
  tf::Compose pipeline({tf::ToTensor(), tf::Normalize({0.5}, {0.5}), tf::Resize(2, 2)});
  EXPECT_TRUE(equal(pipeline(u8), tf::Resize(2, 2)((u8.to(kFloat) / 255.0 - 0.5) / 0.5)));

  EXPECT_THROW_MSG(tf::RandomCrop({6, 5}, 0)(img), ValueError,
                   "a 6x5 crop does not fit an image of 4x5 (padding 0)");
  EXPECT_THROW_MSG(tf::RandomHorizontalFlip(1.5), ValueError, "p must be in [0, 1], but got 1.5");
  EXPECT_THROW_MSG(tf::Resize(0, 3), ValueError, "the size must be positive, but got 0x3");
  EXPECT_THROW_MSG(tf::Resize(3)(u8), TypeError, "[Resize] expected a floating image");
  EXPECT_THROW_MSG(tf::Compose({data::Transform()}), ValueError, "transform 0 is empty");
}

namespace {

// Examples whose input is its index, with a random draw from the sample generator, so that
// batches show both the order and the per-sample randomness; counts get() calls.
class IndexDataset : public data::Dataset {
 public:
  explicit IndexDataset(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t i) const override {
    ++calls;
    XTEN_CHECK(i != fail_at_, ValueError, "IndexDataset", "example {} is broken", i);
    const double noise = data::sample_rng().uniform();
    return {tensor({double(i), noise}), scalar_tensor(i % 3, kLong)};
  }
  mutable std::atomic<int64_t> calls{0};

 private:
  int64_t n_, fail_at_;
};

std::vector<Tensor> epoch_batches(data::DataLoader& loader) {
  std::vector<Tensor> out;
  for (data::Batch& b : loader) out.push_back(cat({b.data.flatten(), b.target.to(kDouble)}));
  return out;
}

bool same_batches(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST(DataLoader, BatchesInOrderWithoutShuffle) {
  data::DataLoader loader(std::make_shared<IndexDataset>(10),
                          data::DataLoaderOptions().batch_size(4));
  EXPECT_EQ(loader.size(), 3);
  std::vector<int64_t> sizes, firsts;
  for (data::Batch& b : loader) {
    EXPECT_EQ(b.data.size(1), 2);
    EXPECT_EQ(b.target.dtype(), kLong);
    sizes.push_back(b.data.size(0));
    firsts.push_back(static_cast<int64_t>(value_at(b.data, {0, 0})));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 4, 8}));
  data::DataLoader dropping(std::make_shared<IndexDataset>(10),
                            data::DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_EQ(dropping.size(), 2);
  EXPECT_EQ(epoch_batches(dropping).size(), 2u);
  // An empty dataset gives an empty epoch.
  data::DataLoader empty_loader(std::make_shared<IndexDataset>(0));
  EXPECT_EQ(epoch_batches(empty_loader).size(), 0u);
  EXPECT_THROW_MSG(
      data::DataLoader(std::make_shared<IndexDataset>(3), data::DataLoaderOptions().batch_size(0)),
      ValueError, "batch_size must be >= 1, but got 0");
  EXPECT_THROW_MSG(data::DataLoader(std::make_shared<IndexDataset>(3),
                                    data::DataLoaderOptions().num_workers(-1)),
                   ValueError, "num_workers must be >= 0, but got -1");
}

TEST(DataLoader, ASeedFixesTheOrderAndEveryWorkerCountGivesTheSameBatches) {
  auto options = [](uint64_t seed, int64_t workers) {
    return data::DataLoaderOptions().batch_size(5).shuffle(true).seed(seed).num_workers(workers);
  };
  auto dataset = std::make_shared<IndexDataset>(23);
  data::DataLoader a(dataset, options(1, 0));
  const std::vector<Tensor> e0 = epoch_batches(a), e1 = epoch_batches(a);
  EXPECT_FALSE(same_batches(e0, e1));  // each epoch has its own order
  // Every index once per epoch.
  std::vector<double> seen;
  for (const Tensor& b : e0)
    for (int64_t i = 0; i < b.numel() / 3; ++i) seen.push_back(value_at(b, {2 * i}));
  std::sort(seen.begin(), seen.end());
  for (int i = 0; i < 23; ++i) EXPECT_EQ(seen[i], i);
  for (int64_t workers : {1, 2, 3, 8}) {
    SCOPED_TRACE(workers);
    data::DataLoader w(dataset, options(1, workers));
    EXPECT_TRUE(same_batches(epoch_batches(w), e0));
    EXPECT_TRUE(same_batches(epoch_batches(w), e1));
  }
  data::DataLoader other(dataset, options(2, 2));
  EXPECT_FALSE(same_batches(epoch_batches(other), e0));
  // set_epoch replays an epoch: what a resumed run needs.
  data::DataLoader resumed(dataset, options(1, 2));
  resumed.set_epoch(1);
  EXPECT_TRUE(same_batches(epoch_batches(resumed), e1));
  EXPECT_EQ(resumed.epoch(), 2);
}

TEST(DataLoader, WorkersStayWithinThePrefetchWindowAndStopWhenTheLoopBreaks) {
  auto dataset = std::make_shared<IndexDataset>(1000);
  data::DataLoader loader(
      dataset, data::DataLoaderOptions().batch_size(4).num_workers(3).prefetch_factor(2));
  const auto start = std::chrono::steady_clock::now();
  int taken = 0;
  for (data::Batch& b : loader) {
    (void)b;
    if (++taken == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      // Batch 1 is taken: workers may build batches up to 1 + 3 * 2, no further.
      EXPECT_LE(dataset->calls.load(), 4 * (2 + 3 * 2));
      break;
    }
  }
  // Leaving the loop joined the workers: nothing is built afterwards.
  const int64_t calls = dataset->calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(dataset->calls.load(), calls);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(DataLoader, AnExampleThatThrowsRaisesAtItsBatch) {
  for (int64_t workers : {0, 2}) {
    SCOPED_TRACE(workers);
    data::DataLoader loader(std::make_shared<IndexDataset>(20, 9),
                            data::DataLoaderOptions().batch_size(4).num_workers(workers));
    int batches = 0;
    try {
      for (data::Batch& b : loader) {
        (void)b;
        ++batches;
      }
      ADD_FAILURE() << "expected the broken example to raise";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("example 9 is broken"), std::string::npos);
    }
    EXPECT_EQ(batches, 2);  // batches 0 and 1 arrive; batch 2 holds example 9
  }
}

TEST(DataLoader, LoadsFashionMnistWithTransformsThroughWorkers) {
  data::TensorDataset test =
      data::mnist(data::kFashionMnistDir, false,
                  tf::Compose({tf::RandomCrop(28, 2), tf::RandomHorizontalFlip(), tf::ToTensor(),
                               tf::Normalize({0.2860}, {0.3530})}));
  data::DataLoader loader(test.slice(0, 300),
                          data::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2));
  int64_t n = 0;
  for (data::Batch& b : loader) {
    EXPECT_EQ(b.data.dtype(), kFloat);
    EXPECT_EQ(b.data.sizes().slice(1, 3), IntArrayRef({1, 28, 28}));
    n += b.data.size(0);
  }
  EXPECT_EQ(n, 300);
}

// ---- text (data/text.h) -----------------------------------------------------------------------

TEST(Text, CorpusIsTheFilesInNameOrderWithoutExcludedOnes) {
  const std::string dir = temp_dir("corpus");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/sub");
  write_file(dir + "/b", "second\n");
  write_file(dir + "/a", "first\n");
  write_file(dir + "/a.dat", "index");
  write_file(dir + "/sub/c", "not read");
  std::filesystem::create_symlink("a", dir + "/a.u8");
  std::filesystem::create_symlink("b", dir + "/z");  // a link to a file is read
  EXPECT_EQ(data::read_text_corpus(dir), "first\nsecond\nsecond\n");
  EXPECT_EQ(data::read_text_corpus(dir, {".dat", ".u8", "z"}), "first\nsecond\n");
  EXPECT_THROW_MSG(data::read_text_corpus(dir + "/missing"), ValueError, "cannot open the folder");
  EXPECT_THROW_MSG(data::read_text_corpus(dir + "/sub", {"c"}), ValueError, "no text file");
}

// The corpus of the transformer example: Debian's fortunes (scripts/setup.sh installs it).
TEST(Text, FortunesCorpusHasItsKnownSizeAndAlphabet) {
  const std::string text = data::read_text_corpus(data::kFortunesDir);
  EXPECT_EQ(text.size(), 2576674u);
  const auto tok = data::CharTokenizer::from_text(text);
  EXPECT_EQ(tok.vocab_size(), 113);
  const Tensor ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids.narrow(0, 0, 2000)),
            tok.decode(tok.encode(tok.decode(ids.narrow(0, 0, 2000)))));
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(Text, CharTokenizerRoundTripsUnicodeAndNamesBadInput) {
  const std::string text = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80!";  // héllo € 😀!
  const auto tok = data::CharTokenizer::from_text(text);
  EXPECT_EQ(tok.vocab_size(), 8);  // ' ', '!', 'h', 'l', 'o', 'é', '€', '😀'
  EXPECT_EQ(tok.vocab().front(), U' ');
  EXPECT_EQ(tok.vocab().back(), U'\U0001F600');
  const Tensor ids = tok.encode(text);
  EXPECT_EQ(ids.dtype(), kLong);
  EXPECT_EQ(ids.numel(), 10);
  EXPECT_EQ(ids.select(0, 1).item<int64_t>(), 5);  // é
  EXPECT_EQ(tok.decode(ids), text);
  // The vocabulary travels as a tensor of code points (a checkpoint's entry).
  const auto back = data::CharTokenizer::from_tensor(tok.to_tensor());
  EXPECT_EQ(back.vocab(), tok.vocab());
  EXPECT_EQ(back.decode(ids), text);
  EXPECT_THROW_MSG(tok.encode("hx"), ValueError, "character U+0078 (character 1 of the text)");
  EXPECT_THROW_MSG(tok.encode("h\xc3"), ValueError, "not UTF-8 at byte 1");
  EXPECT_THROW_MSG(tok.encode("\xc0\xaf"), ValueError, "not UTF-8 at byte 0");  // overlong '/'
  EXPECT_THROW_MSG(tok.decode(tensor(std::vector<int64_t>{0, 8})), ValueError,
                   "id 8 at position 1 is outside the vocabulary [0, 8)");
  EXPECT_THROW_MSG(data::CharTokenizer({U'a', U'b', U'a'}), ValueError,
                   "U+0061 is in the vocabulary twice");
}

TEST(Text, SplitAndRandomWindows) {
  const Tensor tokens = arange(1000, kLong);
  const auto [train, val] = data::split_tokens(tokens, 0.1);
  EXPECT_EQ(train.numel(), 900);
  EXPECT_EQ(val.numel(), 100);
  EXPECT_EQ(val.select(0, 0).item<int64_t>(), 900);
  EXPECT_THROW_MSG(data::split_tokens(tokens, 1.0), ValueError, "validation_fraction");
  data::TextWindows windows(train, 16);
  manual_seed(3);
  const auto [x, y] = windows.batch(32);
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{32, 16}));
  // Consecutive tokens (the tokens are their positions), targets one later, within the split.
  EXPECT_EQ((y - x != 1).sum().item<int64_t>(), 0);
  EXPECT_EQ((x.narrow(1, 1, 15) - x.narrow(1, 0, 15) != 1).sum().item<int64_t>(), 0);
  EXPECT_LE(y.max().item<int64_t>(), 899);
  EXPECT_GE(x.min().item<int64_t>(), 0);
  // Seeded: the same windows again.
  manual_seed(3);
  EXPECT_EQ((windows.batch(32).first != x).sum().item<int64_t>(), 0);
  // Starts cover the whole range [0, 883] (20,000 seeded draws of 884 starts).
  const Tensor starts = windows.batch(20000).first.select(1, 0);
  EXPECT_EQ(starts.max().item<int64_t>(), 900 - 16 - 1);
  EXPECT_EQ(starts.min().item<int64_t>(), 0);
  EXPECT_THROW_MSG(data::TextWindows(arange(16, kLong), 16), ValueError,
                   "16 tokens are too few for windows of 16");
  EXPECT_THROW_MSG(data::TextWindows(arange(100, kFloat), 4), ValueError, "1-D int64");
  EXPECT_THROW_MSG(windows.batch(0), ValueError, "batch_size must be positive");
}
