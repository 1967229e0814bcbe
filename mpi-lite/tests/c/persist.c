/* Persistent requests (MPI-3.1 §3.9): Send/Ssend/Rsend/Bsend/Recv_init, Start, Startall;
 * a request is reusable after completion, inactive ones behave as null requests in the
 * completion calls, Request_free of an inactive one, Start of an active one is an error. */
#include "check.h"
#include <stdlib.h>

#define BIG 50000 /* ints: rendezvous */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Status st;

    /* A ring, 100 rounds, small and large, the data changing between starts. */
    int sv = 0, rv = -1;
    int *sb = malloc(BIG * sizeof(int)), *rb = malloc(BIG * sizeof(int));
    MPI_Request r[4];
    CHECK(MPI_Send_init(&sv, 1, MPI_INT, to, 5, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS);
    CHECK(MPI_Recv_init(&rv, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS);
    CHECK(MPI_Send_init(sb, BIG, MPI_INT, to, 6, MPI_COMM_WORLD, &r[2]) == MPI_SUCCESS);
    CHECK(MPI_Recv_init(rb, BIG, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &r[3]) == MPI_SUCCESS);
    MPI_Request keep[4] = {r[0], r[1], r[2], r[3]};
    for (int it = 0; it < 100; it++) {
        sv = rank * 1000 + it;
        sb[0] = sv; sb[BIG - 1] = -sv;
        CHECK(MPI_Startall(4, r) == MPI_SUCCESS);
        MPI_Status sts[4];
        CHECK(MPI_Waitall(4, r, sts) == MPI_SUCCESS);
        CHECK(rv == from * 1000 + it);
        CHECK(rb[0] == rv && rb[BIG - 1] == -rv);
        CHECK(sts[1].MPI_SOURCE == from && sts[1].MPI_TAG == 5 && sts[3].MPI_SOURCE == from);
        for (int i = 0; i < 4; i++) CHECK(r[i] == keep[i]); /* handles stay the program's */
    }

    /* Inactive requests: Wait returns at once with the empty status; Test says done. */
    st.MPI_SOURCE = 123;
    CHECK(MPI_Wait(&r[1], &st) == MPI_SUCCESS && r[1] == keep[1]);
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
    int flag = 0;
    CHECK(MPI_Test(&r[1], &flag, &st) == MPI_SUCCESS && flag == 1);
    CHECK(MPI_Request_get_status(r[1], &flag, &st) == MPI_SUCCESS && flag == 1);
    /* Waitany with every request inactive: MPI_UNDEFINED. */
    int idx = 0;
    CHECK(MPI_Waitany(4, r, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED);

    /* Start of an active request is an error; Test polls a persistent request. */
    CHECK(MPI_Start(&r[1]) == MPI_SUCCESS);
    CHECK(MPI_Start(&r[1]) == MPI_ERR_REQUEST);
    sv = 7;
    CHECK(MPI_Start(&r[0]) == MPI_SUCCESS);
    flag = 0;
    while (!flag) CHECK(MPI_Test(&r[1], &flag, &st) == MPI_SUCCESS);
    CHECK(rv == 7 && r[1] == keep[1]);
    /* Waitany finds the active one among inactive ones. */
    CHECK(MPI_Waitany(4, r, &idx, &st) == MPI_SUCCESS && idx == 0);

    /* Free: inactive ones at once. */
    for (int i = 0; i < 4; i++) {
        CHECK(MPI_Request_free(&r[i]) == MPI_SUCCESS && r[i] == MPI_REQUEST_NULL);
    }
    CHECK(MPI_Start(&keep[0]) == MPI_ERR_REQUEST); /* freed */

    /* The other modes. Ready mode needs the receive posted: a barrier orders it. */
    int a = rank, b = -1;
    MPI_Request q[2];
    MPI_Recv_init(&b, 1, MPI_INT, from, 8, MPI_COMM_WORLD, &q[1]);
    for (int mode = 0; mode < 3; mode++) {
        if (mode == 0) CHECK(MPI_Ssend_init(&a, 1, MPI_INT, to, 8, MPI_COMM_WORLD, &q[0]) == MPI_SUCCESS);
        if (mode == 1) CHECK(MPI_Rsend_init(&a, 1, MPI_INT, to, 8, MPI_COMM_WORLD, &q[0]) == MPI_SUCCESS);
        if (mode == 2) {
            static char bbuf[4096];
            MPI_Buffer_attach(bbuf, sizeof bbuf);
            CHECK(MPI_Bsend_init(&a, 1, MPI_INT, to, 8, MPI_COMM_WORLD, &q[0]) == MPI_SUCCESS);
        }
        for (int it = 0; it < 3; it++) {
            a = rank + 10 * mode + it;
            b = -1;
            MPI_Start(&q[1]);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Start(&q[0]);
            CHECK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
            CHECK(b == from + 10 * mode + it);
        }
        MPI_Request_free(&q[0]);
        if (mode == 2) {
            void *p;
            int n;
            MPI_Buffer_detach(&p, &n);
        }
    }
    MPI_Request_free(&q[1]);

    /* The request keeps its type and communicator: both handles freed before the starts
     * (MPI-3.1 §4.1.9, §6.4.3). */
    {
        MPI_Datatype pair;
        MPI_Comm dup;
        MPI_Type_vector(2, 1, 2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        int out[4] = {rank, -1, rank + 100, -1}, in[4] = {-5, -5, -5, -5};
        MPI_Request pq[2];
        CHECK(MPI_Send_init(out, 1, pair, to, 7, dup, &pq[0]) == MPI_SUCCESS);
        CHECK(MPI_Recv_init(in, 1, pair, from, 7, dup, &pq[1]) == MPI_SUCCESS);
        MPI_Type_free(&pair);
        MPI_Comm_free(&dup);
        for (int it = 0; it < 2; it++) {
            in[0] = in[2] = -5;
            CHECK(MPI_Startall(2, pq) == MPI_SUCCESS);
            CHECK(MPI_Waitall(2, pq, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
            CHECK(in[0] == from && in[1] == -5 && in[2] == from + 100 && in[3] == -5);
        }
        MPI_Request_free(&pq[0]);
        MPI_Request_free(&pq[1]);
    }

    /* Send to MPI_PROC_NULL. */
    MPI_Request pn;
    CHECK(MPI_Send_init(&a, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &pn) == MPI_SUCCESS);
    CHECK(MPI_Start(&pn) == MPI_SUCCESS && MPI_Wait(&pn, &st) == MPI_SUCCESS);
    MPI_Request_free(&pn);
    /* Bad arguments at init. */
    CHECK(MPI_Send_init(&a, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &pn) == MPI_ERR_RANK);

    MPI_Barrier(MPI_COMM_WORLD);
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
