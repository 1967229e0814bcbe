/* Contiguous, strided (1..7 levels, odd strides and counts) and vector put/get between
 * all pairs, blocking and non-blocking (handles completed in reverse order), values,
 * Put_flag, armci_read/write_strided. Holes of every strided target stay untouched. */
#include <string.h>
#include <stdint.h>
#include "check.h"

#define HEAP (1 << 18)
#define FILL 0x5a

static int me, n;
static void **buf;

/* the byte pattern of source offset i of rank r */
static unsigned char pat(int r, long i) { return (unsigned char)(r * 31 + i * 7 + 1); }

/* An L-level shape: counts, and strides one larger (odd) than dense. */
static void shape(int L, int *count, int *sstr, int *dstr) {
    static const int c[8] = {5, 3, 2, 3, 2, 2, 2, 2};
    for (int i = 0; i <= L; i++) count[i] = c[i];
    long span_s = count[0], span_d = count[0];
    for (int i = 0; i < L; i++) {
        sstr[i] = (int)span_s + 3;      /* odd gaps */
        dstr[i] = (int)span_d + 1 + i;
        span_s = (long)sstr[i] * count[i + 1];
        span_d = (long)dstr[i] * count[i + 1];
    }
}

/* Marks every byte of the strided region (base, strides, counts) in mask. */
static void mark(unsigned char *mask, int L, const int *str, const int *count) {
    long idx[8] = {0};
    for (;;) {
        long off = 0;
        for (int i = 0; i < L; i++) off += idx[i] * str[i];
        for (int b = 0; b < count[0]; b++) mask[off + b] = 1;
        int l = 0;
        while (l < L && ++idx[l] == count[l + 1]) idx[l++] = 0;
        if (l == L) return;
    }
}

static void test_strided(int L) {
    int count[8], ss[8], ds[8];
    shape(L, count, ss, ds);
    unsigned char *src = malloc(HEAP), *mask = calloc(HEAP, 1), *back = malloc(HEAP);
    for (long i = 0; i < HEAP; i++) src[i] = pat(me, i);
    mark(mask, L, ds, count);
    int peer = (me + 1) % n, from = (me + n - 1) % n;
    /* reset my buffer, then the peer writes into it */
    memset(buf[me], FILL, HEAP);
    ARMCI_Barrier();
    CHECK(ARMCI_PutS(src, ss, buf[peer], ds, count, L, peer) == 0);
    ARMCI_Barrier();
    /* expected: the source's strided bytes, gathered, at the dst strided positions */
    unsigned char *mine = buf[me];
    unsigned char *packed = malloc(HEAP), *smask = calloc(HEAP, 1);
    mark(smask, L, ss, count);
    long k = 0;
    for (long i = 0; i < HEAP; i++) if (smask[i]) packed[k++] = pat(from, i);
    long j = 0;
    for (long i = 0; i < HEAP; i++) {
        if (mask[i]) CHECKF(mine[i] == packed[j++], "L=%d byte %ld", L, i);
        else CHECKF(mine[i] == FILL, "L=%d hole byte %ld written", L, i);
    }
    /* read_strided gathers the same bytes */
    unsigned char *g = malloc(HEAP);
    armci_read_strided(mine, L, ds, count, (char *)g);
    CHECK(memcmp(g, packed, k) == 0);
    ARMCI_Barrier();
    /* get it back strided from the peer into a fresh local buffer; holes untouched */
    memset(back, FILL, HEAP);
    CHECK(ARMCI_GetS(buf[peer], ds, back, ss, count, L, peer) == 0);
    for (long i = 0; i < HEAP; i++) {
        if (smask[i]) CHECKF(back[i] == src[i], "GetS L=%d byte %ld", L, i);
        else CHECKF(back[i] == FILL, "GetS L=%d hole %ld written", L, i);
    }
    /* non-blocking forms */
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    memset(back, FILL, HEAP);
    CHECK(ARMCI_NbGetS(buf[peer], ds, back, ss, count, L, peer, &h) == 0);
    CHECK(ARMCI_Wait(&h) == 0);
    for (long i = 0; i < HEAP; i++) if (smask[i]) CHECK(back[i] == src[i]);
    ARMCI_Barrier();
    free(src); free(mask); free(back); free(packed); free(smask); free(g);
}

