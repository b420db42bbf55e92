#include "restart/vdso_proxy.h"

#include <sys/auxv.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "common/error.h"

namespace stasis::restart {
namespace {

TEST(VdsoProxy, ReadsTheFunctionsOfThisKernelsVdso) {
  KernelVdso own = own_kernel_vdso();
  ASSERT_NE(own.vdso_start, 0u);
  EXPECT_EQ(getauxval(AT_SYSINFO_EHDR), own.vdso_start);
  auto functions = vdso_functions(reinterpret_cast<const unsigned char*>(own.vdso_start),
                                  own.vdso_end - own.vdso_start, "own vdso");
  auto has = [&](const char* name) {
    return std::any_of(functions.begin(), functions.end(), [&](auto& f) { return f.name == name; });
  };
  EXPECT_TRUE(has("__vdso_clock_gettime"));
  EXPECT_TRUE(has("__vdso_gettimeofday"));
  for (const auto& f : functions) EXPECT_LT(f.offset, own.vdso_end - own.vdso_start) << f.name;
  EXPECT_GE(own.span(), own.vdso_end - own.vdso_start);
}

TEST(VdsoProxy, RefusesBytesThatAreNoVdso) {
  std::vector<unsigned char> junk(4096, 0x5a);
  EXPECT_THROW(vdso_functions(junk.data(), junk.size(), "junk"), Error);
  KernelVdso own = own_kernel_vdso();
  std::vector<unsigned char> cut(reinterpret_cast<const unsigned char*>(own.vdso_start),
                                 reinterpret_cast<const unsigned char*>(own.vdso_start) + 200);
  EXPECT_THROW(vdso_functions(cut.data(), cut.size(), "cut"), Error);  // the section table is gone
}

TEST(VdsoProxy, FreeRangeAvoidsEveryTakenRange) {
  const uint64_t len = 0x6000;
  std::vector<std::pair<uint64_t, uint64_t>> taken = {{0x7f0000000000, 0x7f0000010000},
                                                       {0x7effffff8000, 0x7f0000000000},
                                                       {0x7efffff00000, 0x7effffff5000}};
  uint64_t at = free_range_below(taken, len, 0x7f0000010000);
  ASSERT_NE(at, 0u);
  EXPECT_EQ(at % 4096, 0u);
  EXPECT_LE(at + len, 0x7f0000010000u);
  for (auto [s, e] : taken) EXPECT_TRUE(at + len <= s || at >= e) << std::hex << at;
  EXPECT_EQ(at, 0x7efffff00000u - len);  // the highest free place: below the third range
  EXPECT_EQ(free_range_below({{0x10000, 0x20000}}, 0x2000, 0x20000), 0u);  // nothing above 64 KiB
}

}  // namespace
}  // namespace stasis::restart
