// Joining and indexing ops.
#include <numeric>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

TEST(Index, IndexSelectGatherScatter) {
  manual_seed(70);
  for (ScalarType t : all_dtypes()) {
    Tensor a = random_tensor({4, 5}, t, -9, 9);
    Tensor idx = tensor(std::vector<int64_t>{3, 0, -1, 3});
    Tensor s = index_select(a, 0, idx);
    expect_elements(
        s,
        [&](auto& i) {
          const int64_t r[] = {3, 0, 3, 3};
          return value_at(a, {r[i[0]], i[1]});
        },
        "index_select");
    Tensor s1 = index_select(a.t(), 1, tensor({1, 2}));  // non-contiguous self, dim 1
    expect_elements(
        s1,
        [&](auto& i) {
          return value_at(a, {1 + i[1], i[0]});
        },
        "index_select dim 1");
    Tensor g_idx =
        tensor(std::vector<int64_t>{0, 4, 2, 1, 3, 0}, IntArrayRef{3, 2});  // distinct per row
    Tensor g = gather(a, 1, g_idx);
    expect_elements(
        g,
        [&](auto& i) {
          return value_at(a, {i[0], static_cast<int64_t>(value_at(g_idx, i))});
        },
        "gather");
    Tensor src = random_tensor({3, 2}, t, -9, 9);
    Tensor sc = scatter(a, 1, g_idx, src);
    for_each_index(g_idx.sizes(), [&](const std::vector<int64_t>& i) {
      EXPECT_EQ(value_at(sc, {i[0], static_cast<int64_t>(value_at(g_idx, i))}), value_at(src, i));
    });
  }
  Tensor z = zeros({3});
  Tensor sa = scatter_add(z, 0, tensor({0, 0, 2, 0}).to(kLong), tensor({1.f, 2.f, 3.f, 4.f}));
  EXPECT_EQ(sa.select(0, 0).item<float>(), 7.f);  // repeated indices add up
  EXPECT_EQ(sa.select(0, 2).item<float>(), 3.f);
  EXPECT_EQ(scatter(z, 0, tensor({1}).to(kLong), 5).select(0, 1).item<float>(), 5.f);
  // An empty index is checked too (found by the op fuzzer, seed 2109755: its gradient for src
  // had the index's shape (5, 0), not src's (4, 0)).
  EXPECT_THROW_MSG(scatter_add(zeros({4, 0}), 0, zeros({5, 0}, kLong), zeros({4, 0})), ValueError,
                   "[scatter_add] index (5, 0) is larger than src (4, 0) at dim 0");
  EXPECT_EQ(scatter_add(zeros({4, 0}), 0, zeros({3, 0}, kLong), zeros({4, 0})).sizes(),
            IntArrayRef({4, 0}));
  // src's dims are checked too (seed 2617286: an empty 4-D src was read as 1-D).
  EXPECT_THROW_MSG(scatter(zeros({5}), -1, zeros({1}, kLong), zeros({2, 0, 4, 2})), ValueError,
                   "[scatter] src (4-D) must have as many dims as self (1-D)");
  // Every dim of a 3-D scatter_add with repeated indices, index smaller than self and a
  // non-contiguous src, on several threads (lines along the dim run in parallel): against
  // sums in double.
  for (int64_t d = 0; d < 3; ++d) {
    SCOPED_TRACE(d);
    manual_seed(17 + d);
    const DimVector self_shape{6, 40, 5};
    DimVector idx_shape{5, 37, 4};
    Tensor base = randn(self_shape, kDouble);
    Tensor index = randint(0, self_shape[d], idx_shape);
    Tensor src3 = randn({4, 37, 5}, kDouble).permute({2, 1, 0});  // [5, 37, 4]
    const int threads = get_num_threads();
    set_num_threads(4);
    Tensor r = scatter_add(base, d, index, src3);
    set_num_threads(threads);
    Tensor ref = base.clone();
    for_each_index(index.sizes(), [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> o = i;
      o[d] = static_cast<int64_t>(value_at(index, i));
      Tensor cell = ref.select(0, o[0]).select(0, o[1]).select(0, o[2]);
      cell.fill_(cell.item<double>() + value_at(src3, i));
    });
    EXPECT_TRUE(allclose(r, ref, 1e-12, 1e-12));
  }
  EXPECT_THROW_MSG(index_select(z, 0, tensor({3}).to(kLong)), IndexError,
                   "[index_select] index 3 is out of range for dim 0 of size 3");
  EXPECT_THROW_MSG(index_select(z, 0, tensor({0.f})), TypeError,
                   "expected an int64 or int32 index tensor, but got Float");
  EXPECT_THROW_MSG(
      gather(ones({2, 2}), 1, tensor(std::vector<int64_t>{0, 2, 1, 1}, IntArrayRef{2, 2})),
      IndexError, "[gather] index 2 is out of range for dim 1 of size 2");
  EXPECT_THROW_MSG(gather(ones({2, 2}), 0, zeros({2}, kLong)), ValueError,
                   "index (1-D) must have as many dims as self (2-D)");
}