static void test_vector(void) {
    /* 97 segments of 24 bytes each, scattered with gaps, to every rank */
    enum { SEGS = 97, B = 24 };
    void *s[SEGS], *d[SEGS];
    unsigned char *src = malloc(SEGS * 64);
    memset(buf[me], FILL, HEAP);
    ARMCI_Barrier();
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < SEGS; i++) {
            s[i] = src + 64 * i;
            d[i] = (char *)buf[r] + 8192 * me + 80 * i + 3;
            for (int b = 0; b < B; b++) src[64 * i + b] = pat(me, i * 100 + b);
        }
        armci_giov_t v = {s, d, B, SEGS};
        CHECK(ARMCI_PutV(&v, 1, r) == 0);
    }
    ARMCI_Barrier();
    unsigned char *mine = buf[me];
    for (int w = 0; w < n; w++)
        for (int i = 0; i < SEGS; i++)
            for (int b = -3; b < 80 - 3; b++) {
                unsigned char x = mine[8192 * w + 80 * i + 3 + b];
                if (b >= 0 && b < B) CHECK(x == pat(w, i * 100 + b));
                else CHECK(x == FILL);
            }
    /* get them back with GetV (two descriptors), non-blocking */
    int peer = (me + 1) % n;
    unsigned char *back = calloc(SEGS * 64, 1);
    void *rs[SEGS], *ld[SEGS];
    for (int i = 0; i < SEGS; i++) {
        rs[i] = (char *)buf[peer] + 8192 * me + 80 * i + 3;
        ld[i] = back + 64 * i;
    }
    armci_giov_t v2[2] = {{rs, ld, B, 50}, {rs + 50, ld + 50, B, SEGS - 50}};
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbGetV(v2, 2, peer, &h) == 0);
    CHECK(ARMCI_Wait(&h) == 0);
    for (int i = 0; i < SEGS; i++) CHECK(memcmp(back + 64 * i, src + 64 * i, B) == 0);
    free(src); free(back);
    ARMCI_Barrier();
}

/* Transfers larger than one message-path request made of many short pieces (gathered
 * several to a request there) and of pieces longer than a request (sent on their own, in
 * order with the gathered): a 2-level PutS/GetS/AccS of 40-byte rows, 60 KB in all, and
 * a GetV/PutV mixing 24-byte and 40000-byte segments. Holes untouched, sums exact. */
