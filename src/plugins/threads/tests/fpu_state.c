/* fpu_state: floating-point and vector register state live across a checkpoint. Each step runs a
 * long loop that keeps eight AVX2 (or SSE2 when AVX2 is missing) accumulators and an x87 long
 * double in registers, with the rounding mode set to FE_UPWARD (MXCSR and the x87 control word),
 * so a checkpoint almost always interrupts the loop with live vector/x87 registers.
 * The step's results are printed in hex: any lost or corrupted register changes the output.
 * usage: fpu_state [STEPS=40] [ITERS=10000000] [DELAY_MS=20] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fenv.h>
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static void step_avx(long iters, double seed, double out[8]) {
  __m256d a0 = _mm256_set_pd(seed, seed + 1, seed + 2, seed + 3), a1 = _mm256_set1_pd(seed * 0.5);
  __m256d a2 = _mm256_set1_pd(0.25), a3 = _mm256_set1_pd(-1.5), a4 = _mm256_set1_pd(seed / 3);
  __m256d a5 = _mm256_set1_pd(1.0 / 7), a6 = _mm256_set1_pd(2.0), a7 = _mm256_set1_pd(-seed);
  const __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-7);
  for (long i = 0; i < iters; i++) {
    a0 = _mm256_fmadd_pd(a0, m, c);
    a1 = _mm256_fmadd_pd(a1, m, a0);
    a2 = _mm256_fmsub_pd(a2, m, c);
    a3 = _mm256_fmadd_pd(a3, m, a2);
    a4 = _mm256_fnmadd_pd(a4, c, a4);
    a5 = _mm256_fmadd_pd(a5, m, a4);
    a6 = _mm256_mul_pd(a6, m);
    a7 = _mm256_fmadd_pd(a7, m, a6);
  }
  __m256d s = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                            _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7)));
  double tmp[4];
  _mm256_storeu_pd(tmp, s);
  for (int k = 0; k < 4; k++) out[k] = tmp[k];
  _mm256_storeu_pd(tmp, _mm256_mul_pd(a1, a7));
  for (int k = 0; k < 4; k++) out[4 + k] = tmp[k];
}

static void step_sse(long iters, double seed, double out[8]) {
  __m128d a0 = _mm_set_pd(seed, seed + 1), a1 = _mm_set1_pd(seed * 0.5), a2 = _mm_set1_pd(0.25);
  __m128d a3 = _mm_set1_pd(-1.5);
  const __m128d m = _mm_set1_pd(0.9999999), c = _mm_set1_pd(1e-7);
  for (long i = 0; i < iters; i++) {
    a0 = _mm_add_pd(_mm_mul_pd(a0, m), c);
    a1 = _mm_add_pd(_mm_mul_pd(a1, m), a0);
    a2 = _mm_sub_pd(_mm_mul_pd(a2, m), c);
    a3 = _mm_add_pd(_mm_mul_pd(a3, m), a2);
  }
  double tmp[2];
  _mm_storeu_pd(tmp, _mm_add_pd(a0, a1));
  out[0] = tmp[0], out[1] = tmp[1];
  _mm_storeu_pd(tmp, _mm_add_pd(a2, a3));
  out[2] = tmp[0], out[3] = tmp[1];
  for (int k = 4; k < 8; k++) out[k] = out[k - 4] * 3;
}

static long double x87_loop(long iters, long double x) {
  long double acc = 1.0L;
  for (long i = 0; i < iters / 4; i++) acc = acc * 0.99999999L + x / 3.0L;
  return acc;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long iters = arg_long(argc, argv, 2, 10000000);
  long delay = arg_long(argc, argv, 3, 20);
  int avx = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  CHECK(fesetround(FE_UPWARD) == 0);
  uint64_t sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    double out[8];
    if (avx)
      step_avx(iters, (double)step, out);
    else
      step_sse(iters, (double)step, out);
    long double ld = x87_loop(iters, (long double)step);
    sum = fnv1a(sum, out, sizeof out);
    sum = fnv1a(sum, &ld, 10);
    uint64_t bits0, bits5;
    memcpy(&bits0, &out[0], 8);
    memcpy(&bits5, &out[5], 8);
    printf("step %ld round %s v0 %016llx v5 %016llx x87 %.21Lg sum %016llx\n", step,
           fegetround() == FE_UPWARD ? "up" : "CHANGED", (unsigned long long)bits0,
           (unsigned long long)bits5, ld, (unsigned long long)sum);
    sleep_ms(delay);
  }
  printf("done checksum 0x%016llx\n", (unsigned long long)sum);
  return 0;
}
