/* Accumulate of every type with a scale, from all ranks to all ranks at once (totals
 * exact), contiguous, strided (AccS, holes untouched) and vector (AccV); ARMCI_Rmw
 * fetch-and-add as a ticket counter (the fetched values are a permutation), the long
 * form, swaps; mutexes protecting a non-atomic read-increment-write counter. */
#include <string.h>
#include <stdint.h>
#include <complex.h>
#include "check.h"

enum { N = 64, ROUNDS = 5, TICKETS = 50, CRIT = 40 };

static int me, n;

static void test_acc(void) {
    void **b = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(b, 6 * N * 16) == 0);
    char *mine = b[me];
    int isrc[N]; long lsrc[N]; float fsrc[N]; double dsrc[N];
    float complex csrc[N]; double complex zsrc[N];
    for (int i = 0; i < N; i++) {
        isrc[i] = me + i; lsrc[i] = (long)(me + 1) << 33 | i; fsrc[i] = (float)(me + i);
        dsrc[i] = me * 0.5 + i; csrc[i] = (me + i) + I * (float)i; zsrc[i] = me + I * (double)(i + 1);
    }
    int is = 3; long ls = 2; float fs = 2.0f; double ds = 4.0;
    float complex cs = 1.0f + 1.0f * I; double complex zs = 2.0 - 1.0 * I;
    ARMCI_Barrier();
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < n; k++) {
            int r = (me + k) % n; /* everyone hits everyone at once, staggered */
            char *t = b[r];
            CHECK(ARMCI_Acc(ARMCI_ACC_INT, &is, isrc, t, sizeof isrc, r) == 0);
            CHECK(ARMCI_Acc(ARMCI_ACC_LNG, &ls, lsrc, t + N * 16, sizeof lsrc, r) == 0);
            CHECK(ARMCI_Acc(ARMCI_ACC_FLT, &fs, fsrc, t + 2 * N * 16, sizeof fsrc, r) == 0);
            armci_hdl_t h;
            ARMCI_INIT_HANDLE(&h);
            CHECK(ARMCI_NbAcc(ARMCI_ACC_DBL, &ds, dsrc, t + 3 * N * 16, sizeof dsrc, r, &h) == 0);
            CHECK(ARMCI_Acc(ARMCI_ACC_CPL, &cs, csrc, t + 4 * N * 16, sizeof csrc, r) == 0);
            CHECK(ARMCI_Acc(ARMCI_ACC_DCP, &zs, zsrc, t + 5 * N * 16, sizeof zsrc, r) == 0);
            CHECK(ARMCI_Wait(&h) == 0);
        }
    ARMCI_Barrier();
    long S = (long)n * (n - 1) / 2; /* sum of ranks */
    for (int i = 0; i < N; i++) {
        CHECK(((int *)mine)[i] == ROUNDS * is * (S + (long)n * i));
        long el = 0;
        for (int w = 0; w < n; w++) el += ls * ((long)(w + 1) << 33 | i);
        CHECK(((long *)(mine + N * 16))[i] == ROUNDS * el);
        /* small integers: exact in float and double */
        CHECKF(((float *)(mine + 2 * N * 16))[i] == (float)(ROUNDS * fs * (S + (long)n * i)), "flt %d", i);
        CHECK(((double *)(mine + 3 * N * 16))[i] == ROUNDS * ds * (0.5 * S + (double)n * i));
        float complex ce = 0; double complex ze = 0;
        for (int w = 0; w < n; w++) { ce += cs * ((w + i) + I * (float)i); ze += zs * (w + I * (double)(i + 1)); }
        CHECKF(((float complex *)(mine + 4 * N * 16))[i] == ROUNDS * ce, "cpl %d", i);
        CHECKF(((double complex *)(mine + 5 * N * 16))[i] == ROUNDS * ze, "dcp %d", i);
    }
    ARMCI_Barrier();
    /* AccS: a 3-D block of doubles with holes, from every rank into rank 0 */
    memset(mine, 0, 6 * N * 16);
    ARMCI_Barrier();
    double src[4][5][6];
    for (int i = 0; i < 4; i++) for (int j = 0; j < 5; j++) for (int k = 0; k < 6; k++) src[i][j][k] = i * 100 + j * 10 + k;
    int count[3] = {3 * 8, 4, 3};          /* 3 doubles x 4 rows x 3 planes */
    int ss[2] = {6 * 8, 5 * 6 * 8};
    int dst_s[2] = {5 * 8, 5 * 5 * 8};     /* dst: 5 doubles per row, 5 rows per plane */
    double one = 1.0;
    CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &one, src, ss, b[0], dst_s, count, 2, 0) == 0);
    ARMCI_Barrier();
    if (me == 0) {
        double *d = (double *)mine;
        for (int p = 0; p < 5; p++) for (int r = 0; r < 5; r++) for (int c = 0; c < 5; c++) {
            double x = d[p * 25 + r * 5 + c];
            if (p < 3 && r < 4 && c < 3) CHECK(x == n * (p * 100 + r * 10 + c));
            else CHECK(x == 0.0);
        }
    }
    /* AccV: many ints, scale -1 */
    enum { SEGS = 33 };
    int vals[SEGS]; void *s[SEGS], *d[SEGS];
    for (int i = 0; i < SEGS; i++) { vals[i] = i + 1; s[i] = &vals[i]; d[i] = (char *)b[1] + 4096 + 8 * i; }
    int minus = -1;
    armci_giov_t v = {s, d, 4, SEGS};
    CHECK(ARMCI_AccV(ARMCI_ACC_INT, &minus, &v, 1, 1) == 0);
    ARMCI_Barrier();
    if (me == 1)
        for (int i = 0; i < SEGS; i++) {
            CHECK(*(int *)(mine + 4096 + 8 * i) == -n * (i + 1));
            CHECK(*(int *)(mine + 4096 + 8 * i + 4) == 0);
        }
    ARMCI_Barrier();
    ARMCI_Free(b[me]);
    free(b);
}

