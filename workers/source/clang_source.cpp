#include "workers/source/clang_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include <stdlib.h>

#ifndef RPL_NO_CLANG_C
#include <clang-c/Index.h>

#include "stages/optimize/compile_flags.hpp"
#endif

namespace rpl::workers {

namespace so = stages::optimize;

namespace {

constexpr const char* install_fix =
    "fix: install libclang (Debian/Ubuntu: apt-get install libclang1-15) or set RPL_LIBCLANG to "
    "the path of a libclang.so";

#ifdef RPL_NO_CLANG_C

} // namespace

bool libclang_available(std::string& why) {
  why = "libclang: this rocm-perf was built without the clang-c headers (RPL_NO_CLANG_C), so it "
        "cannot parse sources; fix: install libclang-15-dev and rebuild";
  return false;
}

so::source_model parse_source(std::string_view,
                              std::string_view,
                              std::string_view,
                              const std::vector<std::string>&,
                              std::string& error) {
  libclang_available(error);
  return {};
}

void forget_parsed_units() {}

#else

// The C-API functions used here, resolved with dlsym: rocm-perf never links libclang.
#define RPL_CLANG_FUNCTIONS(X)                                                                     \
  X(clang_createIndex)                                                                             \
  X(clang_disposeIndex)                                                                            \
  X(clang_parseTranslationUnit2)                                                                   \
  X(clang_reparseTranslationUnit)                                                                  \
  X(clang_defaultReparseOptions)                                                                   \
  X(clang_disposeTranslationUnit)                                                                  \
  X(clang_getTranslationUnitCursor)                                                                \
  X(clang_visitChildren)                                                                           \
  X(clang_getCursorKind)                                                                           \
  X(clang_getCursorSpelling)                                                                       \
  X(clang_getCString)                                                                              \
  X(clang_disposeString)                                                                           \
  X(clang_getCursorExtent)                                                                         \
  X(clang_getCursorLocation)                                                                       \
  X(clang_getRangeStart)                                                                           \
  X(clang_getRangeEnd)                                                                             \
  X(clang_getRange)                                                                                \
  X(clang_getExpansionLocation)                                                                    \
  X(clang_getSpellingLocation)                                                                     \
  X(clang_File_isEqual)                                                                            \
  X(clang_Cursor_getMangling)                                                                      \
  X(clang_getCursorReferenced)                                                                     \
  X(clang_getCursorSemanticParent)                                                                 \
  X(clang_Cursor_isNull)                                                                           \
  X(clang_getCursorType)                                                                           \
  X(clang_getCursorResultType)                                                                     \
  X(clang_getTypeSpelling)                                                                         \
  X(clang_isCursorDefinition)                                                                      \
  X(clang_getFile)                                                                                 \
  X(clang_getFileName)                                                                             \
  X(clang_getLocationForOffset)                                                                    \
  X(clang_tokenize)                                                                                \
  X(clang_getTokenSpelling)                                                                        \
  X(clang_getTokenLocation)                                                                        \
  X(clang_getTokenKind)                                                                            \
  X(clang_disposeTokens)                                                                           \
  X(clang_getNumDiagnostics)                                                                       \
  X(clang_getDiagnostic)                                                                           \
  X(clang_getDiagnosticSeverity)                                                                   \
  X(clang_getDiagnosticLocation)                                                                   \
  X(clang_getDiagnosticSpelling)                                                                   \
  X(clang_disposeDiagnostic)

struct libclang_api {
  void* handle = nullptr;
  std::string path;
#define RPL_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  RPL_CLANG_FUNCTIONS(RPL_DECLARE_MEMBER)
#undef RPL_DECLARE_MEMBER
};

/// Loads libclang once per process; nullptr (and `why`) when no candidate loads.
const libclang_api* load_libclang(std::string& why) {
  static libclang_api api;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("RPL_LIBCLANG"); env != nullptr && *env != '\0') {
      candidates.emplace_back(env);
    }
    for (const char* name :
         {"libclang-15.so.1", "libclang.so.1", "libclang-14.so.1", "libclang.so"}) {
      candidates.emplace_back(name);
    }
    std::string tried;
    for (const std::string& candidate : candidates) {
      void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* reason = ::dlerror();
        tried += (tried.empty() ? "" : "; ") + candidate + " (" +
                 (reason != nullptr ? reason : "not found") + ")";
        continue;
      }
      std::string missing;
#define RPL_RESOLVE(name)                                                                          \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, #name));                         \
  if (api.name == nullptr) {                                                                       \
    missing += (missing.empty() ? "" : ", ") + std::string(#name);                                 \
  }
      RPL_CLANG_FUNCTIONS(RPL_RESOLVE)
#undef RPL_RESOLVE
      if (!missing.empty()) {
        tried += (tried.empty() ? "" : "; ") + candidate + " (lacks " + missing + ")";
        ::dlclose(handle);
        api = libclang_api{};
        continue;
      }
      api.handle = handle;
      api.path = candidate;
      return;
    }
    failure = "libclang: could not load it; tried " + tried + "; " + install_fix;
  });
  if (api.handle == nullptr) {
    why = failure;
    return nullptr;
  }
  return &api;
}

// Stand-ins for the CUDA and HIP headers, used when the host's headers do not parse with this
// libclang (no toolkit, or a toolkit newer than the clang): enough for kernels to parse
// completely. Host API calls are declared variadic, so host code parses as far as it can.
std::string shim_root(); // the stand-in headers' folder (parse_folder below)
constexpr const char* shim_header = R"(#ifndef RPL_CLANG_SHIM_H
#define RPL_CLANG_SHIM_H
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __CUDACC__ 1
#define __HIPCC__ 1
typedef __SIZE_TYPE__ size_t;
#define RPL_SHIM_VEC(T, N)                                                                        \
  struct N##1 { T x; };                                                                          \
  struct N##2 { T x, y; };                                                                       \
  struct N##3 { T x, y, z; };                                                                    \
  struct __attribute__((aligned(sizeof(T) * 4))) N##4 { T x, y, z, w; };                        \
  __host__ __device__ inline N##2 make_##N##2(T x, T y) { return {x, y}; }                     \
  __host__ __device__ inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }             \
  __host__ __device__ inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
