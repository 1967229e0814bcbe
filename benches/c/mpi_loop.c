/*
 * mpi_loop.c -- per-call instruction probe of an MPI library (for callgrind, which the load
 * of a shared machine does not disturb): N iterations of one operation, nothing else.
 * The difference of two runs (2N and N iterations) divided by N is the cost of one.
 *
 * Usage: ./mpi_loop N MODE
 *   MODE self       MPI_Send + MPI_Recv of 8 bytes to itself (run it as a 1-rank job)
 *        rate       rank 0 MPI_Send x N, rank 1 MPI_Recv x N (8 bytes; 2 ranks; in a
 *                   larger job, ranks 2.. only join the barriers: the node-local pair of
 *                   a multi-node job)
 *        pingpong   8-byte ping-pong (2 ranks)
 *        pingdelay  the ping-pong, rank 1 sleeping MPI_LOOP_DELAY_US (default 300) before
 *                   each reply: rank 0's receives poll while it sleeps (under callgrind rank 0
 *                   is slow enough that a plain ping-pong's replies are often there at its
 *                   first poll); two delays separate the empty polls from the rest
 *                   (scripts/ofi-callgrind.sh)
 *        pingfirst  the ping-pong, rank 0 sleeping MPI_LOOP_DELAY_US after each send: its
 *                   receive finds the reply at its first poll, so MPI_Send + MPI_Recv is the
 *                   latency path alone (the reply's arrival to the next send). Before each
 *                   send an MPI_Iprobe that finds nothing (nothing is in flight to rank 0):
 *                   the empty poll a natively waiting receiver makes (scripts/ofi-callgrind.sh)
 *        barrier    MPI_Barrier x N
 *        allreduce  MPI_Allreduce of one double (MPI_SUM) x N
 *        wself      a window to itself: 64 MPI_Irecv, 64 MPI_Isend, MPI_Waitall of the 128
 *                   (8 bytes; 1 rank); N windows, so divide by 64 N for one message
 *        window     the msgrate_window pattern: rank 0 64 MPI_Isend + MPI_Waitall, rank 1
 *                   64 MPI_Irecv + MPI_Waitall, then a 4-byte ack (8 bytes; 2 ranks)
 *        ibarrier   MPI_Ibarrier + MPI_Wait x N
 *        iallreduce MPI_Iallreduce of one double (MPI_SUM) + MPI_Wait x N
 * E.g. (workspace root, after `cargo build --release -p skifmpi -p skifrun`):
 *   mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_loop.c -o /tmp/mpi_loop
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.a /tmp/mpi_loop 20000 self
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.b /tmp/mpi_loop 40000 self
 *   (summary of cg.b - summary of cg.a) / 20000 = instructions per Send + Recv;
 *   two ranks: target/release/skifrun -n 2 -- valgrind --tool=callgrind
 *   --callgrind-out-file=/tmp/cg.%p /tmp/mpi_loop 20000 rate (each rank's file)
 * Environment: MPI_LOOP_THREAD_LEVEL=0..3 initializes with MPI_Init_thread at that level
 * (MPI_THREAD_MULTIPLE = 3, what mpi4py asks by default) instead of MPI_Init.
 * Exit status: 0, or non-zero on an MPI error or a bad argument.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mpi_loop N self|rate|pingpong|pingdelay|pingfirst|barrier|allreduce|wself|window|ibarrier|iallreduce\n");
        return 1;
    }
    long n = atol(argv[1]);
    const char *mode = argv[2];
    int rank, size, rc = MPI_SUCCESS;
    char b[8] = {0};
    enum { W = 64 };
    static char wb[W][8];
    MPI_Request req[2 * W];
    double x = 1, y = 0;
    const char *lv = getenv("MPI_LOOP_THREAD_LEVEL");
    const char *dl = getenv("MPI_LOOP_DELAY_US");
    useconds_t delay = dl ? (useconds_t)atol(dl) : 300;
    if (lv) {
        int provided = -1;
        MPI_Init_thread(&argc, &argv, atoi(lv), &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = 1 - rank;
    static const char *MODES[] = {"self",  "rate",   "pingpong", "barrier",   "allreduce",
                                  "wself", "window", "ibarrier", "iallreduce", "pingdelay", "pingfirst"};
    int m = -1;
    for (int i = 0; i < 11; i++)
        if (strcmp(mode, MODES[i]) == 0) m = i;
    int pair = m == 1 || m == 2 || m == 6 || m == 9 || m == 10; /* ranks 0 and 1 only; others wait in the barriers */
    if (m < 0 || (pair && size < 2)) {
        fprintf(stderr, "mpi_loop: mode %s unknown or needs 2 ranks\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (pair && rank >= 2) n = 0;
    for (long i = 0; i < n && rc == MPI_SUCCESS; i++) {
        switch (m) {
        case 0:
            rc = MPI_Send(b, 8, MPI_BYTE, rank, 1, MPI_COMM_WORLD);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(b, 8, MPI_BYTE, rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case 1:
            rc = rank == 0 ? MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD)
                           : MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case 2:
        case 9:
        case 10:
            if (rank == 0) {
                int flag;
                if (m == 10) MPI_Iprobe(peer, 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                rc = MPI_Send(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                if (m == 10) usleep(delay);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Recv(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                rc = MPI_Recv(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (m == 9) usleep(delay);
                if (rc == MPI_SUCCESS) rc = MPI_Send(b, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
            break;
        case 3:
            rc = MPI_Barrier(MPI_COMM_WORLD);
            break;
        case 5:
            for (int w = 0; w < W && rc == MPI_SUCCESS; w++)
                rc = MPI_Irecv(wb[w], 8, MPI_BYTE, rank, 1, MPI_COMM_WORLD, &req[w]);
            for (int w = 0; w < W && rc == MPI_SUCCESS; w++)
                rc = MPI_Isend(b, 8, MPI_BYTE, rank, 1, MPI_COMM_WORLD, &req[W + w]);
            if (rc == MPI_SUCCESS) rc = MPI_Waitall(2 * W, req, MPI_STATUSES_IGNORE);
            break;
        case 6:
            for (int w = 0; w < W && rc == MPI_SUCCESS; w++)
                rc = rank == 0 ? MPI_Isend(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[w])
                               : MPI_Irecv(wb[w], 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[w]);
            if (rc == MPI_SUCCESS) rc = MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = rank == 0 ? MPI_Recv(b, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
                               : MPI_Send(b, 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            break;
        case 7:
            rc = MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            break;
        case 8:
            rc = MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            break;
        default:
            rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "mpi_loop: rank %d: MPI error %d\n", rank, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
