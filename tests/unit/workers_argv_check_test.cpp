// check_argv (workers/compilers/argv_check.hpp): a table of what a rogue engine tried (issue 28)
// and of the build templates the project uses, which must still run. Each argv is judged as the
// worker runs it: {OUT} already replaced by the artifact path in the job folder.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "workers/compilers/argv_check.hpp"

namespace rpl::workers {
namespace {

using argv_t = std::vector<std::string>;

const std::string job_dir = "/tmp/rpl-job-7-1-abcdef";
const std::string out = job_dir + "/artifact.out";

argv_limits limits() {
  return {job_dir, {"/opt/vendor/include"}};
}

struct refused_case {
  argv_t argv;
  std::string flag;     ///< what the refusal names
  std::string why_part; ///< a piece of its reason
};

TEST(workers_argv_check, refuses_what_a_rogue_engine_sent_and_names_the_flag) {
  const std::vector<refused_case> cases = {
      // Runs another program.
      {{"g++", "-wrapper", "/bin/sh,-c,touch /tmp/x", "x.cpp"}, "-wrapper", "runs another program"},
      {{"g++", "-B/tmp/evil/", "x.cpp"}, "-B/tmp/evil/", "programs the compiler runs"},
      {{"g++", "-B", "/tmp/evil", "x.cpp"}, "-B", "programs the compiler runs"},
      {{"g++", "--prefix=/tmp/evil", "x.cpp"}, "--prefix=/tmp/evil", "programs"},
      {{"clang++", "-fuse-ld=/tmp/evil/ld", "x.cpp"}, "-fuse-ld=/tmp/evil/ld", "runs the program"},
      {{"clang++", "--ld-path=/tmp/ld", "x.cpp"}, "--ld-path=/tmp/ld", "runs another program"},
      {{"clang++", "-ccc-install-dir", "/tmp", "x.cpp"}, "-ccc-install-dir", "programs"},
      {{"clang++", "--gcc-toolchain=/tmp/t", "x.cpp"}, "--gcc-toolchain=/tmp/t", "programs"},
      {{"g++", "-fmodule-mapper=|nc evil 1", "x.cpp"}, "-fmodule-mapper=|nc evil 1", "program"},
      {{"nvcc", "-ccbin", "/tmp/evil/g++", "x.cu"}, "-ccbin", "host compiler"},
      {{"nvcc", "--compiler-bindir=/tmp/evil", "x.cu"}, "--compiler-bindir=/tmp/evil", "host"},
      {{"nvcc", "-run", "x.cu"}, "-run", "runs the program it builds"},
      // Loads code into the compiler.
      {{"g++", "-fplugin=./shipped.so", "x.cpp"}, "-fplugin=./shipped.so", "loads code"},
      {{"g++", "-fplugin-arg-x-y=1", "x.cpp"}, "-fplugin-arg-x-y=1", "loads code"},
      {{"clang++", "-fpass-plugin=./p.so", "x.cpp"}, "-fpass-plugin=./p.so", "loads code"},
      {{"clang++", "-Xclang", "-load", "-Xclang", "./p.so", "x.cpp"}, "-load", "with -Xclang"},
      {{"clang++", "-Xclang=-load", "x.cpp"}, "-load", "loads code"},
      {{"clang++", "-Xclang", "-plugin", "-Xclang", "p", "x.cpp"}, "-plugin", "loads code"},
      {{"clang++", "-Xclang", "-add-plugin", "-Xclang", "p", "x.cpp"}, "-add-plugin", "loads"},
      {{"hipcc", "-mllvm", "-load=./p.so", "x.hip"}, "-load=./p.so", "with -mllvm"},
      {{"hipcc", "-mllvm", "--load-pass-plugin=p.so", "x.hip"}, "--load-pass-plugin=p.so", "loads"},
      {{"g++", "-Wl,-plugin,./p.so", "x.cpp"}, "-plugin", "with -Wl,"},
      {{"g++", "-Xlinker", "--plugin=./p.so", "x.cpp"}, "--plugin=./p.so", "-Xlinker"},
      {{"hipcc", "--hipspv-pass-plugin=p.so", "x.hip"}, "--hipspv-pass-plugin=p.so", "loads"},
      // Reads files the engine chooses.
      {{"g++", "@/etc/passwd"}, "@/etc/passwd", "response file"},
      {{"g++", "-DX=1", "@args", "x.cpp"}, "@args", "response file"},
      {{"g++", "-D", "@/etc/passwd", "x.cpp"}, "@/etc/passwd", "response file"},
      {{"g++", "-Wl,@/etc/passwd", "x.cpp"}, "@/etc/passwd", "response file"},
      {{"nvcc", "-optf", "/etc/passwd", "x.cu"}, "-optf", "more arguments"},
      {{"clang++", "--config=/etc/x.cfg", "x.cpp"}, "--config=/etc/x.cfg", "more arguments"},
      {{"g++", "-specs=/tmp/s", "x.cpp"}, "-specs=/tmp/s", "spec file"},
      {{"g++", "--specs=/tmp/s", "x.cpp"}, "--specs=/tmp/s", "spec file"},
      {{"g++", "--sysroot=/tmp/root", "x.cpp"}, "--sysroot=/tmp/root", "system headers"},
      {{"g++", "-isysroot", "/tmp/root", "x.cpp"}, "-isysroot", "system headers"},
      {{"hipcc", "--hip-path=/tmp/hip", "x.hip"}, "--hip-path=/tmp/hip", "installation"},
      {{"hipcc", "--rocm-path", "/tmp/r", "x.hip"}, "--rocm-path", "installation"},
      {{"clang++", "--cuda-path=/tmp/cuda", "x.cu"}, "--cuda-path=/tmp/cuda", "programs"},
      {{"clang++", "-working-directory", "/etc", "-x", "c", "shadow"},
       "-working-directory",
       "relative paths"},
      {{"clang++", "-working-directory=/etc", "shadow"}, "-working-directory=/etc", "relative"},
      {{"g++", "-x", "c", "/etc/shadow"}, "/etc/shadow", "outside the job folder"},
      {{"g++", "-E", "/etc/passwd"}, "/etc/passwd", "outside the job folder"},
      {{"g++", "../../etc/passwd"}, "../../etc/passwd", "'..'"},
      {{"g++", "-include", "/etc/shadow", "x.cpp"}, "-include /etc/shadow", "outside"},
      {{"g++", "-include/etc/shadow", "x.cpp"}, "-include/etc/shadow", "outside"},
      {{"g++", "-imacros", "/etc/shadow", "x.cpp"}, "-imacros /etc/shadow", "outside"},
      {{"g++", "-I/etc", "x.cpp"}, "-I/etc", "outside"},
      {{"g++", "-I", "/etc", "x.cpp"}, "-I /etc", "outside"},
      {{"g++", "-I=/etc", "x.cpp"}, "-I=/etc", "sysroot"},
      {{"g++", "-isystem", "/root", "x.cpp"}, "-isystem /root", "outside"},
      {{"g++", "-iquote/home", "x.cpp"}, "-iquote/home", "outside"},
      {{"g++", "-idirafter", "/etc", "x.cpp"}, "-idirafter /etc", "outside"},
      {{"g++", "-L/etc", "x.cpp"}, "-L/etc", "outside"},
      {{"g++", "-I../..", "x.cpp"}, "-I../..", "'..'"},
      {{"g++", "-l:/etc/passwd", "x.cpp"}, "-l:/etc/passwd", "library by path"},
      {{"g++", "-Xclang", "-include", "-Xclang", "/etc/shadow", "x.cpp"},
       "-include /etc/shadow",
       "-Xclang"},
      {{"g++", "-Wp,-include,/etc/shadow", "x.cpp"}, "-include /etc/shadow", "-Wp,"},
      {{"g++", "-Wl,-T,/etc/passwd", "x.cpp"}, "-T /etc/passwd", "-Wl,"},
      {{"g++", "-T/etc/passwd", "x.cpp"}, "-T/etc/passwd", "outside"},
      {{"nvcc", "-Xcompiler", "-include,/etc/shadow", "x.cu"},
       "-include /etc/shadow",
       "-Xcompiler"},
      {{"nvcc", "-Xcompiler=-wrapper,/bin/sh", "x.cu"}, "-wrapper", "-Xcompiler"},
      {{"nvcc", "-Xcompiler", "-fplugin=p.so", "x.cu"}, "-fplugin=p.so", "-Xcompiler"},
      {{"nvcc", "-I=/etc", "x.cu"}, "-I=/etc", "outside"},
      {{"nvcc", "--include-path=/etc", "x.cu"}, "--include-path=/etc", "outside"},
      // Writes outside the job folder.
      {{"g++", "x.cpp", "-o", "/tmp/elsewhere/a.out"}, "-o /tmp/elsewhere/a.out", "outside"},
      {{"g++", "x.cpp", "-o/etc/cron.d/x"}, "-o/etc/cron.d/x", "outside"},
      {{"g++", "x.cpp", "-o", job_dir + "/../x"}, "-o " + job_dir + "/../x", "outside"},
      {{"g++", "x.cpp", "-o", "../x"}, "-o ../x", "'..'"},
      {{"g++", "x.cpp", "--output=/tmp/x"}, "--output=/tmp/x", "outside"},
      {{"g++", "-MD", "-MF", "/tmp/x.d", "x.cpp"}, "-MF /tmp/x.d", "outside"},
      {{"g++", "-save-temps=/tmp", "x.cpp"}, "-save-temps=/tmp", "outside"},
      {{"g++", "-dumpdir", "/tmp/", "x.cpp"}, "-dumpdir /tmp/", "outside"},
      {{"g++", "-fprofile-generate=/tmp/p", "x.cpp"}, "-fprofile-generate=/tmp/p", "outside"},
      {{"clang++", "-ftime-trace=/tmp/t.json", "x.cpp"}, "-ftime-trace=/tmp/t.json", "outside"},
      {{"g++", "-Wl,-Map=/tmp/m", "x.cpp"}, "-Map=/tmp/m", "-Wl,"},
      {{"g++", "-Wa,-adhln=/tmp/l", "x.cpp"}, "-adhln=/tmp/l", "-Wa,"},
      {{"nvcc", "x.cu", "--output-file", "/tmp/x"}, "--output-file /tmp/x", "outside"},
      {{"nvcc", "x.cu", "-odir", "/tmp"}, "-odir /tmp", "outside"},
      {{"nvcc", "x.cu", "--keep-dir=/tmp", "--keep"}, "--keep-dir=/tmp", "outside"},
      {{"nvcc", "x.cu", "-Xptxas", "-o,/tmp/x.cubin"}, "-o /tmp/x.cubin", "-Xptxas"},
      {{"nvcc", "x.cu", "-Xnvlink", "-o,/tmp/x"}, "-o /tmp/x", "-Xnvlink"},
      // Shell syntax where the compiler runs its steps through /bin/sh.
      {{"nvcc", "-DX=$(touch /tmp/p)", "x.cu"}, "-DX=$(touch /tmp/p)", "/bin/sh"},
      {{"nvcc", "-Xcompiler", "-DX;touch", "x.cu"}, "-DX;touch", "/bin/sh"},
      {{"hipcc", "x.hip", "-o", "a`id`"}, "a`id`", "/bin/sh"},
      {{"hipcc", "-DX=\";touch /tmp/p;\"", "x.hip"}, "-DX=\";touch /tmp/p;\"", "/bin/sh"},
      {{"hipcc", "-DX=1 /etc/shadow", "x.hip"}, "-DX=1 /etc/shadow", "a space"},
      // A tool nobody checks; an unknown compiler gets every family's refusals.
      {{"clang++", "-Xcicc", "-x", "x.cpp"}, "-Xcicc", "cannot check"},
      {{"mycc", "-ccbin", "/tmp/x", "x.cpp"}, "-ccbin", "host compiler"},
      {{"mycc", "-DX=$(id)", "x.cpp"}, "-DX=$(id)", "/bin/sh"},
      {{"g++", std::string("x.cpp\0/etc/passwd", 17)}, "x.cpp\\0...", "NUL"},
  };
  for (const auto& c : cases) {
    const auto refusal = check_argv(c.argv, limits());
    std::string shown;
    for (const auto& word : c.argv)
      shown += word + " ";
    ASSERT_TRUE(refusal.has_value()) << shown;
    EXPECT_EQ(refusal->flag, c.flag) << shown;
    EXPECT_NE(refusal->why.find(c.why_part), std::string::npos) << shown << ": " << refusal->why;
    EXPECT_EQ(refusal->message().rfind("refused flag " + c.flag + ": ", 0), 0u)
        << refusal->message();
    EXPECT_NE(refusal->message().find("; fix: "), std::string::npos) << refusal->message();
  }
}

TEST(workers_argv_check, passes_the_build_templates_the_project_uses) {
  const std::vector<argv_t> cases = {
      // README, examples/cpu
      {"g++", "-O2", "-std=c++17", "-march=native", "-DTILE_I=32", "-DTILE_J=16", "-DTILE_K=64",
       "-DUNROLL=4", "matmul.cpp", "-o", out},
      {"g++", "-O2", "-DTILE=8", "k.cpp", "-o", out},
      // tests/fixtures (test_support.hpp) and the engine's tests
      {"g++", "-O0", "-DMODE=0", "-DSLEEP_US=1000", "candidate.cpp", "-o", out},
      {"c++", "-std=c++17", "-DMODE=1", "-DSLEEP_US=1000", "candidate.cpp", "-o", out},
      {"/usr/bin/g++", "-DMODE=2", "candidate.cpp", "-o", out},
      {"true", "-o", out},
      {"true"},
      {"sleep", "0.4"},
      // examples/cuda, docs/launch-file.md, tests/gpu (nvcc as the worker runs it)
      {"nvcc", "-O3", "-arch=sm_90", "-DTILE_M=64", "-DTILE_N=64", "-DTILE_K=8", "-DTHREAD_M=4",
       "-DTHREAD_N=4", "gemm.cu", "-o", out, "--resource-usage"},
      {"nvcc", "-cubin", "-arch=sm_90", "-DTILE_M=64", "gemm.cu", "-o", out, "--resource-usage"},
      {"/usr/local/cuda/bin/nvcc", "-cubin", "-arch=sm_90", "-maxrregcount=255", "-DLIVE=8",
       "-DBLOCK=128", "-DDYN=0", "k.cu", "-o", out, "--resource-usage"},
      {"/usr/local/cuda/bin/nvcc", "-arch=sm_90", "-cubin", "-DGATHER_UNROLL=4",
       "pointer_table_kernel.cu", "-o", out},
      {"nvcc", "-arch=sm_90", "-DTILE=256", "-c", "k.cu", "-o", out, "--resource-usage"},
      {"nvcc", "-gencode", "arch=compute_90,code=sm_90", "-Xptxas", "-v,-O3", "-lineinfo",
       "-std=c++17", "-Xcompiler", "-fPIC,-O2", "k.cu", "-o", out},
      // hipcc (tests/integration/engine_candidate_screen_test.cpp)
      {"hipcc", "--offload-arch=gfx90a", "--cuda-device-only", "--no-gpu-bundle-output",
       "-DBOUND=256", "-DLDS=40960", "-DBLOCK=64", "-DDYN=0", "-c", "k.hip", "-o", out},
      {"hipcc", "--offload-arch=gfx90a:xnack+", "-O3", "-mllvm", "-amdgpu-early-inline-all=true",
       "k.hip", "-o", out},
      // Common flags that name no file, and paths the job or the worker allows.
      {"g++",
       "-O3",
       "-g",
       "-Wall",
       "-Wextra",
       "-fopenmp",
       "-fPIC",
       "-shared",
       "-pthread",
       "-fsanitize=address,undefined",
       "-Wframe-larger-than=4096",
       "-MD",
       "-MF",
       "dep.d",
       "-I.",
       "-Iinclude",
       "-isystem",
       "third_party",
       "-include",
       "config.h",
       "-Wl,-O1,--as-needed",
       "-lm",
       "-x",
       "c++",
       "k.cpp",
       "-o",
       out},
      {"g++", "-I/opt/vendor/include", "-isystem", "/opt/vendor/include/sub", "-DDIR=\"/usr\"",
       "-fdebug-prefix-map=/build=/src", "-I" + job_dir + "/inc", "-save-temps=obj", "k.cpp", "-o",
       out},
      {"clang++", "-Xclang", "-fno-pch-timestamp", "-fuse-ld=lld", "--", "k.cpp"},
  };
  for (const auto& argv : cases) {
    const auto refusal = check_argv(argv, limits());
    std::string shown;
    for (const auto& word : argv)
      shown += word + " ";
    EXPECT_FALSE(refusal.has_value()) << shown << ": " << refusal->message();
  }
}

TEST(workers_argv_check, a_read_root_admits_reads_but_never_writes) {
  const argv_limits with_root{job_dir, {"/opt/vendor"}};
  EXPECT_FALSE(check_argv({"g++", "-I/opt/vendor/include", "k.cpp"}, with_root));
  EXPECT_FALSE(check_argv({"g++", "/opt/vendor/lib/x.o", "k.cpp"}, with_root));
  const auto write = check_argv({"g++", "k.cpp", "-o", "/opt/vendor/x"}, with_root);
  ASSERT_TRUE(write);
  EXPECT_FALSE(write->read_only);
  EXPECT_EQ(write->path, "/opt/vendor/x");
  EXPECT_NE(write->message().find("write inside the job folder"), std::string::npos);
  // A sibling whose name starts like the root is not inside it.
  const auto sibling = check_argv({"g++", "-I/opt/vendorx", "k.cpp"}, with_root);
  ASSERT_TRUE(sibling);
  EXPECT_TRUE(sibling->read_only);
  EXPECT_NE(sibling->message().find("--allow-path"), std::string::npos) << sibling->message();
  // Nor is a job folder's sibling, or a way out of it.
  EXPECT_TRUE(check_argv({"g++", "k.cpp", "-o", job_dir + "x/a"}, with_root));
  EXPECT_TRUE(check_argv({"g++", "k.cpp", "-o", job_dir + "/sub/../../a"}, with_root));
  EXPECT_FALSE(check_argv({"g++", "k.cpp", "-o", job_dir + "/sub/../a"}, with_root));
}

TEST(workers_argv_check, an_empty_argv_or_a_flag_without_its_value_is_left_to_the_compiler) {
  EXPECT_FALSE(check_argv({}, limits()));
  EXPECT_FALSE(check_argv({"g++"}, limits()));
  EXPECT_FALSE(check_argv({"g++", "k.cpp", "-o"}, limits()));
  EXPECT_FALSE(check_argv({"g++", "-Xclang"}, limits()));
  EXPECT_FALSE(check_argv({"g++", "", "-"}, limits()));
  // ...but a refused flag is refused without its value too.
  EXPECT_TRUE(check_argv({"g++", "-wrapper"}, limits()));
}

TEST(workers_argv_check, names_the_paths_a_template_only_reads_for_local_workers) {
  EXPECT_EQ(named_read_paths({"g++", "-I/opt/a/include", "-isystem", "/opt/b", "-include",
                              "/opt/c.h", "-DX=/usr", "k.cpp", "-o", "{OUT}"}),
            (std::vector<std::string>{"/opt/a/include", "/opt/b", "/opt/c.h"}));
  EXPECT_TRUE(named_read_paths({"g++", "-O2", "k.cpp", "-o", "{OUT}"}).empty());
  // It stops at the first refusal that no --allow-path would admit.
  EXPECT_EQ(named_read_paths({"g++", "-I/opt/a", "-o", "/tmp/x", "-I/opt/b"}),
            (std::vector<std::string>{"/opt/a"}));
  EXPECT_TRUE(named_read_paths({"g++", "-wrapper", "x", "-I/opt/a"}).empty());
}

} // namespace
} // namespace rpl::workers