RPL_SHIM_VEC(float, float)
RPL_SHIM_VEC(double, double)
RPL_SHIM_VEC(int, int)
RPL_SHIM_VEC(unsigned, uint)
RPL_SHIM_VEC(char, char)
RPL_SHIM_VEC(unsigned char, uchar)
RPL_SHIM_VEC(short, short)
RPL_SHIM_VEC(unsigned short, ushort)
RPL_SHIM_VEC(long, long)
RPL_SHIM_VEC(unsigned long, ulong)
RPL_SHIM_VEC(long long, longlong)
RPL_SHIM_VEC(unsigned long long, ulonglong)
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;
__device__ void __syncthreads();
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence();
__device__ void __threadfence_block();
__device__ void __threadfence_system();
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ unsigned __activemask();
__device__ int __popc(unsigned);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ float __fdividef(float, float);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __sinf(float);
__device__ float __cosf(float);
__device__ float __saturatef(float);
#define CUDART_CB
#define RPL_SHIM_MATH1(f) __device__ float f##f(float); __device__ double f(double);
#define RPL_SHIM_MATH2(f) __device__ float f##f(float, float); __device__ double f(double, double);
RPL_SHIM_MATH1(sqrt) RPL_SHIM_MATH1(rsqrt) RPL_SHIM_MATH1(cbrt) RPL_SHIM_MATH1(exp)
RPL_SHIM_MATH1(exp2) RPL_SHIM_MATH1(expm1) RPL_SHIM_MATH1(log) RPL_SHIM_MATH1(log2)
RPL_SHIM_MATH1(log10) RPL_SHIM_MATH1(log1p) RPL_SHIM_MATH1(sin) RPL_SHIM_MATH1(cos)
RPL_SHIM_MATH1(tan) RPL_SHIM_MATH1(asin) RPL_SHIM_MATH1(acos) RPL_SHIM_MATH1(atan)
RPL_SHIM_MATH1(sinh) RPL_SHIM_MATH1(cosh) RPL_SHIM_MATH1(tanh) RPL_SHIM_MATH1(fabs)
RPL_SHIM_MATH1(floor) RPL_SHIM_MATH1(ceil) RPL_SHIM_MATH1(round) RPL_SHIM_MATH1(trunc)
RPL_SHIM_MATH1(erf) RPL_SHIM_MATH1(erfc) RPL_SHIM_MATH2(pow) RPL_SHIM_MATH2(fmin)
RPL_SHIM_MATH2(fmax) RPL_SHIM_MATH2(fmod) RPL_SHIM_MATH2(atan2) RPL_SHIM_MATH2(hypot)
RPL_SHIM_MATH2(copysign)
__device__ float fmaf(float, float, float);
__device__ double fma(double, double, double);
__device__ void sincosf(float, float*, float*);
__device__ int min(int, int);
__device__ unsigned min(unsigned, unsigned);
__device__ long long min(long long, long long);
__device__ float min(float, float);
__device__ double min(double, double);
__device__ int max(int, int);
__device__ unsigned max(unsigned, unsigned);
__device__ long long max(long long, long long);
__device__ float max(float, float);
__device__ double max(double, double);
__device__ int abs(int);
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMultiProcessorCount = 16,
                      cudaDevAttrClockRate = 13, cudaDevAttrComputeCapabilityMajor = 75,
                      cudaDevAttrComputeCapabilityMinor = 76,
                      cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
__device__ long long clock64();
__device__ int clock();
template <class T> __device__ T __shfl_sync(unsigned, T, int, int = 32);
template <class T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);
template <class T> __device__ T __shfl(T, int, int = 64);
template <class T> __device__ T __shfl_up(T, unsigned, int = 64);
template <class T> __device__ T __shfl_down(T, unsigned, int = 64);
template <class T> __device__ T __shfl_xor(T, int, int = 64);
template <class T> __device__ T __ldg(const T*);
template <class T, class U> __device__ T atomicAdd(T*, U);
template <class T, class U> __device__ T atomicSub(T*, U);
template <class T, class U> __device__ T atomicMax(T*, U);
template <class T, class U> __device__ T atomicMin(T*, U);
template <class T, class U> __device__ T atomicExch(T*, U);
template <class T, class U> __device__ T atomicAnd(T*, U);
template <class T, class U> __device__ T atomicOr(T*, U);
template <class T, class U> __device__ T atomicXor(T*, U);
template <class T, class U, class V> __device__ T atomicCAS(T*, U, V);
struct __half { unsigned short x; };
struct __half2 { __half x, y; };
struct __nv_bfloat16 { unsigned short x; };
typedef __half half;
typedef __half2 half2;
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
                   cudaErrorNotReady = 600 };
typedef cudaError_t cudaError;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
                      cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3,
                      cudaMemcpyDefault = 4 };
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
struct cudaDeviceProp { char name[256]; int multiProcessorCount; int major; int minor;
                        size_t totalGlobalMem; int warpSize; int maxThreadsPerBlock; };
struct cudaFuncAttributes { size_t sharedSizeBytes; size_t constSizeBytes; size_t localSizeBytes;
                            int maxThreadsPerBlock; int numRegs; int ptxVersion; int binaryVersion; };
