// The HSA capture's manifest (stages/capture/aql_dispatch.hpp) from a recorded AQL dispatch packet
// and a real code object: Debian's hipcc compiles a kernel with static and dynamic LDS for gfx90a,
// and the manifest's parameters are exactly the metadata's arguments (hidden ones included), its
// dynamic LDS the packet's group segment less the static. Skips without hipcc.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/capture/aql_dispatch.hpp"
#include "support/hip_code_object.hpp"
#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::stages::capture {
namespace {

TEST(aql_dispatch_hipcc, a_recorded_packet_and_a_real_code_object_make_the_manifest) {
  const auto hipcc = workers::find_on_path("hipcc");
  if (!hipcc) {
    GTEST_SKIP() << "hipcc is not on PATH (Debian: apt-get install hipcc); skipping";
  }
  rpl::testing::temp_dir dir;
  rpl::testing::write_file(dir / "k.hip", R"hip(
#include <hip/hip_runtime.h>
struct segment { const float* in; float* out; int n; float scale; };
__global__ void gather_scale(const segment* table, int count, float round) {
  __shared__ float tile[256];
  extern __shared__ float more[];
  for (int s = 0; s < count; ++s) {
    const segment seg = table[s];
    tile[threadIdx.x % 256] = seg.in[threadIdx.x];
    more[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
    __syncthreads();
    seg.out[threadIdx.x] = more[threadIdx.x] * seg.scale + round;
  }
}
)hip");
  const auto built =
      rpl::testing::compile_hsaco(dir.path(), std::chrono::minutes(5), hipcc->string());
  ASSERT_TRUE(built.succeeded()) << built.output;
  const auto objects = read_code_objects(dir / "k.hsaco");
  ASSERT_EQ(objects.size(), 1u);
  ASSERT_EQ(objects[0].kernels.size(), 1u);
  const auto& kernel = objects[0].kernels[0];
  EXPECT_EQ(kernel.group_segment_fixed_size, 1024u);

  aql_dispatch packet;
  packet.header = aql_kernel_dispatch_type;
  packet.setup = 1;
  packet.workgroup = {256, 1, 1};
  packet.grid = {256 * 104, 1, 1};
  packet.group_segment_size = 1024 + 256 * 4; // the static tile + the launch's dynamic 1 KiB
  packet.kernel_object = 0x7f0010000000;
  packet.kernarg_address = 0x7f0020000000;
  const auto m = hsa_manifest(decode_aql_dispatch(encode_aql_dispatch(packet)), kernel, "gfx90a");
  EXPECT_EQ(m.kernel, "_Z12gather_scalePK7segmentif");
  EXPECT_EQ(m.grid, (std::array<std::uint32_t, 3>{104, 1, 1}));
  EXPECT_EQ(m.dynamic_shared_bytes, 1024u);
  // The three explicit arguments first, then any hidden ones the metadata lists (the runtime fills
  // them in; the capture keeps the whole kernarg segment either way).
  ASSERT_GE(m.params.size(), 3u);
  EXPECT_EQ(m.params[0].offset, 0u);
  EXPECT_EQ(m.params[0].size, 8u);
  EXPECT_EQ(m.params[1].offset, 8u);
  EXPECT_EQ(m.params[2].offset, 12u);
  std::size_t with_size = 0;
  for (const auto& a : kernel.args)
    with_size += a.size > 0 ? 1 : 0;
  EXPECT_EQ(m.params.size(), with_size);
  EXPECT_LE(kernarg_bytes(m.params), kernel.kernarg_segment_size);
  // The manifest is a valid dispatch.json once the capture adds the granularity.
  auto complete = m;
  complete.granularity = 4096;
  EXPECT_EQ(dispatch_from_json(to_json(complete), "d.json").params.size(), m.params.size());
}

} // namespace
} // namespace rpl::stages::capture
