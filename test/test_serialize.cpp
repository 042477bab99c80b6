// Checkpoints in the safetensors format: round trips of every dtype and shape, the exact bytes
// of a small file (what Python's safetensors writes and reads), a model + optimizer + scaler
// checkpoint that resumes training exactly, every kind of bad file, and a seeded fuzz test.
#include <cstdio>
#include <fstream>
#include <random>

#include "test_util.h"

#include <xten/amp/grad_scaler.h>
#include <xten/nn/modules.h>
#include <xten/optim/lr_scheduler.h>
#include <xten/optim/optimizer.h>
#include <xten/serialize/serialize.h>

using namespace xten;
using namespace xten::testing;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "xten_" + name + ".safetensors";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file from a header text and data bytes.
std::string file_of(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  return s + header + data;
}

}  // namespace

TEST(Serialize, RoundTripsEveryDtypeAndShape) {
  manual_seed(20);
  NamedTensorList saved;
  for (ScalarType t : all_dtypes())
    saved.emplace_back(std::string("t_") + to_string(t), random_tensor({3, 4}, t, -5, 5));
  saved.emplace_back("scalar", full({}, 3.5));
  saved.emplace_back("empty", zeros({0, 3}));
  saved.emplace_back("strided", randn({4, 6}).t());  // written contiguous
  const std::string path = temp_path("roundtrip");
  save(saved, path, {{"format", "pt"}});
  const NamedTensorList loaded = load(path);
  ASSERT_EQ(loaded.size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(loaded[i].first, saved[i].first);
    EXPECT_EQ(loaded[i].second.dtype(), saved[i].second.dtype());
    EXPECT_TRUE(same_bytes(loaded[i].second, saved[i].second.contiguous())) << saved[i].first;
  }
  EXPECT_EQ(load_metadata(path), (Metadata{{"format", "pt"}}));
  save(std::vector<Tensor>{ones({2}), arange(3, kLong)}, path);
  const std::vector<Tensor> list = load_tensors(path);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_TRUE(same_bytes(list[1], arange(3, kLong)));
  save(full({2, 2}, 7), path);
  EXPECT_TRUE(same_bytes(load_tensor(path), full({2, 2}, 7)));
  std::remove(path.c_str());
}

TEST(Serialize, TheBytesAreSafetensors) {
  const std::string path = temp_path("bytes");
  save(NamedTensorList{{"a", tensor({1.0f, 2.0f})}, {"b", tensor({int64_t{3}})}}, path);
  const std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  const std::string header = R"({"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},)"
                             R"("b":{"data_offsets":[8,16],"dtype":"I64","shape":[1]}})";
  EXPECT_EQ(n % 8, 0u);  // the data starts 8-byte aligned
  EXPECT_EQ(bytes.substr(8, header.size()), header);
  EXPECT_EQ(bytes.size(), 8 + n + 16);
  float a[2];
  std::memcpy(a, bytes.data() + 8 + n, 8);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[1], 2.0f);
  // and a file written by hand the way Python's safetensors writes it loads
  write_bytes(
      path,
      file_of(R"({"__metadata__":{"k":"v"},"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
              std::string("\x80\x3f\x00\x40", 4)));
  const NamedTensorList loaded = load(path);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].second.dtype(), kBFloat16);
  EXPECT_TRUE(allclose(loaded[0].second.to(kFloat), tensor({1.0f, 2.0f}), 0, 0));
  std::remove(path.c_str());
}

