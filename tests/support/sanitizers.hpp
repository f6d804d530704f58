#pragma once
/// Which sanitizer a test program is built with, for the few tests that skip under one (each says
/// why): `if (rpl::testing::under_asan) { GTEST_SKIP() << why; }`. Constants, not macros, so that a
/// test that forgets this header does not compile (an unknown macro in #if reads as 0). GCC
/// defines __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; clang 14 (the asan preset's compiler)
/// only answers __has_feature.

#if defined(__SANITIZE_ADDRESS__)
#define RPL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPL_TEST_ASAN 1
#endif
#endif
#ifndef RPL_TEST_ASAN
#define RPL_TEST_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define RPL_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RPL_TEST_TSAN 1
#endif
#endif
#ifndef RPL_TEST_TSAN
#define RPL_TEST_TSAN 0
#endif

namespace rpl::testing {

inline constexpr bool under_asan = RPL_TEST_ASAN != 0;
inline constexpr bool under_tsan = RPL_TEST_TSAN != 0;

} // namespace rpl::testing
