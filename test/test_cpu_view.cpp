// View ops: shapes, strides, shared storage, and their errors.
#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {
// Every element of `v` equals base's element at map(index).
void expect_view_of(const Tensor& v, const Tensor& base,
                    const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& map) {
  EXPECT_TRUE(v.storage().is_alias_of(base.storage()));
  expect_elements(
      v, [&](auto& i) { return value_at(base, map(i)); }, "view");
}
}  // namespace

TEST(View, ViewReshapeFlatten) {
  Tensor a = arange(24).reshape({2, 3, 4});
  expect_view_of(a.view({6, 4}), a, [](auto& i) {
    return std::vector<int64_t>{i[0] / 3, i[0] % 3, i[1]};
  });
  EXPECT_EQ(a.view({-1, 2}).sizes(), IntArrayRef({12, 2}));
  EXPECT_EQ(a.flatten().sizes(), IntArrayRef({24}));
  EXPECT_EQ(a.flatten(1).sizes(), IntArrayRef({2, 12}));
  EXPECT_EQ(full({}, 1).flatten().sizes(), IntArrayRef({1}));
  // reshape of a non-viewable layout copies.
  Tensor t = a.transpose(0, 2);
  Tensor r = t.reshape({24});
  EXPECT_FALSE(r.storage().is_alias_of(a.storage()));
  expect_elements(
      r,
      [&](auto& i) {
        return value_at(t, {i[0] / 6, (i[0] / 2) % 3, i[0] % 2});
      },
      "reshape copy");
  // A transposed matrix can still be viewed where dims stay whole.
  EXPECT_TRUE(a.transpose(1, 2).view({2, 4, 3}).storage().is_alias_of(a.storage()));
  EXPECT_THROW_MSG(t.view({24}), ValueError, "use reshape(...) instead");
  EXPECT_THROW_MSG(a.view({5, 5}), ValueError,
                   "[view] shape (5, 5) is invalid for input of size 24");
  EXPECT_THROW_MSG(a.view({-1, -1}), ValueError, "only one dimension can be inferred");
  EXPECT_THROW_MSG(a.flatten(2, 1), ValueError, "start_dim (2) must not come after end_dim (1)");
  EXPECT_EQ(zeros({0, 3}).view({3, 0, 5}).numel(), 0);
}

TEST(View, SqueezeUnsqueezePermuteTranspose) {
  Tensor a = arange(6).reshape({1, 2, 1, 3});
  EXPECT_EQ(a.squeeze().sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(a.squeeze(2).sizes(), IntArrayRef({1, 2, 3}));
  EXPECT_EQ(a.squeeze(1).sizes(), a.sizes());
  EXPECT_EQ(a.unsqueeze(-1).sizes(), IntArrayRef({1, 2, 1, 3, 1}));
  EXPECT_EQ(a.unsqueeze(0).sizes(), IntArrayRef({1, 1, 2, 1, 3}));
  EXPECT_EQ(full({}, 1).unsqueeze(0).sizes(), IntArrayRef({1}));
  Tensor b = arange(24).reshape({2, 3, 4});
  expect_view_of(b.permute({2, 0, 1}), b, [](auto& i) {
    return std::vector<int64_t>{i[1], i[2], i[0]};
  });
  expect_view_of(b.transpose(-1, 0), b, [](auto& i) {
    return std::vector<int64_t>{i[2], i[1], i[0]};
  });
  expect_view_of(b.select(1, 0).t(), b, [](auto& i) {
    return std::vector<int64_t>{i[1], 0, i[0]};
  });
  EXPECT_THROW_MSG(b.permute({0, 0, 1}), ValueError, "repeat dim 0");
  EXPECT_THROW_MSG(b.permute({0, 1}), ValueError, "must list each of the tensor's 3 dims once");
  EXPECT_THROW_MSG(b.t(), ValueError, "[t] expects a tensor with <= 2 dims, but got 3 dims");
  EXPECT_THROW_MSG(b.transpose(0, 3), IndexError, "[transpose] dim 3 is out of range");
  EXPECT_THROW_MSG(b.unsqueeze(5), IndexError,
                   "[unsqueeze] dim 5 is out of range for a tensor of 4 dims");
}

TEST(View, ExpandNarrowSliceSelect) {
  Tensor a = arange(3).reshape({3, 1});
  Tensor e = a.expand({2, 3, 4});
  EXPECT_EQ(e.stride(0), 0);
  expect_view_of(e, a, [](auto& i) { return std::vector<int64_t>{i[1], 0}; });
  EXPECT_EQ(a.expand({-1, 5}).sizes(), IntArrayRef({3, 5}));
  EXPECT_EQ(a.expand_as(zeros({3, 2})).sizes(), IntArrayRef({3, 2}));
  EXPECT_THROW_MSG(
      a.expand({4, 4}), ValueError,
      "the expanded size (4) must match the existing size (3) at non-singleton dimension 0");
  EXPECT_THROW_MSG(a.expand({3}), ValueError, "must be at least the tensor's number of dims");
  Tensor b = arange(10);
  expect_view_of(b.narrow(0, 2, 3), b, [](auto& i) { return std::vector<int64_t>{i[0] + 2}; });
  expect_view_of(b.narrow(0, -4, 2), b, [](auto& i) { return std::vector<int64_t>{i[0] + 6}; });
  expect_view_of(b.slice(0, 1, 8, 3), b,
                 [](auto& i) { return std::vector<int64_t>{1 + 3 * i[0]}; });
  EXPECT_EQ(b.slice(0, 1, 8, 3).numel(), 3);
  EXPECT_EQ(b.slice(0, -3).numel(), 3);
  EXPECT_EQ(b.slice(0, 20, 30).numel(), 0);
  EXPECT_EQ(b.select(0, -1).item<int64_t>(), 9);
  EXPECT_THROW_MSG(b.narrow(0, 8, 3), ValueError,
                   "start (8) + length (3) exceeds dimension 0 of size 10");
  EXPECT_THROW_MSG(b.slice(0, 0, 5, 0), ValueError, "step must be positive, but got 0");
  EXPECT_THROW_MSG(b.select(0, 10), IndexError,
                   "[select] index 10 is out of range for dimension 0 with size 10");
  EXPECT_THROW_MSG(full({}, 1).select(0, 0), IndexError, "cannot select from a zero-dim tensor");
}

TEST(View, UnbindSplitChunk) {
  Tensor a = arange(10).reshape({5, 2});
  auto rows = a.unbind();
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].sum().item<int64_t>(), 6 + 7);
  auto parts = a.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].size(0), 1);
  auto chunks = a.chunk(2, 0);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].size(0), 3);
  EXPECT_EQ(a.chunk(2, 1)[1].sizes(), IntArrayRef({5, 1}));
  EXPECT_THROW_MSG(a.split(-1), ValueError, "split_size must be positive");
  EXPECT_THROW_MSG(a.chunk(0), ValueError, "chunks must be positive, but got 0");
}

