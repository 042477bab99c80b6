// Writes kernels/cpu/interval_tables.inc: the per-interval polynomials of the avx512 level's erf,
// gelu and gelu_backward (Note [Interval tables] in kernels/cpu/unary_functors.h;
// docs/cpu_kernels.md, "Vector math") and of the avx2 level's erf, gelu and gelu_backward (Note
// [Erf at the avx2 level], Note [Gelu at the avx2 level]). Each function is split into 32
// (avx512) or 8 (avx2) intervals of |x|, a = from + (k + t) / s with k = 0..31 or 0..7 and t in
// [-0.5, 0.5] (from is 0 but for the avx2 gelu's far tables), and on each a polynomial in t
// interpolates it at the Chebyshev points (long double, the C library's erfl/erfcl/expl), its
// coefficients rounded to float. The kernels compute the same k and t: k = round(a s) from a
// shifter's low mantissa bits and t = a s - k in one FMA (for from != 0, from y = a s - from s,
// which is exact, and t = y - k).
//
//   fit_interval_tables           prints the file
//   fit_interval_tables --errors  measures each kernel's formula, emulated here in float with
//                                 fmaf, on every 7th float of its range and prints the worst
//                                 error (ulp of the result; gelu_backward's of the size of its
//                                 two terms, as test_cpu_unary measures it)
//
// The CTest entry interval_tables_fitted (test/CMakeLists.txt) compares the printed file with the
// one in the tree, so a table cannot change without the program that makes it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {
using LD = long double;
constexpr LD kPi = 3.141592653589793238462643383279502884L;

// erf(a) / a: smooth, 2 / sqrt(pi) at 0; erf(x) = x times it, so the sign comes for free.
LD erf_over_a(LD a) {
  return a == 0 ? 2 / sqrtl(kPi) : erfl(a) / a;
}
// The avx2 table's intervals 0..kErf8OverA hold erf(a) / a (erf = x (hi + lo + t q), relative
// accuracy near 0), the others erf(a) itself: there the constant term is most of the result, and
// erf = +-(hi + (lo + t q)) rounds once where x (lo + t q) would round a term of the result's
// size (0.94 ulp with erf(a) / a everywhere, 0.80 so).
constexpr int kErf8OverA = 2;
// erf(a) itself: the avx2 table's function (fit() takes erf_over_a on intervals 0..kErf8OverA).
LD erf_of_a(LD a) {
  return erfl(a);
}
// Phi(-a), the normal distribution's lower tail.
LD lower_tail(LD a) {
  return 0.5L * erfcl(a / sqrtl(2.0L));
}
LD pdf(LD a) {
  return expl(-a * a / 2) / sqrtl(2 * kPi);
}
// a phi(a) - Phi(-a): gelu's derivative Phi(x) + x phi(x) is 1 + this for x > 0, -this below.
LD grad_part(LD a) {
  return a * pdf(a) - lower_tail(a);
}

struct Table {
  const char* name;     // the array's name in the .inc file
  const char* comment;  // what it holds
  LD (*f)(LD);
  float s;     // intervals a second: a = from + (k + t) / s
  int count;   // intervals: 32 (vpermi2ps at the avx512 level) or 8 (vpermps at avx2)
  int degree;  // of the polynomial in t
  bool split;  // the constant term as hi + lo (erf's 1-ulp bound); for k = 0 hi is 1
  std::vector<std::vector<float>> rows;  // highest degree first; last row the constant (hi)
  float from = 0;  // the first interval's centre (from * s an integer, so a s - from s is exact)
};

// Interpolates f on interval k at degree + 1 Chebyshev points (a Vandermonde solve in long
// double: at degree 6 on [-0.5, 0.5] well conditioned) and returns the monomial coefficients.
std::vector<LD> fit(const Table& tab, int k) {
  const int n = tab.degree + 1;
  std::vector<std::vector<LD>> a(n, std::vector<LD>(n + 1));
  for (int j = 0; j < n; ++j) {
    const LD t = 0.5L * cosl(kPi * (j + 0.5L) / n);
    LD p = 1;
    for (int i = 0; i < n; ++i) a[j][i] = p, p *= t;
    const LD a_k = tab.from + (k + t) / static_cast<LD>(tab.s);
    a[j][n] = tab.f == erf_of_a && k <= kErf8OverA ? erf_over_a(a_k) : tab.f(a_k);
  }
  for (int i = 0; i < n; ++i) {
    int piv = i;
    for (int r = i + 1; r < n; ++r)
      if (fabsl(a[r][i]) > fabsl(a[piv][i])) piv = r;
    std::swap(a[i], a[piv]);
    for (int r = 0; r < n; ++r) {
      if (r == i) continue;
      const LD m = a[r][i] / a[i][i];
      for (int q = i; q <= n; ++q) a[r][q] -= m * a[i][q];
    }
  }
  std::vector<LD> c(n);
  for (int i = 0; i < n; ++i) c[i] = a[i][n] / a[i][i];
  return c;
}

