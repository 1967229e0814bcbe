/* A rank blocked in MPI_Recv uses a small fraction of a CPU (the fixed-spin wait: spin
 * briefly, then sleep; SKIFCH-SPEC "Waiting without burning a core"). Rank 1 holds each
 * reply BLOCKED_MS (default 2000) ms; rank 0 measures its process's CPU time (every
 * thread: getrusage RUSAGE_SELF) across each of BLOCKED_WAITS (default 1) receives, prints
 * "blocked: <cpu> ms of CPU in <wall> ms (<pct>%)" and fails if the share is above
 * BLOCKED_MAX_PCT (default 30: generous, a regression guard; a rank that never slept used
 * 100). 2 ranks. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
#include "check.h"

static double cpu_ms(void) {
    struct rusage u;
    CHECK(getrusage(RUSAGE_SELF, &u) == 0);
    return 1e3 * (u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-3 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static double wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * t.tv_sec + 1e-6 * t.tv_nsec;
}

static long env(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    long hold = env("BLOCKED_MS", 2000), waits = env("BLOCKED_WAITS", 1), max = env("BLOCKED_MAX_PCT", 30);
    int b = 0;
    /* Connections made and the first messages through before measuring. */
    for (int i = 0; i < 10; i++)
        CHECK(MPI_Sendrecv_replace(&b, 1, MPI_INT, 1 - rank, 0, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    double cpu = 0, wall = 0;
    for (long i = 0; i < waits; i++) {
        if (rank == 0) {
            CHECK(MPI_Send(&b, 1, MPI_INT, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS);
            double c0 = cpu_ms(), w0 = wall_ms();
            CHECK(MPI_Recv(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            cpu += cpu_ms() - c0;
            wall += wall_ms() - w0;
        } else {
            CHECK(MPI_Recv(&b, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            struct timespec t = {hold / 1000, (hold % 1000) * 1000000L};
            while (nanosleep(&t, &t) != 0) {
            }
            CHECK(MPI_Send(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
    }
    if (rank == 0) {
        double pct = wall > 0 ? 100 * cpu / wall : 0;
        printf("blocked: %.2f ms of CPU in %.1f ms (%.1f%%)\n", cpu / waits, wall / waits, pct);
        fflush(stdout);
        CHECK(wall >= 0.9 * hold * waits && pct <= max);
    }
    MPI_Finalize();
    return 0;
}
