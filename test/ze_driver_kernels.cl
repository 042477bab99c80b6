// Kernels for test_ze_driver: a value argument, a local buffer, and a slow one.
kernel void scale_add(global float* x, float a, float b) {
  const size_t i = get_global_id(0);
  x[i] = x[i] * a + b;
}
// Reverses each work-group's slice through local memory.
kernel void reverse_groups(global const int* in, global int* out, local int* scratch) {
  const size_t l = get_local_id(0), n = get_local_size(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = scratch[n - 1 - l];
}
kernel void spin(global int* x, int iters) {
  int v = x[get_global_id(0)];
  for (int i = 0; i < iters; ++i) v = v * 1664525 + 1013904223;
  x[get_global_id(0)] = v;
}