TEST(View, SplitWithSizes) {
  Tensor a = arange(12).reshape({4, 3});
  auto parts = split(a, {1, 3});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].sizes(), IntArrayRef({1, 3}));
  EXPECT_EQ(parts[1].sizes(), IntArrayRef({3, 3}));
  EXPECT_EQ(parts[1].data_ptr(), a.select(0, 1).data_ptr());  // a view, no copy
  EXPECT_EQ(parts[1].sum().item<int64_t>(), 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11);
  auto cols = a.split({2, 0, 1}, -1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[1].sizes(), IntArrayRef({4, 0}));
  EXPECT_EQ(cols[2].select(0, 3).item<int64_t>(), 11);
  EXPECT_EQ(a.split_with_sizes({4}).at(0).sizes(), a.sizes());
  EXPECT_THROW_MSG(split(a, {1, 2}), ValueError,
                   "[split_with_sizes] split_sizes must sum exactly to 4 (the size of dim 0), but "
                   "got split_sizes=(1, 2)");
  EXPECT_THROW_MSG(split(a, {5, -1}), ValueError,
                   "[split_with_sizes] split_sizes must be non-negative, but got "
                   "split_sizes=(5, -1)");
  EXPECT_THROW_MSG(split(a, {1, 3}, 2), IndexError, "[split_with_sizes] dim 2 is out of range");
  EXPECT_THROW_MSG(split_with_sizes(full({}, 1.0), {1}), ValueError,
                   "[split_with_sizes] cannot split a zero-dim tensor");
}

TEST(View, AsStridedContiguousCloneDetach) {
  Tensor a = arange(9);
  Tensor d = a.as_strided({3}, {4});  // the diagonal of a 3x3 matrix
  expect_view_of(d, a, [](auto& i) { return std::vector<int64_t>{4 * i[0]}; });
  EXPECT_THROW_MSG(a.as_strided({3}, {5}), ValueError, "out of bounds for a storage of 9 elements");
  EXPECT_THROW_MSG(a.as_strided({3}, {-1}), ValueError, "strides must be >= 0");
  Tensor t = a.reshape({3, 3}).t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.storage().is_alias_of(a.storage()));
  EXPECT_TRUE(c.contiguous().is_same(c));
  expect_elements(
      c, [&](auto& i) { return value_at(t, i); }, "contiguous");
  Tensor k = a.clone();
  k.fill_(0);
  EXPECT_EQ(a.sum().item<int64_t>(), 36);
  Tensor g = ones({2}).set_requires_grad(true);
  EXPECT_FALSE(g.detach().requires_grad());
  // Every other view keeps the flag (autograd will give it a grad_fn).
  EXPECT_TRUE(g.view({2, 1}).requires_grad());
  EXPECT_TRUE(g.unsqueeze(0).t().requires_grad());
  EXPECT_TRUE(g.split({1, 1})[1].requires_grad());
  EXPECT_FALSE(ones({2}).view({2, 1}).requires_grad());
  EXPECT_TRUE(g.detach().storage().is_alias_of(g.storage()));
}
