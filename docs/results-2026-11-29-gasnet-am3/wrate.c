/* wrate.c: mpi window rate as a median of per-window TSC times (64 Isend+Waitall, ack). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <x86intrin.h>
#define W 64
#define N 20000
static int cmp(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b; return (x > y) - (x < y); }
static uint64_t T[N + 1];
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me; MPI_Comm_rank(MPI_COMM_WORLD, &me);
    char buf[W][8]; MPI_Request rq[W]; int ack = 0;
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    for (int r = 0; r < rounds; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) {
            if (me == 0) {
                T[i] = __rdtsc();
                for (int k = 0; k < W; k++) MPI_Isend(buf[k], 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[k]);
                MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int k = 0; k < W; k++) MPI_Irecv(buf[k], 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[k]);
                MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
            }
        }
        if (me == 0) {
            T[N] = __rdtsc();
            static int64_t d[N]; int k = 0;
            for (int i = 100; i < N; i++) d[k++] = T[i + 1] - T[i];
            qsort(d, k, sizeof d[0], cmp);
            printf("window ticks %ld (%.1f M msg/s)\n", d[k / 2], W / (d[k / 2] / 2.596e3));
        }
    }
    MPI_Finalize();
    return 0;
}
