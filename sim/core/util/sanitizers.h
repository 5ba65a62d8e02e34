// SPDX-License-Identifier: Apache-2.0
// Whether this build runs under AddressSanitizer (GCC defines __SANITIZE_ADDRESS__, clang has
// __has_feature(address_sanitizer)): ASan reserves terabytes of address space, so address-space limits (ulimit -v)
// mean nothing to it and tests that rely on them are skipped.
//
//   #if MMTWIN_ADDRESS_SANITIZER ... #endif      if (kAddressSanitizer) GTEST_SKIP();
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define MMTWIN_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MMTWIN_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef MMTWIN_ADDRESS_SANITIZER
#define MMTWIN_ADDRESS_SANITIZER 0
#endif

namespace mmtwin {
inline constexpr bool kAddressSanitizer = MMTWIN_ADDRESS_SANITIZER != 0;
}  // namespace mmtwin
