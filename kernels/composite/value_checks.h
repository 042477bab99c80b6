#pragma once
// Checks of tensor values that raise (Note [Checks as ops] in value_checks.cpp).
#include <string>

#include <xten/core/tensor.h>

namespace xten {

// Raises unless every value of `values` lies in [lo, hi]: an IndexError (`index_error`) or a
// ValueError from `op`, with `message` formatted with the offending value ("index {} is out of
// range for the weight's 4 rows"). One node of a compiled graph, which every run executes.
void check_values_in_range(const Tensor& values, double lo, double hi, const char* op,
                           const std::string& message, bool index_error = true);

}  // namespace xten
