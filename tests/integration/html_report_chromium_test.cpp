// The HTML report in a real browser: Debian's chromium, headless, renders the page to a PNG and
// to its DOM; the test checks that the roofline and the timeline are drawn (the kernel points' and
// the critical path's colours are on the screenshot, the expected elements are in the DOM) and
// that a page without them shows neither, so the checks can fail. Skips, saying so, where no
// chromium is installed (scripts/install-deps installs it).

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <png.h>

#include "stages/analysis/html_report.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::analysis {
namespace {

using rpl::testing::temp_dir;

std::filesystem::path find_chromium() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t at = 0;
  while (at <= dirs.size()) {
    const auto colon = dirs.find(':', at);
    const std::string dir = dirs.substr(at, colon == std::string::npos ? colon : colon - at);
    for (const char* name : {"chromium", "chromium-browser"}) {
      const auto candidate = std::filesystem::path(dir) / name;
      if (::access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
    if (colon == std::string::npos)
      break;
    at = colon + 1;
  }
  return {};
}

workers::child_outcome chromium(const std::filesystem::path& exe, std::vector<std::string> args) {
  workers::child_options options;
  // --no-sandbox: tests run as root in CI containers, where the sandbox refuses to start.
  options.argv = {exe.string(),    "--headless",        "--no-sandbox",
                  "--disable-gpu", "--hide-scrollbars", "--window-size=1100,1500"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.max_output_bytes = 8 << 20;
  return workers::run_child(options, std::chrono::seconds(90));
}

struct rgba_image {
  png_uint_32 width = 0, height = 0;
  std::vector<unsigned char> pixels;
  /// Pixels within `tolerance` of the colour on every channel.
  std::size_t count(unsigned r, unsigned g, unsigned b, int tolerance = 12) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i + 3 < pixels.size(); i += 4) {
      if (std::abs(pixels[i] - static_cast<int>(r)) <= tolerance &&
          std::abs(pixels[i + 1] - static_cast<int>(g)) <= tolerance &&
          std::abs(pixels[i + 2] - static_cast<int>(b)) <= tolerance)
        ++n;
    }
    return n;
  }
};

rgba_image read_png(const std::filesystem::path& file) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  rgba_image out;
  if (!png_image_begin_read_from_file(&image, file.c_str()))
    return out;
  image.format = PNG_FORMAT_RGBA;
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    out.pixels.clear();
    return out;
  }
  out.width = image.width;
  out.height = image.height;
  return out;
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

timeline_op
op(std::string name, std::string stream, std::int64_t start, std::int64_t end, bool critical) {
  timeline_op o;
  o.name = std::move(name);
  o.device = "GPU 0 (sm_90)";
  o.stream = std::move(stream);
  o.start_ns = start;
  o.end_ns = end;
  o.critical = critical;
  return o;
}

