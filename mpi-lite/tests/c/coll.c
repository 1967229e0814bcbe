/* Collectives over mpi-lite (algorithms of skifch::coll): every call with checked values,
 * MPI_IN_PLACE, all predefined operations incl. MINLOC/MAXLOC on pair types, the
 * v-variants with uneven counts, roots other than 0, a large broadcast/allreduce (the
 * long-message algorithms), a noncontiguous receive type. Any rank count >= 1. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = size, r = rank, root = n - 1;

    MPI_Barrier(MPI_COMM_WORLD);

    /* Bcast, small and large (scatter+allgather path). */
    int v[4] = {0, 0, 0, 0};
    if (r == root) for (int i = 0; i < 4; i++) v[i] = 40 + i;
    MPI_Bcast(v, 4, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) CHECK(v[i] == 40 + i);
    int big = 1 << 18;
    double *bd = malloc(big * sizeof *bd);
    for (int i = 0; i < big; i++) bd[i] = r == 0 ? i * 0.5 : -1;
    MPI_Bcast(bd, big, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < big; i++) if (bd[i] != i * 0.5) CHECK(0);

    /* Reduce / Allreduce with every arithmetic, logical and bitwise op. */
    long s, x = r + 1;
    MPI_Reduce(&x, &s, 1, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD);
    if (r == root) CHECK(s == (long)n * (n + 1) / 2);
    MPI_Allreduce(&x, &s, 1, MPI_LONG, MPI_PROD, MPI_COMM_WORLD);
    long f = 1;
    for (int i = 1; i <= n; i++) f *= i;
    CHECK(s == f);
    MPI_Allreduce(&x, &s, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(s == n);
    MPI_Allreduce(&x, &s, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    CHECK(s == 1);
    int t = r % 2, b;
    MPI_Allreduce(&t, &b, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    CHECK(b == (n == 1 ? 0 : 0));
    MPI_Allreduce(&t, &b, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    CHECK(b == (n > 1));
    MPI_Allreduce(&t, &b, 1, MPI_INT, MPI_LXOR, MPI_COMM_WORLD);
    CHECK(b == (n / 2) % 2);
    unsigned bits = 1u << r, ub;
    MPI_Allreduce(&bits, &ub, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD);
    CHECK(ub == (1u << n) - 1);
    MPI_Allreduce(&bits, &ub, 1, MPI_UNSIGNED, MPI_BXOR, MPI_COMM_WORLD);
    CHECK(ub == (1u << n) - 1);
    unsigned all = 0xff | bits;
    MPI_Allreduce(&all, &ub, 1, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
    CHECK(ub == (n == 1 ? 0xffu | 1u : 0xffu));
    float fl = r + 0.5f, fs;
    MPI_Allreduce(&fl, &fs, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(fs == n * n / 2.0f);

    /* MINLOC / MAXLOC on MPI_DOUBLE_INT and MPI_2INT. */
    struct { double v; int i; } dv = {(double)((r * 7) % n), r}, dmin, dmax;
    MPI_Allreduce(&dv, &dmin, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    MPI_Allreduce(&dv, &dmax, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(dmin.v == 0 && dmin.i == 0);
    CHECK(dmax.v == n - 1);
    struct { int v; int i; } iv = {r / 2, r}, imax;
    MPI_Allreduce(&iv, &imax, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(imax.v == (n - 1) / 2 && imax.i == ((n - 1) / 2) * 2);

    /* In place, and a long vector (ring allreduce). */
    int m = 10000;
    int *av = malloc(m * sizeof *av);
    for (int i = 0; i < m; i++) av[i] = i + r;
    MPI_Allreduce(MPI_IN_PLACE, av, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < m; i++) if (av[i] != n * i + n * (n - 1) / 2) CHECK(0);
    long in = r;
    if (r == 0) {
        MPI_Reduce(MPI_IN_PLACE, &in, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        CHECK(in == (long)n * (n - 1) / 2);
    } else {
        MPI_Reduce(&in, NULL, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    int rl[3] = {1, 2, 3}, rio[3] = {10, 20, 30};
    MPI_Reduce_local(rl, rio, 3, MPI_INT, MPI_SUM);
    CHECK(rio[0] == 11 && rio[2] == 33);

    /* Gather / Scatter / Allgather / Alltoall. */
    int *g = malloc(4 * n * sizeof *g);
    int mine2[2] = {r, -r};
    MPI_Gather(mine2, 2, MPI_INT, g, 2, MPI_INT, root, MPI_COMM_WORLD);
    if (r == root) for (int i = 0; i < n; i++) CHECK(g[2 * i] == i && g[2 * i + 1] == -i);
    if (r == root) for (int i = 0; i < n; i++) { g[2 * i] = 100 + i; g[2 * i + 1] = 200 + i; }
    int got2[2];
    MPI_Scatter(g, 2, MPI_INT, got2, 2, MPI_INT, root, MPI_COMM_WORLD);
    CHECK(got2[0] == 100 + r && got2[1] == 200 + r);
    MPI_Allgather(&r, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(g[i] == i);
    for (int i = 0; i < n; i++) g[i] = -1;
    g[r] = r * 3;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(g[i] == i * 3);
    int *sa = malloc(n * sizeof *sa), *ra = malloc(n * sizeof *ra);
    for (int i = 0; i < n; i++) sa[i] = r * 100 + i;
    MPI_Alltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(ra[i] == i * 100 + r);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sa, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(sa[i] == i * 100 + r);

    /* v-variants: rank i contributes i+1 ints. */
    int *cnt = malloc(n * sizeof *cnt), *dsp = malloc(n * sizeof *dsp), tot = 0;
    for (int i = 0; i < n; i++) { cnt[i] = i + 1; dsp[i] = tot + i; tot += i + 1; } /* a gap of 1 between blocks */
    int span = dsp[n - 1] + cnt[n - 1];
    int *gv = malloc(span * sizeof *gv), mine[64];
    for (int k = 0; k <= r; k++) mine[k] = r * 10 + k;
    for (int i = 0; i < span; i++) gv[i] = -5;
    MPI_Gatherv(mine, r + 1, MPI_INT, gv, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
    if (r == 0) {
        for (int i = 0; i < n; i++) for (int k = 0; k <= i; k++) CHECK(gv[dsp[i] + k] == i * 10 + k);
        for (int i = 1; i < n; i++) CHECK(gv[dsp[i] - 1] == -5); /* gaps untouched */
    }
    for (int i = 0; i < span; i++) gv[i] = -5;
    MPI_Allgatherv(mine, r + 1, MPI_INT, gv, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) for (int k = 0; k <= i; k++) CHECK(gv[dsp[i] + k] == i * 10 + k);
    /* Every block at displacement 0 (erroneous: places written twice, §5.7; MPICH's own
     * allgatherv4 does it): no crash, and the blocks' common first element is some
     * member's. */
    {
        int *zc = malloc(n * sizeof *zc), *zd = calloc(n, sizeof *zd), zg[64];
        for (int i = 0; i < n; i++) zc[i] = i + 1;
        CHECK(MPI_Allgatherv(mine, r + 1, MPI_INT, zg, zc, zd, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(zg[0] % 10 == 0 && zg[0] / 10 < n);
        free(zc);
        free(zd);
    }
    int sv[64];
    MPI_Scatterv(gv, cnt, dsp, MPI_INT, sv, r + 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int k = 0; k <= r; k++) CHECK(sv[k] == r * 10 + k);
    /* Alltoallv: rank r sends j+1 ints to rank j, all valued r*1000+j. */
    int *sc = malloc(n * sizeof *sc), *sd = malloc(n * sizeof *sd), *rc = malloc(n * sizeof *rc), *rd = malloc(n * sizeof *rd);
    int so = 0, ro = 0;
    for (int j = 0; j < n; j++) { sc[j] = j + 1; sd[j] = so; so += j + 1; rc[j] = r + 1; rd[j] = ro; ro += r + 1; }
    int *sbuf = malloc(so * sizeof *sbuf), *rbuf = malloc(ro * sizeof *rbuf);
    for (int j = 0; j < n; j++) for (int k = 0; k < sc[j]; k++) sbuf[sd[j] + k] = r * 1000 + j;
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < n; j++) for (int k = 0; k <= r; k++) CHECK(rbuf[rd[j] + k] == j * 1000 + r);

    /* Reduce_scatter(_block), Scan, Exscan. */
    int *rs = malloc(tot * sizeof *rs), rsout[64];
    for (int i = 0; i < tot; i++) rs[i] = i;
    MPI_Reduce_scatter(rs, rsout, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int off = 0;
    for (int i = 0; i < r; i++) off += cnt[i];
    for (int k = 0; k <= r; k++) CHECK(rsout[k] == n * (off + k));
    int *rsb = malloc(2 * n * sizeof *rsb), rbo[2];
    for (int i = 0; i < 2 * n; i++) rsb[i] = i * (r + 1);
    MPI_Reduce_scatter_block(rsb, rbo, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rbo[0] == 2 * r * n * (n + 1) / 2 && rbo[1] == (2 * r + 1) * n * (n + 1) / 2);
    int sc1 = r + 1, so1 = -1, ex = -1;
    MPI_Scan(&sc1, &so1, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(so1 == (r + 1) * (r + 2) / 2);
    MPI_Exscan(&sc1, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r > 0) CHECK(ex == r * (r + 1) / 2);
    MPI_Scan(MPI_IN_PLACE, &sc1, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(sc1 == r + 1);

    /* A noncontiguous receive type: gather one int per rank into every other slot. */
    MPI_Datatype strided;
    MPI_Type_vector(1, 1, 2, MPI_INT, &strided);
    MPI_Datatype every2;
    MPI_Type_create_resized(strided, 0, 2 * sizeof(int), &every2);
    MPI_Type_commit(&every2);
    int *wide = malloc(2 * n * sizeof *wide);
    for (int i = 0; i < 2 * n; i++) wide[i] = -9;
    MPI_Allgather(&r, 1, MPI_INT, wide, 1, every2, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) CHECK(wide[2 * i] == i && wide[2 * i + 1] == -9);
    MPI_Type_free(&every2);
    MPI_Type_free(&strided);

    /* Bad arguments. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Bcast(v, 1, MPI_INT, n, MPI_COMM_WORLD) == MPI_ERR_ROOT);
    CHECK(MPI_Allreduce(&fl, &fs, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Allreduce(&x, &s, 1, MPI_LONG, (MPI_Op)99, MPI_COMM_WORLD) == MPI_ERR_OP);
    MPI_Op uop;
    CHECK(MPI_Op_create(NULL, 1, &uop) == MPI_ERR_ARG); /* user ops: tests/c/userops.c */

    /* Collectives on a split communicator do not mix with the world's. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    int hs, hsum, hsize;
    MPI_Comm_size(half, &hsize);
    MPI_Allreduce(&r, &hsum, 1, MPI_INT, MPI_SUM, half);
    hs = 0;
    for (int i = r % 2; i < n; i += 2) hs += i;
    CHECK(hsum == hs);
    MPI_Comm_free(&half);

    MPI_Finalize();
    if (r == 0) printf("coll: %d ranks ok\n", n);
    return 0;
}
