// The channels-last list (../layout_cases.h: ResNet-50 inference and ResNet-18 training steps,
// NCHW and NHWC) against libtorch's (libtorch_layout_cases.h) in one process, in alternating
// blocks, as interleaved_cpu.cpp does for bench_cpu's list (compare_case_lists, interleaved.h);
// 3 pairs per case, since one call is up to a second at 1 thread. Build and run:
// compare_interleaved.sh layout (bench/README.md, "Channels last").
#include <xten/xten.h>

#include "../layout_cases.h"
#include "case_list_main.h"

// interleaved_layout_libtorch.cpp exports the libtorch side: the same cases in the same order.
int main(int argc, char** argv) {
  return compare_with_libtorch_cases("interleaved_layout", argc, argv, 3, xten_layout_cases);
}