TEST(Serialize, ACheckpointResumesTrainingExactly) {
  auto make = [] {
    manual_seed(21);
    return nn::Sequential(nn::Linear(4, 8), nn::BatchNorm1d(8), nn::ReLU(), nn::Linear(8, 3));
  };
  manual_seed(22);
  const Tensor x = randn({16, 4}), y = tensor({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0});
  nn::CrossEntropyLoss loss_fn;
  auto train = [&](nn::Sequential& m, optim::Optimizer& o, amp::GradScaler& s,
                   optim::LRScheduler& sched, int steps) {
    for (int i = 0; i < steps; ++i) {
      o.zero_grad();
      s.scale(loss_fn(m(x), y)).backward();
      s.step(o);
      s.update();
      sched.step();
    }
  };
  nn::Sequential a = make();
  optim::SGD oa(a->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler sa(amp::GradScalerOptions().init_scale(256).growth_interval(2));
  optim::StepLR la(oa, 2, 0.5);
  train(a, oa, sa, la, 6);

  nn::Sequential b = make();
  optim::SGD ob(b->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler sb(amp::GradScalerOptions().init_scale(256).growth_interval(2));
  optim::StepLR lb(ob, 2, 0.5);
  train(b, ob, sb, lb, 3);
  NamedTensorList all = b->state_dict();
  for (auto& e : with_prefix("optimizer.", ob.state_dict())) all.push_back(e);
  for (auto& e : with_prefix("scaler.", sb.state_dict())) all.push_back(e);
  for (auto& e : with_prefix("scheduler.", lb.state_dict())) all.push_back(e);
  const std::string path = temp_path("checkpoint");
  save(all, path, {{"step", "3"}});

  nn::Sequential c = make();
  optim::SGD oc(c->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler sc;
  optim::StepLR lc(oc, 2, 0.5);
  const NamedTensorList back = load(path);
  NamedTensorList model_part;
  for (const auto& e : back)
    if (e.first.find("optimizer.") != 0 && e.first.find("scaler.") != 0 &&
        e.first.find("scheduler.") != 0)
      model_part.push_back(e);
  c->load_state_dict(model_part);
  oc.load_state_dict(under_prefix("optimizer.", back));
  sc.load_state_dict(under_prefix("scaler.", back));
  lc.load_state_dict(under_prefix("scheduler.", back));
  EXPECT_EQ(sc.get_scale(), sb.get_scale());
  EXPECT_EQ(lc.last_epoch(), 3);
  EXPECT_EQ(oc.lr(0), ob.lr(0));
  train(c, oc, sc, lc, 3);
  EXPECT_EQ(oc.lr(0), oa.lr(0));
  const auto pa = a->parameters(), pc = c->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(allclose(pc[i], pa[i], 0, 0)) << i;
  EXPECT_EQ(load_metadata(path).at("step"), "3");
  std::remove(path.c_str());
}

TEST(Serialize, BadFilesRaiseNamingTheFile) {
  const std::string path = temp_path("bad");
  const std::string good_header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\0');
  auto expect_bad = [&](const std::string& bytes, const std::string& needle) {
    write_bytes(path, bytes);
    EXPECT_THROW_MSG(load(path), ValueError, needle);
  };
  expect_bad("abc", "shorter than the 8-byte header size");
  expect_bad(file_of(good_header, data).substr(0, 8) + "{", "exceeds the file");
  expect_bad(file_of(good_header, data.substr(0, 4)), "outside the data");  // truncated data
  expect_bad(file_of(R"({"x": [1, 2)", data), "not a JSON object");
  expect_bad(file_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", data),
             "outside the data");
  expect_bad(file_of(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                     data),
             "overlap");
  expect_bad(file_of(R"({"x":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data),
             "unknown dtype");
  expect_bad(file_of(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
             "8 bytes for shape [3] of F32");
  expect_bad(file_of(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", data),
             "bad shape");
  expect_bad(file_of(R"({"x":{"dtype":"F32","shape":[2]}})", data),
             "lacks dtype, shape or data_offsets");
  expect_bad(
      file_of(
          R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})",
          data),
      "overflows");
  EXPECT_THROW_MSG(load(temp_path("does_not_exist")), ValueError, "cannot open");
  std::remove(path.c_str());
}

TEST(Serialize, FuzzedFilesLoadOrRaiseValueError) {
  const std::string path = temp_path("fuzz");
  save(NamedTensorList{{"w", randn({3, 5})}, {"i", arange(4, kLong)}, {"h", ones({2}, kHalf)}},
       path, {{"k", "v"}});
  const std::string valid = read_bytes(path);
  std::mt19937_64 rng(1234);
  int loaded = 0, rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = valid;
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {  // truncate
      bytes.resize(rng() % bytes.size());
    } else {  // flip 1-4 bytes, mostly in the header
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        const size_t at =
            kind == 1 ? rng() % std::min<size_t>(bytes.size(), 8) : rng() % bytes.size();
        bytes[at] = static_cast<char>(rng() & 0xff);
      }
    }
    write_bytes(path, bytes);
    try {
      load(path);
      ++loaded;
    } catch (const ValueError&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": " << e.what();
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(loaded, 10);  // flips in the data leave a valid file
  std::remove(path.c_str());
}