const char* cudaGetErrorString(cudaError_t);
const char* cudaGetErrorName(cudaError_t);
#define RPL_SHIM_API(name) cudaError_t name(...);
RPL_SHIM_API(cudaMalloc) RPL_SHIM_API(cudaMallocHost) RPL_SHIM_API(cudaMallocManaged)
RPL_SHIM_API(cudaMallocAsync) RPL_SHIM_API(cudaFree) RPL_SHIM_API(cudaFreeHost)
RPL_SHIM_API(cudaFreeAsync) RPL_SHIM_API(cudaHostAlloc) RPL_SHIM_API(cudaMemcpy)
RPL_SHIM_API(cudaMemcpyAsync) RPL_SHIM_API(cudaMemset) RPL_SHIM_API(cudaMemsetAsync)
RPL_SHIM_API(cudaMemcpyToSymbol) RPL_SHIM_API(cudaMemcpyFromSymbol)
RPL_SHIM_API(cudaDeviceSynchronize) RPL_SHIM_API(cudaGetLastError) RPL_SHIM_API(cudaPeekAtLastError)
RPL_SHIM_API(cudaSetDevice) RPL_SHIM_API(cudaGetDevice) RPL_SHIM_API(cudaGetDeviceCount)
RPL_SHIM_API(cudaGetDeviceProperties) RPL_SHIM_API(cudaDeviceGetAttribute)
RPL_SHIM_API(cudaDeviceReset) RPL_SHIM_API(cudaStreamCreate)
RPL_SHIM_API(cudaStreamCreateWithFlags) RPL_SHIM_API(cudaStreamDestroy)
RPL_SHIM_API(cudaStreamSynchronize) RPL_SHIM_API(cudaStreamWaitEvent)
RPL_SHIM_API(cudaEventCreate) RPL_SHIM_API(cudaEventCreateWithFlags) RPL_SHIM_API(cudaEventDestroy)
RPL_SHIM_API(cudaEventRecord) RPL_SHIM_API(cudaEventSynchronize) RPL_SHIM_API(cudaEventQuery)
RPL_SHIM_API(cudaEventElapsedTime) RPL_SHIM_API(cudaLaunchKernel)
RPL_SHIM_API(cudaFuncSetAttribute) RPL_SHIM_API(cudaFuncGetAttributes)
RPL_SHIM_API(cudaOccupancyMaxActiveBlocksPerMultiprocessor) RPL_SHIM_API(cudaGraphCreate)
RPL_SHIM_API(cudaGraphInstantiate) RPL_SHIM_API(cudaGraphLaunch) RPL_SHIM_API(cudaGraphDestroy)
RPL_SHIM_API(cudaGraphExecDestroy) RPL_SHIM_API(cudaStreamBeginCapture)
RPL_SHIM_API(cudaStreamEndCapture) RPL_SHIM_API(cudaDeviceEnablePeerAccess)
RPL_SHIM_API(cudaDeviceCanAccessPeer) RPL_SHIM_API(cudaMemGetInfo)
RPL_SHIM_API(cudaDriverGetVersion) RPL_SHIM_API(cudaRuntimeGetVersion)
RPL_SHIM_API(cudaLaunchHostFunc) RPL_SHIM_API(cudaSetDeviceFlags) RPL_SHIM_API(cudaHostRegister)
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaStreamCaptureModeGlobal 0
#define cudaGraphInstantiateFlagAutoFreeOnLaunch 1
typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaDeviceProp hipDeviceProp_t;
#define hipSuccess cudaSuccess
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
const char* hipGetErrorString(hipError_t);
const char* hipGetErrorName(hipError_t);
RPL_SHIM_API(hipMalloc) RPL_SHIM_API(hipHostMalloc) RPL_SHIM_API(hipMallocManaged)
RPL_SHIM_API(hipFree) RPL_SHIM_API(hipHostFree) RPL_SHIM_API(hipMemcpy)
RPL_SHIM_API(hipMemcpyAsync) RPL_SHIM_API(hipMemset) RPL_SHIM_API(hipMemsetAsync)
RPL_SHIM_API(hipMemcpyToSymbol) RPL_SHIM_API(hipDeviceSynchronize) RPL_SHIM_API(hipGetLastError)
RPL_SHIM_API(hipPeekAtLastError) RPL_SHIM_API(hipSetDevice) RPL_SHIM_API(hipGetDevice)
RPL_SHIM_API(hipGetDeviceCount) RPL_SHIM_API(hipGetDeviceProperties)
RPL_SHIM_API(hipStreamCreate) RPL_SHIM_API(hipStreamCreateWithFlags) RPL_SHIM_API(hipStreamDestroy)
RPL_SHIM_API(hipStreamSynchronize) RPL_SHIM_API(hipEventCreate) RPL_SHIM_API(hipEventDestroy)
RPL_SHIM_API(hipEventRecord) RPL_SHIM_API(hipEventSynchronize) RPL_SHIM_API(hipEventElapsedTime)
RPL_SHIM_API(hipLaunchKernel) RPL_SHIM_API(hipFuncSetAttribute)
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[]
#define hipThreadIdx_x threadIdx.x
#define hipBlockIdx_x blockIdx.x
#define hipBlockDim_x blockDim.x
#define hipGridDim_x gridDim.x
#define hipLaunchKernelGGL(kernel, grid, block, shared, stream, ...)                              \
  kernel<<<(grid), (block), (shared), (stream)>>>(__VA_ARGS__)
extern "C" int __cudaPushCallConfiguration(dim3, dim3, size_t = 0, void* = 0);
extern "C" int __hipPushCallConfiguration(dim3, dim3, size_t = 0, void* = 0);
extern "C" __device__ void* malloc(size_t);
extern "C" __device__ void free(void*);
extern "C" __device__ int printf(const char*, ...);
#endif
)";

// CUDA 12 and later dropped texture references, which clang 15's CUDA wrapper still includes:
// an empty stand-in, found only after the toolkit's own include directory.
constexpr const char* texture_compat = R"(#ifndef RPL_CLANG_TEXTURE_COMPAT_H
#define RPL_CLANG_TEXTURE_COMPAT_H
template <class T, int dim = 1, enum cudaTextureReadMode mode = cudaReadModeElementType>
struct texture {};
#endif
)";

// The headers a CUDA or HIP source includes for its runtime; each is the shim in the fallback.
constexpr const char* shim_names[] = {
    "cuda_runtime.h",    "cuda_runtime_api.h",    "cuda.h",
    "cuda_fp16.h",       "cuda_bf16.h",           "device_launch_parameters.h",
    "hip/hip_runtime.h", "hip/hip_runtime_api.h", "hip/hip_fp16.h"};

std::string take(const libclang_api& api, CXString s) {
  const char* c = api.clang_getCString(s);
  std::string out = c != nullptr ? c : "";
  api.clang_disposeString(s);
  return out;
}

std::vector<CXCursor> children_of(const libclang_api& api, CXCursor cursor) {
  std::vector<CXCursor> out;
  api.clang_visitChildren(
      cursor,
      [](CXCursor child, CXCursor, CXClientData data) {
        static_cast<std::vector<CXCursor>*>(data)->push_back(child);
        return CXChildVisit_Continue;
      },
      &out);
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string find_cuda_path() {
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
    if (const char* env = std::getenv(var); env != nullptr && *env != '\0') {
      std::error_code ec;
      if (std::filesystem::exists(std::filesystem::path(env) / "include/cuda_runtime.h", ec)) {
        return env;
      }
    }
  }
  std::error_code ec;
  if (std::filesystem::exists("/usr/local/cuda/include/cuda_runtime.h", ec)) {
    return "/usr/local/cuda";
  }
  return {};
}