// index_select checks each index as its row is copied, on the threads (Note [Index checks in
// the copy], kernels/cpu/index.cpp): the error still names the first bad index in order, also
// when later threads meet bad ones first or rows repeat over outer dims; negatives wrap; an
// index is checked when there is no row to copy.
TEST(Index, IndexSelectChecksEachIndexOnTheThreads) {
  const Tensor table = arange(4 * 8192, kFloat).reshape({8192, 4});
  Tensor idx = randint(8192, {100000});
  const Tensor rows = index_select(table, 0, idx);
  EXPECT_TRUE(allclose(rows.select(1, 0), idx.to(kFloat) * 4, 0, 0));
  idx.narrow(0, 99990, 1).fill_(-8193);
  idx.narrow(0, 30000, 1).fill_(8192);
  idx.narrow(0, 50001, 1).fill_(10000);
  EXPECT_THROW_MSG(index_select(table, 0, idx), IndexError,
                   "[index_select] index 8192 is out of range for dim 0 of size 8192");
  const Tensor neg = tensor(std::vector<int64_t>{-1, 0, -4, 2});
  const Tensor t3 = arange(2 * 4 * 3, kFloat).reshape({2, 4, 3});
  const Tensor picked = index_select(t3, 1, neg);
  EXPECT_TRUE(
      allclose(picked, index_select(t3, 1, tensor(std::vector<int64_t>{3, 0, 0, 2})), 0, 0));
  EXPECT_EQ(picked.select(0, 1).select(0, 0).select(0, 0).item<float>(), 12 + 9);
  EXPECT_THROW_MSG(index_select(t3, 1, tensor(std::vector<int64_t>{1, 5, -5})), IndexError,
                   "[index_select] index 5 is out of range for dim 1 of size 4");
  EXPECT_THROW_MSG(index_select(zeros({0, 4}), 1, tensor(std::vector<int64_t>{4})), IndexError,
                   "[index_select] index 4 is out of range for dim 1 of size 4");
  EXPECT_EQ(index_select(zeros({0, 4}), 1, tensor(std::vector<int64_t>{3, -4})).sizes(),
            IntArrayRef({0, 2}));
  // Rows of 1, 2, 4, 8, 16 bytes are copied as constants, others by size: every kind.
  for (ScalarType t : {kBool, kBFloat16, kFloat, kLong})
    for (int64_t inner : {1, 2, 3}) {
      const Tensor x = arange(50 * inner, kLong).reshape({50, inner}).remainder(7).to(t);
      const Tensor at = randint(-50, 50, {300});
      const Tensor picked = index_select(x, 0, at);
      for (int64_t j = 0; j < 300; j += 37) {
        const int64_t i = at.select(0, j).item<int64_t>();
        EXPECT_TRUE(allclose(picked.select(0, j).to(kDouble),
                             x.select(0, i < 0 ? i + 50 : i).to(kDouble), 0, 0))
            << to_string(t) << " inner " << inner << " row " << j;
      }
    }
}

// An index that repeats one line along dim d (stride 0 elsewhere: the gradient of index_select
// and embedding) scatters whole rows (scatter_rows in kernels/cpu/index.cpp): the same values
// bit for bit as the element path on the index made contiguous, on 1 and 4 threads, every dim,
// adding and assigning, float, bfloat16 and int64.
TEST(Index, ScatterOfARepeatedLineMovesWholeRows) {
  manual_seed(18);
  const int threads = get_num_threads();
  for (ScalarType t : {kFloat, kBFloat16, kLong})
    for (int64_t d = 0; d < 3; ++d) {
      SCOPED_TRACE(::testing::Message() << to_string(t) << " dim " << d);
      const DimVector shape{6, 5, 4};
      DimVector line_shape{1, 1, 1}, idx_shape(shape);
      line_shape[d] = idx_shape[d] = 9;  // more picks than rows: duplicates
      const Tensor line = randint(0, shape[d], line_shape);
      const Tensor index = line.expand(idx_shape);
      const Tensor self = random_tensor(shape, t, -3, 3), src = random_tensor(idx_shape, t, -3, 3);
      for (bool add : {true, false}) {
        auto run = [&](const Tensor& i) {
          return add ? scatter_add(self, d, i, src) : scatter(self, d, i, src);
        };
        const Tensor want = run(index.contiguous());
        for (int n : {1, 4}) {
          set_num_threads(n);
          const Tensor got = run(index);
          set_num_threads(threads);
          EXPECT_TRUE(same_bytes(got, want)) << "add " << add << " threads " << n;
        }
      }
    }
  // A long index checked on several threads still names the first bad value in order.
  {
    Tensor big = zeros({200000}, kLong);
    big.select(0, 150000).fill_(7);
    big.select(0, 120000).fill_(-9);
    const int threads = get_num_threads();
    set_num_threads(4);
    EXPECT_THROW_MSG(gather(zeros({5}), 0, big), IndexError,
                     "[gather] index -9 is out of range for dim 0 of size 5");
    set_num_threads(threads);
  }
  // Range errors name the line's bad value, as the element path does.
  EXPECT_THROW_MSG(scatter_add(zeros({3, 2}), 0,
                               tensor(std::vector<int64_t>{0, 3}, IntArrayRef{2, 1}).expand({2, 2}),
                               ones({2, 2})),
                   IndexError, "[scatter_add] index 3 is out of range for dim 0 of size 3");
  // embedding's weight gradient: rows picked twice get both gradients.
  const Tensor w = randn({50, 16}).requires_grad_(true);
  const Tensor idx = tensor(std::vector<int64_t>{3, 7, 3, 49, 0, 3}, IntArrayRef{2, 3});
  const Tensor g = randn({2, 3, 16});
  (embedding(w, idx) * g).sum().backward();
  const Tensor gf = g.reshape({6, 16});
  EXPECT_TRUE(allclose(w.grad().select(0, 3), gf.select(0, 0) + gf.select(0, 2) + gf.select(0, 5),
                       1e-6, 1e-6));
  EXPECT_TRUE(allclose(w.grad().select(0, 49), gf.select(0, 3), 0, 0));
  EXPECT_EQ(w.grad().select(0, 1).abs().sum().item<float>(), 0.f);
}

