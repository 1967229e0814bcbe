/* Datatypes over mpi-lite: sizes and extents of predefined and derived types, pair types,
 * noncontiguous send/receive (vector, indexed, struct, resized), Pack/Unpack, names,
 * Get_address, the Fortran named types. Any rank count >= 2. */
#include "check.h"
#include <stddef.h>
#include <string.h>

struct particle { double x; int id; char tag; };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    int active = peer < size;

    int s; MPI_Aint lb, ext;
    MPI_Type_size(MPI_DOUBLE_INT, &s);
    MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext);
    CHECK(s == 12 && lb == 0 && ext == 16);
    MPI_Type_size(MPI_2INT, &s);
    CHECK(s == 8);
    MPI_Type_size(MPI_LONG_LONG, &s);
    CHECK(s == 8);
    MPI_Type_size(MPI_C_BOOL, &s);
    CHECK(s == 1);

    /* A column of a 4x5 int matrix. */
    MPI_Datatype col, colr;
    MPI_Type_vector(4, 1, 5, MPI_INT, &col);
    MPI_Type_size(col, &s);
    MPI_Type_get_extent(col, &lb, &ext);
    CHECK(s == 16 && ext == (3 * 5 + 1) * 4);
    /* Not committed yet: communication refuses it. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int m[4][5];
    CHECK(MPI_Send(m, 1, col, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_commit(&col);
    /* Resized to one int so consecutive columns interleave. */
    MPI_Type_create_resized(col, 0, sizeof(int), &colr);
    MPI_Type_commit(&colr);

    char name[MPI_MAX_OBJECT_NAME]; int len;
    MPI_Type_set_name(col, "column");
    MPI_Type_get_name(col, name, &len);
    CHECK(len == 6 && strcmp(name, "column") == 0);
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE") == 0);

    if (active) {
        for (int i = 0; i < 4; i++) for (int j = 0; j < 5; j++) m[i][j] = rank * 100 + i * 10 + j;
        int got[4][5];
        memset(got, -1, sizeof got);
        /* Send columns 1 and 2 (two elements of colr starting at column 1), receive as 8 ints. */
        int flat[8];
        MPI_Sendrecv(&m[0][1], 2, colr, peer, 1, flat, 8, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* colr order: element 0 = column 1 rows 0..3, element 1 = column 2 rows 0..3. */
        for (int i = 0; i < 4; i++) {
            CHECK(flat[i] == peer * 100 + i * 10 + 1);
            CHECK(flat[4 + i] == peer * 100 + i * 10 + 2);
        }
        /* Receive into a column: contiguous send, strided receive. */
        MPI_Sendrecv(flat, 4, MPI_INT, peer, 2, &got[0][3], 1, col, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 4; i++) {
            CHECK(got[i][3] == rank * 100 + i * 10 + 1);
            CHECK(got[i][2] == -1 && got[i][4] == -1);
        }

        /* Indexed with a hole, and a struct with padding. */
        MPI_Datatype idx;
        int bl[2] = {2, 1}, dp[2] = {0, 4};
        MPI_Type_indexed(2, bl, dp, MPI_INT, &idx);
        MPI_Type_commit(&idx);
        int src[5] = {rank, rank + 1, -7, -7, rank + 4}, dst[5] = {0, 0, 0, 0, 0};
        MPI_Sendrecv(src, 1, idx, peer, 3, dst, 1, idx, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(dst[0] == peer && dst[1] == peer + 1 && dst[2] == 0 && dst[3] == 0 && dst[4] == peer + 4);

        MPI_Datatype pt, pts;
        int pbl[3] = {1, 1, 1};
        MPI_Aint pd[3] = {offsetof(struct particle, x), offsetof(struct particle, id), offsetof(struct particle, tag)};
        MPI_Datatype pty[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
        MPI_Type_create_struct(3, pbl, pd, pty, &pt);
        MPI_Type_size(pt, &s);
        CHECK(s == 13);
        MPI_Type_create_resized(pt, 0, sizeof(struct particle), &pts);
        MPI_Type_commit(&pts);
        struct particle ps[3], pr[3];
        for (int i = 0; i < 3; i++) { ps[i].x = rank + i / 4.0; ps[i].id = rank * 10 + i; ps[i].tag = 'a' + i; }
        memset(pr, 0, sizeof pr);
        MPI_Status st;
        MPI_Sendrecv(ps, 3, pts, peer, 4, pr, 3, pts, peer, 4, MPI_COMM_WORLD, &st);
        int cnt;
        MPI_Get_count(&st, pts, &cnt);
        CHECK(cnt == 3);
        MPI_Get_elements(&st, MPI_INT, &cnt);
        CHECK(cnt * 4 == 3 * 13 || cnt == MPI_UNDEFINED);
        for (int i = 0; i < 3; i++)
            CHECK(pr[i].x == peer + i / 4.0 && pr[i].id == peer * 10 + i && pr[i].tag == 'a' + i);

        /* Pack a column and a double, unpack them on the peer. */
        char packed[256]; int pos = 0, psize;
        MPI_Pack_size(1, col, MPI_COMM_WORLD, &psize);
        CHECK(psize == 16);
        double d = rank + 0.25;
        MPI_Pack(&m[0][4], 1, col, packed, sizeof packed, &pos, MPI_COMM_WORLD);
        MPI_Pack(&d, 1, MPI_DOUBLE, packed, sizeof packed, &pos, MPI_COMM_WORLD);
        CHECK(pos == 24);
        char in[256];
        MPI_Sendrecv(packed, pos, MPI_PACKED, peer, 5, in, sizeof in, MPI_PACKED, peer, 5, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_PACKED, &cnt);
        CHECK(cnt == 24);
        int c4[4]; double dd; pos = 0;
        MPI_Unpack(in, cnt, &pos, c4, 4, MPI_INT, MPI_COMM_WORLD);
        MPI_Unpack(in, cnt, &pos, &dd, 1, MPI_DOUBLE, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++) CHECK(c4[i] == peer * 100 + i * 10 + 4);
        CHECK(dd == peer + 0.25 && pos == 24);

        /* MINLOC pairs survive the trip. */
        struct { double v; int i; } di[2] = {{1.5, rank}, {2.5, -rank}}, dr[2];
        MPI_Sendrecv(di, 2, MPI_DOUBLE_INT, peer, 6, dr, 2, MPI_DOUBLE_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(dr[0].v == 1.5 && dr[0].i == peer && dr[1].v == 2.5 && dr[1].i == -peer);

        MPI_Type_free(&idx);
        MPI_Type_free(&pt);
        MPI_Type_free(&pts);
        CHECK(pts == MPI_DATATYPE_NULL);
    }

    MPI_Aint a1, a2;
    MPI_Get_address(&m[1][0], &a1);
    MPI_Get_address(&m[0][0], &a2);
    CHECK(MPI_Aint_diff(a1, a2) == 5 * sizeof(int));
    CHECK(MPI_Aint_add(a2, 20) == a1);
    MPI_Type_free(&col);
    MPI_Type_free(&colr);

    /* The MPI-1 names MPI-3.0 removed (kept for old programs): the same types and values as
     * their replacements. */
    {
        MPI_Aint a3, lb, ext, ub, disp[2] = {0, 16};
        int bl[2] = {1, 2};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, hv, hv2, hi, hi2, st1, st2;
        MPI_Address(&m[1][0], &a3);
        CHECK(a3 == a1);
        CHECK(MPI_Type_hvector(3, 2, 40, MPI_INT, &hv) == MPI_SUCCESS);
        MPI_Type_create_hvector(3, 2, 40, MPI_INT, &hv2);
        CHECK(MPI_Type_hindexed(2, bl, disp, MPI_INT, &hi) == MPI_SUCCESS);
        MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &hi2);
        CHECK(MPI_Type_struct(2, bl, disp, ty, &st1) == MPI_SUCCESS);
        MPI_Type_create_struct(2, bl, disp, ty, &st2);
        MPI_Datatype pairs[3][2] = {{hv, hv2}, {hi, hi2}, {st1, st2}};
        for (int i = 0; i < 3; i++) {
            MPI_Aint l2, e2;
            int s1, s2;
            MPI_Type_size(pairs[i][0], &s1);
            MPI_Type_size(pairs[i][1], &s2);
            MPI_Type_get_extent(pairs[i][1], &l2, &e2);
            CHECK(MPI_Type_extent(pairs[i][0], &ext) == MPI_SUCCESS && ext == e2 && s1 == s2);
            CHECK(MPI_Type_lb(pairs[i][0], &lb) == MPI_SUCCESS && lb == l2);
            CHECK(MPI_Type_ub(pairs[i][0], &ub) == MPI_SUCCESS && ub == l2 + e2);
            MPI_Type_free(&pairs[i][0]);
            MPI_Type_free(&pairs[i][1]);
        }
        MPI_Errhandler eh;
        CHECK(MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS);
        CHECK(MPI_Errhandler_get(MPI_COMM_WORLD, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN);
        CHECK(MPI_Type_ub(MPI_INT, NULL) != MPI_SUCCESS);
        MPI_Errhandler_free(&eh);
    }
    /* The Fortran named types from C (MPI-3.1 §17.2.5): gfortran's sizes, names,
     * reductions with their C twins' arithmetic, pair types of two elements. */
    {
        struct { MPI_Datatype t; int size; const char *name; } ft[] = {
            {MPI_INTEGER, 4, "MPI_INTEGER"}, {MPI_REAL, 4, "MPI_REAL"},
            {MPI_DOUBLE_PRECISION, 8, "MPI_DOUBLE_PRECISION"}, {MPI_COMPLEX, 8, "MPI_COMPLEX"},
            {MPI_DOUBLE_COMPLEX, 16, "MPI_DOUBLE_COMPLEX"}, {MPI_LOGICAL, 4, "MPI_LOGICAL"},
            {MPI_CHARACTER, 1, "MPI_CHARACTER"}, {MPI_INTEGER1, 1, "MPI_INTEGER1"},
            {MPI_INTEGER2, 2, "MPI_INTEGER2"}, {MPI_INTEGER4, 4, "MPI_INTEGER4"},
            {MPI_INTEGER8, 8, "MPI_INTEGER8"}, {MPI_REAL4, 4, "MPI_REAL4"},
            {MPI_REAL8, 8, "MPI_REAL8"}, {MPI_COMPLEX8, 8, "MPI_COMPLEX8"},
            {MPI_COMPLEX16, 16, "MPI_COMPLEX16"}, {MPI_2INTEGER, 8, "MPI_2INTEGER"},
            {MPI_2REAL, 8, "MPI_2REAL"}, {MPI_2DOUBLE_PRECISION, 16, "MPI_2DOUBLE_PRECISION"},
        };
        for (unsigned i = 0; i < sizeof ft / sizeof ft[0]; i++) {
            int sz;
            MPI_Aint lb, ext;
            char nm[MPI_MAX_OBJECT_NAME];
            int nl;
            CHECK(MPI_Type_size(ft[i].t, &sz) == MPI_SUCCESS && sz == ft[i].size);
            CHECK(MPI_Type_get_extent(ft[i].t, &lb, &ext) == MPI_SUCCESS && ext == ft[i].size);
            CHECK(MPI_Type_get_name(ft[i].t, nm, &nl) == MPI_SUCCESS && strcmp(nm, ft[i].name) == 0);
        }
        CHECK(MPI_REAL16 == MPI_DATATYPE_NULL);
        double d = rank + 0.5, ds = 0;
        CHECK(MPI_Allreduce(&d, &ds, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(ds == size * (size - 1) / 2.0 + size * 0.5);
        float cx[2] = {1, (float)rank}, cs[2] = {0, 0};
        CHECK(MPI_Allreduce(cx, cs, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(cs[0] == size && cs[1] == size * (size - 1) / 2.0f);
        int lg = 1, la = 0, ints[2] = {10 - rank, rank}, mn[2];
        CHECK(MPI_Allreduce(&lg, &la, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(la == 1);
        CHECK(MPI_Allreduce(ints, mn, 1, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(mn[0] == 10 - (size - 1) && mn[1] == size - 1);
        /* Pairs of reals: value, then index (ties: the smaller index). */
        float rp[2] = {(float)(rank % 2), (float)rank}, rmin[2];
        double dp[2] = {(double)(rank % 2), (double)rank}, dmax[2];
        CHECK(MPI_Allreduce(rp, rmin, 1, MPI_2REAL, MPI_MINLOC, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(rmin[0] == 0 && rmin[1] == 0);
        CHECK(MPI_Allreduce(dp, dmax, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD) ==
              MPI_SUCCESS);
        CHECK(dmax[0] == 1 && dmax[1] == 1);
        /* A pair of reals is two elements. */
        MPI_Status st;
        float pr[2] = {1, 2}, pg[2];
        CHECK(MPI_Sendrecv(pr, 1, MPI_2REAL, rank, 3, pg, 1, MPI_2REAL, rank, 3, MPI_COMM_WORLD,
                           &st) == MPI_SUCCESS);
        int el;
        CHECK(MPI_Get_elements(&st, MPI_REAL, &el) == MPI_SUCCESS && el == 2 && pg[1] == 2);
    }
    MPI_Finalize();
    if (rank == 0) printf("types: %d ranks ok\n", size);
    return 0;
}