static void test_many_pieces(void) {
    int count[3] = {40, 300, 5}, ss[2] = {40 + 3, 43 * 300 + 7}, ds[2] = {40 + 9, 49 * 300 + 1};
    long extent_s = (long)ss[1] * 4 + ss[0] * 299 + 40, extent_d = (long)ds[1] * 4 + ds[0] * 299 + 40;
    CHECK(extent_s <= HEAP && extent_d <= HEAP);
    int peer = (me + 1) % n, from = (me + n - 1) % n;
    unsigned char *src = malloc(HEAP), *back = malloc(HEAP), *mine = buf[me];
    for (long i = 0; i < HEAP; i++) src[i] = pat(me, i);
    memset(mine, FILL, HEAP);
    ARMCI_Barrier();
    CHECK(ARMCI_PutS(src, ss, buf[peer], ds, count, 2, peer) == 0);
    ARMCI_Barrier();
    for (long k = 0; k < 5; k++)
        for (long r = 0; r < 300; r++) {
            long d = k * ds[1] + r * ds[0], sidx = k * ss[1] + r * ss[0];
            for (long b = 0; b < 40; b++) CHECKF(mine[d + b] == pat(from, sidx + b), "PutS %ld %ld", k, r);
            long gap = r < 299 ? ds[0] - 40 : 0;
            for (long b = 40; b < 40 + gap; b++) CHECKF(mine[d + b] == FILL, "PutS hole %ld %ld", k, r);
        }
    memset(back, FILL, HEAP);
    CHECK(ARMCI_GetS(buf[peer], ds, back, ss, count, 2, peer) == 0);
    for (long k = 0; k < 5; k++)
        for (long r = 0; r < 300; r++) {
            long sidx = k * ss[1] + r * ss[0];
            for (long b = 0; b < 40; b++) CHECKF(back[sidx + b] == src[sidx + b], "GetS %ld %ld", k, r);
            if (r < 299) CHECKF(back[sidx + 40] == FILL, "GetS hole %ld %ld", k, r);
        }
    ARMCI_Barrier();
    /* AccS of 5 doubles per row from every rank into rank 0: sums exact */
    int as[2] = {56, 56 * 300 + 16}, sa[2] = {64, 64 * 300 + 8};
    double *dsrc = malloc(HEAP), one = 1;
    memset(mine, 0, HEAP);
    for (long i = 0; i < HEAP / 8; i++) dsrc[i] = me + 1;
    ARMCI_Barrier();
    CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &one, dsrc, sa, buf[0], as, count, 2, 0) == 0);
    ARMCI_Barrier();
    if (me == 0) {
        double want = n * (n + 1) / 2.0;
        for (long k = 0; k < 5; k++)
            for (long r = 0; r < 300; r++) {
                long at = k * as[1] + r * as[0];
                for (long b = 0; b < 40; b += 8) {
                    double x;
                    memcpy(&x, mine + at + b, 8);
                    CHECKF(x == want, "AccS %ld %ld", k, r);
                }
                if (r < 299) CHECKF(mine[at + 40] == 0, "AccS hole %ld %ld", k, r);
            }
    }
    ARMCI_Barrier();
    /* vector: 24-byte segments around two of 40000 bytes, put then got back */
    enum { SMALL = 24, LARGE = 40000, NS = 60 };
    void *ls[NS + 2], *rd[NS + 2];
    memset(mine, FILL, HEAP);
    ARMCI_Barrier();
    for (int i = 0; i < NS; i++) {
        ls[i] = src + 64 * i;
        rd[i] = (char *)buf[peer] + 50 * i + 1;
    }
    ls[NS] = src + 10000; rd[NS] = (char *)buf[peer] + 4000;
    ls[NS + 1] = src + 60000; rd[NS + 1] = (char *)buf[peer] + 50000;
    armci_giov_t v[3] = {{ls, rd, SMALL, NS / 2}, {ls + NS, rd + NS, LARGE, 2}, {ls + NS / 2, rd + NS / 2, SMALL, NS / 2}};
    CHECK(ARMCI_PutV(v, 3, peer) == 0);
    ARMCI_Barrier();
    for (int i = 0; i < NS; i++)
        for (int b = 0; b < SMALL; b++) CHECKF(mine[50 * i + 1 + b] == pat(from, 64 * i + b), "PutV small %d", i);
    for (int b = 0; b < LARGE; b++) CHECK(mine[4000 + b] == pat(from, 10000 + b) && mine[50000 + b] == pat(from, 60000 + b));
    CHECK(mine[0] == FILL && mine[3999] == FILL && mine[44000] == FILL && mine[90000] == FILL);
    ARMCI_Barrier();
    unsigned char *got = calloc(HEAP, 1);
    void *gl[NS + 2], *gr[NS + 2];
    for (int i = 0; i < NS + 2; i++) {
        gr[i] = rd[i];
        gl[i] = got + ((char *)ls[i] - (char *)src);
    }
    armci_giov_t g[3] = {{gr, gl, SMALL, NS / 2}, {gr + NS, gl + NS, LARGE, 2}, {gr + NS / 2, gl + NS / 2, SMALL, NS / 2}};
    CHECK(ARMCI_GetV(g, 3, peer) == 0);
    for (int i = 0; i < NS; i++) CHECKF(memcmp(got + 64 * i, src + 64 * i, SMALL) == 0, "GetV small %d", i);
    CHECK(memcmp(got + 10000, src + 10000, LARGE) == 0);
    CHECK(memcmp(got + 60000, src + 60000, LARGE) == 0);
    ARMCI_Barrier();
    free(src); free(back); free(dsrc); free(got);
}

