// Built against the installed package only: every op must be registered (static
// registrations in the shared library survive linking), and results must be right.
#include <iostream>

#include <xten/xten.h>

int main() {
  xten::Tensor a = xten::arange(6).reshape({2, 3}).to(xten::kFloat);
  xten::Tensor b = (a + xten::ones({3})) * 2 - a.t().t();
  const double s = b.sum().item<double>();  // sum(2*(a+1) - a) = sum(a) + 12 = 27
  if (s != 27.0) {
    std::cerr << "wrong sum " << s << "\n";
    return 1;
  }
  for (const char* op : {"add.Tensor", "view", "sum.dim_IntList", "exp", "where.self", "randn"}) {
    if (!xten::Dispatcher::singleton().has_op(std::string("xten::") + op)) {
      std::cerr << "missing op " << op << "\n";
      return 1;
    }
  }
  std::cout << "consumer ok: " << b << "\n";
  return 0;
}
