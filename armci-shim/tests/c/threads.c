/* ARMCI_Init_thread(MPI_THREAD_MULTIPLE level 3) without MPI: two threads per rank make
 * one-sided calls at once (fetch-and-add tickets on rank 0's counter, puts and gets of
 * their own slots on every rank); the main thread then checks the counter's total, that
 * the tickets were distinct, and every slot. Collectives stay on the main thread. */
#include <pthread.h>
#include <string.h>
#include "check.h"

enum { THREADS = 2, ROUNDS = 200 };
static int me, n;
static void **base;
static long tickets[THREADS][ROUNDS];

static void *work(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        long old = -1;
        CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, base[0], 1, 0) == 0);
        tickets[t][i] = old;
        int peer = (me + 1 + i) % n;
        long v = 1000000L * me + 1000L * t + i, back = -1;
        long *slot = (long *)base[peer] + 1 + me * THREADS + t;
        CHECK(ARMCI_Put(&v, slot, sizeof v, peer) == 0);
        CHECK(ARMCI_Get(slot, &back, sizeof back, peer) == 0);
        CHECKF(back == v, "thread %d: got %ld back, put %ld", t, back, v);
    }
    return NULL;
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    CHECK(ARMCI_Init_thread(3) == 0);
    me = armci_msg_me();
    n = armci_msg_nproc();
    base = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(base, (1 + n * THREADS) * sizeof(long)) == 0);
    memset(base[me], 0, (1 + n * THREADS) * sizeof(long));
    ARMCI_Barrier();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, work, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
    ARMCI_Barrier();
    long total = (long)n * THREADS * ROUNDS;
    if (me == 0) CHECKF(*(long *)base[0] == total, "counter %ld, expected %ld", *(long *)base[0], total);
    /* every ticket once: each rank's tickets summed, and no repeats within the rank */
    long sum = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < ROUNDS; i++) {
            CHECK(tickets[t][i] >= 0 && tickets[t][i] < total);
            sum += tickets[t][i];
        }
    armci_msg_lgop(&sum, 1, "+");
    CHECK(sum == total * (total - 1) / 2);
    /* the last value each thread of each rank put here */
    for (int r = 0; r < n; r++)
        for (int t = 0; t < THREADS; t++) {
            int last = -1;
            for (int i = 0; i < ROUNDS; i++) if ((r + 1 + i) % n == me) last = i;
            long want = last < 0 ? 0 : 1000000L * r + 1000L * t + last;
            long got = ((long *)base[me])[1 + r * THREADS + t];
            CHECKF(got == want, "slot of rank %d thread %d: %ld, expected %ld", r, t, got, want);
        }
    ARMCI_Barrier();
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
    return 0;
}
