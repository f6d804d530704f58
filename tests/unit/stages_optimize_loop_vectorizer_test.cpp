#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/loop_vectorizer.hpp"

namespace rpl::stages::optimize {
namespace {

const std::vector<parameter_info> scale_parameters = {{"float *__restrict", "out"},
                                                      {"const float *__restrict", "in"},
                                                      {"float", "a"},
                                                      {"size_t", "n"}};

std::optional<vectorized_loop>
vectorize(const std::string& text,
          const std::vector<parameter_info>& parameters = scale_parameters) {
  return vectorize_grid_stride_loop(text, text.find("for"), parameters).rewrite;
}

std::string scale_loop(const std::string& start, const std::string& step, const std::string& body) {
  return "  for (size_t i = " + start + "; i < n; i += " + step + ") " + body + "\n";
}

const std::string grid_start = "blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x";
const std::string grid_step = "static_cast<size_t>(gridDim.x) * blockDim.x";

TEST(loop_vectorizer, rewrites_a_grid_stride_scale_with_an_aligned_check_and_a_tail) {
  const std::string text = scale_loop(grid_start, grid_step, "{\n    out[i] = a * in[i];\n  }");
  const auto v = vectorize(text);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->vector_type, "float4");
  EXPECT_EQ(v->width, 4U);
  EXPECT_EQ(v->arrays, (std::vector<std::string>{"out", "in"}));
  EXPECT_EQ(v->replaced.begin, text.find("for"));
  EXPECT_EQ(v->replaced.end, text.rfind('}') + 1);
  const std::string& r = v->replacement;
  EXPECT_NE(r.find("reinterpret_cast<unsigned long long>(out) % 16 == 0 &&"), std::string::npos)
      << r;
  EXPECT_NE(r.find("reinterpret_cast<unsigned long long>(in) % 16 == 0"), std::string::npos);
  EXPECT_NE(r.find("rpl_v < (n) / 4;"), std::string::npos) << r;
  EXPECT_NE(r.find("const float4 rpl_in = reinterpret_cast<const float4*>(in)[rpl_v];"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("float4 rpl_out;"), std::string::npos) << r; // written only: not loaded
  for (const char* lane : {"x", "y", "z", "w"}) {
    EXPECT_NE(r.find(std::string("rpl_out.") + lane + " = a * rpl_in." + lane), std::string::npos)
        << lane;
  }
  EXPECT_NE(r.find("reinterpret_cast<float4*>(out)[rpl_v] = rpl_out;"), std::string::npos);
  EXPECT_NE(r.find("for (size_t i = (n) / 4 * 4 + " + grid_start +
                   ";\n         i < n;\n         i += " + grid_step + ") {"),
            std::string::npos)
      << r;
  // The original loop, token for token (indented one level deeper), when an array is not aligned.
  EXPECT_NE(r.find("} else {\n    for (size_t i = " + grid_start + "; i < n; i += " + grid_step +
                   ") {\n      out[i] = a * in[i];\n    }\n  }"),
            std::string::npos)
      << r;
}

TEST(loop_vectorizer, a_read_and_written_array_is_loaded_and_doubles_go_two_by_two) {
  const std::vector<parameter_info> parameters = {
      {"double *", "y"}, {"const double *", "x"}, {"double", "a"}, {"int", "n"}};
  const std::string text =
      "  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x)\n"
      "    y[i] += a * x[i];\n";
  const auto v = vectorize(text, parameters);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->vector_type, "double2");
  EXPECT_NE(v->replacement.find("double2 rpl_y = reinterpret_cast<const double2*>(y)[rpl_v];"),
            std::string::npos)
      << v->replacement;
  EXPECT_NE(v->replacement.find("{ rpl_y.y += a * rpl_x.y; }"), std::string::npos)
      << v->replacement;
  EXPECT_EQ(v->replacement.find("rpl_y.z"), std::string::npos);
}

TEST(loop_vectorizer, c_style_casts_and_harmless_parentheses_are_recognised) {
  EXPECT_TRUE(vectorize(scale_loop("(size_t)blockIdx.x * blockDim.x + threadIdx.x",
                                   "(gridDim.x * blockDim.x)", "out[i] = in[i];"))
                  .has_value());
  EXPECT_TRUE(vectorize(scale_loop("(blockIdx.x * blockDim.x) + (threadIdx.x)", grid_step,
                                   "out[i] = in[i];"))
                  .has_value());
}

TEST(loop_vectorizer, refuses_what_it_cannot_prove) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"not the thread's global index",
       scale_loop("blockIdx.x * (blockDim.x + threadIdx.x)", grid_step, "out[i] = in[i];")},
      {"a per-thread loop", "  for (size_t i = 0; i < n; i += 1) out[i] = in[i];\n"},
      {"a block-stride loop", scale_loop("threadIdx.x", "blockDim.x", "out[i] = in[i];")},
      {"the index as a value", scale_loop(grid_start, grid_step, "out[i] = a * i;")},
      {"two neighbours", scale_loop(grid_start, grid_step, "out[i] = in[i] + in[i + 1];")},
      {"control flow", scale_loop(grid_start, grid_step, "{ if (in[i] > 0) out[i] = in[i]; }")},
      {"a conditional", scale_loop(grid_start, grid_step, "out[i] = in[i] > 0 ? in[i] : a;")},
      {"a barrier", scale_loop(grid_start, grid_step, "{ out[i] = in[i]; __syncthreads(); }")},
      {"an atomic", scale_loop(grid_start, grid_step, "atomicAdd(&out[i], in[i]);")},
      {"nothing written", scale_loop(grid_start, grid_step, "a += in[i];")},
      {"a directive", scale_loop(grid_start, grid_step, "{\n#pragma unroll\n out[i] = in[i]; }")},
      {"a bound that moves", "  for (size_t i = " + grid_start + "; i < n - i; i += " + grid_step +
                                 ") out[i] = in[i];\n"},
      {"a name it would introduce",
       scale_loop(grid_start, grid_step, "{ float rpl_in = in[i]; out[i] = rpl_in; }")},
  };
  for (const auto& [why, text] : refused) {
    EXPECT_FALSE(vectorize(text).has_value()) << why << ":\n" << text;
  }
  // Vectors already, mixed element types, a local pointer.
  EXPECT_FALSE(vectorize(scale_loop(grid_start, grid_step, "out[i] = in[i];"),
                         {{"float4 *", "out"}, {"const float4 *", "in"}, {"size_t", "n"}})
                   .has_value());
  EXPECT_FALSE(vectorize(scale_loop(grid_start, grid_step, "out[i] = in[i];"),
                         {{"double *", "out"}, {"const float *", "in"}, {"size_t", "n"}})
                   .has_value());
  EXPECT_FALSE(vectorize(scale_loop(grid_start, grid_step, "out[i] = in[i];"), {{"size_t", "n"}})
                   .has_value());
}