/// The clang resource directory (stddef.h, the CUDA wrappers), where libclang may not find it on
/// its own (a libclang loaded through a symlink outside its LLVM tree).
std::string find_resource_dir() {
  std::error_code ec;
  // A relocated libclang (a bundle on a GPU host) names its resource folder itself.
  if (const char* dir = std::getenv("RPL_CLANG_RESOURCE_DIR");
      dir != nullptr &&
      std::filesystem::exists(std::filesystem::path(dir) / "include/stddef.h", ec)) {
    return dir;
  }
  for (const char* root : {"/usr/lib/llvm-15/lib/clang", "/usr/lib/llvm-14/lib/clang",
                           "/usr/lib/clang", "/usr/local/lib/clang"}) {
    if (!std::filesystem::is_directory(root, ec)) {
      continue;
    }
    std::vector<std::string> versions;
    for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
      if (std::filesystem::exists(entry.path() / "include/stddef.h", ec)) {
        versions.push_back(entry.path().string());
      }
    }
    if (!versions.empty()) {
      std::sort(versions.begin(), versions.end());
      return versions.back();
    }
  }
  return {};
}

/// One parse: the translation unit and the flags it was made with.
struct parse_attempt {
  CXTranslationUnit tu = nullptr;
  std::vector<std::string> args;
  CXErrorCode code = CXError_Success;
};

class model_builder {
public:
  /// `file_name`: the path libclang parsed the text under; `display_name`: the source's name, which
  /// the model's diagnostics give for it.
  model_builder(const libclang_api& api,
                CXTranslationUnit tu,
                std::string_view text,
                std::string file_name,
                std::string display_name)
      : api_(api), tu_(tu), text_(text), file_name_(std::move(file_name)),
        display_name_(std::move(display_name)) {}

  so::source_model build() {
    read_tokens();
    directives_ = so::scan_directives(text_);
    walk_scope(api_.clang_getTranslationUnitCursor(tu_));
    // File-scope directives: those inside no declaration.
    for (const so::directive_info& d : directives_) {
      const bool inside = std::any_of(
          model_.declarations.begin(), model_.declarations.end(),
          [&](const so::declaration& decl) { return decl.range.contains(d.range.begin); });
      if (!inside) {
        model_.directives.push_back(d);
      }
    }
    read_diagnostics();
    return std::move(model_);
  }

private:
  struct location {
    std::size_t offset = 0;
    unsigned line = 0;
    bool in_main = false;
  };

  location expansion(CXSourceLocation loc) const {
    CXFile file = nullptr;
    unsigned line = 0, column = 0, offset = 0;
    api_.clang_getExpansionLocation(loc, &file, &line, &column, &offset);
    // Not clang_Location_isFromMainFile: it says no for a macro expanded in the main file.
    return {offset, line, is_main(file)};
  }

  /// clang_File_isEqual compares unique ids, which two unsaved (in-memory) files can share: the
  /// source and the texture stand-in header. Their names tell them apart.
  bool is_main(CXFile file) const {
    if (file == nullptr || main_file_ == nullptr ||
        api_.clang_File_isEqual(file, main_file_) == 0) {
      return false;
    }
    return file == main_file_ || take(api_, api_.clang_getFileName(file)) == main_name_;
  }

  bool spelled_in_macro(CXSourceLocation loc) const {
    CXFile f1 = nullptr, f2 = nullptr;
    unsigned l1 = 0, c1 = 0, o1 = 0, l2 = 0, c2 = 0, o2 = 0;
    api_.clang_getExpansionLocation(loc, &f1, &l1, &c1, &o1);
    api_.clang_getSpellingLocation(loc, &f2, &l2, &c2, &o2);
    return o1 != o2 || l1 != l2;
  }

  void read_tokens() {
    CXFile file = api_.clang_getFile(tu_, file_name_.c_str());
    main_file_ = file;
    if (file == nullptr) {
      return;
    }
    main_name_ = take(api_, api_.clang_getFileName(file));
    const CXSourceRange all = api_.clang_getRange(
        api_.clang_getLocationForOffset(tu_, file, 0),
        api_.clang_getLocationForOffset(tu_, file, static_cast<unsigned>(text_.size())));
    CXToken* tokens = nullptr;
    unsigned count = 0;
    api_.clang_tokenize(tu_, all, &tokens, &count);
    model_.tokens.reserve(count);
    for (unsigned i = 0; i < count; ++i) {
      if (api_.clang_getTokenKind(tokens[i]) == CXToken_Comment) {
        continue;
      }
      so::source_token t;
      t.spelling = take(api_, api_.clang_getTokenSpelling(tu_, tokens[i]));
      t.offset = expansion(api_.clang_getTokenLocation(tu_, tokens[i])).offset;
      model_.tokens.push_back(std::move(t));
    }
    if (tokens != nullptr) {
      api_.clang_disposeTokens(tu_, tokens, count);
    }
  }

  /// Index of the first token at or after `offset`.
  std::size_t token_at(std::size_t offset) const {
    const auto it =
        std::lower_bound(model_.tokens.begin(), model_.tokens.end(), offset,
                         [](const so::source_token& t, std::size_t o) { return t.offset < o; });
    return static_cast<std::size_t>(it - model_.tokens.begin());
  }

  bool in_directive(std::size_t offset) const {
    return std::any_of(directives_.begin(), directives_.end(),
                       [&](const so::directive_info& d) { return d.range.contains(offset); });
  }

  std::string qualified_name(CXCursor cursor) const {
    std::string name = take(api_, api_.clang_getCursorSpelling(cursor));
    CXCursor parent = api_.clang_getCursorSemanticParent(cursor);
    while (api_.clang_Cursor_isNull(parent) == 0) {
      const CXCursorKind kind = api_.clang_getCursorKind(parent);
      if (kind == CXCursor_TranslationUnit ||
          (kind >= CXCursor_FirstInvalid && kind <= CXCursor_LastInvalid)) {
        break;
      }
      if (kind == CXCursor_Namespace || kind == CXCursor_StructDecl || kind == CXCursor_ClassDecl ||
          kind == CXCursor_ClassTemplate || kind == CXCursor_UnionDecl) {
        std::string scope = take(api_, api_.clang_getCursorSpelling(parent));
        name = (scope.empty() ? std::string("(anonymous)") : scope) + "::" + name;
      }
      parent = api_.clang_getCursorSemanticParent(parent);
    }
    return name;
  }

