#!/usr/bin/env bash
# A test double of NVIDIA compute-sanitizer for the sanitizer pass's tests (no GPU needed): takes
# the options workers/lanes/kernel/sanitizer_pass.cpp passes, runs the program after them with
# its stdin and stdout (the lane's frames pass through), writes a log like the tool's and exits
# with --error-exitcode when FAKE_SANITIZER_REPORT names this tool (FAKE_SANITIZER_REPORT=racecheck).
# FAKE_SANITIZER_ARGS, when set, is a file the arguments are appended to (one per line).
set -u
tool=memcheck log=/dev/null code=1
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --tool) tool=$2 ;;
    --log-file) log=$2 ;;
    --error-exitcode) code=$2 ;;
  esac
  [[ -n ${FAKE_SANITIZER_ARGS:-} ]] && printf '%s\n%s\n' "$1" "$2" >> "$FAKE_SANITIZER_ARGS"
  shift 2
done
[[ -n ${FAKE_SANITIZER_ARGS:-} ]] && printf '%s\n' "$@" >> "$FAKE_SANITIZER_ARGS"
echo "========= COMPUTE-SANITIZER" > "$log"
"$@"
rc=$?
if [[ ${FAKE_SANITIZER_REPORT:-} == "$tool" ]]; then
  {
    echo "========= Error: Race reported between Write access at rpl_k+0x1a0 in k.cu:12"
    echo "=========     and Read access at rpl_k+0x220 in k.cu:14 [32 hazards]"
    echo "========= "
    echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
  } >> "$log"
  exit "$code"
fi
echo "========= ERROR SUMMARY: 0 errors" >> "$log"
exit $rc
