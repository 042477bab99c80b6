// xten in a page: create tensors, broadcast, promote, reduce, differentiate, print.
#include <iostream>

#include <xten/xten.h>

int main() {
  xten::manual_seed(0);

  // Creating tensors.
  xten::Tensor a = xten::arange(6, xten::kFloat).reshape({2, 3});
  xten::Tensor b = xten::tensor({10.f, 20.f, 30.f});
  std::cout << "a =\n" << a << "\nb = " << b << "\n";

  // Broadcasting: (2, 3) + (3) -> (2, 3).
  std::cout << "a + b =\n" << a + b << "\n";

  // Type promotion: int64 tensor * float Scalar -> float32; int32 + int64 -> int64.
  xten::Tensor i = xten::arange(4);
  std::cout << "arange(4) * 0.5 = " << i * 0.5 << "\n";
  std::cout << "int32 + int64 dtype: " << (i.to(xten::kInt) + i).dtype() << "\n";
  std::cout << "int / int (true division) = " << i / 3 << "\n";

  // Reductions.
  std::cout << "a.sum() = " << a.sum() << ", a.sum({0}) = " << a.sum({0})
            << ", a.mean({1}) = " << a.mean({1}) << "\n";

  // Views share memory with their base.
  xten::Tensor row = a.select(0, 1);
  row.mul_(100);
  std::cout << "after a[1] *= 100:\n" << a << "\n";

  // Random numbers from the seeded Philox generator, and a half-precision computation.
  xten::Tensor r = xten::randn({2, 2});
  std::cout << "randn =\n" << r << "\n";
  std::cout << "sigmoid in float16 = " << r.to(xten::kHalf).sigmoid() << "\n";

  // Gradients: a leaf that requires grad, a loss, backward, an update outside the graph.
  xten::Tensor w = xten::randn({3, 4}).requires_grad_();
  xten::Tensor x = xten::randn({8, 4}), target = xten::randint(0, 3, {8});
  xten::Tensor loss = xten::cross_entropy(xten::linear(x, w), target);
  loss.backward();
  std::cout << "loss = " << loss.item<float>() << " (" << loss.grad_fn()->name()
            << "), w.grad() =\n" << w.grad() << "\n";
  {
    xten::NoGradGuard no_grad;
    w.sub_(w.grad() * 0.1);
  }
  w.grad() = xten::Tensor();

  // Bad input is a clear error, never a crash.
  try {
    a + xten::ones({4});
  } catch (const xten::ValueError& e) {
    std::cout << "error: " << e.what() << "\n";
  }
  return 0;
}