// gather and scatter_add read an index whose values are all in [0, size) as they are, and
// wrap each one otherwise (Note [Indices read as they are]): with negative values mixed in, in
// int64 and int32, the results equal those of the wrapped index; a value out of range in the
// 8-wide part of the range check or in its tail is an IndexError, as is any index along a dim of
// size 0.
TEST(Index, GatherAndScatterAddWithNegativeIndices) {
  manual_seed(23);
  const Tensor x = randn({6, 300}), src = randn({6, 37});
  const Tensor idx = randint(-300, 300, {6, 37});
  const Tensor wrapped = where(lt(idx, 0), idx + 300, idx);
  ASSERT_GT(lt(idx, 0).sum().item<int64_t>(), 0);
  for (ScalarType t : {kLong, kInt}) {
    EXPECT_TRUE(same_bytes(gather(x, 1, idx.to(t)), gather(x, 1, wrapped))) << to_string(t);
    EXPECT_TRUE(same_bytes(scatter_add(zeros({6, 300}), 1, idx.to(t), src),
                           scatter_add(zeros({6, 300}), 1, wrapped, src)))
        << to_string(t);
  }
  // Along a dim of size 0 every index is out of range: raised before anything is read or written.
  EXPECT_THROW_MSG(gather(zeros({3, 0}), 1, zeros({3, 2}, kLong)), IndexError,
                   "[gather] index 0 is out of range for dim 1 of size 0");
  EXPECT_THROW_MSG(scatter_add(zeros({3, 0}), 1, zeros({3, 2}, kLong), ones({3, 2})), IndexError,
                   "[scatter_add] index 0 is out of range for dim 1 of size 0");
  for (int64_t at : {int64_t{9}, int64_t{6 * 37 - 1}}) {  // in a vector of 8, in the tail
    Tensor bad = wrapped.clone();
    bad.view({-1}).select(0, at).fill_(300);
    EXPECT_THROW_MSG(gather(x, 1, bad), IndexError,
                     "[gather] index 300 is out of range for dim 1 of size 300");
    EXPECT_THROW_MSG(scatter_add(zeros({6, 300}), 1, bad, src), IndexError,
                     "[scatter_add] index 300 is out of range for dim 1 of size 300");
  }
}

// index_put_'s rows (embedding's and index_select's gradients along dim 0) at 1, 3 and 8 threads:
// tasks own blocks of destination rows, so rows picked many times get the same sums bit for bit,
// equal to scatter_add's of the expanded index; without accumulate the last write wins.
TEST(Index, IndexPutRowsInSerialOrderAtAnyThreadCount) {
  manual_seed(31);
  const Tensor idx = randint(500, {6000}), g = randn({6000, 40});
  const Tensor expanded = idx.reshape({6000, 1}).expand({6000, 40});
  const Tensor by_scatter = scatter_add(zeros({500, 40}), 0, expanded, g);
  const int threads = get_num_threads();
  for (int th : {1, 3, 8}) {
    set_num_threads(th);
    Tensor acc = zeros({500, 40});
    acc.index_put_({idx}, g, true);
    EXPECT_TRUE(same_bytes(acc, by_scatter)) << th << " threads";
    Tensor last = zeros({500, 40});
    last.index_put_({idx}, g, false);
    std::vector<int64_t> last_j(500, -1);  // the last j that names each row
    for (int64_t j = 0; j < 6000; ++j) last_j[idx.data_ptr<int64_t>()[j]] = j;
    for (int64_t r = 0; r < 500; r += 37) {
      if (last_j[r] >= 0) {
        EXPECT_TRUE(same_bytes(last.select(0, r), g.select(0, last_j[r])));
      }
    }
    const Tensor w = randn({500, 40}).requires_grad_(true);
    embedding(w, idx).backward(g);
    EXPECT_TRUE(same_bytes(w.grad(), by_scatter)) << "embedding's gradient, " << th;
  }
  set_num_threads(threads);
}

