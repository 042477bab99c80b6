// Matrix products against double-precision loops.
#include <algorithm>

#include "test_util.h"
#include <xten/autograd/gradcheck.h>

using namespace xten;
using namespace xten::testing;

namespace {
// Reference product of the last two dims of a (.., n, k) and b (.., k, m), batch-broadcast.
// The tolerance scales with sum |a_ij b_jk| (the size of the rounding a dot product can
// make), relative 1e-5 for float32 and 1e-2 for 16-bit floats; exact for integers.
void expect_matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t k = a.size(-1);
  const ScalarType t = out.dtype();
  const double rel = t == kFloat ? 1e-5 : t == kDouble ? 1e-12 : 1e-2;
  int failures = 0;
  for_each_index(out.sizes(), [&](const std::vector<int64_t>& i) {
    const size_t nd = i.size();
    double s = 0, mag = 0;
    for (int64_t j = 0; j < k; ++j) {
      std::vector<int64_t> ia(i.begin(), i.end()), ib(i.begin(), i.end());
      ia[nd - 1] = j;
      ib[nd - 2] = j;
      s += value_at(a, ia) * value_at(b, ib);
      mag += std::abs(value_at(a, ia) * value_at(b, ib));
    }
    const double got = value_at(out, i), want = round_to(s, t);
    const bool ok =
        is_integral_type(t, false) ? got == want : std::abs(got - s) <= rel * (mag + 1e-30);
    if (!ok && failures++ < 5)
      ADD_FAILURE() << "matmul " << to_string(t) << " at " << to_string(IntArrayRef(i)) << ": got "
                    << got << ", expected " << s;
  });
}
}  // namespace

TEST(Linalg, MmAllDtypesAndLayouts) {
  manual_seed(40);
  for (ScalarType t : {kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble}) {
    Tensor a = random_tensor({5, 7}, t, -3, 3), b = random_tensor({7, 4}, t, -3, 3);
    expect_matmul(mm(a, b), a, b);
    expect_matmul(mm(a.t().contiguous().t(), b), a, b);  // column-major operand
    Tensor at = non_contiguous(a);
    expect_matmul(mm(at, non_contiguous(b)), a, b);  // strided: copied first
  }
  Tensor big_a = random_tensor({70, 130}, kFloat), big_b = random_tensor({130, 90}, kFloat);
  expect_matmul(mm(big_a, big_b), big_a, big_b);
  EXPECT_EQ(mm(zeros({3, 0}), zeros({0, 2})).sum().item<float>(), 0.0f);
  EXPECT_EQ(mm(zeros({0, 3}), zeros({3, 2})).sizes(), IntArrayRef({0, 2}));
}

TEST(Linalg, MmErrors) {
  EXPECT_THROW_MSG(mm(ones({2, 3}), ones({4, 5})), ValueError,
                   "[mm] mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_THROW_MSG(mm(ones({3}), ones({3, 2})), ValueError,
                   "[mm] expected 2-D tensors, but got 1-D and 2-D");
  EXPECT_THROW_MSG(mm(ones({2, 2}), ones({2, 2}, kDouble)), TypeError,
                   "[mm] expected mat1 and mat2 to have the same dtype, but got Float and Double");
  EXPECT_THROW_MSG(mm(ones({2, 2}, kBool), ones({2, 2}, kBool)), NotImplementedError,
                   "[mm] not implemented for dtype Bool");
  EXPECT_THROW_MSG(bmm(ones({2, 2, 3}), ones({3, 3, 2})), ValueError,
                   "[bmm] batch sizes differ: 2 and 3");
  EXPECT_THROW_MSG(dot(ones({2}), ones({3})), ValueError, "[dot] inconsistent tensor size");
  // matmul is a composite: the error names it, and the op inside that raised it.
  EXPECT_THROW_MSG(matmul(ones({2, 3}), ones({2, 3})), ValueError,
                   "[matmul] mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3) (in mm)");
  EXPECT_THROW_MSG(matmul(ones({2, 2, 3}), ones({3, 2, 3})), ValueError,
                   "[matmul] shapes (2, 2, 3) and (3, 2, 3) cannot be multiplied");
  EXPECT_THROW_MSG(linear(ones({2, 3}), ones({4, 2})), ValueError,
                   "[linear] input's last dim (3) must equal weight's in_features (2)");
}