html_report_input example() {
  html_report_input in;
  in.title = "./multistream";
  in.notes = {"critical path from recorded synchronization (2 event waits)"};
  in.memory_bytes_per_s = 4.8e12; // H200 HBM3e
  in.compute_roofs = {{"FP32", 66.9e12}, {"BF16 tensor", 989.4e12}};
  in.points = {{"gemm_bf16", 300, 600e12, "compute"}, // near the tensor roof
               {"copy", 0.05, 0.2e12, "memory"},      // on the diagonal
               {"softmax", 2, 3e12, "memory"}};
  for (int i = 0; i < 200; ++i) {
    const std::int64_t t = i * 10'000;
    in.timeline.push_back(op("gemm_bf16", "Stream 1", t, t + 8'000, i % 2 == 0));
    in.timeline.push_back(op("copy", "Stream 2", t + 2'000, t + 5'000, i % 2 == 1));
  }
  in.kernels = {
      {"gemm_bf16", 200, 1.6e6, 0.64, 0.5, 60.6, "compute-throughput bound",
       "compute 60.6 % and memory 12.0 % of peak", "use the tensor cores"},
      {"copy", 200, 0.6e6, 0.24, 0.5, 83.0, "memory-bandwidth bound", "memory 83 % of peak",
       "move fewer bytes"},
      {"softmax <&> \"quoted\"", 1, 1e3, 0.0, std::nullopt, std::nullopt, "(no class)", "", ""}};
  return in;
}

TEST(html_report_chromium, the_roofline_and_the_timeline_are_drawn_in_a_real_browser) {
  const auto exe = find_chromium();
  if (exe.empty())
    GTEST_SKIP() << "no chromium on PATH (scripts/install-deps installs Debian's chromium): the "
                    "page was not rendered";
  temp_dir dir;
  const std::string page = html_report(example());
  rpl::testing::write_file(dir / "report.html", page);
  // Self-contained: nothing is fetched.
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);

  const auto dom = chromium(exe, {"--dump-dom", "file://" + (dir / "report.html").string()});
  ASSERT_TRUE(dom.succeeded()) << dom.output.substr(0, 2000);
  EXPECT_EQ(occurrences(dom.output, "class=\"kernel-point\""), 3u);
  EXPECT_EQ(occurrences(dom.output, "class=\"roof\""), 2u);
  EXPECT_NE(dom.output.find("id=\"timeline\""), std::string::npos);
  EXPECT_GE(occurrences(dom.output, "class=\"op critical\""), 1u);
  EXPECT_NE(dom.output.find("softmax &lt;&amp;&gt; \"quoted\""), std::string::npos)
      << "the kernel name is not escaped";

  const auto shot = chromium(exe, {"--screenshot=" + (dir / "report.png").string(),
                                   "file://" + (dir / "report.html").string()});
  ASSERT_TRUE(shot.succeeded()) << shot.output.substr(0, 2000);
  const rgba_image image = read_png(dir / "report.png");
  ASSERT_GT(image.width, 0u) << "chromium wrote no readable PNG";
  // Kernel points (#4e79a7 compute, #e15759 memory) and the timeline's runs (#4e79a7 ops,
  // #e15759 critical path) are on the picture, in quantity.
  EXPECT_GT(image.count(0x4e, 0x79, 0xa7), 2000u) << "no compute point or op drawn";
  EXPECT_GT(image.count(0xe1, 0x57, 0x59), 2000u) << "no memory point or critical path drawn";
  // The tensor roof's colour (palette[1], #f28e2b) is drawn too.
  EXPECT_GT(image.count(0xf2, 0x8e, 0x2b), 200u) << "the second roof is not drawn";
}

TEST(html_report_chromium, a_page_without_roofline_or_timeline_shows_neither_colour) {
  const auto exe = find_chromium();
  if (exe.empty())
    GTEST_SKIP() << "no chromium on PATH: the page was not rendered";
  temp_dir dir;
  html_report_input empty;
  empty.title = "nothing";
  rpl::testing::write_file(dir / "report.html", html_report(empty));
  const auto shot = chromium(exe, {"--screenshot=" + (dir / "report.png").string(),
                                   "file://" + (dir / "report.html").string()});
  ASSERT_TRUE(shot.succeeded()) << shot.output.substr(0, 2000);
  const rgba_image image = read_png(dir / "report.png");
  ASSERT_GT(image.width, 0u);
  EXPECT_LT(image.count(0x4e, 0x79, 0xa7), 50u);
  EXPECT_LT(image.count(0xe1, 0x57, 0x59), 50u);
}

TEST(html_report, a_million_ops_make_a_page_the_size_of_the_picture) {
  // One track per stream, merged at the drawing's resolution: 1,000,000 back-to-back ops become a
  // single run per track, so the page stays small.
  html_report_input in;
  for (int i = 0; i < 1'000'000; ++i)
    in.timeline.push_back(op("k", i % 2 ? "Stream 1" : "Stream 2", i * 100, i * 100 + 200, false));
  const std::string page = html_report(in);
  EXPECT_LT(page.size(), 100'000u);
  EXPECT_EQ(occurrences(page, "class=\"op\""), 2u);
}

} // namespace
} // namespace rpl::stages::analysis