// gather along every dim of contiguous and transposed inputs, against element-wise picks.
TEST(Index, GatherAlongEveryDimOfStridedInputs) {
  manual_seed(19);
  for (bool transposed : {false, true})
    for (int64_t d = 0; d < 3; ++d) {
      const Tensor base = randn({7, 8, 9});
      const Tensor self = transposed ? base.transpose(0, 2) : base;
      DimVector idx_shape(self.sizes());
      idx_shape[d] = 11;
      idx_shape[(d + 1) % 3] -= 2;  // smaller than self in another dim
      const Tensor index = randint(0, self.size(d), idx_shape);
      const Tensor got = gather(self, d, index);
      expect_elements(
          got,
          [&](const std::vector<int64_t>& i) {
            std::vector<int64_t> at = i;
            at[d] = static_cast<int64_t>(value_at(index, i));
            return value_at(self, at);
          },
          "gather", 0.0);
    }
}

// cat's one-pass kernel (contiguous parts of the output's dtype) against each part's slice, along
// every dim, with 16-bit and 8-byte elements, a part of zero size along dim and an empty output;
// and the copy per part that other layouts and dtypes take.
TEST(Index, CatOfContiguousPartsIsOnePassOverRows) {
  manual_seed(40);
  for (ScalarType t : {kFloat, kBFloat16, kLong, kBool}) {
    const Tensor a = random_tensor({3, 4, 5}, t), b = random_tensor({3, 2, 5}, t),
                 z = empty({3, 0, 5}, t);
    const Tensor c = cat({a, z, b, a}, 1);
    ASSERT_EQ(c.sizes(), IntArrayRef({3, 10, 5}));
    EXPECT_TRUE(same_bytes(c.narrow(1, 0, 4).contiguous(), a)) << to_string(t);
    EXPECT_TRUE(same_bytes(c.narrow(1, 4, 2).contiguous(), b)) << to_string(t);
    EXPECT_TRUE(same_bytes(c.narrow(1, 6, 4).contiguous(), a)) << to_string(t);
    for (int64_t d : {0, 2, -1}) {
      const Tensor p = random_tensor({3, 4, 5}, t);
      const Tensor q = cat({p, a}, d);
      EXPECT_TRUE(same_bytes(q.narrow(d, 0, p.size(d)).contiguous(), p)) << d;
      EXPECT_TRUE(same_bytes(q.narrow(d, p.size(d), a.size(d)).contiguous(), a)) << d;
    }
  }
  // Other layouts and mixed dtypes: the copy per part, the same values.
  const Tensor x = randn({4, 6}), y = randn({6, 4}).t();
  EXPECT_TRUE(same_bytes(cat({x, y}, 0), cat({x, y.contiguous()}, 0)));
  const Tensor xi = arange(24).reshape({4, 6}).to(kInt);
  EXPECT_TRUE(same_bytes(cat({x, xi}, 1).narrow(1, 6, 6).contiguous(), xi.to(kFloat)));
  EXPECT_EQ(cat({empty({0, 3}), empty({0, 3})}, 1).sizes(), IntArrayRef({0, 6}));
  // Long rows cut among threads.
  const Tensor big = randn({64, 3000});
  EXPECT_TRUE(same_bytes(cat({big, big}, 1).narrow(1, 3000, 3000).contiguous(), big));
}

TEST(Index, CatStackAndShapes) {
  Tensor a = arange(6).reshape({2, 3}), b = arange(3).reshape({1, 3}).to(kInt);
  Tensor c = cat({a, b}, 0);
  EXPECT_EQ(c.sizes(), IntArrayRef({3, 3}));
  EXPECT_EQ(c.dtype(), kLong);  // promoted
  EXPECT_EQ(c.select(0, 2).sum().item<int64_t>(), 3);
  EXPECT_EQ(cat({a, a.t().t()}, -1).sizes(), IntArrayRef({2, 6}));
  EXPECT_EQ(cat({a, empty({0})}).sizes(), a.sizes());  // 1-D empty skipped
  EXPECT_EQ(stack({a, a, a}, 1).sizes(), IntArrayRef({2, 3, 3}));
  EXPECT_EQ(stack({a, a}, -1).select(-1, 1).sum().item<int64_t>(), 15);
  EXPECT_THROW_MSG(cat({a, ones({2, 2})}, 0), ValueError,
                   "sizes must match except in dim 0: tensor 0 has (2, 3), tensor 1 has (2, 2)");
  EXPECT_THROW_MSG(cat({}), ValueError, "[cat] expected a non-empty list of tensors");
  EXPECT_THROW_MSG(stack({a, ones({3, 2})}), ValueError, "all tensors must have the same shape");
  EXPECT_EQ(repeat(tensor({1, 2}), {2, 3}).sizes(), IntArrayRef({2, 6}));
  expect_elements(
      repeat(tensor({1, 2}), {2, 3}), [](auto& i) { return 1.0 + i[1] % 2; }, "repeat");
  expect_elements(
      flip(a, {0, 1}),
      [&](auto& i) {
        return value_at(a, {1 - i[0], 2 - i[1]});
      },
      "flip");
  expect_elements(
      roll(a, {1}, {1}),
      [&](auto& i) {
        return value_at(a, {i[0], (i[1] + 2) % 3});
      },
      "roll");
  expect_elements(
      roll(a, {-2}), [&](auto& i) { return double((i[0] * 3 + i[1] + 2) % 6); }, "roll flat");
  expect_elements(
      tril(ones({3, 4})), [](auto& i) { return i[1] <= i[0] ? 1.0 : 0.0; }, "tril");
  expect_elements(
      triu(ones({2, 3, 4}), 1), [](auto& i) { return i[2] >= i[1] + 1 ? 1.0 : 0.0; }, "triu");
  EXPECT_THROW_MSG(tril(ones({3})), ValueError, "[tril] expected a tensor with at least 2 dims");
}