static void test_contig_values_flag(void) {
    int peer = (me + 1) % n, from = (me + n - 1) % n;
    char *mine = buf[me];
    memset(mine, 0, HEAP);
    ARMCI_Barrier();
    /* 200 KiB contiguous (several messages on the message path) */
    long big = 200 * 1024;
    unsigned char *src = malloc(big);
    for (long i = 0; i < big; i++) src[i] = pat(me, i);
    armci_hdl_t h[3];
    for (int i = 0; i < 3; i++) ARMCI_INIT_HANDLE(&h[i]);
    CHECK(ARMCI_NbPut(src, buf[peer], (int)big, peer, &h[0]) == 0);
    CHECK(ARMCI_NbPutValueInt(-5, (char *)buf[peer] + big, peer, &h[1]) == 0);
    CHECK(ARMCI_NbPutValueDouble(2.5, (char *)buf[peer] + big + 8, peer, &h[2]) == 0);
    /* complete in reverse order */
    CHECK(ARMCI_Wait(&h[2]) == 0);
    CHECK(ARMCI_Test(&h[1]) == 0);
    CHECK(ARMCI_Wait(&h[0]) == 0);
    CHECK(ARMCI_WaitProc(peer) == 0);
    CHECK(ARMCI_WaitAll() == 0);
    CHECK(ARMCI_PutValueLong(1L << 40, (char *)buf[peer] + big + 16, peer) == 0);
    CHECK(ARMCI_PutValueFloat(0.75f, (char *)buf[peer] + big + 24, peer) == 0);
    /* the flag after the data */
    int one = 1;
    CHECK(ARMCI_Put_flag(&one, (char *)buf[peer] + big + 32, 4, (int *)((char *)buf[peer] + big + 36), 9, peer) == 0);
    ARMCI_Barrier();
    for (long i = 0; i < big; i++) CHECK((unsigned char)mine[i] == pat(from, i));
    CHECK(*(int *)(mine + big + 36) == 9 && *(int *)(mine + big + 32) == 1);
    CHECK(ARMCI_GetValueInt((char *)buf[peer] + big, peer) == -5);
    CHECK(ARMCI_GetValueDouble((char *)buf[peer] + big + 8, peer) == 2.5);
    CHECK(ARMCI_GetValueLong((char *)buf[peer] + big + 16, peer) == 1L << 40);
    CHECK(ARMCI_GetValueFloat((char *)buf[peer] + big + 24, peer) == 0.75f);
    unsigned char *back = malloc(big);
    CHECK(ARMCI_Get(buf[peer], back, (int)big, peer) == 0);
    CHECK(memcmp(back, src, big) == 0);
    /* zero bytes anywhere in an allocation is fine */
    CHECK(ARMCI_Put(src, buf[peer], 0, peer) == 0);
    free(src); free(back);
    ARMCI_Barrier();
}

/* A level that repeats once: its stride is never applied, so any value is accepted
 * (Global Arrays passes its buffer's leading dimension, here 8 bytes for 1200). */
static void test_one_block_levels(void) {
    int peer = (me + 1) % n, from = (me + n - 1) % n;
    double src[150], back[150];
    for (int i = 0; i < 150; i++) src[i] = me * 1000 + i;
    int count[2] = {150 * 8, 1}, st[1] = {8};
    char *dst = (char *)buf[peer] + 4096;
    ARMCI_Barrier();
    CHECK(ARMCI_PutS(src, st, dst, st, count, 1, peer) == 0);
    double two = 2.0;
    CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &two, src, st, dst, st, count, 1, peer) == 0);
    ARMCI_Barrier();
    CHECK(ARMCI_GetS((char *)buf[me] + 4096, st, back, st, count, 1, me) == 0);
    for (int i = 0; i < 150; i++) CHECK(back[i] == 3.0 * (from * 1000 + i));
    ARMCI_Barrier();
}

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    me = armci_msg_me();
    n = armci_msg_nproc();
    buf = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(buf, HEAP) == 0);
    test_contig_values_flag();
    for (int L = 0; L <= 7; L++) test_strided(L);
    test_vector();
    test_many_pieces();
    test_one_block_levels();
    ARMCI_Free(buf[me]);
    ARMCI_Finalize();
    return 0;
}