  void walk_scope(CXCursor scope) {
    for (CXCursor child : children_of(api_, scope)) {
      const location where = expansion(api_.clang_getCursorLocation(child));
      if (!where.in_main) {
        continue;
      }
      const CXCursorKind kind = api_.clang_getCursorKind(child);
      if (kind == CXCursor_Namespace) {
        walk_scope(child);
        continue;
      }
      // libclang 15 reports `extern "C"` as an unexposed declaration.
      if (kind == CXCursor_LinkageSpec || kind == CXCursor_UnexposedDecl) {
        const CXSourceRange extent = api_.clang_getCursorExtent(child);
        const std::size_t begin = expansion(api_.clang_getRangeStart(extent)).offset;
        const std::size_t index = token_at(begin);
        const bool braces = index + 2 < model_.tokens.size() &&
                            model_.tokens[index].spelling == "extern" &&
                            model_.tokens[index + 2].spelling == "{";
        const std::vector<CXCursor> inner = children_of(api_, child);
        if (braces) {
          walk_scope(child);
        } else if (inner.empty()) {
          add_declaration(child, extent);
        } else {
          for (CXCursor decl : inner) {
            add_declaration(decl, extent); // `extern "C"` belongs to the declaration
          }
        }
        continue;
      }
      add_declaration(child, api_.clang_getCursorExtent(child));
    }
  }

  void add_declaration(CXCursor cursor, CXSourceRange extent) {
    so::declaration d;
    const CXCursorKind kind = api_.clang_getCursorKind(cursor);
    std::size_t begin = expansion(api_.clang_getRangeStart(extent)).offset;
    std::size_t end = expansion(api_.clang_getRangeEnd(extent)).offset;
    if (end < begin) {
      end = begin;
    }
    // Leading attributes, `extern "C"`, `static`, template<...>: back to the previous `;`, `{`,
    // `}`, directive or declaration.
    std::size_t first = token_at(begin);
    while (first > 0) {
      const so::source_token& prev = model_.tokens[first - 1];
      if (prev.offset < last_end_ || prev.spelling == ";" || prev.spelling == "{" ||
          prev.spelling == "}" || in_directive(prev.offset)) {
        break;
      }
      --first;
    }
    if (first < model_.tokens.size()) {
      begin = std::min(begin, model_.tokens[first].offset);
    }
    std::size_t last = token_at(end);
    if (last < model_.tokens.size() && model_.tokens[last].spelling == ";" &&
        !in_directive(model_.tokens[last].offset)) {
      end = model_.tokens[last].offset + 1;
      ++last;
    }
    d.range = {begin, end};
    last_end_ = std::max(last_end_, end);
    d.line = so::line_of(text_, begin);
    for (std::size_t i = first; i < last && i < model_.tokens.size(); ++i) {
      d.tokens.push_back(model_.tokens[i].spelling);
    }
    d.name = take(api_, api_.clang_getCursorSpelling(cursor));
    d.qualified_name = qualified_name(cursor);
    d.from_macro = spelled_in_macro(api_.clang_getCursorLocation(cursor));
    d.is_definition = api_.clang_isCursorDefinition(cursor) != 0;
    d.is_template = kind == CXCursor_FunctionTemplate || kind == CXCursor_ClassTemplate ||
                    kind == CXCursor_TypeAliasTemplateDecl ||
                    kind == CXCursor_ClassTemplatePartialSpecialization;

    bool global = false, device = false, host = false, shared = false, constant = false;
    std::vector<CXCursor> kids = children_of(api_, cursor);
    for (CXCursor kid : kids) {
      switch (api_.clang_getCursorKind(kid)) {
      case CXCursor_CUDAGlobalAttr: global = true; break;
      case CXCursor_CUDADeviceAttr: device = true; break;
      case CXCursor_CUDAHostAttr: host = true; break;
      case CXCursor_CUDASharedAttr: shared = true; break;
      case CXCursor_CUDAConstantAttr: constant = true; break;
      default: break;
      }
    }
    // The head's tokens too: a template's attributes are not always its children.
    std::size_t head_tokens = d.tokens.size();
    for (CXCursor kid : kids) {
      if (api_.clang_getCursorKind(kid) == CXCursor_CompoundStmt) {
        d.has_body = true;
        d.body_offset = expansion(api_.clang_getRangeStart(api_.clang_getCursorExtent(kid))).offset;
        head_tokens = token_at(d.body_offset) - first;
      }
    }
    for (std::size_t i = 0; i < head_tokens && i < d.tokens.size(); ++i) {
      const std::string& t = d.tokens[i];
      global = global || t == "__global__";
      device = device || t == "__device__";
      host = host || t == "__host__";
      shared = shared || t == "__shared__";
      constant = constant || t == "__constant__";
      d.has_launch_bounds = d.has_launch_bounds || t == "__launch_bounds__";
    }

    const bool function_like = kind == CXCursor_FunctionDecl || kind == CXCursor_FunctionTemplate ||
                               kind == CXCursor_CXXMethod || kind == CXCursor_Constructor ||
                               kind == CXCursor_Destructor || kind == CXCursor_ConversionFunction;
    if (function_like) {
      d.kind = global           ? so::decl_kind::kernel
               : device && host ? so::decl_kind::host_device_function
               : device         ? so::decl_kind::device_function
                                : so::decl_kind::host_function;
      d.return_type =
          take(api_, api_.clang_getTypeSpelling(api_.clang_getCursorResultType(cursor)));
      for (CXCursor kid : kids) {
        const CXCursorKind k = api_.clang_getCursorKind(kid);
        if (k == CXCursor_ParmDecl) {
          d.parameters.push_back(
              {take(api_, api_.clang_getTypeSpelling(api_.clang_getCursorType(kid))),
               take(api_, api_.clang_getCursorSpelling(kid))});
        } else if (k == CXCursor_TemplateTypeParameter) {
          d.template_parameters.push_back("typename " +
                                          take(api_, api_.clang_getCursorSpelling(kid)));
        } else if (k == CXCursor_NonTypeTemplateParameter) {
          d.template_parameters.push_back(
              take(api_, api_.clang_getTypeSpelling(api_.clang_getCursorType(kid))) + " " +
              take(api_, api_.clang_getCursorSpelling(kid)));
        } else if (k == CXCursor_TemplateTemplateParameter) {
          d.template_parameters.push_back("template " +
                                          take(api_, api_.clang_getCursorSpelling(kid)));
        }
      }
      for (CXCursor kid : kids) {
        if (api_.clang_getCursorKind(kid) == CXCursor_CompoundStmt) {
          collect_loops(kid, 0, d.loops);
        }
      }
    } else if (kind == CXCursor_VarDecl) {
      d.kind = shared     ? so::decl_kind::shared_variable
               : constant ? so::decl_kind::constant_variable
               : device   ? so::decl_kind::device_variable
                          : so::decl_kind::host_variable;
    } else if (kind == CXCursor_StructDecl || kind == CXCursor_UnionDecl ||
               kind == CXCursor_ClassDecl || kind == CXCursor_EnumDecl ||
               kind == CXCursor_TypedefDecl || kind == CXCursor_TypeAliasDecl ||
               kind == CXCursor_ClassTemplate || kind == CXCursor_TypeAliasTemplateDecl ||
               kind == CXCursor_ClassTemplatePartialSpecialization) {
      d.kind = so::decl_kind::type;
    } else {
      d.kind = so::decl_kind::other;
    }
    if (function_like || kind == CXCursor_VarDecl) {
      d.mangled_name = take(api_, api_.clang_Cursor_getMangling(cursor));
    }
    for (const std::string& t : d.tokens) {
      d.has_inline_asm = d.has_inline_asm || t == "asm" || t == "__asm__" || t == "__asm";
    }
    std::set<std::string> seen;
    collect_calls(cursor, d.calls, seen);
    model_.declarations.push_back(std::move(d));
  }

