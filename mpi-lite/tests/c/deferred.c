/* Deferred MPI_Irecv (skifmpi's `defer`): a byte receive is written down and posted by the
 * next other call, or a Waitall of exactly the run drains it straight from the channel.
 * Every case checks MPI's order (§3.5) and completion semantics through the paths that
 * meet a deferred receive: the window drain, a wildcard among the run, a blocking receive
 * or a probe after it, a synchronous or rendezvous message into it, truncation, a Waitall
 * of part of the run or in another order, Test, Cancel, Request_free, a collective.
 * Rank 0 receives; the others send. 2..4 ranks. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define W 64

static void sync_all(void) { CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS); }

/* A window of W receives from every sender, with their statuses: the drain's path. */
static void window(int len) {
    int n = size - 1;
    char *buf = calloc((size_t)W * n, (size_t)len > 0 ? (size_t)len : 1);
    MPI_Request r[W * 3];
    MPI_Status st[W * 3];
    CHECK(n * W <= W * 3);
    for (int round = 0; round < 3; round++) {
        if (rank == 0) {
            for (int i = 0; i < W * n; i++)
                CHECK(MPI_Irecv(buf + (size_t)i * len, len, MPI_BYTE, 1 + i % n, i / n, MPI_COMM_WORLD, &r[i]) == MPI_SUCCESS);
            CHECK(MPI_Waitall(W * n, r, st) == MPI_SUCCESS);
            for (int i = 0; i < W * n; i++) {
                CHECK(r[i] == MPI_REQUEST_NULL);
                CHECK(st[i].MPI_SOURCE == 1 + i % n && st[i].MPI_TAG == i / n);
                int c;
                CHECK(MPI_Get_count(&st[i], MPI_BYTE, &c) == MPI_SUCCESS && c == len);
                for (int k = 0; k < len; k++)
                    CHECK(buf[(size_t)i * len + k] == (char)(i / n + k + round + st[i].MPI_SOURCE));
            }
        } else {
            char m[256];
            for (int t = 0; t < W; t++) {
                for (int k = 0; k < len; k++) m[k] = (char)(t + k + round + rank);
                CHECK(MPI_Send(m, len, MPI_BYTE, 0, t, MPI_COMM_WORLD) == MPI_SUCCESS);
            }
        }
        sync_all();
    }
    free(buf);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    window(8);
    window(0);
    window(200);

    /* Wildcards in the run keep posting order: ANY_TAG first takes the first message. */
    if (rank == 0) {
        int a = -1, b = -1, c = -1;
        MPI_Request r[3];
        MPI_Status st[3];
        MPI_Irecv(&a, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&b, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Irecv(&c, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[2]);
        CHECK(MPI_Waitall(3, r, st) == MPI_SUCCESS);
        CHECK(a == 10 && st[0].MPI_TAG == 7);
        CHECK(b == 11 && st[1].MPI_TAG == 7);
        CHECK(c == 12 && st[2].MPI_TAG == 9 && st[2].MPI_SOURCE == 1);
    } else if (rank == 1) {
        int v[3] = {10, 11, 12};
        MPI_Send(&v[0], 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        MPI_Send(&v[1], 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        MPI_Send(&v[2], 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
    }
    sync_all();

    /* A blocking receive after a deferred one of the same envelope gets the second message;
     * a probe sees what the deferred receive leaves. */
    if (rank == 0) {
        int a = -1, b = -1, c = -1, flag = 0;
        MPI_Request r;
        MPI_Status st;
        MPI_Irecv(&a, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &r);
        MPI_Recv(&b, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(b == 21);
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && a == 20 && r == MPI_REQUEST_NULL);
        MPI_Irecv(&a, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &r);
        while (!flag) MPI_Iprobe(1, 4, MPI_COMM_WORLD, &flag, &st);
        MPI_Recv(&c, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(a == 22 && c == 23);
    } else if (rank == 1) {
        int v[4] = {20, 21, 22, 23};
        MPI_Send(&v[0], 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
        MPI_Send(&v[1], 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
        MPI_Send(&v[2], 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
        MPI_Send(&v[3], 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
    }
    sync_all();

    /* Synchronous and rendezvous messages into a run (the drain hands over), and a
     * message that matches no receive of the run arriving first. */
    {
        enum { BIG = 1 << 20 };
        char *big = malloc(BIG);
        int x = -1, y = -1, z = -1;
        if (rank == 0) {
            MPI_Request r[4];
            MPI_Irecv(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r[0]);
            MPI_Irecv(big, BIG, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r[1]);
            MPI_Irecv(&y, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &r[2]);
            MPI_Irecv(&z, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &r[3]);
            CHECK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
            CHECK(x == 31 && y == 33 && z == 34);
            for (int k = 0; k < BIG; k += 4093) CHECK(big[k] == (char)k);
            int odd = -1;
            MPI_Recv(&odd, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(odd == 30);
        } else if (rank == 1) {
            int v[5] = {30, 31, 33, 34, 0};
            for (int k = 0; k < BIG; k++) big[k] = (char)k;
            MPI_Request odd; /* received last: must not block the sender (SKIFMPI_EAGER=0) */
            MPI_Isend(&v[0], 1, MPI_INT, 0, 99, MPI_COMM_WORLD, &odd);
            MPI_Send(&v[1], 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
            MPI_Send(big, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            MPI_Ssend(&v[2], 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
            MPI_Send(&v[3], 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
            MPI_Wait(&odd, MPI_STATUS_IGNORE);
        }
        free(big);
    }
    sync_all();

    /* Truncation inside a window: the error is the request's, the others complete. */
    if (rank == 0) {
        char small[4], ok[8];
        MPI_Request r[2];
        MPI_Status st[2];
        MPI_Irecv(small, 4, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(ok, 8, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &r[1]);
        CHECK(MPI_Waitall(2, r, st) == MPI_ERR_IN_STATUS);
        int cls;
        MPI_Error_class(st[0].MPI_ERROR, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE);
        CHECK(st[1].MPI_ERROR == MPI_SUCCESS && ok[7] == 7);
    } else if (rank == 1) {
        char m[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        MPI_Send(m, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
        MPI_Send(m, 8, MPI_BYTE, 0, 6, MPI_COMM_WORLD);
    }
    sync_all();

    /* Part of the run, another order, Test, Cancel and Request_free on deferred requests,
     * and a collective between posting and waiting. */
    if (rank == 0) {
        int v[4] = {-1, -1, -1, -1}, flag = 0, dummy;
        MPI_Request r[4], c;
        MPI_Status st;
        for (int i = 0; i < 4; i++) MPI_Irecv(&v[i], 1, MPI_INT, 1, 40 + i, MPI_COMM_WORLD, &r[i]);
        MPI_Irecv(&dummy, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, &c);
        MPI_Request two[2] = {r[3], r[1]};
        CHECK(MPI_Waitall(2, two, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
        CHECK(v[3] == 43 && v[1] == 41);
        CHECK(MPI_Cancel(&c) == MPI_SUCCESS);
        CHECK(MPI_Wait(&c, &st) == MPI_SUCCESS);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag);
        MPI_Irecv(&dummy, 1, MPI_INT, 1, 78, MPI_COMM_WORLD, &c);
        CHECK(MPI_Cancel(&c) == MPI_SUCCESS);
        CHECK(MPI_Wait(&c, &st) == MPI_SUCCESS);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag);
        flag = 0;
        flag = 0;
        while (!flag) CHECK(MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(v[0] == 40);
        CHECK(MPI_Request_free(&r[2]) == MPI_SUCCESS && r[2] == MPI_REQUEST_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Irecv(&v[0], 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &r[0]);
        int sum = 0, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        CHECK(v[0] == 50);
    } else {
        if (rank == 1)
            for (int i = 0; i < 4; i++) {
                int x = 40 + i;
                MPI_Send(&x, 1, MPI_INT, 0, 40 + i, MPI_COMM_WORLD);
            }
        MPI_Barrier(MPI_COMM_WORLD);
        int x = 50, sum = 0, one = 1;
        if (rank == 1) MPI_Send(&x, 1, MPI_INT, 0, 50, MPI_COMM_WORLD);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size);
    }
    sync_all();

    /* A run on a duplicate communicator next to one on the world: contexts apart. */
    {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        if (rank == 0) {
            int a = -1, b = -1;
            MPI_Request r[2];
            MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 1, d, &r[0]);
            MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &r[1]);
            CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
            CHECK(a == 61 && b == 60);
        } else if (rank == 1) {
            int x = 60, y = 61;
            MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
            MPI_Send(&y, 1, MPI_INT, 0, 1, d);
        }
        MPI_Comm_free(&d);
    }
    sync_all();

    /* A nonblocking collective in flight while a run is waited for: the wait must move
     * it (MPI-3.1 §5.12 progress), or the sender, waiting for it, never sends. The
     * sender is rank 2 where there is one: in the dissemination barrier its second
     * round waits for rank 0's. */
    {
        MPI_Request b;
        int from = size >= 3 ? 2 : 1;
        CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &b) == MPI_SUCCESS);
        if (rank == 0) {
            int v[4] = {-1, -1, -1, -1};
            MPI_Request r[4];
            for (int i = 0; i < 4; i++) MPI_Irecv(&v[i], 1, MPI_INT, from, 70 + i, MPI_COMM_WORLD, &r[i]);
            CHECK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
            for (int i = 0; i < 4; i++) CHECK(v[i] == 70 + i);
            CHECK(MPI_Wait(&b, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Wait(&b, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            if (rank == from)
                for (int i = 0; i < 4; i++) {
                    int x = 70 + i;
                    MPI_Send(&x, 1, MPI_INT, 0, 70 + i, MPI_COMM_WORLD);
                }
        }
    }
    sync_all();

    /* Left pending at MPI_Finalize's barrier's end: a deferred receive completed by
     * a wait after a later send round. */
    if (rank == 0) {
        int a = -1;
        MPI_Request r;
        MPI_Irecv(&a, 1, MPI_INT, size - 1, 8, MPI_COMM_WORLD, &r);
        sync_all();
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(a == 80);
    } else {
        if (rank == size - 1) {
            int x = 80;
            MPI_Send(&x, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
        }
        sync_all();
    }
    MPI_Finalize();
    return 0;
}
