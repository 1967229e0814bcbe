/* Nonblocking collectives (MPI-3.1 §5.12) and MPI_Alltoallw: each checked against the
 * values the blocking call gives; several in flight at once, completed in another order;
 * progress while the program waits in a point-to-point call; MPI_IN_PLACE. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

#define N 5

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int n = size, r = rank;
    MPI_Request q[20];
    int nq = 0;

    /* Many at once: barrier, bcast, allreduce (+ in place), reduce, scan, exscan. */
    int bc[N], ar[N], ar_in[N], red[N], scan[N], exs[N], mine[N];
    for (int i = 0; i < N; i++) {
        bc[i] = r == 1 % n ? 100 + i : -1;
        mine[i] = r * 10 + i;
        ar_in[i] = mine[i];
        exs[i] = -7;
    }
    CHECK(MPI_Ibarrier(comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Ibcast(bc, N, MPI_INT, 1 % n, comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Iallreduce(mine, ar, N, MPI_INT, MPI_SUM, comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Iallreduce(MPI_IN_PLACE, ar_in, N, MPI_INT, MPI_MAX, comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Ireduce(mine, red, N, MPI_INT, MPI_SUM, n - 1, comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Iscan(mine, scan, N, MPI_INT, MPI_SUM, comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Iexscan(mine, exs, N, MPI_INT, MPI_SUM, comm, &q[nq++]) == MPI_SUCCESS);
    /* Completed last request first. */
    for (int k = nq - 1; k >= 0; k--) CHECK(MPI_Wait(&q[k], MPI_STATUS_IGNORE) == MPI_SUCCESS);
    for (int i = 0; i < N; i++) {
        int sum = 0, pre = 0;
        for (int j = 0; j < n; j++) sum += j * 10 + i;
        for (int j = 0; j <= r; j++) pre += j * 10 + i;
        CHECK(bc[i] == 100 + i);
        CHECK(ar[i] == sum);
        CHECK(ar_in[i] == (n - 1) * 10 + i);
        if (r == n - 1) CHECK(red[i] == sum);
        CHECK(scan[i] == pre);
        if (r > 0) CHECK(exs[i] == pre - mine[i]);
        else CHECK(exs[i] == -7);
    }

    /* Data movement: gather(v), scatter(v), allgather(v), alltoall(v,w). */
    int *all = malloc(sizeof(int) * n * N), *all2 = malloc(sizeof(int) * n * N);
    int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n);
    int *wd = malloc(sizeof(int) * n);
    MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * n);
    int piece[N];
    nq = 0;
    memset(all, -1, sizeof(int) * n * N);
    CHECK(MPI_Igather(mine, N, MPI_INT, all, N, MPI_INT, 0, comm, &q[nq++]) == MPI_SUCCESS);
    CHECK(MPI_Waitall(nq, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    if (r == 0) for (int j = 0; j < n; j++) for (int i = 0; i < N; i++) CHECK(all[j * N + i] == j * 10 + i);
    /* gatherv: member j sends j+1 ints, placed in reverse order */
    for (int j = 0, off = 0; j < n; j++) { cnt[j] = j + 1; off += j + 1; dsp[j] = n * N - off; }
    memset(all, -1, sizeof(int) * n * N);
    CHECK(MPI_Igatherv(mine, r + 1, MPI_INT, all, cnt, dsp, MPI_INT, n - 1, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    if (r == n - 1) for (int j = 0; j < n; j++) for (int i = 0; i <= j; i++) CHECK(all[dsp[j] + i] == j * 10 + i);
    /* scatter / scatterv from the gathered data */
    for (int j = 0; j < n * N; j++) all2[j] = 1000 + j;
    CHECK(MPI_Iscatter(all2, N, MPI_INT, piece, N, MPI_INT, 0, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) CHECK(piece[i] == 1000 + r * N + i);
    memset(piece, -1, sizeof piece);
    CHECK(MPI_Iscatterv(all2, cnt, dsp, MPI_INT, piece, r + 1, MPI_INT, 0, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int i = 0; i <= r; i++) CHECK(piece[i] == 1000 + dsp[r] + i);
    /* allgather, allgatherv, in place too */
    CHECK(MPI_Iallgather(mine, N, MPI_INT, all, N, MPI_INT, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < n * N; j++) CHECK(all[j] == (j / N) * 10 + j % N);
    memset(all, -1, sizeof(int) * n * N);
    for (int i = 0; i <= r; i++) all[dsp[r] + i] = mine[i];
    CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_INT, all, cnt, dsp, MPI_INT, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < n; j++) for (int i = 0; i <= j; i++) CHECK(all[dsp[j] + i] == j * 10 + i);
    /* alltoall: block j of rank r holds r*100+j */
    for (int j = 0; j < n * N; j++) all[j] = r * 100 + j / N;
    CHECK(MPI_Ialltoall(all, N, MPI_INT, all2, N, MPI_INT, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < n * N; j++) CHECK(all2[j] == (j / N) * 100 + r);
    /* alltoallv: r sends j+1 ints to j */
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n), *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n);
    for (int j = 0; j < n; j++) { sc[j] = j + 1; sd[j] = j * N; rc[j] = r + 1; rd[j] = j * N; }
    for (int j = 0; j < n * N; j++) all[j] = r * 100 + j;
    memset(all2, -1, sizeof(int) * n * N);
    CHECK(MPI_Ialltoallv(all, sc, sd, MPI_INT, all2, rc, rd, MPI_INT, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < n; j++) for (int i = 0; i <= r; i++) CHECK(all2[j * N + i] == j * 100 + r * N + i);
    /* alltoallw (blocking and nonblocking): byte displacements, a type per block */
    for (int j = 0; j < n; j++) { wd[j] = j * N * (int)sizeof(int); wt[j] = MPI_INT; sc[j] = N; }
    for (int j = 0; j < n * N; j++) all[j] = r * 100 + j / N;
    memset(all2, -1, sizeof(int) * n * N);
    CHECK(MPI_Alltoallw(all, sc, wd, wt, all2, sc, wd, wt, comm) == MPI_SUCCESS);
    for (int j = 0; j < n * N; j++) CHECK(all2[j] == (j / N) * 100 + r);
    memset(all2, -1, sizeof(int) * n * N);
    CHECK(MPI_Ialltoallw(all, sc, wd, wt, all2, sc, wd, wt, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int j = 0; j < n * N; j++) CHECK(all2[j] == (j / N) * 100 + r);

    /* reduce_scatter(_block) */
    int *vec = malloc(sizeof(int) * n * N), out[N];
    for (int j = 0; j < n * N; j++) vec[j] = r + j;
    CHECK(MPI_Ireduce_scatter_block(vec, out, N, MPI_INT, MPI_SUM, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) CHECK(out[i] == n * (r * N + i) + n * (n - 1) / 2);
    for (int j = 0; j < n; j++) cnt[j] = 1;
    CHECK(MPI_Ireduce_scatter(vec, out, cnt, MPI_INT, MPI_MAX, comm, &q[0]) == MPI_SUCCESS);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    CHECK(out[0] == (n - 1) + r);

    /* Progress while waiting elsewhere: rank 0 sends to 1 only after its Ibarrier has
     * started; rank 1 waits in MPI_Recv while its own Ibarrier must still serve others. */
    if (n >= 2) {
        MPI_Request b;
        int x = 0;
        MPI_Ibarrier(comm, &b);
        if (r == 0) MPI_Send(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        if (r == 1) MPI_Recv(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int flag = 0;
        while (!flag) MPI_Test(&b, &flag, MPI_STATUS_IGNORE);
    }
    /* A stream of them, interleaved with blocking collectives. */
    for (int it = 0; it < 200; it++) {
        double v = r + it, s = 0;
        MPI_Request a;
        MPI_Iallreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, comm, &a);
        MPI_Barrier(comm);
        MPI_Wait(&a, MPI_STATUS_IGNORE);
        CHECK(s == n * it + n * (n - 1) / 2.0);
    }

    /* Pair types with padding (MPI_DOUBLE_INT: 16 bytes in memory, 12 packed) reduce in
     * their C layout, as the blocking calls do (the schedules reduced the packed bytes:
     * every element after the first was wrong). */
    {
        struct { double v; int i; } in[3], nb[3], bl[3], sc_nb[3], sc_bl[3], rs_nb, rs_bl;
        struct { short v; int i; } sin[2], snb[2], sbl[2];
        struct { double v; int i; } rsin[16];
        for (int k = 0; k < 3; k++) { in[k].v = (r == k % n) ? 10.0 + k : r; in[k].i = r * 10 + k; }
        for (int k = 0; k < 2; k++) { sin[k].v = (short)(r * (k ? -1 : 1)); sin[k].i = r; }
        for (int k = 0; k < n; k++) { rsin[k].v = (double)((r + k) % n); rsin[k].i = r; }
        MPI_Request pq[5];
        MPI_Iallreduce(in, nb, 3, MPI_DOUBLE_INT, MPI_MAXLOC, comm, &pq[0]);
        MPI_Iscan(in, sc_nb, 3, MPI_DOUBLE_INT, MPI_MINLOC, comm, &pq[1]);
        MPI_Ireduce(sin, snb, 2, MPI_SHORT_INT, MPI_MAXLOC, n - 1, comm, &pq[2]);
        MPI_Ireduce_scatter_block(rsin, &rs_nb, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm, &pq[3]);
        MPI_Waitall(4, pq, MPI_STATUSES_IGNORE);
        MPI_Allreduce(in, bl, 3, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
        MPI_Scan(in, sc_bl, 3, MPI_DOUBLE_INT, MPI_MINLOC, comm);
        MPI_Reduce(sin, sbl, 2, MPI_SHORT_INT, MPI_MAXLOC, n - 1, comm);
        MPI_Reduce_scatter_block(rsin, &rs_bl, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
        for (int k = 0; k < 3; k++) {
            CHECK(nb[k].v == bl[k].v && nb[k].i == bl[k].i);
            CHECK(bl[k].v == 10.0 + k && bl[k].i == (k % n) * 10 + k);
            CHECK(sc_nb[k].v == sc_bl[k].v && sc_nb[k].i == sc_bl[k].i);
        }
        if (r == n - 1)
            for (int k = 0; k < 2; k++) CHECK(snb[k].v == sbl[k].v && snb[k].i == sbl[k].i);
        CHECK(rs_nb.v == rs_bl.v && rs_nb.i == rs_bl.i && rs_bl.v == n - 1);
    }

    /* Finished schedules are reused by the next calls (their storage kept, issue 17):
     * back-to-back calls whose scratch sizes change, two in flight, each result checked. */
    for (int it = 0; it < 40; it++) {
        int m = 1 + (it * 7) % (4 * N), big[4 * N], out[4 * N];
        for (int i = 0; i < m; i++) big[i] = r + it + i;
        MPI_Request p2[2];
        CHECK(MPI_Iallreduce(big, out, m, MPI_INT, MPI_SUM, comm, &p2[0]) == MPI_SUCCESS);
        CHECK(MPI_Ibarrier(comm, &p2[1]) == MPI_SUCCESS);
        CHECK(MPI_Wait(&p2[it % 2], MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(MPI_Wait(&p2[1 - it % 2], MPI_STATUS_IGNORE) == MPI_SUCCESS);
        for (int i = 0; i < m; i++) CHECK(out[i] == n * (n - 1) / 2 + n * (it + i));
    }

    free(all); free(all2); free(cnt); free(dsp); free(wd); free(wt); free(sc); free(sd);
    free(rc); free(rd); free(vec);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