  void collect_loops(CXCursor cursor, unsigned depth, std::vector<so::loop_info>& loops) {
    for (CXCursor kid : children_of(api_, cursor)) {
      const CXCursorKind k = api_.clang_getCursorKind(kid);
      const bool loop = k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt ||
                        k == CXCursor_CXXForRangeStmt;
      if (loop) {
        const CXSourceLocation start = api_.clang_getRangeStart(api_.clang_getCursorExtent(kid));
        so::loop_info info;
        info.keyword = k == CXCursor_WhileStmt ? "while" : k == CXCursor_DoStmt ? "do" : "for";
        const location where = expansion(start);
        info.keyword_offset = where.offset;
        info.line = where.line;
        info.depth = depth;
        info.in_macro = spelled_in_macro(start);
        info.has_unroll_pragma = so::unroll_pragma_precedes(text_, where.offset);
        loops.push_back(info);
      }
      collect_loops(kid, loop ? depth + 1 : depth, loops);
    }
  }

  void
  collect_calls(CXCursor cursor, std::vector<std::string>& calls, std::set<std::string>& seen) {
    for (CXCursor kid : children_of(api_, cursor)) {
      const CXCursorKind k = api_.clang_getCursorKind(kid);
      if (k == CXCursor_DeclRefExpr || k == CXCursor_MemberRefExpr || k == CXCursor_CallExpr ||
          k == CXCursor_OverloadedDeclRef) {
        const CXCursor target = api_.clang_getCursorReferenced(kid);
        const CXCursorKind tk = api_.clang_getCursorKind(target);
        if (api_.clang_Cursor_isNull(target) == 0 &&
            (tk == CXCursor_FunctionDecl || tk == CXCursor_FunctionTemplate ||
             tk == CXCursor_CXXMethod) &&
            expansion(api_.clang_getCursorLocation(target)).in_main) {
          std::string name = qualified_name(target);
          if (seen.insert(name).second) {
            calls.push_back(std::move(name));
          }
        }
      }
      collect_calls(kid, calls, seen);
    }
  }

  void read_diagnostics() {
    const unsigned count = api_.clang_getNumDiagnostics(tu_);
    for (unsigned i = 0; i < count; ++i) {
      CXDiagnostic diag = api_.clang_getDiagnostic(tu_, i);
      const CXDiagnosticSeverity severity = api_.clang_getDiagnosticSeverity(diag);
      if (severity >= CXDiagnostic_Error) {
        so::diagnostic_info info;
        CXFile file = nullptr;
        unsigned line = 0, column = 0, offset = 0;
        api_.clang_getExpansionLocation(api_.clang_getDiagnosticLocation(diag), &file, &line,
                                        &column, &offset);
        info.file = file == nullptr ? ""
                    : is_main(file) ? display_name_
                                    : take(api_, api_.clang_getFileName(file));
        info.line = line;
        info.column = column;
        info.is_error = true;
        info.message = take(api_, api_.clang_getDiagnosticSpelling(diag));
        model_.diagnostics.push_back(std::move(info));
      }
      api_.clang_disposeDiagnostic(diag);
    }
  }

  const libclang_api& api_;
  CXTranslationUnit tu_;
  std::string_view text_;
  std::string file_name_;
  std::string display_name_;
  so::source_model model_;
  std::vector<so::directive_info> directives_;
  std::size_t last_end_ = 0;
  CXFile main_file_ = nullptr;
  std::string main_name_;
};

/// Errors inside device code (kernels, device and host-device functions) of the main file, and
/// fatal errors anywhere (a header not found): what decides between the two parses.
std::size_t
device_errors(const so::source_model& model, std::string_view text, std::string_view file_name) {
  std::size_t count = 0;
  for (const so::diagnostic_info& d : model.diagnostics) {
    if (!d.is_error) {
      continue;
    }
    if (d.message.find("not found") != std::string::npos) {
      count += 1000; // a missing header: whatever it declares is missing everywhere
      continue;
    }
    if (d.file != file_name) {
      continue;
    }
    for (const so::declaration& decl : model.declarations) {
      if ((decl.kind == so::decl_kind::kernel || decl.kind == so::decl_kind::device_function ||
           decl.kind == so::decl_kind::host_device_function) &&
          d.line >= decl.line && d.line <= so::line_of(text, decl.range.end)) {
        ++count;
      }
    }
  }
  return count;
}

/// What one parse hands libclang: the arguments, and the unsaved files (the text, the stand-in
/// headers) with the strings they point into.
struct parse_inputs {
  std::vector<std::string> args;
  std::vector<const char*> argv;
  std::vector<std::string> paths;
  std::vector<CXUnsavedFile> unsaved;
};