// nonzero and masked_select over several chunks (Note [Selecting in chunks] in
// kernels/cpu/index.cpp: 65,536 elements each, written in parallel) against a walk of the
// elements in order: the rows of each chunk land after those of the one before, a chunk that
// ends in rejected elements does not write into the next one's rows; NaN is nonzero; every
// element size; the empty and 0-d cases.
TEST(Index, NonzeroAndMaskedSelectOverChunks) {
  manual_seed(7);
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{70, 50, 40}, {200000}, {3, 65536}, {0, 5}}) {
    Tensor x = (rand(shape) < 0.3).to(kFloat) * randn(shape);
    const int64_t n = x.numel();
    if (n > 10) x.view({-1}).narrow(0, 5, 1).fill_(NAN);
    // The last chunk's tail rejected, so a chunk's stores would run on if not stopped.
    if (n > 65536) x.view({-1}).narrow(0, 65536 - 100, 100).zero_();
    const Tensor nz = nonzero(x);
    const Tensor xc = x.contiguous();
    const float* p = xc.data_ptr<float>();
    std::vector<int64_t> want, at(shape.size());
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] == 0.0f) continue;
      for (int64_t k = x.dim() - 1, rest = i; k >= 0; --k) {
        at[k] = rest % shape[k];
        rest /= shape[k];
      }
      want.insert(want.end(), at.begin(), at.end());
    }
    ASSERT_EQ(nz.sizes(), IntArrayRef({static_cast<int64_t>(want.size()) / x.dim(), x.dim()}));
    EXPECT_TRUE(std::equal(want.begin(), want.end(), nz.data_ptr<int64_t>())) << x.sizes();
    const Tensor m = x != 0;
    for (ScalarType t : {kBool, kHalf, kFloat, kDouble}) {
      const Tensor src = arange(n, kDouble).reshape(shape).to(t);
      const Tensor got = masked_select(src, m);
      const Tensor gd = got.to(kDouble), sd = src.to(kDouble).contiguous();
      const bool* mp = m.contiguous().data_ptr<bool>();
      int64_t j = 0, bad = 0;
      for (int64_t i = 0; i < n; ++i)
        if (mp[i]) bad += gd.data_ptr<double>()[j++] != sd.data_ptr<double>()[i];
      EXPECT_EQ(j, got.numel()) << to_string(t);
      EXPECT_EQ(bad, 0) << to_string(t);
    }
  }
  EXPECT_EQ(nonzero(full({}, 2.0)).sizes(), IntArrayRef({1, 0}));
  EXPECT_EQ(nonzero(full({}, 0.0)).sizes(), IntArrayRef({0, 0}));
}

