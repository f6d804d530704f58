// libFuzzer target: parse_llm_answer (stages/optimize/llm_answer.hpp), an LLM's answer read into a
// proposal: fences, unfenced diffs, hunks recounted and re-placed, whole kernels swapped in.
//
// The whole input is the answer's text. Answers of even length are read for the saxpy kernel of
// saxpy.hip (the unit tests' source), odd ones for the same source with CRLF line ends and no
// final newline. A finding is a crash, an exception, or a result that breaks the header's promise:
// ok with an error or a shape other than the four, an id that is not "llm:" and the diff's hash, a
// title empty or over its limit, a rationale over its limit, a diff that does not apply to the
// source, changes nothing or is not the canonical make_unified_diff of the result; not ok without
// an error that gives a `fix:`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stages/optimize/llm_answer.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "stages/search/candidate_key.hpp"

namespace {

namespace o = rpl::stages::optimize;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

const std::string saxpy_source = R"(#include <hip/hip_runtime.h>

// y = a * x + y
__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void other(float* p) { p[0] = 1.0f; }

int main() {
  saxpy<<<1, 256>>>(2.0f, nullptr, nullptr, 0);
  return 0;
}
)";

rpl::messages::propose_request make_request(bool crlf) {
  rpl::messages::propose_request request;
  request.kernel = "saxpy";
  request.source_name = "saxpy.hip";
  request.language = "hip";
  request.source = saxpy_source;
  if (crlf) {
    request.source.pop_back(); // no final newline
    for (auto at = request.source.find('\n'); at != std::string::npos;
         at = request.source.find('\n', at + 2)) {
      request.source.insert(at, 1, '\r');
    }
  }
  return request;
}

const rpl::messages::propose_request lf_request = make_request(false);
const rpl::messages::propose_request crlf_request = make_request(true);
constexpr o::answer_limits limits{60, 400};

void check_proposal(const o::parsed_answer& answer, const rpl::messages::propose_request& request) {
  check(answer.error.empty());
  check(answer.shape == "diff fence" || answer.shape == "fenced diff" ||
        answer.shape == "unfenced diff" || answer.shape == "kernel replacement");
  const auto& proposal = answer.proposal;
  check(proposal.id == "llm:" + rpl::stages::content_hash(proposal.diff).substr(0, 12));
  check(!proposal.title.empty() && proposal.title.size() <= limits.title_chars);
  check(proposal.rationale.size() <= limits.rationale_chars);
  const o::patch_result patched = o::apply_unified_diff(request.source, proposal.diff);
  check(patched.ok);
  check(patched.text != request.source);
  check(o::make_unified_diff(request.source, patched.text, request.source_name) == proposal.diff);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view content(reinterpret_cast<const char*>(data), size);
  const auto& request = size % 2 == 0 ? lf_request : crlf_request;
  const o::parsed_answer answer = o::parse_llm_answer(content, request, limits);
  if (answer.ok) {
    check_proposal(answer, request);
  } else {
    check(answer.error.find("fix: ") != std::string::npos);
  }
  return 0;
}
