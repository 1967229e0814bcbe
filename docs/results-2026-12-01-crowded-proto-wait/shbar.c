/* shbar.c: shmem_barrier_all and an 8-byte shmem_long_sum_reduce (team world), us per
 * call, the median of 5 passes, printed by PE 0. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    shmem_init();
    long it = argc > 1 ? atol(argv[1]) : 2000;
    static long src, dst;
    double t[2][5];
    for (int op = 0; op < 2; op++)
        for (int r = 0; r < 5; r++) {
            shmem_barrier_all();
            double t0 = now();
            for (long i = 0; i < it; i++) {
                if (op == 0) shmem_barrier_all();
                else {
                    src = i;
#ifdef SHMEM_TEAM_WORLD
                    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &dst, &src, 1);
#else
                    static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE], psync[2][SHMEM_REDUCE_SYNC_SIZE];
                    static int init;
                    if (!init) { for (int k = 0; k < SHMEM_REDUCE_SYNC_SIZE; k++) psync[0][k] = psync[1][k] = SHMEM_SYNC_VALUE; init = 1; shmem_barrier_all(); }
                    shmem_long_sum_to_all(&dst, &src, 1, 0, 0, shmem_n_pes(), pwrk, psync[i & 1]);
#endif
                }
            }
            t[op][r] = (now() - t0) / it * 1e6;
        }
    qsort(t[0], 5, sizeof(double), cmp); qsort(t[1], 5, sizeof(double), cmp);
    if (shmem_my_pe() == 0) printf("n=%d barrier_all %.2f us, sum_reduce8 %.2f us\n", shmem_n_pes(), t[0][2], t[1][2]);
    shmem_finalize();
    return 0;
}