TEST(loop_vectorizer, a_row_offset_is_checked_for_alignment_at_the_row_base) {
  const std::vector<parameter_info> parameters = {
      {"float *", "out"}, {"const float *", "in"}, {"int", "rows"}, {"int", "width"}};
  const std::string text =
      "{\n  for (int r = blockIdx.y; r < rows; r += gridDim.y) {\n"
      "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < width; i += blockDim.x * "
      "gridDim.x)\n      out[r * width + i] = in[i + r * width];\n  }\n}\n";
  const auto v = vectorize_grid_stride_loop(text, text.rfind("for"), parameters);
  ASSERT_TRUE(v.rewrite.has_value()) << v.refusal;
  const std::string& r = v.rewrite->replacement;
  EXPECT_NE(r.find("reinterpret_cast<unsigned long long>(out + (r * width)) % 16 == 0 &&"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("reinterpret_cast<unsigned long long>(in + (r * width)) % 16 == 0"),
            std::string::npos)
      << r;
  EXPECT_NE(
      r.find("const float4 rpl_in = reinterpret_cast<const float4*>(in + (r * width))[rpl_v];"),
      std::string::npos)
      << r;
  EXPECT_NE(r.find("reinterpret_cast<float4*>(out + (r * width))[rpl_v] = rpl_out;"),
            std::string::npos)
      << r;
  // The outer loop's header is not a grid-stride loop over x.
  const auto outer = vectorize_grid_stride_loop(text, text.find("for"), parameters);
  EXPECT_FALSE(outer.rewrite.has_value());
  EXPECT_NE(outer.refusal.find("is not the thread's global x index"), std::string::npos)
      << outer.refusal;
}

TEST(loop_vectorizer, knows_a_hoisted_stride_and_row_pointers_in_open_blocks_only) {
  const std::vector<parameter_info> parameters = {
      {"float *", "out"}, {"const float *", "in"}, {"int", "n"}};
  const std::string loop = "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += "
                           "stride) dst[i] = 2.0f * in[i];\n";
  const std::string open = "{\n  const int stride = gridDim.x * blockDim.x;\n"
                           "  float* __restrict__ dst = out + 4;\n  " +
                           loop + "}\n";
  const auto v = vectorize_grid_stride_loop(open, open.find("for ("), parameters, 0);
  ASSERT_TRUE(v.rewrite.has_value()) << v.refusal;
  EXPECT_EQ(v.rewrite->arrays, (std::vector<std::string>{"dst", "in"}));
  // Declared in a block closed before the loop: not known there.
  const std::string closed = "{\n  const int stride = gridDim.x * blockDim.x;\n"
                             "  { float* dst = out + 4; }\n  " +
                             loop + "}\n";
  const auto c = vectorize_grid_stride_loop(closed, closed.find("for ("), parameters, 0);
  EXPECT_FALSE(c.rewrite.has_value());
  EXPECT_NE(c.refusal.find("the index `i` is used other than as a subscript"), std::string::npos)
      << c.refusal;
  // Before the scope given (another function's body): not known either.
  const auto s =
      vectorize_grid_stride_loop(open, open.find("for ("), parameters, open.find("for ("));
  EXPECT_FALSE(s.rewrite.has_value());
  EXPECT_NE(s.refusal.find("its step `stride`"), std::string::npos) << s.refusal;
}

TEST(loop_vectorizer, stores_follow_the_last_write_and_each_lane_keeps_its_locals) {
  const std::vector<parameter_info> parameters = {
      {"unsigned *", "a"}, {"unsigned *", "b"}, {"unsigned", "key"}, {"int", "n"}};
  const std::string text =
      "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n"
      "  unsigned v = key;\n  a[i] = v;\n  b[i] = v;\n  a[i] = v + 1u;\n}\n";
  const auto v = vectorize_grid_stride_loop(text, 0, parameters);
  ASSERT_TRUE(v.rewrite.has_value()) << v.refusal;
  const std::string& r = v.rewrite->replacement;
  const std::size_t store_b = r.find("reinterpret_cast<uint4*>(b)[rpl_v] = rpl_b;");
  const std::size_t store_a = r.find("reinterpret_cast<uint4*>(a)[rpl_v] = rpl_a;");
  ASSERT_NE(store_a, std::string::npos) << r;
  EXPECT_LT(store_b, store_a) << r; // a's last write is the body's last
  EXPECT_NE(r.find("{\n      unsigned v = key;\n      rpl_a.w = v;"), std::string::npos) << r;
}

} // namespace
} // namespace rpl::stages::optimize