TEST(Linalg, BmmAndMatmulCases) {
  manual_seed(41);
  Tensor a = random_tensor({3, 4, 5}, kFloat), b = random_tensor({3, 5, 2}, kFloat);
  expect_matmul(bmm(a, b), a, b);
  // Every dimension case of matmul.
  Tensor v = random_tensor({5}, kFloat), w = random_tensor({5}, kFloat),
         m = random_tensor({4, 5}, kFloat);
  EXPECT_NEAR(matmul(v, w).item<float>(), dot(v, w).item<float>(), 1e-6);
  EXPECT_EQ(matmul(v, w).dim(), 0);
  expect_elements(
      matmul(m, v),
      [&](auto& i) {
        double s = 0;
        for (int64_t j = 0; j < 5; ++j) s += value_at(m, {i[0], j}) * value_at(v, {j});
        return s;
      },
      "mv", 20.0);
  expect_elements(
      matmul(v, m.t()),
      [&](auto& i) {
        double s = 0;
        for (int64_t j = 0; j < 5; ++j) s += value_at(v, {j}) * value_at(m, {i[0], j});
        return s;
      },
      "vm", 20.0);
  Tensor batch_a = random_tensor({2, 1, 4, 5}, kFloat), batch_b = random_tensor({3, 5, 2}, kFloat);
  Tensor out = matmul(batch_a, batch_b);  // batch dims (2, 1) and (3) broadcast to (2, 3)
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 4, 2}));
  expect_matmul(out, batch_a, batch_b);
  EXPECT_EQ(matmul(random_tensor({2, 3, 5}, kFloat), v).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(matmul(v, random_tensor({2, 5, 3}, kFloat)).sizes(), IntArrayRef({2, 3}));
  Tensor many_a = random_tensor({64, 8, 8}, kDouble), many_b = random_tensor({64, 8, 8}, kDouble);
  expect_matmul(bmm(many_a, many_b), many_a, many_b);  // parallel over the batch
}

// A 3-D or larger left operand times a matrix or a vector is one product over its rows folded
// together where its leading dims merge without a copy (PyTorch's fold), not a batch that
// copies the matrix once per batch element; a layout that does not merge takes the batch path.
// Both agree with the loops, and so does the folded form's gradient.
TEST(Linalg, MatmulFoldsLeadingDimsIntoRows) {
  manual_seed(43);
  const Tensor a = random_tensor({2, 3, 4, 5}, kFloat), m = random_tensor({5, 6}, kFloat),
               v = random_tensor({5}, kFloat);
  auto ops_of = [](const std::function<void()>& f) {
    profiler::Profiler prof;
    prof.start();
    f();
    prof.stop();
    std::vector<std::string> names;
    for (const profiler::Event& e : prof.events()) names.push_back(e.name);
    return names;
  };
  auto has = [](const std::vector<std::string>& names, const std::string& op) {
    return std::find(names.begin(), names.end(), op) != names.end();
  };
  Tensor out;
  const std::vector<std::string> folded = ops_of([&] { out = matmul(a, m); });
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 4, 6}));
  expect_matmul(out, a, m.expand({2, 3, 5, 6}));
  EXPECT_TRUE(has(folded, "xten::mm"));
  EXPECT_FALSE(has(folded, "xten::copy_"));  // no copies of m, and a is a view
  const Tensor mv_out = matmul(a, v);
  EXPECT_EQ(mv_out.sizes(), IntArrayRef({2, 3, 4}));
  expect_matmul(mv_out.unsqueeze(-1), a, v.unsqueeze(1).expand({2, 3, 5, 1}));
  // Leading dims that do not merge with the rows: [3, 2, 4, 5] seen as [2, 3, 4, 5].
  const Tensor swapped = a.transpose(0, 1).contiguous().transpose(0, 1);
  const std::vector<std::string> batched = ops_of([&] { out = matmul(swapped, m); });
  expect_matmul(out, swapped, m.expand({2, 3, 5, 6}));
  EXPECT_TRUE(has(batched, "xten::bmm"));
  EXPECT_FALSE(has(batched, "xten::mm"));
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
      {random_tensor({2, 3, 4}, kDouble).requires_grad_(),
       random_tensor({4, 2}, kDouble).requires_grad_()}));
}

