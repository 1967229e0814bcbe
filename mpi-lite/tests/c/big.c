/* MPI semantics that stress the protocols: a 64 MiB message (rendezvous straight into
 * the user buffer) between rank pairs, zero-size messages, self-sends of every size class,
 * many unexpected messages, non-overtaking across the eager/rendezvous boundary. */
#include "check.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;

    /* 64 MiB each way between pairs (0,1), (2,3), ... */
    size_t n = (64u << 20) / sizeof(uint64_t);
    if (peer < size) {
        uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        CHECK(a && b);
        for (size_t i = 0; i < n; i++) a[i] = ((uint64_t)rank << 56) ^ (i * 0x9e3779b97f4a7c15ull);
        memset(b, 0, n * sizeof *b);
        double t = MPI_Wtime();
        MPI_Status st;
        CHECK(MPI_Sendrecv(a, (int)n, MPI_UINT64_T, peer, 0, b, (int)n, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        t = MPI_Wtime() - t;
        int cnt;
        MPI_Get_count(&st, MPI_UINT64_T, &cnt);
        CHECK((size_t)cnt == n);
        for (size_t i = 0; i < n; i++)
            if (b[i] != (((uint64_t)peer << 56) ^ (i * 0x9e3779b97f4a7c15ull))) CHECK(0);
        if (rank == 0) { printf("big: 64 MiB each way in %.3f s\n", t); fflush(stdout); }
        free(a);
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Zero-size messages, with a NULL buffer too. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    MPI_Sendrecv(NULL, 0, MPI_INT, right, 5, NULL, 0, MPI_INT, left, 5, MPI_COMM_WORLD, &st);
    int cnt;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 0 && st.MPI_SOURCE == left && st.MPI_TAG == 5);

    /* Self-sends across the size classes, posted after the send (unexpected). */
    static char sb[1 << 20], rb[1 << 20];
    int sizes[] = {0, 1, 8, 4000, 70000, 1 << 20};
    MPI_Request rq[6];
    for (int k = 0; k < 6; k++) {
        memset(sb, 'a' + k, sizes[k]);
        /* The send is out (eager) or announced (rendezvous) before the receive is posted;
         * a rendezvous self-send completes only once received, so wait after. */
        MPI_Isend(sb, sizes[k], MPI_CHAR, rank, k, MPI_COMM_WORLD, &rq[k]);
        MPI_Recv(rb, sizeof rb, MPI_CHAR, rank, k, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &cnt);
        CHECK(cnt == sizes[k]);
        CHECK(sizes[k] == 0 || (rb[0] == 'a' + k && rb[sizes[k] - 1] == 'a' + k));
        MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
    }

    /* Non-overtaking across protocols: small, large, small with one tag; receives posted later. */
    if (peer < size) {
        static int32_t big1[100000], r1[100000];
        int s1 = 1, s2 = 2, g1 = 0, g2 = 0;
        for (int i = 0; i < 100000; i++) big1[i] = i + rank;
        MPI_Request q[3];
        MPI_Isend(&s1, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(big1, 100000, MPI_INT, peer, 7, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(&s2, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &q[2]);
        MPI_Barrier(MPI_COMM_WORLD); /* everything is unexpected at the receiver now */
        MPI_Recv(&g1, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* (not ANY_SOURCE: other ranks may already be flooding rank 0, below) */
        MPI_Recv(r1, 100000, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&g2, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
        CHECK(g1 == 1 && g2 == 2 && r1[0] == peer && r1[99999] == 99999 + peer);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 2000 unexpected small messages from everyone to rank 0, then drained by tag (relies on
     * eager buffering, as most MPI programs do: with SKIFMPI_EAGER=0 it deadlocks, correctly). */
    if (rank != 0) {
        for (int i = 0; i < 2000; i++) MPI_Send(&i, 1, MPI_INT, 0, i % 10, MPI_COMM_WORLD);
    } else {
        for (int t = 9; t >= 0; t--)
            for (int s = 1; s < size; s++)
                for (int i = t; i < 2000; i += 10) {
                    int v;
                    MPI_Recv(&v, 1, MPI_INT, s, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    CHECK(v == i);
                }
    }
    MPI_Finalize();
    if (rank == 0) printf("big: %d ranks ok\n", size);
    return 0;
}