void build(Table& tab) {
  const int rows = tab.degree + (tab.split ? 2 : 1);
  tab.rows.assign(rows, std::vector<float>(tab.count));
  for (int k = 0; k < tab.count; ++k) {
    const std::vector<LD> c = fit(tab, k);
    for (int i = tab.degree; i >= 1; --i) tab.rows[tab.degree - i][k] = static_cast<float>(c[i]);
    if (tab.split) {
      const float hi = k == 0 ? 1.0f : static_cast<float>(c[0]);
      tab.rows[rows - 2][k] = static_cast<float>(c[0] - hi);
      tab.rows[rows - 1][k] = hi;
    } else {
      tab.rows[rows - 1][k] = static_cast<float>(c[0]);
    }
  }
}

void print(const Table& tab) {
  std::printf("// %s\n", tab.comment);
  std::printf("alignas(%d) static constexpr float %s[%zu][%d] = {\n",
              tab.count >= 16 ? 64 : tab.count * 4, tab.name, tab.rows.size(), tab.count);
  for (const std::vector<float>& row : tab.rows) {
    std::printf("    {");
    for (int k = 0; k < tab.count; ++k)
      std::printf("%s%.9ef%s", k == 0 ? "" : (k % 4 == 0 ? "\n     " : " "), row[k],
                  k < tab.count - 1 ? "," : "");
    std::printf("},\n");
  }
  std::printf("};\n");
}

float ulp_of(LD v) {
  const float f = fabsf(static_cast<float>(v));
  if (f < 1.17549435e-38f) return std::ldexp(1.0f, -149);
  int e;
  std::frexp(f, &e);
  return std::ldexp(1.0f, e - 24);
}

// The kernels' formulas (unary_functors.h) in scalar float with fmaf.
struct Lane {
  int k;
  float t;
};
Lane split_lane(float a, float s, float from) {
  if (from != 0) {  // the kernel's y = a s - from s, exact
    const float y = fmaf(a, s, -from * s);
    const float u = y + 12582912.0f, r = u - 12582912.0f;
    return {static_cast<int>(r), y - r};
  }
  const float u = fmaf(a, s, 12582912.0f), r = u - 12582912.0f;
  return {static_cast<int>(r), fmaf(a, s, -r)};
}
float horner(const Table& tab, size_t rows, Lane l) {
  float q = tab.rows[0][l.k];
  for (size_t i = 1; i < rows; ++i) q = fmaf(q, l.t, tab.rows[i][l.k]);
  return q;
}

void errors(const Table& tab) {
  const float first = tab.from == 0 ? 0.0f : tab.from - 0.5f / tab.s;
  const float limit = tab.from + (tab.count - 0.5f) / tab.s;
  uint32_t begin, end;
  std::memcpy(&begin, &first, 4);
  std::memcpy(&end, &limit, 4);
  double worst = 0;
  float at = 0;
  for (uint32_t b = begin; b < end; b += 7) {
    float mag;
    std::memcpy(&mag, &b, 4);
    for (const float x : {mag, -mag}) {
      const Lane l = split_lane(fabsf(x), tab.s, tab.from);
      LD ref, scale;
      float got;
      if (tab.f == erf_over_a) {
        const float s = horner(tab, tab.rows.size() - 1, l);
        got = fmaf(x, tab.rows.back()[l.k], x * s);
        ref = erfl(x), scale = ref;
      } else if (tab.f == erf_of_a) {
        // m = x on intervals 0..kErf8OverA (erf(a) / a there), +-1 past them
        const float m = l.k <= kErf8OverA ? x : std::copysign(1.0f, x);
        const float s = horner(tab, tab.rows.size() - 1, l);
        got = fmaf(m, tab.rows.back()[l.k], m * s);
        ref = erfl(x), scale = ref;
      } else if (tab.f == lower_tail) {
        const float q = horner(tab, tab.rows.size(), l);
        got = x > 0 ? fmaf(-x, q, x) : x * q;
        ref = x * lower_tail(-static_cast<LD>(x)), scale = ref;
      } else {
        const float e = horner(tab, tab.rows.size(), l);
        got = x > 0 ? 1.0f + e : -e;
        const LD cdf = lower_tail(-static_cast<LD>(x)), term = x * pdf(x);
        ref = cdf + term, scale = fabsl(cdf) + fabsl(term);
      }
      const double err = static_cast<double>(fabsl(got - ref) / ulp_of(scale));
      if (err > worst) worst = err, at = x;
    }
  }
  std::fprintf(stderr, "%s: worst %.3f ulp at x = %.9g (%.9g <= |x| < %.9g, every 7th float)\n",
               tab.name, worst, at, first, limit);
}
}  // namespace

