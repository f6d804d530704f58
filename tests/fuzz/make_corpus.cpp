// Writes the generated seeds of the fuzz corpora (README.md here): valid messages of every wire
// type for fuzz_codec, small rocpd files for fuzz_rocpd_reader (the test fixtures' writer, shrunk
// to 512-byte pages), a minimal AMDGPU code object for fuzz_code_object, compile requests (the
// project's build templates and a rogue engine's) for fuzz_compile_job and argv lines for
// fuzz_argv_check. The other seeds (space
// files, hipcc code objects) are copies of real files; README.md says where they come from.
//
//   build-fuzz/tests/fuzz/make_corpus tests/fuzz/corpus
//
// Output is deterministic (fixed uuids and seeds), so running it again changes no committed file.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "messages/codec.hpp"
#include "messages/kernel_lane.hpp"
#include "messages/wire.hpp"
#include "support/rocpd_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
namespace m = rpl::messages;

void write(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

/// fuzz_codec's frame layout: [header length][envelope length][header][envelope][body].
std::string worker_frames(const m::envelope& env, std::string_view body) {
  const std::string header = m::protocol_header;
  const std::string env_bytes = m::encode(env);
  std::string out;
  out.push_back(static_cast<char>(header.size()));
  out.push_back(static_cast<char>(env_bytes.size()));
  return out + header + env_bytes + std::string(body);
}

m::kernel_launch sample_launch() {
  m::kernel_launch launch;
  launch.symbol = "gemm_kernel";
  launch.grid = {64, 64, 1};
  launch.block = {16, 16, 1};
  launch.shared_bytes = 4096;
  m::kernel_arg a;
  a.name = "A";
  a.count = 1024;
  a.init.fill = m::buffer_fill::random;
  a.init.seed = 7;
  m::kernel_arg c;
  c.name = "C";
  c.count = 1024;
  c.output = true;
  c.tolerance = {1e-5, 1e-3};
  m::kernel_arg n;
  n.name = "N";
  n.kind = m::kernel_arg_kind::scalar;
  n.type = m::element_type::i32;
  n.int_value = 32;
  launch.args = {a, c, n};
  launch.reference = m::kernel_reference{"", "gemm_reference", {64, 64, 1}, {16, 16, 1}, 0};
  return launch;
}

void codec_seeds(const fs::path& dir) {
  m::envelope env;
  env.kind = m::message_kind::compile_request;
  env.job_id = 42;
  env.run_id = "run-1";
  write(dir / "envelope", m::encode(env));

  m::ready ready;
  ready.worker_id = "host:1234";
  ready.host = "host";
  ready.pid = 1234;
  ready.compilers = {"c++", "hipcc", "nvcc"};
  ready.heartbeat_ms = 1000;
  write(dir / "ready", m::encode(ready));
  write(dir / "heartbeat", m::encode(m::heartbeat{7}));
  write(dir / "disconnect", m::encode(m::disconnect{"shutting down"}));

  m::compile_request request;
  request.sources = {{"matmul.cpp", "int main() { return 0; }\n"}};
  request.argv = {"c++", "-O2", "-DTILE=16", "matmul.cpp", "-o", "{OUT}"};
  request.toolchain_id = "g++ (Debian 12.2.0-14) 12.2.0";
  write(dir / "compile_request", m::encode(request));
  write(dir / "frames-compile_request", worker_frames(env, m::encode(request)));

  m::compile_reply reply;
  reply.status = m::compile_status::ok;
  reply.exit_code = 0;
  reply.output = "ptxas info: Used 32 registers";
  reply.artifact = {'\x7f', 'E', 'L', 'F', 0, 1};
  reply.has_artifact = true;
  reply.compile_ns = 123456789;
  reply.worker_id = "host:1234";
  reply.resources = {{"_Z4gemmPfS_", "sm_90", 32, 1, 4096, 0, 0, 0, 0}};
  write(dir / "compile_reply", m::encode(reply));
  env.kind = m::message_kind::compile_reply;
  write(dir / "frames-compile_reply", worker_frames(env, m::encode(reply)));

  m::measure_request measure;
  measure.candidate_key = "0123456789abcdef";
  measure.argv = {"/tmp/artifact", "--n", "256"};
  measure.launch = sample_launch();
  write(dir / "measure_request", m::encode(measure));

  m::measure_result result;
  result.status = m::measure_status::ok;
  result.samples_ns = {1000, 1010, 990, 1005, 998};
  result.lane = "timing-0";
  result.sampling = "converged";
  result.noise = 0.01;
  result.device_model = "NVIDIA H100 80GB HBM3";
  result.clocks.read = true;
  result.clocks.sm_mhz_before = 1980;
  result.clocks.sm_mhz_after = 1755;
  result.clocks.reasons_after = 0x20;
  result.clocks.throttled = true;
  write(dir / "measure_result", m::encode(result));

  m::verdict verdict;
  verdict.candidate_key = "0123456789abcdef";
  verdict.decision = m::verdict_kind::faster;
  verdict.best_key = "0123456789abcdef";
  verdict.median_ns = 1000.5;
  verdict.relative_change = -0.25;
  write(dir / "verdict", m::encode(verdict));
  env.kind = m::message_kind::heartbeat;
  env.job_id = 0;
  write(dir / "frames-heartbeat", worker_frames(env, m::encode(m::heartbeat{8})));

  m::kernel_lane_hello hello;
  hello.pid = 99;
  hello.status = m::kernel_lane_status::ok;
  hello.device = {"cuda", 0, "NVIDIA H100", "GPU-0000", "sm_90", 1980000, 80ull << 30};
  m::kernel_lane_request lane_request;
  lane_request.sequence = 3;
  lane_request.candidate_key = "0123456789abcdef";
  lane_request.code_object_path = "/tmp/gemm.cubin";
  lane_request.launch = sample_launch();
  lane_request.sampling.max_samples = 50;
  lane_request.sampling.max_noise = 0.02;
  m::kernel_lane_reply lane_reply;
  lane_reply.sequence = 3;
  lane_reply.status = m::kernel_lane_status::wrong_result;
  lane_reply.samples_ns = {5000, 5100};
  lane_reply.mismatch = {"C", 17, 1.5, 2.0, 3, 1024};
  lane_reply.device = hello.device;
  write(dir / "kernel_lane_hello", m::encode(hello));
  write(dir / "kernel_lane_request", m::encode(lane_request));
  write(dir / "kernel_lane_reply", m::encode(lane_reply));
  write(dir / "kernel_lane_stream",
        m::frame_bytes(m::encode(lane_request)) + m::frame_bytes(m::encode(lane_reply)));
}

/// Rewrites `path` with 512-byte pages and no free pages: the same database in fewer bytes, so
/// that mutations land on the structure rather than on padding.
void shrink(const fs::path& path) {
  rpl::testing::sqlite_db db(path);
  db.exec("PRAGMA page_size = 512");
  db.exec("VACUUM");
}

void rocpd_seeds(const fs::path& dir) {
  const fs::path scratch = fs::temp_directory_path() / "rpl-make-corpus";
  fs::remove_all(scratch);
  const std::string guid_a = "0197abcd-1234-7abc-8def-0123456789ab";
  const std::string guid_b = "0197abcd-5678-7abc-8def-ba9876543210";
  rpl::testing::write_process_trace(scratch / "one.db", 100, {"gemm", "__amd_rocclr_copyBuffer"}, 6,
                                    1, 1000, guid_a);
  fs::copy_file(scratch / "one.db", scratch / "minimal.db");
  shrink(scratch / "one.db");
  fs::create_directories(dir);
  fs::copy_file(scratch / "one.db", dir / "one_process.db", fs::copy_options::overwrite_existing);

  // The same trace with only what the reader reads (its six views and the tables under them): a
  // third of the bytes, so more of each mutation hits what the reader parses.
  {
    rpl::testing::sqlite_db db(scratch / "minimal.db");
    const std::string suffix = "_0197abcd_1234_7abc_8def_0123456789ab";
    for (const auto& row : db.rows("SELECT name FROM sqlite_master WHERE type = 'view' AND name "
                                   "NOT IN ('rocpd_kernel_dispatch', 'rocpd_info_kernel_symbol', "
                                   "'rocpd_info_agent', 'rocpd_info_queue', 'rocpd_info_stream', "
                                   "'rocpd_info_process')")) {
      db.exec("DROP VIEW \"" + row[0] + "\"");
    }
    for (const char* table : {"pmc_event", "arg", "sample", "memory_copy", "memory_allocate",
                              "region", "info_pmc", "info_code_object"}) {
      db.exec("DROP TABLE rocpd_" + std::string(table) + suffix);
    }
  }
  shrink(scratch / "minimal.db");
  fs::copy_file(scratch / "minimal.db", dir / "minimal.db", fs::copy_options::overwrite_existing);

  // Two uuid suffixes in one file, as when per-process databases are merged.
  rpl::testing::write_process_trace(scratch / "a.db", 100, {"gemm"}, 3, 2, 1000, guid_a);
  rpl::testing::write_process_trace(scratch / "b.db", 200, {"reduce", "scan"}, 3, 3, 5000, guid_b);
  {
    rpl::testing::sqlite_db db(scratch / "a.db");
    db.exec("ATTACH DATABASE '" + (scratch / "b.db").string() + "' AS other");
    for (const auto& row :
         db.rows("SELECT name FROM other.sqlite_master WHERE type = 'table' AND name LIKE "
                 "'rocpd_%' ORDER BY name")) {
      db.exec("CREATE TABLE main.\"" + row[0] + "\" AS SELECT * FROM other.\"" + row[0] + "\"");
    }
    db.exec("DETACH DATABASE other");
  }
  shrink(scratch / "a.db");
  fs::copy_file(scratch / "a.db", dir / "two_suffixes.db", fs::copy_options::overwrite_existing);
  fs::remove_all(scratch);
}

void put(std::string& out, std::size_t at, std::uint64_t value, std::size_t width) {
  if (out.size() < at + width) {
    out.resize(at + width);
  }
  for (std::size_t i = 0; i < width; ++i) {
    out[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

/// A minimal AMDGPU ELF64 (as tests/unit/stages_code_object_metadata_test.cpp builds it): the
/// header, one note section holding the metadata as NT_AMDGPU_METADATA, the section name table.
std::string minimal_code_object() {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_map(2);
  pk.pack(std::string("amdhsa.target"));
  pk.pack(std::string("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
  pk.pack(std::string("amdhsa.kernels"));
  pk.pack_array(1);
  pk.pack_map(5);
  pk.pack(std::string(".name"));
  pk.pack(std::string("_Z4axpyfPKfPfi"));
  pk.pack(std::string(".symbol"));
  pk.pack(std::string("_Z4axpyfPKfPfi.kd"));
  pk.pack(std::string(".vgpr_count"));
  pk.pack(12);
  pk.pack(std::string(".sgpr_count"));
  pk.pack(18);
  pk.pack(std::string(".args"));
  pk.pack_array(1);
  pk.pack_map(3);
  pk.pack(std::string(".offset"));
  pk.pack(0);
  pk.pack(std::string(".size"));
  pk.pack(8);
  pk.pack(std::string(".value_kind"));
  pk.pack(std::string("global_buffer"));
  const std::string desc(buffer.data(), buffer.size());

  std::string out = "\x7f"
                    "ELF";
  out.resize(64);
  out[4] = 2; // ELFCLASS64
  out[5] = 1; // little-endian
  out[6] = 1;
  put(out, 16, 3, 2);   // ET_DYN
  put(out, 18, 224, 2); // EM_AMDGPU
  put(out, 20, 1, 4);
  put(out, 52, 64, 2);
  put(out, 54, 56, 2);
  const std::size_t note_at = out.size();
  put(out, note_at, 7, 4); // namesz: "AMDGPU\0"
  put(out, note_at + 4, desc.size(), 4);
  put(out, note_at + 8, 32, 4); // NT_AMDGPU_METADATA
  out += std::string_view("AMDGPU\0\0", 8);
  out += desc;
  out.resize((out.size() + 3) / 4 * 4, '\0');
  const std::size_t note_size = out.size() - note_at;
  const std::size_t strtab_at = out.size();
  out += std::string_view("\0.note\0.shstrtab\0", 17);
  out.resize((out.size() + 7) / 8 * 8, '\0');
  const std::size_t shoff = out.size();
  out.resize(shoff + 3 * 64, '\0');
  put(out, shoff + 64, 1, 4); // .note
  put(out, shoff + 64 + 4, 7, 4);
  put(out, shoff + 64 + 24, note_at, 8);
  put(out, shoff + 64 + 32, note_size, 8);
  put(out, shoff + 64 + 48, 4, 8);
  put(out, shoff + 128, 7, 4); // .shstrtab
  put(out, shoff + 128 + 4, 3, 4);
  put(out, shoff + 128 + 24, strtab_at, 8);
  put(out, shoff + 128 + 32, 17, 8);
  put(out, 40, shoff, 8);
  put(out, 58, 64, 2);
  put(out, 60, 3, 2);
  put(out, 62, 2, 2);
  return out;
}

/// fuzz_compile_job: COMPILE_REQUEST bodies, legitimate and rogue (issue 28).
void compile_job_seeds(const fs::path& dir) {
  const std::vector<std::pair<const char*, std::vector<std::string>>> jobs = {
      {"gxx-template", {"g++", "-O2", "-std=c++17", "-DTILE=16", "matmul.cpp", "-o", "{OUT}"}},
      {"nvcc-cubin", {"nvcc", "-cubin", "-arch=sm_90", "-DTILE_M=64", "gemm.cu", "-o", "{OUT}"}},
      {"hipcc-device",
       {"hipcc", "--offload-arch=gfx90a", "--cuda-device-only", "-c", "k.hip", "-o", "{OUT}"}},
      {"rogue-wrapper", {"g++", "-wrapper", "/bin/sh,-c,id", "matmul.cpp"}},
      {"rogue-plugin", {"g++", "-fplugin=./matmul.cpp", "-x", "c", "/etc/shadow", "@/etc/passwd"}},
      {"rogue-nvcc", {"nvcc", "-ccbin", "/tmp/g++", "-DX=$(id)", "-Xcompiler", "-B/tmp"}},
  };
  for (const auto& [name, argv] : jobs) {
    m::compile_request request;
    request.sources = {{"matmul.cpp", "int main() { return 0; }\n"},
                       {"inc/tile.h", "#pragma once"}};
    request.argv = argv;
    request.toolchain_id = "g++ | 12 | 0123";
    write(dir / name, m::encode(request));
  }
  m::compile_request unsafe;
  unsafe.sources = {{"../escape.cpp", "x"}};
  unsafe.argv = {"g++", "../escape.cpp"};
  write(dir / "rogue-source-name", m::encode(unsafe));
}

/// fuzz_argv_check: the first byte picks the compiler (its value mod 5: g++, clang++, nvcc, hipcc,
/// an unknown one), then one word per line.
void argv_seeds(const fs::path& dir) {
  const std::vector<std::pair<const char*, std::string>> lines = {
      {"gxx-template", "A-O2\n-std=c++17\n-DTILE=4\nmatmul.cpp\n-o\n/tmp/rpl-job-1-1-fuzz/a.out"},
      {"gxx-paths",
       "A-I/opt/vendor/include\n-isystem\n/etc\n-include\nx.h\n-MF\n../d\n-fprofile-generate=/tmp"},
      {"gxx-rogue", "A-wrapper\n/bin/sh,-c,id\n-Wl,-plugin,p.so\n@/etc/passwd"},
      {"clang-xclang", "B-Xclang\n-load\n-Xclang\n./p.so\n-fpass-plugin=p.so\n--\nk.cpp"},
      {"nvcc-template", "C-cubin\n-arch=sm_90\n-Xptxas\n-v,-O3\n-Xcompiler\n-fPIC\ngemm.cu\n-"
                        "o\nout\n--resource-usage"},
      {"nvcc-rogue", "C-ccbin\n/tmp/x\n-DX=$(id)\n-Xcompiler=-include,/etc/shadow\n-odir=/tmp"},
      {"hipcc-template",
       "D--offload-arch=gfx90a:xnack+\n-mllvm\n-amdgpu-early-inline-all=true\nk.hip"},
      {"unknown-compiler", "E-o\n{OUT}\n-DX=1\n--hip-path=/opt"},
  };
  for (const auto& [name, text] : lines)
    write(dir / name, text);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_corpus CORPUS_DIR (tests/fuzz/corpus)\n";
    return 2;
  }
  try {
    const fs::path corpus = argv[1];
    codec_seeds(corpus / "fuzz_codec");
    rocpd_seeds(corpus / "fuzz_rocpd_reader");
    write(corpus / "fuzz_code_object" / "minimal.hsaco", minimal_code_object());
    compile_job_seeds(corpus / "fuzz_compile_job");
    argv_seeds(corpus / "fuzz_argv_check");
  } catch (const std::exception& error) {
    std::cerr << "make_corpus: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