TEST(Index, MaskedAndAdvanced) {
  Tensor a = arange(12, kFloat).reshape({3, 4});
  Tensor m = a.gt(6);
  EXPECT_EQ(masked_select(a, m).sizes(), IntArrayRef({5}));
  EXPECT_EQ(masked_select(a, m).sum().item<float>(), 7 + 8 + 9 + 10 + 11.f);
  EXPECT_EQ(masked_fill(a, m, -1).sum().item<float>(), 21 - 5.f);
  EXPECT_EQ(masked_fill(arange(4), arange(4) > 1, 2.7).dtype(), kLong);  // keeps self's dtype
  EXPECT_THROW_MSG(masked_fill(a, ones({3, 4}), 0), TypeError,
                   "[masked_fill] expected a bool mask, but got Float");
  Tensor nz = nonzero(tensor({0, 3, 0, 5}, IntArrayRef{2, 2}));
  EXPECT_EQ(nz.sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(nz.select(0, 1).select(0, 0).item<int64_t>(), 1);
  // Advanced indexing: rows and columns broadcast together, a bool mask.
  Tensor rows = tensor(std::vector<int64_t>{0, 2, 2}),
         cols = tensor(std::vector<int64_t>{1, 3, -1});
  Tensor picked = index(a, {rows, cols});
  EXPECT_EQ(picked.sizes(), IntArrayRef({3}));
  EXPECT_EQ(picked.sum().item<float>(), 1 + 11 + 11.f);
  EXPECT_EQ(index(a, {rows}).sizes(), IntArrayRef({3, 4}));
  EXPECT_EQ(index(a, {m}).sum().item<float>(), 45.f);
  Tensor b = zeros({3, 4});
  index_put_(b, {rows, cols}, full({}, 1.0));
  EXPECT_EQ(b.sum().item<float>(), 2.f);  // (2, 3) written twice
  index_put_(b, {rows, cols}, ones({3}), /*accumulate=*/true);
  EXPECT_EQ(b.select(0, 2).select(0, 3).item<float>(), 3.f);
  Tensor bt = zeros({4, 3}).t();  // non-contiguous self
  index_put_(bt, {tensor(std::vector<int64_t>{1})}, full({4}, 2.0));
  EXPECT_EQ(bt.select(0, 1).sum().item<float>(), 8.f);
  EXPECT_THROW_MSG(index(a, {tensor(std::vector<int64_t>{3})}), IndexError,
                   "[index] index 3 is out of range for dim 0 of size 3");
  EXPECT_THROW_MSG(index(a, {rows, cols, cols}), IndexError,
                   "too many indices (3) for a tensor of 2 dims");
}

TEST(Index, TopkOfUpToSixteenKeepsTheStableSortsOrder) {
  // Note [Top k in one pass] (kernels/cpu/index.cpp): k <= 16 keeps the best k in one pass over
  // each row; its values and indices are the stable sort's first k, ties (values drawn from a few
  // integers) and NaN included, largest and smallest, every dtype kind; k = 17 takes the partial
  // sort, which breaks ties by position to the same order.
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kLong}) {
    Tensor s = random_tensor({6, 301}, t, -3, 3).round();
    if (is_floating_type(t)) s.view({-1}).narrow(0, 5, 7).fill_(NAN);
    for (bool largest : {true, false}) {
      const auto [sv, si] = sort(s, 1, largest);
      for (int64_t k : {1, 5, 16, 17}) {
        const auto [tv, ti] = topk(s, k, 1, largest);
        EXPECT_TRUE(ti.eq(si.narrow(1, 0, k)).all().item<bool>())
            << to_string(t) << " k " << k << " largest " << largest;
        const Tensor same = tv.eq(sv.narrow(1, 0, k))
                                .logical_or(tv.isnan().logical_and(sv.narrow(1, 0, k).isnan()));
        EXPECT_TRUE(same.all().item<bool>()) << to_string(t) << " k " << k;
      }
    }
  }
  // Ascending input makes every element enter the buffer (the worst case).
  const Tensor up = arange(0, 1000, 1, kFloat);
  EXPECT_EQ(std::get<1>(topk(up, 4)).select(0, 3).item<int64_t>(), 996);
  EXPECT_EQ(std::get<0>(topk(up, 0)).numel(), 0);
}

TEST(Index, SortArgsortTopk) {
  Tensor a = tensor({3.f, 1.f, NAN, 2.f, 1.f});
  auto [v, i] = sort(a);
  EXPECT_EQ(v.select(0, 0).item<float>(), 1.f);
  EXPECT_EQ(i.select(0, 0).item<int64_t>(), 1);  // stable
  EXPECT_EQ(i.select(0, 1).item<int64_t>(), 4);
  EXPECT_TRUE(std::isnan(v.select(0, 4).item<float>()));  // NaN last
  auto [vd, id] = sort(a, 0, true);
  EXPECT_TRUE(std::isnan(vd.select(0, 0).item<float>()));
  EXPECT_EQ(vd.select(0, 1).item<float>(), 3.f);
  manual_seed(71);
  for (ScalarType t : all_dtypes()) {
    Tensor r = random_tensor({4, 9}, t, -50, 50);
    auto [sv, si] = sort(r, 1);
    for (int64_t row = 0; row < 4; ++row)
      for (int64_t k = 1; k < 9; ++k)
        EXPECT_LE(value_at(sv, {row, k - 1}), value_at(sv, {row, k})) << to_string(t);
    expect_elements(
        sv,
        [&](auto& ix) {
          return value_at(r, {ix[0], static_cast<int64_t>(value_at(si, ix))});
        },
        "sort indices");
    auto [tv, ti] = topk(r, 3, 1);
    expect_elements(
        tv,
        [&](auto& ix) {
          return value_at(sv, {ix[0], 8 - ix[1]});
        },
        std::string("topk ") + to_string(t));
  }
  EXPECT_EQ(argsort(tensor({3, 1, 2}), 0, true).select(0, 0).item<int64_t>(), 0);
  auto [small, si] = topk(tensor({5.f, 1.f, 3.f}), 2, 0, /*largest=*/false);
  EXPECT_EQ(small.select(0, 1).item<float>(), 3.f);
  EXPECT_THROW_MSG(topk(ones({3}), 4), ValueError, "[topk] k (4) must be in [0, 3]");
}