TEST(Linalg, AddmmBaddbmmLinearOuter) {
  manual_seed(42);
  Tensor in = random_tensor({4, 3}, kFloat), a = random_tensor({4, 5}, kFloat),
         b = random_tensor({5, 3}, kFloat);
  Tensor ab = mm(a, b);
  expect_elements(
      addmm(in, a, b, 0.5, 2), [&](auto& i) { return 0.5 * value_at(in, i) + 2 * value_at(ab, i); },
      "addmm", 20.0);
  Tensor nan_in = full({4, 3}, NAN);
  EXPECT_EQ(addmm(nan_in, a, b, 0).isnan().sum().item<int64_t>(), 0);  // beta 0 ignores input
  Tensor bi = random_tensor({2, 4, 3}, kFloat), b1 = random_tensor({2, 4, 5}, kFloat),
         b2 = random_tensor({2, 5, 3}, kFloat);
  Tensor p = bmm(b1, b2);
  expect_elements(
      baddbmm(bi, b1, b2, 1, -1), [&](auto& i) { return value_at(bi, i) - value_at(p, i); },
      "baddbmm", 20.0);
  Tensor x = random_tensor({2, 6, 5}, kFloat), wt = random_tensor({3, 5}, kFloat),
         bias = random_tensor({3}, kFloat);
  Tensor y = linear(x, wt, bias);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 6, 3}));
  expect_elements(
      y,
      [&](auto& i) {
        double s = value_at(bias, {i[2]});
        for (int64_t j = 0; j < 5; ++j) s += value_at(x, {i[0], i[1], j}) * value_at(wt, {i[2], j});
        return s;
      },
      "linear", 20.0);
  EXPECT_EQ(linear(x, wt).sizes(), IntArrayRef({2, 6, 3}));
  Tensor o = outer(arange(3, kFloat), arange(4, kFloat));
  expect_elements(
      o, [](auto& i) { return double(i[0] * i[1]); }, "outer");
  EXPECT_EQ(dot(arange(4, kInt), arange(4, kInt)).dtype(), kInt);
  EXPECT_EQ(dot(arange(4, kInt), arange(4, kInt)).item<int>(), 14);
}

// linear and _linear_relu (kernels/cpu/linear.cpp): oneDNN's product adds the bias (default
// path), or product, bias and relu run as separate ops (XTEN_CPU_GEMM=eigen, and dtypes oneDNN
// does not take); both against a double loop, for each layout the kernel reshapes or copies.
TEST(Linalg, LinearAndLinearReluEveryLayout) {
  manual_seed(44);
  for (ScalarType t : {kFloat, kBFloat16, kDouble, kInt}) {
    const double rel = t == kFloat ? 1e-5 : t == kBFloat16 ? 2e-2 : 1e-12;
    for (bool with_bias : {true, false}) {
      const Tensor w = random_tensor({6, 5}, t, -3, 3), b = random_tensor({6}, t, -3, 3);
      const std::optional<Tensor> bias = with_bias ? std::optional<Tensor>(b) : std::nullopt;
      const Tensor column_major_w = w.t().contiguous().t();
      for (const Tensor& x :
           {random_tensor({5}, t, -3, 3), random_tensor({7, 5}, t, -3, 3),
            random_tensor({2, 3, 5}, t, -3, 3), random_tensor({5, 7}, t, -3, 3).t(),
            non_contiguous(random_tensor({4, 5}, t, -3, 3)), random_tensor({0, 5}, t)}) {
        for (const Tensor& weight : {w, column_major_w}) {
          const auto before = cpu_gemm_counts();
          const Tensor y = linear(x, weight, bias), r = _linear_relu(x, weight, bias);
          const auto after = cpu_gemm_counts();
          // Products with rows take oneDNN when it is chosen and builds them for the dtype on
          // this machine (bfloat16 needs avx512_core: onednn_takes), and never otherwise: no
          // silent detour either way. The values are checked below on whichever path ran.
          if (cpu_gemm() == CpuGemm::OneDnn && x.numel() > 0) {
            EXPECT_EQ(after.onednn - before.onednn, onednn_takes(t) ? 2 : 0)
                << to_string(t) << " with oneDNN at " << onednn_cpu_isa();
          }
          DimVector shape(x.sizes());
          shape.back() = 6;
          ASSERT_EQ(y.sizes(), IntArrayRef(shape));
          ASSERT_EQ(r.sizes(), IntArrayRef(shape));
          ASSERT_EQ(r.dtype(), t);
          int failures = 0;
          for_each_index(y.sizes(), [&](const std::vector<int64_t>& i) {
            double s = with_bias ? value_at(b, {i.back()}) : 0, mag = std::abs(s);
            for (int64_t j = 0; j < 5; ++j) {
              std::vector<int64_t> ix(i.begin(), i.end());
              ix.back() = j;
              s += value_at(x, ix) * value_at(w, {i.back(), j});
              mag += std::abs(value_at(x, ix) * value_at(w, {i.back(), j}));
            }
            const double tol = is_integral_type(t, false) ? 0 : rel * mag;
            if ((std::abs(value_at(y, i) - s) > tol ||
                 std::abs(value_at(r, i) - std::max(s, 0.0)) > tol) &&
                failures++ < 3)
              ADD_FAILURE() << to_string(t) << " x " << x.sizes() << " at "
                            << to_string(IntArrayRef(i)) << ": linear " << value_at(y, i)
                            << ", _linear_relu " << value_at(r, i) << ", expected " << s;
          });
        }
      }
    }
  }
  // relu keeps NaN (oneDNN's relu post-op would make it 0: not used), and is exactly relu.
  Tensor x = random_tensor({4, 8}, kFloat), w = random_tensor({16, 8}, kFloat),
         b = random_tensor({16}, kFloat);
  x.select(0, 1).fill_(std::nan(""));
  const Tensor r = _linear_relu(x, w, b);
  EXPECT_EQ(r.isnan().sum().item<int64_t>(), 16);
  EXPECT_TRUE(same_bytes(r, relu(linear(x, w, b))));
  // A product large enough for several threads.
  Tensor bx = random_tensor({64, 784}, kFloat, -1, 1),
         bw = random_tensor({256, 784}, kFloat, -1, 1), bb = random_tensor({256}, kFloat, -1, 1);
  const Tensor sx = bx.narrow(1, 0, 300), sw = bw.narrow(1, 0, 300).narrow(0, 0, 100);
  expect_matmul(linear(sx, sw, bb.narrow(0, 0, 100)) - bb.narrow(0, 0, 100), sx, sw.t());
  EXPECT_TRUE(same_bytes(_linear_relu(bx, bw, bb), relu(linear(bx, bw, bb))));
}

