#pragma once
// A chained option of an options struct (nn, optim, amp, data): `Options& name(T)` sets it,
// `name()` reads it; `XTEN_ARG(double, eps) = 1e-5;` gives a default.
#define XTEN_ARG(T, name)  \
 public:                   \
  auto& name(const T& v) { \
    name##_ = v;           \
    return *this;          \
  }                        \
  const T& name() const {  \
    return name##_;        \
  }                        \
                           \
 private:                  \
  T name##_