int main(int argc, char** argv) {
  Table tables[] = {
      {"kErfTable",
       "erf(a) / a, a = (k + t) / 8 up to 3.9375 (erf is +-1 in float past it); degree 4, the\n"
       "// constant as hi + lo (rows c4..c1, lo, hi; hi = 1 on the first interval).",
       erf_over_a,
       8.0f,
       32,
       4,
       true,
       {}},
      {"kLowerTailTable",
       "Phi(-a) = erfc(a / sqrt 2) / 2, a = (k + t) / (16 / 3) up to 5.90625; degree 6 (rows\n"
       "// c6..c0).",
       lower_tail,
       16.0f / 3.0f,
       32,
       6,
       false,
       {}},
      {"kGeluGradTable",
       "a phi(a) - Phi(-a), a = (k + t) / (16 / 3) up to 5.90625; degree 6 (rows c6..c0).",
       grad_part,
       16.0f / 3.0f,
       32,
       6,
       false,
       {}},
      {"kErfTable8",
       "The avx2 level's erf, a = (k + t) / (40 / 21) up to 3.9375 (8 intervals): erf(a) / a on\n"
       "// intervals 0..kErfTable8OverA, erf(a) on the others; degree 7, the constant as hi + lo\n"
       "// (rows c7..c1, lo, hi; hi = 1 on the first interval).",
       erf_of_a,
       40.0f / 21.0f,
       8,
       7,
       true,
       {}},
      {"kLowerTailTable8",
       "The avx2 level's Phi(-a), a = (k + t) / 2 up to 3.75 (8 intervals); degree 7 (rows\n"
       "// c7..c0).",
       lower_tail,
       2.0f,
       8,
       7,
       false,
       {}},
      {"kGeluGradTable8",
       "The avx2 level's a phi(a) - Phi(-a), a = (k + t) / 2 up to 3.75 (8 intervals); degree\n"
       "// 7 (rows c7..c0).",
       grad_part,
       2.0f,
       8,
       7,
       false,
       {}},
      {"kLowerTailTable8Far",
       "The avx2 level's Phi(-a) past kLowerTailTable8, a = 3.875 + (k + t) / 4 from 3.75 to\n"
       "// 5.75 (8 intervals); degree 7 (rows c7..c0).",
       lower_tail,
       4.0f,
       8,
       7,
       false,
       {},
       3.875f},
      {"kGeluGradTable8Far",
       "The avx2 level's a phi(a) - Phi(-a) past kGeluGradTable8, a = 3.875 + (k + t) / 4 from\n"
       "// 3.75 to 5.75 (8 intervals); degree 7 (rows c7..c0).",
       grad_part,
       4.0f,
       8,
       7,
       false,
       {},
       3.875f},
  };
  for (Table& tab : tables) build(tab);
  if (argc > 1 && std::string(argv[1]) == "--errors") {
    for (const Table& tab : tables) errors(tab);
    return 0;
  }
  std::printf(
      "// Generated by tools/fit_interval_tables.cpp (run it to regenerate; do not edit): the\n"
      "// per-interval polynomials of Note [Interval tables] in unary_functors.h. Row r, column k\n"
      "// is the coefficient of t^(degree - r) on interval k.\n"
      "// clang-format off\n");
  for (const Table& tab : tables) print(tab);
  std::printf("static constexpr int kErfTable8OverA = %d;\n", kErf8OverA);
  return 0;
}
