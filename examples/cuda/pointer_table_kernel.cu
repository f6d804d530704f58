// gather_scale alone, for `rocm-perf autotune --replay` (pointer_table.space.json): e.g.
//   nvcc -arch=sm_90 -cubin -DGATHER_UNROLL=4 pointer_table_kernel.cu -o k.cubin
#include "pointer_table_kernel.cuh"
