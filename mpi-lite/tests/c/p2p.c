/* Point-to-point over mpi-lite from C: blocking/nonblocking in every mode, wildcards,
 * statuses, Get_count, probes, Sendrecv(_replace), Bsend, completion calls.
 * Any rank count >= 2. Exits non-zero on any wrong value. The thread level requested is
 * $MPI_TEST_THREAD_LEVEL (default MPI_THREAD_SERIALIZED): the library's paths differ below
 * and at MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "p2p: rank %d: %s:%d: CHECK(%s) failed\n", rank, __FILE__, __LINE__, #c); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

static int rank, size;

int main(int argc, char **argv) {
    int provided;
    const char *lv = getenv("MPI_TEST_THREAD_LEVEL");
    int level = lv ? atoi(lv) : MPI_THREAD_SERIALIZED;
    CHECK(MPI_Init_thread(&argc, &argv, level, &provided) == MPI_SUCCESS);
    CHECK(provided == level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Ring of Sendrecv. */
    int out = rank * 10, in = -1;
    MPI_Status st;
    CHECK(MPI_Sendrecv(&out, 1, MPI_INT, right, 3, &in, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
    CHECK(in == left * 10 && st.MPI_SOURCE == left && st.MPI_TAG == 3);
    int cnt;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 1);
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    CHECK(cnt == MPI_UNDEFINED);

    /* Sendrecv_replace around the ring. */
    double v[3] = {rank, rank + 0.5, -rank};
    CHECK(MPI_Sendrecv_replace(v, 3, MPI_DOUBLE, right, 4, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(v[0] == left && v[1] == left + 0.5 && v[2] == -left);

    /* Everyone sends to 0 in all modes; 0 receives with wildcards and checks order. */
    if (rank != 0) {
        int bufsize = 4 * (sizeof(long) + MPI_BSEND_OVERHEAD);
        void *bbuf = malloc(bufsize);
        MPI_Buffer_attach(bbuf, bufsize);
        long a = rank * 100 + 1, b = rank * 100 + 2, c = rank * 100 + 3, d = rank * 100 + 4;
        MPI_Send(&a, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD);
        MPI_Bsend(&b, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD);
        MPI_Ssend(&c, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD);
        MPI_Rsend(&d, 1, MPI_LONG, 0, 2, MPI_COMM_WORLD);
        void *back; int bsize;
        MPI_Buffer_detach(&back, &bsize);
        CHECK(back == bbuf && bsize == bufsize);
        free(bbuf);
    } else {
        long next[64] = {0};
        for (int i = 0; i < 3 * (size - 1); i++) {
            long x;
            MPI_Recv(&x, 1, MPI_LONG, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
            CHECK(x / 100 == st.MPI_SOURCE && st.MPI_TAG == 1);
            CHECK(x % 100 == ++next[st.MPI_SOURCE]);
        }
        for (int i = 1; i < size; i++) {
            long x;
            MPI_Probe(i, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE == i && st.MPI_TAG == 2);
            MPI_Get_count(&st, MPI_LONG, &cnt);
            CHECK(cnt == 1);
            MPI_Recv(&x, 1, MPI_LONG, i, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(x == i * 100 + 4);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Nonblocking: 8 messages each way with the neighbours, Waitall / Waitany / Testsome. */
    enum { N = 8 };
    int sbuf[N][16], rbuf[N][16];
    MPI_Request rq[2 * N];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 16; k++) sbuf[i][k] = rank * 1000 + i * 16 + k;
        MPI_Irecv(rbuf[i], 16, MPI_INT, left, i, MPI_COMM_WORLD, &rq[i]);
    }
    for (int i = 0; i < N; i++)
        (i % 2 ? MPI_Issend : MPI_Isend)(sbuf[i], 16, MPI_INT, right, i, MPI_COMM_WORLD, &rq[N + i]);
    int done = 0, idx, flag;
    while (done < N) {
        CHECK(MPI_Waitany(N, rq, &idx, &st) == MPI_SUCCESS);
        CHECK(idx >= 0 && idx < N && rq[idx] == MPI_REQUEST_NULL && st.MPI_TAG == idx);
        for (int k = 0; k < 16; k++) CHECK(rbuf[idx][k] == left * 1000 + idx * 16 + k);
        done++;
    }
    CHECK(MPI_Waitany(N, rq, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED);
    MPI_Status sts[N];
    CHECK(MPI_Waitall(N, rq + N, sts) == MPI_SUCCESS);
    for (int i = 0; i < N; i++) CHECK(rq[N + i] == MPI_REQUEST_NULL);

    /* Test/Testall/Testsome with a message that comes later. */
    MPI_Request r;
    int x = -1;
    MPI_Irecv(&x, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &r);
    MPI_Test(&r, &flag, &st);
    MPI_Barrier(MPI_COMM_WORLD);      /* nobody has sent tag 77 yet */
    CHECK(!flag);
    int y = rank;
    MPI_Send(&y, 1, MPI_INT, right, 77, MPI_COMM_WORLD);
    int outc, ind[1];
    do {
        CHECK(MPI_Testsome(1, &r, &outc, ind, sts) == MPI_SUCCESS);
    } while (outc == 0);
    CHECK(outc == 1 && ind[0] == 0 && x == left && sts[0].MPI_SOURCE == left);
    CHECK(MPI_Testall(1, &r, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS && flag);

    /* Iprobe sees nothing (between barriers: nobody sends meanwhile); a cancelled
     * receive; Request_free of a send. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS);
    if (flag) fprintf(stderr, "rank %d: unexpected message from %d tag %d\n", rank, st.MPI_SOURCE, st.MPI_TAG);
    CHECK(!flag);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag);
    MPI_Isend(&y, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
    CHECK(r == MPI_REQUEST_NULL);
    MPI_Recv(&x, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(x == left);
    /* Send requests (eager ones complete as they start and share one handle value):
     * every completion call works on them, a cancel of a matched send has no effect. */
    MPI_Request two[2];
    MPI_Isend(&y, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &two[0]);
    MPI_Isend(&y, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &two[1]);
    CHECK(two[0] != MPI_REQUEST_NULL && two[1] != MPI_REQUEST_NULL);
    CHECK(MPI_Request_get_status(two[0], &flag, &st) == MPI_SUCCESS);
    CHECK(two[0] != MPI_REQUEST_NULL);
    MPI_Recv(&x, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&x, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(x == left);
    MPI_Barrier(MPI_COMM_WORLD); /* every send matched */
    CHECK(MPI_Cancel(&two[0]) == MPI_SUCCESS);
    CHECK(MPI_Wait(&two[0], &st) == MPI_SUCCESS && two[0] == MPI_REQUEST_NULL);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag);
    do {
        CHECK(MPI_Test(&two[1], &flag, &st) == MPI_SUCCESS);
    } while (!flag);
    CHECK(two[1] == MPI_REQUEST_NULL);

    /* A pending send that nobody will receive — rendezvous, synchronous — is taken back by
     * MPI_Cancel: the wait returns, cancelled (§3.8.4: whatever the other side does). A
     * matched one completes normally and its receiver gets the data. */
    {
        enum { BIGN = 200000 };
        int *bigs = malloc(BIGN * sizeof(int)), *bigr = malloc(BIGN * sizeof(int));
        for (int i = 0; i < BIGN; i++) bigs[i] = rank + i;
        MPI_Request c[3];
        MPI_Isend(bigs, BIGN, MPI_INT, right, 901, MPI_COMM_WORLD, &c[0]);
        MPI_Issend(&y, 1, MPI_INT, right, 902, MPI_COMM_WORLD, &c[1]);
        MPI_Isend(bigs, BIGN, MPI_INT, right, 903, MPI_COMM_WORLD, &c[2]);
        MPI_Recv(bigr, BIGN, MPI_INT, left, 903, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(bigr[BIGN - 1] == left + BIGN - 1);
        MPI_Barrier(MPI_COMM_WORLD); /* every 903 matched before the cancels */
        for (int i = 0; i < 3; i++) CHECK(MPI_Cancel(&c[i]) == MPI_SUCCESS);
        MPI_Status cs[3];
        CHECK(MPI_Waitall(3, c, cs) == MPI_SUCCESS);
        for (int i = 0; i < 3; i++) {
            MPI_Test_cancelled(&cs[i], &flag);
            CHECK(flag == (i < 2));
        }
        /* Nothing of the cancelled ones is left to match. */
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Iprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && !flag);
        MPI_Barrier(MPI_COMM_WORLD);
        /* A buffered send completes locally (§3.4), rendezvous-sized too: Bsend returns
         * before its receive is posted (after the barrier), and the data arrives intact
         * though the program's buffer changes at once. */
        int bsz = BIGN * sizeof(int) + MPI_BSEND_OVERHEAD;
        void *bb = malloc(bsz);
        MPI_Buffer_attach(bb, bsz);
        CHECK(MPI_Bsend(bigs, BIGN, MPI_INT, right, 904, MPI_COMM_WORLD) == MPI_SUCCESS);
        for (int i = 0; i < BIGN; i++) bigs[i] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Recv(bigr, BIGN, MPI_INT, left, 904, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(bigr[0] == left && bigr[BIGN - 1] == left + BIGN - 1);
        void *back;
        int backsz;
        MPI_Buffer_detach(&back, &backsz);
        CHECK(back == bb && backsz == bsz);
        free(bb);
        free(bigs);
        free(bigr);
    }

    /* PROC_NULL */
    MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 0);
    CHECK(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS);

    CHECK(MPI_Finalize() == MPI_SUCCESS);
    if (rank == 0) printf("p2p: %d ranks ok\n", size);
    return 0;
}