static void test_rmw(void) {
    void **b = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(b, 4096) == 0);
    /* ticket counter on rank n-1: each rank takes TICKETS tickets */
    int *mine_t = malloc(TICKETS * sizeof(int));
    for (int i = 0; i < TICKETS; i++) {
        int t = -1;
        CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &t, b[n - 1], 1, n - 1) == 0);
        mine_t[i] = t;
    }
    /* gather the tickets on rank 0 (slot per rank) */
    CHECK(ARMCI_Put(mine_t, (char *)b[0] + 64 + me * TICKETS * 4, TICKETS * 4, 0) == 0);
    /* the long form: add 1<<35 */
    long lt = 0;
    CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &lt, (char *)b[0] + 8, 1, 0) == 0);
    ARMCI_Barrier();
    if (me == 0) {
        int total = n * TICKETS;
        char *seen = calloc(total, 1);
        int *all = (int *)((char *)b[0] + 64);
        for (int i = 0; i < total; i++) {
            CHECKF(all[i] >= 0 && all[i] < total && !seen[all[i]], "ticket %d", all[i]);
            seen[all[i]] = 1;
        }
        free(seen);
        CHECK(*(long *)((char *)b[0] + 8) == n);
    }
    if (me == n - 1) CHECK(*(int *)b[n - 1] == n * TICKETS);
    ARMCI_Barrier();
    /* swaps: each rank swaps its id in; the values seen plus the final one are all ids */
    if (me == 0) { *(int *)((char *)b[0] + 16) = -1; *(long *)((char *)b[0] + 24) = -1; }
    ARMCI_Barrier();
    int x = me;
    CHECK(ARMCI_Rmw(ARMCI_SWAP, &x, (char *)b[0] + 16, 0, 0) == 0);
    long y = (long)me << 40;
    CHECK(ARMCI_Rmw(ARMCI_SWAP_LONG, &y, (char *)b[0] + 24, 0, 0) == 0);
    CHECK(x >= -1 && x < n && x != me);
    CHECK(y == -1 || ((y >> 40) >= 0 && (y >> 40) < n && (y & ((1L << 40) - 1)) == 0));
    ARMCI_Barrier();
    ARMCI_Free(b[me]);
    free(b);
    free(mine_t);
}

static void test_mutex(void) {
    void **b = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(b, 64) == 0);
    CHECK(ARMCI_Create_mutexes(me + 1) == 0); /* rank r hosts r+1 mutexes */
    /* a non-atomic counter on each rank r, protected by its mutex r (on rank r) */
    for (int it = 0; it < CRIT; it++)
        for (int k = 0; k < n; k++) {
            int r = (me + k) % n;
            ARMCI_Lock(r, r);
            long v;
            CHECK(ARMCI_Get(b[r], &v, 8, r) == 0);
            v += 1;
            CHECK(ARMCI_Put(&v, b[r], 8, r) == 0);
            ARMCI_Unlock(r, r);
        }
    ARMCI_Barrier();
    CHECKF(*(long *)b[me] == (long)n * CRIT, "counter %ld", *(long *)b[me]);
    CHECK(ARMCI_Destroy_mutexes() == 0);
    CHECK(ARMCI_Create_mutexes(1) == 0);
    CHECK(ARMCI_Destroy_mutexes() == 0);
    ARMCI_Free(b[me]);
    free(b);
}

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    me = armci_msg_me();
    n = armci_msg_nproc();
    test_acc();
    test_rmw();
    test_mutex();
    ARMCI_Finalize();
    return 0;
}