parse_inputs inputs_for(std::string_view text,
                        const std::string& file_name,
                        std::string_view language,
                        const std::vector<std::string>& user_flags,
                        bool shim,
                        bool moved) {
  parse_inputs in;
  std::vector<std::string>& args = in.args;
  const bool hip = language == "hip";
  args = {"-x",
          hip ? "hip" : "cuda",
          "--cuda-host-only",
          hip ? "-nogpulib" : "-nocudalib",
          "-Wno-unknown-cuda-version",
          "-w",
          "-ferror-limit=0",
          "-fsyntax-only"};
  if (const std::string resource = find_resource_dir(); !resource.empty()) {
    args.push_back("-resource-dir=" + resource);
  }
  if (moved) {
    // The source is parsed from the parse folder: its quoted #includes are looked for here first,
    // as they were when its name was a file here.
    args.insert(args.end(), {"-iquote", "."});
  }
  if (shim) {
    args.push_back(hip ? "-nogpuinc" : "-nocudainc");
    args.push_back("-I" + shim_root());
    args.push_back("-include");
    args.push_back(shim_root() + "/rpl_cuda_shim.h");
  } else if (!hip) {
    if (const std::string cuda = find_cuda_path(); !cuda.empty()) {
      args.push_back("--cuda-path=" + cuda);
    }
    args.push_back("-idirafter");
    args.push_back(shim_root() + "/compat");
    // clang 15's texture intrinsics need the texture references CUDA 12 removed; kernels that
    // fetch through texture objects parse without them.
    args.push_back("-D__CLANG_CUDA_TEXTURE_INTRINSICS_H__");
  } else {
    std::error_code ec;
    for (const char* root : {"/opt/rocm", "/usr"}) {
      if (std::filesystem::exists(std::string(root) + "/include/hip/hip_runtime.h", ec)) {
        args.push_back(std::string("--rocm-path=") + root);
        break;
      }
    }
  }
  bool has_std = false;
  for (const std::string& f : user_flags) {
    has_std = has_std || starts_with(f, "-std=");
    args.push_back(f);
  }
  if (!has_std) {
    args.push_back("-std=c++17");
  }
  for (const std::string& a : args) {
    in.argv.push_back(a.c_str());
  }
  std::vector<std::string>& paths = in.paths;
  std::vector<CXUnsavedFile>& unsaved = in.unsaved;
  unsaved.push_back({file_name.c_str(), text.data(), static_cast<unsigned long>(text.size())});
  if (!shim && !hip) {
    paths.push_back(shim_root() + "/compat/texture_fetch_functions.h");
  }
  if (shim) {
    paths.push_back(shim_root() + "/rpl_cuda_shim.h");
    for (const char* name : shim_names) {
      paths.push_back(shim_root() + "/" + name);
    }
  }
  static const std::string include_line = "#include \"" + shim_root() + "/rpl_cuda_shim.h\"\n";
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const char* contents = !shim ? texture_compat : i == 0 ? shim_header : include_line.c_str();
    unsaved.push_back({paths[i].c_str(), contents,
                       static_cast<unsigned long>(std::char_traits<char>::length(contents))});
  }
  return in;
}

/// A private folder (mode 0700, under $TMPDIR or /tmp) for one process's parses, removed at exit:
/// `shim/`, the stand-in headers, and `src/`, an empty file named like each source parsed whose
/// name is no file here. libclang reuses a precompiled preamble only when every file handed to it
/// in memory (the source, the stand-ins) can be found on disk too (PrecompiledPreamble::CanReuse
/// stats each one): the text itself always comes from memory. Made under parse_source's lock.
class parse_folder {
public:
  parse_folder() {
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    remove_stale(base);
    std::string pattern = (base / ("rpl-parse-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) {
      root_ = pattern;
      std::error_code ec;
      std::filesystem::create_directories(root_ / "shim" / "compat", ec);
      std::filesystem::create_directories(root_ / "shim" / "hip", ec);
      std::filesystem::create_directories(root_ / "src", ec);
    }
  }
  ~parse_folder() {
    std::error_code ec;
    if (!root_.empty()) {
      std::filesystem::remove_all(root_, ec);
    }
  }
  parse_folder(const parse_folder&) = delete;
  parse_folder& operator=(const parse_folder&) = delete;

  /// Empty when no folder could be made: parses still work, without a reused preamble.
  const std::filesystem::path& root() const { return root_; }

  /// Writes `path` (under root) once, with `text`.
  void place(const std::string& path, std::string_view text) {
    if (root_.empty() || !placed_.insert(path).second) {
      return;
    }
    std::ofstream(path, std::ios::binary)
        .write(text.data(), static_cast<std::streamsize>(text.size()));
  }

private:
  /// Folders of this user's processes that ended without removing theirs (a worker stopped with
  /// SIGKILL): `rpl-parse-<pid>-*` whose pid runs no more.
  static void remove_stale(const std::filesystem::path& base) {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(base, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      struct stat info {};
      if (name.rfind("rpl-parse-", 0) != 0 || ::lstat(it->path().c_str(), &info) != 0 ||
          !S_ISDIR(info.st_mode) || info.st_uid != ::getuid()) {
        continue;
      }
      const long pid = std::strtol(name.c_str() + 10, nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        std::error_code ignored;
        std::filesystem::remove_all(it->path(), ignored);
      }
    }
  }

  std::filesystem::path root_;
  std::set<std::string> placed_;
};

parse_folder& parse_files() {
  static parse_folder folder;
  return folder;
}

std::string shim_root() {
  const auto& root = parse_files().root();
  return root.empty() ? std::string("/rpl-clang-shim") : (root / "shim").string();
}

/// Where libclang finds the source named `name`: `name` itself when it is a file here, else an
/// empty file of that name in the parse folder (the text always comes from memory).
std::string source_path_for(const std::string& name) {
  std::error_code ec;
  if (parse_files().root().empty() || std::filesystem::is_regular_file(name, ec)) {
    return name;
  }
  std::string path =
      (parse_files().root() / "src" / std::filesystem::path(name).filename()).string();
  parse_files().place(path, "");
  return path;
}

/// Puts the stand-in headers `in` hands libclang in memory on disk too.
void place_stand_ins(const parse_inputs& in) {
  for (std::size_t i = 1; i < in.unsaved.size(); ++i) {
    parse_files().place(in.unsaved[i].Filename,
                        std::string_view(in.unsaved[i].Contents, in.unsaved[i].Length));
  }
}

/// Translation units kept from one parse to the next, one per file name and arguments (the flags,
/// the headers or their stand-in), at most `capacity` of them, the least recently used dropped
/// first. A proposal differs from the text last parsed under the same key in a function body, not
/// in the #includes and #defines it starts with, so clang_reparseTranslationUnit reuses the
/// precompiled preamble, the headers parsed once (CUDA's runtime wrapper is most of a parse), and
/// reads only the text after it; where the start did change, libclang rebuilds the preamble
/// itself. The cache lives under parse_source's lock: libclang units are not used by two threads.
class unit_cache {
public:
  /// A unit for `in` (its first unsaved file is the text): the kept one reparsed, else a new one
  /// parsed and kept. A unit that fails to reparse is dropped and parsed anew.
  parse_attempt parse(const libclang_api& api, const std::string& file_name, parse_inputs& in) {
    api_ = &api;
    parse_attempt attempt;
    attempt.args = in.args;
    std::string key = file_name;
    for (const std::string& a : in.args) {
      key += '\0' + a;
    }
    const auto unsaved_count = static_cast<unsigned>(in.unsaved.size());
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key != key) {
        continue;
      }
      it->used = ++clock_;
      if (api.clang_reparseTranslationUnit(it->tu, unsaved_count, in.unsaved.data(),
                                           api.clang_defaultReparseOptions(it->tu)) == 0) {
        attempt.tu = it->tu;
        return attempt;
      }
      api.clang_disposeTranslationUnit(it->tu); // unusable after a failed reparse
      entries_.erase(it);
      break;
    }
    if (index_ == nullptr) {
      index_ = api.clang_createIndex(0, 0);
    }
    const unsigned options = CXTranslationUnit_KeepGoing | CXTranslationUnit_PrecompiledPreamble |
                             CXTranslationUnit_CreatePreambleOnFirstParse;
    attempt.code = api.clang_parseTranslationUnit2(
        index_, file_name.c_str(), in.argv.data(), static_cast<int>(in.argv.size()),
        in.unsaved.data(), unsaved_count, options, &attempt.tu);
    if (attempt.tu == nullptr) {
      return attempt;
    }
    if (entries_.size() >= capacity) {
      const auto oldest =
          std::min_element(entries_.begin(), entries_.end(),
                           [](const entry& a, const entry& b) { return a.used < b.used; });
      api.clang_disposeTranslationUnit(oldest->tu);
      entries_.erase(oldest);
    }
    entries_.push_back({std::move(key), attempt.tu, ++clock_});
    return attempt;
  }

  /// Disposes of every kept unit (and so of its preamble's temporary file) and the index.
  void clear() {
    if (api_ == nullptr) {
      return;
    }
    for (const entry& e : entries_) {
      api_->clang_disposeTranslationUnit(e.tu);
    }
    entries_.clear();
    if (index_ != nullptr) {
      api_->clang_disposeIndex(index_);
      index_ = nullptr;
    }
  }

  static constexpr std::size_t capacity = 4;