// Note [Sorting packed keys] (kernels/cpu/index.cpp): the float sorts (float32, bfloat16,
// float16) give std::stable_sort's order with NaN last (first descending) and -0.0 equal to +0.0,
// indices included, on rows full of ties, signed zeros, infinities and NaNs of both signs.
TEST(Index, SortOfFloatsIsStableWithNaNAndSignedZeros) {
  std::vector<float> xs;
  uint32_t state = 12345;
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.5f, -1.5f};
  for (int i = 0; i < 3 * 700; ++i) {
    state = state * 1664525u + 1013904223u;
    const uint32_t r = state >> 8;
    xs.push_back(r % 4 == 0 ? specials[r % 8]
                            : static_cast<float>(static_cast<int>(r % 41) - 20) / 4);
  }
  const Tensor base = from_blob(xs.data(), {3, 700}, kFloat).clone();
  for (ScalarType t : {kFloat, kBFloat16, kHalf})
    for (bool descending : {false, true}) {
      const Tensor x = base.to(t);
      auto [v, i] = sort(x, 1, descending);
      const Tensor xf = x.to(kFloat).contiguous();
      for (int64_t row = 0; row < 3; ++row) {
        const float* p = xf.data_ptr<float>() + row * 700;
        std::vector<int64_t> order(700);
        std::iota(order.begin(), order.end(), 0);
        auto less = [&](int64_t a, int64_t b) {  // NaN greatest
          const float u = p[a], w = p[b];
          return descending ? (std::isnan(u) && !std::isnan(w)) || u > w
                            : (!std::isnan(u) && std::isnan(w)) || u < w;
        };
        std::stable_sort(order.begin(), order.end(), less);
        for (int64_t j = 0; j < 700; ++j)
          ASSERT_EQ(i.select(0, row).select(0, j).item<int64_t>(), order[j])
              << to_string(t) << (descending ? " descending" : "") << ", row " << row << ", place "
              << j;
      }
      EXPECT_EQ((v.to(kFloat).isnan() != xf.gather(1, i).isnan()).sum().item<int64_t>(), 0);
    }
}

TEST(Index, EmbeddingOneHotPad) {
  Tensor w = arange(12, kFloat).reshape({4, 3});
  Tensor e = embedding(w, tensor(std::vector<int64_t>{3, 0, 3, 1}, IntArrayRef{2, 2}));
  EXPECT_EQ(e.sizes(), IntArrayRef({2, 2, 3}));
  EXPECT_EQ(e.select(0, 0).select(0, 0).sum().item<float>(), 9 + 10 + 11.f);
  EXPECT_THROW_MSG(embedding(w, tensor(std::vector<int64_t>{4})), IndexError,
                   "[embedding] index 4 is out of range for the weight's 4 rows");
  EXPECT_THROW_MSG(embedding(w, tensor(std::vector<int64_t>{1, -2})), IndexError,
                   "[embedding] index -2 is out of range for the weight's 4 rows");
  EXPECT_THROW_MSG(embedding(w, tensor({1.f})), TypeError,
                   "[embedding] expected int64 or int32 indices, but got Float");
  // The bounds check reads small integer indices in one loop and large ones by reductions
  // (kernels/composite/value_checks.cpp): int32, strided and large index tensors, both ways.
  const Tensor strided = tensor(std::vector<int64_t>{0, 9, 3, 9}).narrow(0, 0, 4).slice(0, 0, 4, 2);
  EXPECT_EQ(embedding(w, strided).select(0, 1).sum().item<float>(), 9 + 10 + 11.f);
  EXPECT_THROW_MSG(embedding(w, tensor(std::vector<int64_t>{0, 9, 3, 9}).slice(0, 1, 4, 2)),
                   IndexError, "[embedding] index 9 is out of range for the weight's 4 rows");
  EXPECT_THROW_MSG(embedding(w, tensor(std::vector<int64_t>{2, -1}).to(kInt)), IndexError,
                   "[embedding] index -1 is out of range for the weight's 4 rows");
  for (int64_t n : {int64_t{1} << 16, (int64_t{1} << 16) + 1}) {
    Tensor many = randint(4, {n});
    EXPECT_EQ(embedding(w, many).size(0), n);
    many.narrow(0, n - 1, 1).fill_(7);
    EXPECT_THROW_MSG(embedding(w, many), IndexError,
                     "[embedding] index 7 is out of range for the weight's 4 rows");
  }
  Tensor oh = one_hot(tensor(std::vector<int64_t>{2, 0}), 4);
  EXPECT_EQ(oh.sizes(), IntArrayRef({2, 4}));
  EXPECT_EQ(oh.select(0, 0).select(0, 2).item<int64_t>(), 1);
  EXPECT_EQ(one_hot(tensor(std::vector<int64_t>{2, 0})).size(1), 3);
  EXPECT_THROW_MSG(one_hot(tensor(std::vector<int64_t>{5}), 3), ValueError,
                   "class values must be in [0, 3), but got [5, 5]");
  Tensor x = arange(6, kFloat).reshape({1, 2, 3});
  Tensor pc = pad(x, {1, 2}, "constant", 9.0);
  EXPECT_EQ(pc.sizes(), IntArrayRef({1, 2, 6}));
  EXPECT_EQ(pc.select(2, 0).sum().item<float>(), 18.f);
  Tensor pr = pad(x, {2, 1}, "reflect");
  expect_elements(
      pr.select(0, 0),
      [](auto& i) {
        const int64_t src[] = {2, 1, 0, 1, 2, 1};
        return double(i[0] * 3 + src[i[1]]);
      },
      "reflect");
  Tensor pp = pad(x, {1, 1, 1, 0}, "replicate");
  EXPECT_EQ(pp.sizes(), IntArrayRef({1, 3, 5}));
  expect_elements(
      pp.select(0, 0),
      [](auto& i) {
        return double(std::max<int64_t>(i[0] - 1, 0) * 3 + std::clamp<int64_t>(i[1] - 1, 0, 2));
      },
      "replicate");
  EXPECT_EQ(pad(x, {-1, -1}).sizes(), IntArrayRef({1, 2, 1}));  // negative crops
  EXPECT_EQ(pad(x, {-3, 2}).sizes(), IntArrayRef({1, 2, 2}));   // all cropped, then padded
  // Cropping more than the dim holds, even where the pads add up to a valid size (seed
  // 54510621: the result took a wrong shape and its gradient an InternalError).
  EXPECT_THROW_MSG(pad(zeros({5, 0}), {-1, 3}), ValueError,
                   "[pad] padding (-1, 3) crops 1 elements from dim 1 of size 0");
  EXPECT_THROW_MSG(pad(x, {-2, -2}), ValueError, "[pad] padding (-2, -2) makes dim 2 negative");
  EXPECT_THROW_MSG(pad(x, {3, 0}, "reflect"), ValueError,
                   "padding (3, 0) must be smaller than the input's dim 2 (3)");
  EXPECT_THROW_MSG(pad(x, {1}), ValueError, "must have an even length");
}

