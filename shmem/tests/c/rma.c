/* RMA: typed put/get/p/g for every standard type, putmem/getmem, put8..128, iput/iget,
 * _nbi and ctx forms, C11 generic selection, transfers larger than one message. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define N 64
static long gsmall[16]; /* a global target of small puts */
#define TYPED(NAME, T) \
    do { \
        T *s = shmem_malloc(N * sizeof(T)); \
        T *d = shmem_malloc(N * sizeof(T)); \
        T loc[N]; \
        for (int i = 0; i < N; i++) { s[i] = (T)(me * 3 + i); d[i] = (T)0; } \
        shmem_barrier_all(); \
        shmem_##NAME##_put(d, s, N, right); \
        shmem_barrier_all(); \
        for (int i = 0; i < N; i++) CHECK(d[i] == (T)(left * 3 + i)); \
        shmem_barrier_all(); \
        shmem_##NAME##_get(loc, s, N, right); \
        for (int i = 0; i < N; i++) CHECK(loc[i] == (T)(right * 3 + i)); \
        shmem_##NAME##_p(&d[1], (T)77, right); \
        shmem_##NAME##_put_nbi(&d[2], &s[5], 1, right); \
        shmem_quiet(); \
        CHECK(shmem_##NAME##_g(&s[7], right) == (T)(right * 3 + 7)); \
        shmem_##NAME##_get_nbi(loc, &s[9], 1, right); \
        shmem_quiet(); \
        CHECK(loc[0] == (T)(right * 3 + 9)); \
        shmem_barrier_all(); \
        CHECK(d[1] == (T)77 && d[2] == (T)(left * 3 + 5)); \
        shmem_barrier_all(); \
        shmem_##NAME##_iput(d, s, 2, 3, N / 4, right); /* d[2k] = s[3k] */ \
        shmem_barrier_all(); \
        for (int k = 0; k < N / 4; k++) CHECK(d[2 * k] == (T)(left * 3 + 3 * k)); \
        shmem_barrier_all(); \
        shmem_##NAME##_iget(loc, s, 1, 2, N / 2, right); /* loc[k] = s[2k] */ \
        for (int k = 0; k < N / 2; k++) CHECK(loc[k] == (T)(right * 3 + 2 * k)); \
        shmem_ctx_##NAME##_put(SHMEM_CTX_DEFAULT, d, s, 1, right); \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT); \
        shmem_barrier_all(); \
        CHECK(d[0] == (T)(left * 3)); \
        shmem_free(d); \
        shmem_free(s); \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;

    TYPED(float, float); TYPED(double, double); TYPED(longdouble, long double);
    TYPED(char, char); TYPED(schar, signed char); TYPED(short, short); TYPED(int, int);
    TYPED(long, long); TYPED(longlong, long long); TYPED(uchar, unsigned char);
    TYPED(ushort, unsigned short); TYPED(uint, unsigned int); TYPED(ulong, unsigned long);
    TYPED(ulonglong, unsigned long long); TYPED(int8, int8_t); TYPED(int16, int16_t);
    TYPED(int32, int32_t); TYPED(int64, int64_t); TYPED(uint8, uint8_t);
    TYPED(uint16, uint16_t); TYPED(uint32, uint32_t); TYPED(uint64, uint64_t);
    TYPED(size, size_t); TYPED(ptrdiff, ptrdiff_t);

    /* sized and untyped forms */
    uint64_t *a = shmem_calloc(64, 8), *b = shmem_calloc(64, 8);
    for (int i = 0; i < 64; i++) a[i] = ((uint64_t)me << 40) | (uint64_t)i;
    shmem_barrier_all();
    shmem_put8(b, a, 8, right);           /* bytes 0..8 */
    shmem_put16((char *)b + 8, (char *)a + 8, 4, right);
    shmem_put32((char *)b + 16, (char *)a + 16, 2, right);
    shmem_put64(&b[3], &a[3], 1, right);
    shmem_put128(&b[4], &a[4], 2, right);
    shmem_putmem(&b[8], &a[8], 8 * 8, right);
    shmem_put64_nbi(&b[16], &a[16], 4, right);
    shmem_putmem_nbi(&b[20], &a[20], 4 * 8, right);
    shmem_iput64(&b[24], &a[24], 2, 1, 4, right); /* b[24+2k] = a[24+k] */
    shmem_quiet();
    shmem_barrier_all();
    for (int i = 0; i < 24; i++) CHECK(b[i] == (((uint64_t)left << 40) | (uint64_t)i));
    for (int k = 0; k < 4; k++) CHECK(b[24 + 2 * k] == (((uint64_t)left << 40) | (uint64_t)(24 + k)));
    uint64_t g[8];
    shmem_getmem(g, a, 16, right);
    shmem_get64(&g[2], &a[2], 2, right);
    shmem_get32(&g[4], &a[4], 2, right);
    shmem_get128(&g[5], &a[5], 1, right);
    shmem_iget64(&g[7], &a[40], 1, 1, 1, right);
    for (int i = 0; i < 7; i++) CHECK(g[i] == (((uint64_t)right << 40) | (uint64_t)i));
    CHECK(g[7] == (((uint64_t)right << 40) | 40));

    /* C11 generic selection, with and without a context */
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0);
    long *gl = shmem_calloc(4, sizeof(long));
    double *gd = shmem_calloc(4, sizeof(double));
    long lv[2] = {me + 10, me + 20};
    shmem_barrier_all();
    shmem_put(gl, lv, 2, right);
    shmem_p(&gd[0], 2.5 * me, right);
    shmem_put(ctx, &gl[2], lv, 2, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(gl[0] == left + 10 && gl[1] == left + 20 && gl[2] == left + 10 && gl[3] == left + 20);
    CHECK(gd[0] == 2.5 * left);
    CHECK(shmem_g(&gl[1], right) == me + 20);
    CHECK(shmem_g(ctx, &gd[0], left) == 2.5 * ((left + n - 1) % n));
    long lg[2];
    shmem_get(lg, gl, 2, right);
    CHECK(lg[0] == me + 10);
    shmem_ctx_destroy(ctx);

    /* many small puts (aggregated on the message path): runs to consecutive addresses
     * of every size 1..300 (merged into one record), to two PEs in turn, puts to global
     * variables between them, a descending run, overwrites of one address (the last one
     * stays), and several messages' worth of each */
    size_t tot = 64 * 1024;
    unsigned char *ps = shmem_malloc(tot), *pd = shmem_calloc(tot, 1);
    unsigned char *pl = shmem_calloc(tot, 1);
    for (size_t i = 0; i < tot; i++) ps[i] = (unsigned char)(i * 13 + me);
    shmem_barrier_all();
    size_t at = 0;
    for (size_t len = 1; at < tot; len = len % 300 + 1) {
        size_t k = at + len > tot ? tot - at : len;
        shmem_putmem(pd + at, ps + at, k, right);
        shmem_putmem(pl + at, ps + at, k, left);
        if (len % 7 == 0)
            shmem_long_p(&gsmall[len % 16], (long)(me * 1000 + len % 16), right);
        at += k;
    }
    uint64_t *pdesc = shmem_calloc(2048, 8);
    unsigned char *pself = shmem_calloc(4096, 1);
    /* small puts to this PE itself (never aggregated) */
    for (size_t k = 1; k <= 300; k += 37) {
        shmem_putmem(pself + 8 * k, ps + 3 * k, k, me);
        shmem_quiet();
        CHECK(memcmp(pself + 8 * k, ps + 3 * k, k) == 0);
    }
    for (int i = 2047; i >= 0; i--) {
        uint64_t v = ((uint64_t)me << 32) | (uint64_t)i;
        shmem_putmem(&pdesc[i], &v, 8, right);
    }
    for (int v = 0; v < 1000; v++) shmem_int_p((int *)&pdesc[7], v, right);
    shmem_quiet();
    shmem_barrier_all();
    for (size_t i = 0; i < tot; i++) CHECK(pd[i] == (unsigned char)(i * 13 + left));
    for (size_t i = 0; i < tot; i++) CHECK(pl[i] == (unsigned char)(i * 13 + right));
    /* 7·k mod 16 (k = 1..16) reaches every index */
    for (int i = 0; i < 16; i++) CHECK(gsmall[i] == left * 1000 + i);
    for (int i = 0; i < 2048; i++)
        if (i != 7) CHECK(pdesc[i] == (((uint64_t)left << 32) | (uint64_t)i));
    CHECK(*(int *)&pdesc[7] == 999);
    shmem_barrier_all();
    shmem_free(pself);
    shmem_free(pdesc);
    shmem_free(pl);
    shmem_free(pd);
    shmem_free(ps);

    /* large transfers (many messages on the message path) */
    size_t big = 3u << 20;
    unsigned char *bs = shmem_malloc(big), *bd = shmem_malloc(big);
    for (size_t i = 0; i < big; i++) bs[i] = (unsigned char)(i * 7 + me);
    shmem_barrier_all();
    shmem_putmem(bd, bs, big, right);
    shmem_barrier_all();
    for (size_t i = 0; i < big; i++) CHECK(bd[i] == (unsigned char)(i * 7 + left));
    memset(bd, 0, big);
    shmem_barrier_all();
    shmem_getmem(bd, bs, big, right);
    for (size_t i = 0; i < big; i++) CHECK(bd[i] == (unsigned char)(i * 7 + right));
    /* large copies between a private buffer and symmetric ones with the destination d
     * bytes past the source modulo 4096 (the direct path splits the copies with d in
     * 1..63: a slow memcpy case on some CPUs) */
    void *pvv = NULL;
    CHECK(posix_memalign(&pvv, 4096, 1 << 17) == 0);
    unsigned char *pv = pvv;
    static const int SKEW[] = {0, 1, 16, 31, 40, 63, 64, 100};
    size_t len = (1 << 16) - 4096;
    for (int k = 0; k < 8; k++) {
        int d = SKEW[k];
        unsigned char *gd = pv + (((uintptr_t)bs + (uintptr_t)d) & 4095); /* gd - bs = d */
        unsigned char *ps = pv + (((uintptr_t)bd - (uintptr_t)d) & 4095); /* bd - ps = d */
        shmem_barrier_all();
        shmem_getmem(gd, bs, len, right);
        for (size_t i = 0; i < len; i++) CHECK(gd[i] == (unsigned char)(i * 7 + right));
        memmove(ps, gd, len);
        shmem_putmem(bd, ps, len, right); /* right's own pattern, back to it */
        shmem_barrier_all();
        for (size_t i = 0; i < len; i++) CHECK(bd[i] == (unsigned char)(i * 7 + me));
    }
    free(pv);
    shmem_barrier_all();
    shmem_free(bs);
    shmem_free(bd);
    shmem_finalize();
    return 0;
}
