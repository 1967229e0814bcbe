/* Context ids (MPI-3.1 §6.4.2): MPI_Comm_idup is nonblocking — idups of different
 * communicators started in different orders by different ranks, an idup whose partner
 * only starts it after a message this rank sends behind it, idups in flight with other
 * nonblocking collectives, many at once, of an intercommunicator — and freed communicators give their context ids
 * back: more create/free cycles than there are ids (dup, split, idup, intercommunicators).
 * On the old library the first part deadlocked and the cycles failed with MPI_ERR_INTERN
 * after about 32 000 creations. Argument: the number of cycles (default 33 000). */
#include "check.h"
#include <stdlib.h>

/* Every member of c adds its rank + 1: checks that c carries messages. */
static void works(MPI_Comm c) {
    int n, s = 0, one = 1;
    MPI_Comm_size(c, &n);
    CHECK(MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, c) == MPI_SUCCESS);
    CHECK(s == n);
}

int main(int argc, char **argv) {
    /* $MPI_TEST_THREAD_LEVEL: the agreement's paths under MPI_THREAD_MULTIPLE. */
    const char *lv = getenv("MPI_TEST_THREAD_LEVEL");
    int provided;
    MPI_Init_thread(&argc, &argv, lv ? atoi(lv) : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Idups of two communicators, even ranks A then B, odd ranks B then A. */
    MPI_Comm a, b, a2, b2;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Request q[2];
    if (rank % 2 == 0) {
        CHECK(MPI_Comm_idup(a, &a2, &q[0]) == MPI_SUCCESS);
        CHECK(MPI_Comm_idup(b, &b2, &q[1]) == MPI_SUCCESS);
    } else {
        CHECK(MPI_Comm_idup(b, &b2, &q[1]) == MPI_SUCCESS);
        CHECK(MPI_Comm_idup(a, &a2, &q[0]) == MPI_SUCCESS);
    }
    CHECK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    works(a2);
    works(b2);
    int cmp;
    MPI_Comm_compare(a2, b2, &cmp);
    CHECK(cmp == MPI_CONGRUENT);

    /* Rank 0 idups, then sends; rank 1 receives, then idups. */
    if (size > 1) {
        MPI_Comm d;
        MPI_Request r;
        int v = 7;
        if (rank == 0) {
            CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &r) == MPI_SUCCESS);
            CHECK(MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD) == MPI_SUCCESS);
        } else if (rank == 1) {
            v = 0;
            CHECK(MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            CHECK(v == 7);
            CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &r) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &r) == MPI_SUCCESS);
        }
        int done = 0;
        while (!done)
            CHECK(MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        works(d);
        MPI_Comm_free(&d);
    }

    /* Idups in flight with an Ibarrier and an Iallreduce on the same communicators, and
     * eight at once on one. */
    MPI_Comm many[8];
    MPI_Request mq[10];
    int one = 1, sum = 0;
    for (int i = 0; i < 4; i++)
        CHECK(MPI_Comm_idup(a, &many[i], &mq[i]) == MPI_SUCCESS);
    CHECK(MPI_Ibarrier(a, &mq[4]) == MPI_SUCCESS);
    for (int i = 4; i < 8; i++)
        CHECK(MPI_Comm_idup(a, &many[i], &mq[i + 1]) == MPI_SUCCESS);
    CHECK(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, a, &mq[9]) == MPI_SUCCESS);
    CHECK(MPI_Waitall(10, mq, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    CHECK(sum == size);
    for (int i = 0; i < 8; i++) {
        works(many[i]);
        for (int j = 0; j < i; j++) {
            MPI_Comm_compare(many[i], many[j], &cmp);
            CHECK(cmp == MPI_CONGRUENT);
        }
    }
    /* Messages on one duplicate never reach another. */
    if (size > 1) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size, got[8];
        MPI_Request rq[16];
        for (int i = 0; i < 8; i++) {
            CHECK(MPI_Irecv(&got[i], 1, MPI_INT, from, 0, many[i], &rq[i]) == MPI_SUCCESS);
        }
        for (int i = 7; i >= 0; i--) {
            int v = i;
            CHECK(MPI_Send(&v, 1, MPI_INT, to, 0, many[i]) == MPI_SUCCESS);
        }
        CHECK(MPI_Waitall(8, rq, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
        for (int i = 0; i < 8; i++)
            CHECK(got[i] == i);
    }
    for (int i = 0; i < 8; i++)
        MPI_Comm_free(&many[i]);

    /* More create/free cycles than there are context ids (32 766). */
    int cycles = argc > 1 ? atoi(argv[1]) : 33000;
    for (int i = 0; i < cycles; i++) {
        MPI_Comm c;
        int rc;
        switch (i % 4) {
        case 0:
        case 1:
            rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
            break;
        case 2:
            rc = MPI_Comm_split(MPI_COMM_WORLD, rank % 2, 0, &c);
            break;
        default: {
            MPI_Request r;
            rc = MPI_Comm_idup(a, &c, &r);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        }
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len;
            MPI_Error_string(rc, msg, &len);
            fprintf(stderr, "rank %d: creation %d failed: %s\n", rank, i, msg);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (i % 8192 == 0)
            works(c);
        MPI_Comm_free(&c);
    }

    /* Intercommunicators (even/odd), merged, freed, a few hundred times. */
    if (size > 1) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        for (int i = 0; i < 300; i++) {
            MPI_Comm ic, m;
            CHECK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 9, &ic) ==
                  MPI_SUCCESS);
            CHECK(MPI_Intercomm_merge(ic, rank % 2, &m) == MPI_SUCCESS);
            if (i % 100 == 0)
                works(m);
            MPI_Comm_free(&m);
            MPI_Comm_free(&ic);
        }
        /* Idup of an intercommunicator: the non-leaders idup, then send to the remote
         * leader, who only idups after receiving from all of them. */
        MPI_Comm ic, nd;
        MPI_Request r;
        int lr, rs, v = 1, tot = 0;
        CHECK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 9, &ic) ==
              MPI_SUCCESS);
        MPI_Comm_rank(ic, &lr);
        MPI_Comm_remote_size(ic, &rs);
        if (lr == 0) {
            for (int i = 1; i < rs; i++)
                CHECK(MPI_Recv(&v, 1, MPI_INT, i, 0, ic, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            CHECK(MPI_Comm_idup(ic, &nd, &r) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Comm_idup(ic, &nd, &r) == MPI_SUCCESS);
            CHECK(MPI_Ssend(&v, 1, MPI_INT, 0, 0, ic) == MPI_SUCCESS);
        }
        CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        /* Each side sums the other's ones. */
        CHECK(MPI_Allreduce(&v, &tot, 1, MPI_INT, MPI_SUM, nd) == MPI_SUCCESS);
        CHECK(tot == rs);
        MPI_Comm_free(&nd);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&half);
    }

    MPI_Comm_free(&a2);
    MPI_Comm_free(&b2);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Finalize();
    return 0;
}