TEST(Index, TensorMethodsForward) {
  Tensor a = arange(6, kFloat).reshape({2, 3});
  EXPECT_EQ(a.matmul(a.t()).sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(a.softmax(1).sum().item<float>(), 2.0f);
  EXPECT_EQ(a.index_select(1, tensor(std::vector<int64_t>{2})).sum().item<float>(), 7.0f);
  EXPECT_EQ(a.flip({1}).select(1, 0).sum().item<float>(), 7.0f);
  EXPECT_EQ(std::get<0>(a.topk(1, 1)).sum().item<float>(), 7.0f);
  Tensor b = a.clone();
  b.masked_fill_(b > 3, 0);
  EXPECT_EQ(b.sum().item<float>(), 6.0f);
  EXPECT_EQ(a.tril().sum().item<float>(), 0 + 3 + 4.0f);
}

// Whether t[I] compiles (operator[](double) is deleted: a floating index must not truncate).
template <class I, class = void>
struct Indexable : std::false_type {};
template <class I>
struct Indexable<I, std::void_t<decltype(std::declval<const Tensor&>()[std::declval<I>()])>>
    : std::true_type {};
static_assert(Indexable<int>::value && Indexable<int64_t>::value && Indexable<size_t>::value &&
              Indexable<Scalar>::value && Indexable<Tensor>::value);
static_assert(!Indexable<double>::value && !Indexable<float>::value);

TEST(Index, SubscriptSelectsAlongTheFirstDimAsAView) {
  Tensor a = arange(24, kFloat).reshape({2, 3, 4});
  Tensor r = a[1];
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(r[2][3].item<float>(), 23.f);
  EXPECT_EQ(a[-1][0][0].item<float>(), 12.f);
  EXPECT_EQ(a[Scalar(int64_t{1})][1][1].item<float>(), 17.f);
  EXPECT_EQ(a[scalar_tensor(1, kLong)][0][2].item<float>(), 14.f);
  EXPECT_EQ(a[scalar_tensor(0, kInt)][2][1].item<float>(), 9.f);
  EXPECT_EQ(a.transpose(0, 2)[3][1][1].item<float>(), 19.f);  // strided: a[1][1][3]
  r[0].fill_(-1);                                             // a view: a changes
  EXPECT_EQ(a.select(0, 1).select(0, 0).sum().item<float>(), -4.f);
  EXPECT_EQ(a[0][0].sum().item<float>(), 6.f);
  // The gradient reaches the selected row only.
  Tensor w = ones({3, 2}).requires_grad_();
  (w[1] * 5).sum().backward();
  EXPECT_EQ(w.grad().sum(1)[1].item<float>(), 10.f);
  EXPECT_EQ(w.grad().sum().item<float>(), 10.f);
}

TEST(Index, SubscriptRejectsWhatIsNotOneIntegralIndex) {
  const Tensor a = arange(6, kFloat).reshape({2, 3});
  EXPECT_THROW_MSG(a[2], IndexError, "select");
  EXPECT_THROW_MSG(a[-3], IndexError, "select");
  EXPECT_THROW_MSG(a[0][1][0], IndexError, "0-dim tensor cannot be indexed (index 0)");
  EXPECT_THROW_MSG(a[Scalar(1.5)], TypeError, "integral scalars, got 1.5");
  EXPECT_THROW_MSG(a[Scalar(true)], TypeError, "integral scalars, got True");
  EXPECT_THROW_MSG(a[scalar_tensor(1.0, kFloat)], TypeError, "dtype float32 of shape ()");
  EXPECT_THROW_MSG(a[tensor(std::vector<int64_t>{0, 1})], TypeError, "of shape (2)");
  EXPECT_THROW_MSG(a[Tensor()], ValueError, "index tensor is undefined");
  EXPECT_THROW_MSG(Tensor()[0], ValueError, "[operator[]] the tensor is undefined");
}
