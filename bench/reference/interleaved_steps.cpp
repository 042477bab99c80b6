// Graph mode II's training steps (../step_cases.h: eager, compiled whole, the model compiled in
// an eager loop) against libtorch's eager steps (libtorch_step_cases.h) in one process, in
// alternating blocks (compare_case_lists, interleaved.h), 3 pairs per case. Build and run:
// compare_interleaved.sh steps (bench/README.md, "Compiled training steps against libtorch").
#include <xten/xten.h>

#include "../step_cases.h"
#include "case_list_main.h"

// interleaved_steps_libtorch.cpp exports the libtorch side: the same cases in the same order.
int main(int argc, char** argv) {
  return compare_with_libtorch_cases("interleaved_steps", argc, argv, 3, xten_step_cases);
}
