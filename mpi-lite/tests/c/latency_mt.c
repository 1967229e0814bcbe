/* The osu_latency_mt pattern (OSU micro-benchmarks) under MPI_THREAD_MULTIPLE: rank 0 runs
 * T sender threads, rank 1 T receiver threads, all on MPI_COMM_WORLD with one tag; each
 * sender ping-pongs (MPI_Send then MPI_Recv from rank 1), each receiver answers (MPI_Recv
 * then MPI_Send to rank 0) — the threads' messages cross freely. Half the receivers use
 * MPI_ANY_SOURCE, as do half the senders' receives. Sizes from 0 bytes to 1 MiB (eager and
 * rendezvous), the threads meet at a barrier between sizes; every message's length and
 * contents are checked, and rank 0 prints the latency per size (as osu does). Other ranks
 * (3, 4) only take part in the barriers. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define T 3
#define MAXSZ (1 << 20)

static pthread_barrier_t bar;

static unsigned char pat(int size, int k) { return (unsigned char)(size * 13 + k); }

static void check_msg(const unsigned char *b, const MPI_Status *st, int size, int from) {
    int n;
    MPI_Get_count(st, MPI_CHAR, &n);
    CHECK(n == size && st->MPI_SOURCE == from && st->MPI_TAG == 1);
    for (int k = 0; k < size; k++) CHECK(b[k] == pat(size, k));
}

static void *thread_main(void *arg) {
    int t = (int)(long)arg;
    unsigned char *s = malloc(MAXSZ), *r = malloc(MAXSZ);
    CHECK(s && r);
    for (int size = 0; size <= MAXSZ; size = size ? size * 4 : 1) {
        pthread_barrier_wait(&bar); /* the main thread timed the start */
        for (int k = 0; k < size; k++) s[k] = pat(size, k);
        int n = size > 65536 ? 4 : 50;
        MPI_Status st;
        for (int i = 0; i < n; i++) {
            memset(r, 0, size);
            if (rank == 0) {
                CHECK(MPI_Send(s, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS);
                CHECK(MPI_Recv(r, size, MPI_CHAR, t % 2 ? 1 : MPI_ANY_SOURCE, 1, MPI_COMM_WORLD,
                               &st) == MPI_SUCCESS);
                check_msg(r, &st, size, 1);
            } else {
                CHECK(MPI_Recv(r, size, MPI_CHAR, t % 2 ? MPI_ANY_SOURCE : 0, 1, MPI_COMM_WORLD,
                               &st) == MPI_SUCCESS);
                check_msg(r, &st, size, 0);
                CHECK(MPI_Send(s, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD) == MPI_SUCCESS);
            }
        }
        pthread_barrier_wait(&bar);
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    pthread_t th[T];
    int mine = rank < 2;
    if (mine) {
        CHECK(pthread_barrier_init(&bar, NULL, T + 1) == 0);
        for (long t = 0; t < T; t++) CHECK(pthread_create(&th[t], NULL, thread_main, (void *)t) == 0);
    }
    for (int sz = 0; sz <= MAXSZ; sz = sz ? sz * 4 : 1) {
        CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
        double t0 = MPI_Wtime();
        if (mine) {
            pthread_barrier_wait(&bar);
            pthread_barrier_wait(&bar);
        }
        int n = sz > 65536 ? 4 : 50;
        if (rank == 0) printf("latency_mt: %d bytes %.2f us\n", sz, (MPI_Wtime() - t0) * 1e6 / (2.0 * n));
    }
    if (mine)
        for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
    printf("latency_mt: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