TEST(Linalg, LinearErrors) {
  for (const char* op : {"linear", "_linear_relu"}) {
    auto call = [&](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) {
      return std::string(op) == "linear" ? linear(x, w, b) : _linear_relu(x, w, b);
    };
    const std::string p = fmt::format("[{}] ", op);
    EXPECT_THROW_MSG(call(ones({2, 3}), ones({4, 2}), std::nullopt), ValueError,
                     p + "input's last dim (3) must equal weight's in_features (2)");
    EXPECT_THROW_MSG(call(ones({2, 3}), ones({4, 3, 1}), std::nullopt), ValueError,
                     p + "weight must be 2-D [out_features, in_features], but got 3-D");
    EXPECT_THROW_MSG(call(ones({}), ones({4, 3}), std::nullopt), ValueError,
                     p + "input's last dim (0) must equal weight's in_features (3)");
    EXPECT_THROW_MSG(call(ones({2, 3}), ones({4, 3}), ones({3})), ValueError,
                     p + "bias must have shape (4), but got (3)");
    EXPECT_THROW_MSG(call(ones({2, 3}), ones({4, 3}, kDouble), std::nullopt), TypeError,
                     p + "expected input and weight to have the same dtype, but got Float and "
                         "Double");
    EXPECT_THROW_MSG(call(ones({2, 3}), ones({4, 3}), ones({4}, kDouble)), TypeError,
                     p + "expected weight and bias to have the same dtype, but got Float and "
                         "Double");
    EXPECT_THROW_MSG(call(ones({2, 3}, kBool), ones({4, 3}, kBool), std::nullopt),
                     NotImplementedError, p + "not implemented for dtype Bool");
  }
}

// No input or no output features: the bias alone, an empty result, and gradients of the right
// shapes (zeros for the weight; the bias's gradient counts the rows).
TEST(Linalg, LinearWithoutFeatures) {
  const Tensor b = tensor({1.0f, -2.0f, 3.0f, 4.0f});
  const Tensor y = _linear_relu(zeros({2, 3, 0}), zeros({4, 0}), b);
  EXPECT_TRUE(same_bytes(y, relu(b).expand({2, 3, 4}).contiguous()));
  EXPECT_EQ(linear(ones({3, 2}), zeros({0, 2}), zeros({0})).sizes(), IntArrayRef({3, 0}));
  Tensor x = zeros({3, 0}).requires_grad_(), w = zeros({4, 0}).requires_grad_(),
         bias = ones({4}).requires_grad_();
  linear(x, w, bias).sum().backward();
  EXPECT_EQ(x.grad().sizes(), IntArrayRef({3, 0}));
  EXPECT_EQ(w.grad().sizes(), IntArrayRef({4, 0}));
  EXPECT_TRUE(same_bytes(bias.grad(), full({4}, 3.0f)));
  Tensor x2 = ones({3, 2}).requires_grad_(), w2 = zeros({0, 2}).requires_grad_();
  linear(x2, w2).sum().backward();
  EXPECT_TRUE(same_bytes(x2.grad(), zeros({3, 2})));
  EXPECT_EQ(w2.grad().sizes(), IntArrayRef({0, 2}));
}