private:
  struct entry {
    std::string key;
    CXTranslationUnit tu = nullptr;
    std::uint64_t used = 0;
  };
  const libclang_api* api_ = nullptr;
  CXIndex index_ = nullptr;
  std::vector<entry> entries_;
  std::uint64_t clock_ = 0;
};

std::mutex parse_mutex;

/// Never destroyed: disposing of a unit from an exit handler reads libclang's own static state
/// (the preamble files' registry, a StringSet), which exit may have destroyed first (a segfault in
/// StringMapImpl::FindKey, seen in 1 test process in 3 under load). That registry's destructor
/// removes the preamble files the units still hold.
unit_cache& kept_units() {
  static auto* const cache = new unit_cache;
  return *cache;
}

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    out += (out.empty() ? "" : " ") + a;
  }
  return out;
}

} // namespace

bool libclang_available(std::string& why) {
  return load_libclang(why) != nullptr;
}

void forget_parsed_units() {
  const std::lock_guard lock(parse_mutex);
  kept_units().clear();
}

so::source_model parse_source(std::string_view text,
                              std::string_view file_name,
                              std::string_view language,
                              const std::vector<std::string>& compile_flags,
                              std::string& error) {
  const libclang_api* api = load_libclang(error);
  if (api == nullptr) {
    return {};
  }
  // One parse at a time in a process: libLLVM keeps global state (its crash-recovery setup in
  // clang_createIndex, a StringMap the parser reads and writes) that races when two threads parse
  // at once, each on its own index (ThreadSanitizer saw both: --devices all, and optimize's source
  // guards checking a batch at once). With the kept units a parse after the first reads only the
  // text after the headers.
  const std::lock_guard lock(parse_mutex);
  if (language != "cuda" && language != "hip") {
    error = "parse_source: language '" + std::string(language) + "' of " + std::string(file_name) +
            " is not supported; fix: use \"cuda\" or \"hip\"";
    return {};
  }
  const std::string name = file_name.empty() ? std::string("source.cu") : std::string(file_name);
  const std::vector<std::string> flags = stages::optimize::parser_flags(compile_flags);
  const std::string path = source_path_for(name);
  so::source_model best;
  std::size_t best_score = 0;
  bool have = false;
  std::string failures;
  for (const bool shim : {false, true}) {
    parse_inputs inputs = inputs_for(text, path, language, flags, shim, path != name);
    place_stand_ins(inputs);
    parse_attempt attempt = kept_units().parse(*api, path, inputs);
    if (attempt.tu == nullptr) {
      failures += (failures.empty() ? "" : "; ") + std::string("clang ") + join(attempt.args) +
                  " failed with CXErrorCode " + std::to_string(static_cast<int>(attempt.code));
      continue;
    }
    so::source_model model = model_builder(*api, attempt.tu, text, path, name).build();
    const std::size_t score = device_errors(model, text, name);
    if (!have || score < best_score ||
        (score == best_score && model.error_count() < best.error_count())) {
      best = std::move(model);
      best_score = score;
      have = true;
    }
    if (best_score == 0) {
      break; // the real headers parse the device code: no need for the stand-in
    }
  }
  if (!have) {
    error = "parse_source: libclang (" + api->path + ") could not parse " + name + ": " + failures +
            "; fix: check the -D/-I/-std flags of the build template";
    return {};
  }
  return best;
}

#endif

} // namespace rpl::workers
