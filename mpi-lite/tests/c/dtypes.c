/* Derived datatypes done right (issue 17): struct extents padded as C pads the struct
 * (MPI-3.1 §4.1.6), regular types in O(1) memory whatever the count, counts near INT_MAX
 * an error class (never an abort), and the MPI-2/3 constructors and queries: hindexed_block,
 * subarray, darray, envelope/contents for every combiner, match_size, the _x calls, status
 * setters, Pcontrol. Any rank count >= 2. */
#include "check.h"
#include <limits.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>

struct dc { double d; char c; };

static int cls(int code) {
    int c;
    MPI_Error_class(code, &c);
    return c;
}

static long maxrss_kb(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static void envelope_is(MPI_Datatype t, int comb, int ni, int na, int nd) {
    int a, b, c, k;
    CHECK(MPI_Type_get_envelope(t, &a, &b, &c, &k) == MPI_SUCCESS);
    CHECK(k == comb && a == ni && b == na && c == nd);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;

    /* struct { double d; char c; }: extent 16 as sizeof says, so arrays of it travel intact. */
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(struct dc, d), offsetof(struct dc, c)};
    MPI_Datatype tys[2] = {MPI_DOUBLE, MPI_CHAR}, sdc;
    MPI_Type_create_struct(2, bl, disp, tys, &sdc);
    MPI_Type_commit(&sdc);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(sdc, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof(struct dc));
    int sz;
    MPI_Type_size(sdc, &sz);
    CHECK(sz == 9);
    struct dc out[5], in[5];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 5; i++) { out[i].d = rank * 100 + i + 0.5; out[i].c = (char)('a' + i + rank); }
    MPI_Sendrecv(out, 5, sdc, peer, 1, in, 5, sdc, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 5; i++) CHECK(in[i].d == from * 100 + i + 0.5 && in[i].c == (char)('a' + i + from));
    /* A resized member keeps the user's extent (no padding added). */
    MPI_Datatype r9, s9;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 9, &r9);
    tys[0] = r9;
    MPI_Type_create_struct(2, bl, disp, tys, &s9);
    MPI_Type_get_extent(s9, &lb, &ext);
    CHECK(ext == 9);
    MPI_Type_free(&s9);

    /* Regular types take O(1) memory: 10^7 elements cost nothing (was 40 bytes each). */
    long before = maxrss_kb();
    MPI_Datatype big[8];
    for (int i = 0; i < 4; i++) CHECK(MPI_Type_contiguous(10000000, MPI_BYTE, &big[i]) == MPI_SUCCESS);
    for (int i = 4; i < 8; i++) CHECK(MPI_Type_vector(10000000, 1, 3, MPI_INT, &big[i]) == MPI_SUCCESS);
    CHECK(maxrss_kb() - before < 16 * 1024);
    for (int i = 0; i < 8; i++) MPI_Type_commit(&big[i]);
    for (int i = 0; i < 8; i++) MPI_Type_free(&big[i]);
    MPI_Datatype huge, huge2;
    CHECK(MPI_Type_contiguous(INT_MAX, MPI_BYTE, &huge) == MPI_SUCCESS);
    MPI_Type_commit(&huge);
    MPI_Count sx;
    MPI_Type_size_x(huge, &sx);
    CHECK(sx == INT_MAX);
    /* INT_MAX × INT_MAX bytes × 16: an error class, not an abort. */
    CHECK(MPI_Type_contiguous(INT_MAX, huge, &huge2) == MPI_SUCCESS);
    MPI_Type_commit(&huge2);
    MPI_Datatype huge3;
    CHECK(cls(MPI_Type_contiguous(INT_MAX, huge2, &huge3)) == MPI_ERR_COUNT);
    int x = 0;
    CHECK(cls(MPI_Send(&x, INT_MAX, huge2, peer, 0, MPI_COMM_WORLD)) == MPI_ERR_COUNT);
    CHECK(cls(MPI_Pack_size(INT_MAX, huge, MPI_COMM_WORLD, &sz)) == MPI_ERR_COUNT);
    MPI_Type_free(&huge2);
    MPI_Type_free(&huge);
    /* A noncontiguous send whose packed copy cannot be allocated: MPI_ERR_NO_MEM. */
    MPI_Datatype sparse;
    MPI_Type_create_resized(MPI_INT, 0, 1 << 20, &sparse);
    MPI_Type_commit(&sparse);
    MPI_Datatype sparse_big;
    MPI_Type_vector(1 << 30, 1, 2, MPI_LONG_DOUBLE, &sparse_big);
    MPI_Type_commit(&sparse_big);
    int rc = MPI_Send(&x, 1 << 20, sparse_big, peer, 0, MPI_COMM_WORLD);
    CHECK(cls(rc) == MPI_ERR_NO_MEM || cls(rc) == MPI_ERR_COUNT);
    MPI_Type_free(&sparse_big);
    MPI_Type_free(&sparse);

    /* hindexed_block: ints 0, 3, 4 of an array. */
    int arr[8], got[3];
    for (int i = 0; i < 8; i++) arr[i] = rank * 10 + i;
    MPI_Aint hd[3] = {0, 3 * sizeof(int), 4 * sizeof(int)};
    MPI_Datatype hb;
    MPI_Type_create_hindexed_block(3, 1, hd, MPI_INT, &hb);
    MPI_Type_commit(&hb);
    MPI_Sendrecv(arr, 1, hb, peer, 2, got, 3, MPI_INT, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got[0] == from * 10 && got[1] == from * 10 + 3 && got[2] == from * 10 + 4);
    envelope_is(hb, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1);

    /* subarray: the 2x3 block at (1, 2) of a 4x5 array. */
    int a2[4][5], blk[6];
    for (int i = 0; i < 4; i++) for (int j = 0; j < 5; j++) a2[i][j] = rank * 100 + i * 5 + j;
    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype sub;
    CHECK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub) == MPI_SUCCESS);
    MPI_Type_commit(&sub);
    MPI_Type_get_extent(sub, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof a2);
    MPI_Sendrecv(a2, 1, sub, peer, 3, blk, 6, MPI_INT, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int want[6] = {7, 8, 9, 12, 13, 14};
    for (int i = 0; i < 6; i++) CHECK(blk[i] == from * 100 + want[i]);
    envelope_is(sub, MPI_COMBINER_SUBARRAY, 3 * 2 + 2, 0, 1);
    int ints[8];
    MPI_Aint aints[1];
    MPI_Datatype inner[1];
    MPI_Type_get_contents(sub, 8, 0, 1, ints, aints, inner);
    CHECK(ints[0] == 2 && ints[1] == 4 && ints[3] == 2 && ints[5] == 1 && ints[7] == MPI_ORDER_C);
    CHECK(inner[0] == MPI_INT);
    CHECK(cls(MPI_Type_create_subarray(2, sizes, sizes, starts, MPI_ORDER_C, MPI_INT, &sub)) == MPI_ERR_ARG);

    /* darray: 10 ints block-distributed over `size` processes. */
    int gs = 10, dist = MPI_DISTRIBUTE_BLOCK, darg = MPI_DISTRIBUTE_DFLT_DARG, ps = size;
    MPI_Datatype da;
    CHECK(MPI_Type_create_darray(size, rank, 1, &gs, &dist, &darg, &ps, MPI_ORDER_C, MPI_INT, &da) == MPI_SUCCESS);
    MPI_Type_size(da, &sz);
    int blk_n = (10 + size - 1) / size, first = rank * blk_n;
    int mine = first >= 10 ? 0 : (first + blk_n > 10 ? 10 - first : blk_n);
    CHECK(sz == mine * (int)sizeof(int));
    MPI_Type_get_extent(da, &lb, &ext);
    CHECK(ext == 10 * (MPI_Aint)sizeof(int));
    envelope_is(da, MPI_COMBINER_DARRAY, 4 * 1 + 4, 0, 1);
    MPI_Type_free(&da);

    /* Envelopes and contents of the other combiners. */
    MPI_Datatype t;
    envelope_is(MPI_INT, MPI_COMBINER_NAMED, 0, 0, 0);
    CHECK(cls(MPI_Type_get_contents(MPI_INT, 0, 0, 0, ints, aints, inner)) == MPI_ERR_TYPE);
    MPI_Type_contiguous(3, MPI_INT, &t); envelope_is(t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1); MPI_Type_free(&t);
    MPI_Type_vector(2, 3, 4, MPI_INT, &t); envelope_is(t, MPI_COMBINER_VECTOR, 3, 0, 1);
    MPI_Type_get_contents(t, 3, 0, 1, ints, aints, inner);
    CHECK(ints[0] == 2 && ints[1] == 3 && ints[2] == 4 && inner[0] == MPI_INT);
    MPI_Type_free(&t);
    MPI_Type_create_hvector(2, 3, 40, MPI_INT, &t); envelope_is(t, MPI_COMBINER_HVECTOR, 2, 1, 1); MPI_Type_free(&t);
    int bls[2] = {1, 2}, dsp[2] = {0, 4};
    MPI_Type_indexed(2, bls, dsp, MPI_INT, &t); envelope_is(t, MPI_COMBINER_INDEXED, 5, 0, 1); MPI_Type_free(&t);
    MPI_Type_create_hindexed(2, bls, hd, MPI_INT, &t); envelope_is(t, MPI_COMBINER_HINDEXED, 3, 2, 1); MPI_Type_free(&t);
    MPI_Type_create_indexed_block(2, 2, dsp, MPI_INT, &t); envelope_is(t, MPI_COMBINER_INDEXED_BLOCK, 4, 0, 1); MPI_Type_free(&t);
    envelope_is(sdc, MPI_COMBINER_STRUCT, 3, 2, 2);
    MPI_Type_get_contents(sdc, 3, 2, 2, ints, disp, tys);
    CHECK(ints[0] == 2 && tys[0] == MPI_DOUBLE && tys[1] == MPI_CHAR && disp[1] == offsetof(struct dc, c));
    envelope_is(r9, MPI_COMBINER_RESIZED, 0, 2, 1);
    MPI_Type_dup(sdc, &t); envelope_is(t, MPI_COMBINER_DUP, 0, 0, 1);
    MPI_Type_get_contents(t, 0, 0, 1, ints, aints, inner);
    CHECK(inner[0] != sdc && inner[0] != MPI_DATATYPE_NULL); /* a new handle to the struct */
    envelope_is(inner[0], MPI_COMBINER_STRUCT, 3, 2, 2);
    MPI_Type_free(&inner[0]);
    MPI_Type_free(&t);

    /* Type_match_size, the _x queries, status setters, Pcontrol. */
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t);
    CHECK(t == MPI_DOUBLE);
    MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t);
    MPI_Type_size(t, &sz);
    CHECK(sz == 4);
    MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t);
    CHECK(t == MPI_C_DOUBLE_COMPLEX);
    CHECK(cls(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t)) == MPI_ERR_ARG);
    MPI_Count clb, cext;
    MPI_Type_get_extent_x(sdc, &clb, &cext);
    CHECK(clb == 0 && cext == 16);
    MPI_Type_get_true_extent_x(sdc, &clb, &cext);
    CHECK(clb == 0 && cext == 9);
    MPI_Status s;
    MPI_Status_set_elements(&s, MPI_INT, 7);
    MPI_Count n;
    MPI_Get_elements_x(&s, MPI_INT, &n);
    CHECK(n == 7);
    int cnt;
    MPI_Get_count(&s, MPI_INT, &cnt);
    CHECK(cnt == 7);
    MPI_Status_set_elements_x(&s, MPI_SHORT, (MPI_Count)3);
    MPI_Get_elements_x(&s, MPI_SHORT, &n);
    CHECK(n == 3);
    MPI_Status_set_cancelled(&s, 1);
    int fl;
    MPI_Test_cancelled(&s, &fl);
    CHECK(fl);
    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS);

    /* external32: big-endian, long is 4 bytes; round trip through Unpack_external. */
    int iv[2] = {1, 0x01020304};
    long lv[2] = {-2, 7};
    MPI_Aint esz, pos = 0;
    MPI_Pack_external_size("external32", 2, MPI_LONG, &esz);
    CHECK(esz == 8);
    unsigned char ebuf[64];
    CHECK(MPI_Pack_external("external32", iv, 2, MPI_INT, ebuf, sizeof ebuf, &pos) == MPI_SUCCESS && pos == 8);
    CHECK(ebuf[3] == 1 && ebuf[4] == 1 && ebuf[5] == 2 && ebuf[6] == 3 && ebuf[7] == 4);
    CHECK(MPI_Pack_external("external32", lv, 2, MPI_LONG, ebuf, sizeof ebuf, &pos) == MPI_SUCCESS && pos == 16);
    CHECK(ebuf[8] == 0xff && ebuf[11] == 0xfe && ebuf[15] == 7);
    int iv2[2];
    long lv2[2];
    pos = 0;
    CHECK(MPI_Unpack_external("external32", ebuf, 16, &pos, iv2, 2, MPI_INT) == MPI_SUCCESS);
    CHECK(MPI_Unpack_external("external32", ebuf, 16, &pos, lv2, 2, MPI_LONG) == MPI_SUCCESS && pos == 16);
    CHECK(iv2[0] == 1 && iv2[1] == 0x01020304 && lv2[0] == -2 && lv2[1] == 7);
    double dv = 1.5, dv2;
    pos = 0;
    MPI_Pack_external("external32", &dv, 1, MPI_DOUBLE, ebuf, sizeof ebuf, &pos);
    CHECK(ebuf[0] == 0x3f && ebuf[1] == 0xf8);
    pos = 0;
    MPI_Unpack_external("external32", ebuf, 8, &pos, &dv2, 1, MPI_DOUBLE);
    CHECK(dv2 == 1.5);
    pos = 0;
    CHECK(cls(MPI_Pack_external("native", iv, 1, MPI_INT, ebuf, sizeof ebuf, &pos)) == MPI_ERR_UNSUPPORTED_DATAREP);
    CHECK(cls(MPI_Pack_external("external32", iv, 2, MPI_INT, ebuf, 4, &pos)) == MPI_ERR_TRUNCATE);
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL);

    /* Fortran 90 parameterized types (§17.1.9): predefined, same handle for the same
     * parameters, envelope F90_* with (p, r), refused when nothing fits. */
    MPI_Datatype f1, f2, f3;
    int ni, na, nd, comb, fi[2];
    CHECK(MPI_Type_create_f90_integer(4, &f1) == MPI_SUCCESS);
    MPI_Type_size(f1, &sz);
    CHECK(sz == 2);
    CHECK(MPI_Type_create_f90_integer(4, &f2) == MPI_SUCCESS && f2 == f1);
    MPI_Type_get_envelope(f1, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_F90_INTEGER && ni == 1 && na == 0 && nd == 0);
    MPI_Type_get_contents(f1, 1, 0, 0, fi, aints, inner);
    CHECK(fi[0] == 4);
    CHECK(cls(MPI_Type_free(&f1)) == MPI_ERR_TYPE && f1 == f2);
    CHECK(MPI_Type_create_f90_real(15, 300, &f3) == MPI_SUCCESS);
    MPI_Type_size(f3, &sz);
    CHECK(sz == 8);
    MPI_Type_get_envelope(f3, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_F90_REAL && ni == 2);
    MPI_Type_get_contents(f3, 2, 0, 0, fi, aints, inner);
    CHECK(fi[0] == 15 && fi[1] == 300);
    CHECK(MPI_Type_create_f90_complex(6, MPI_UNDEFINED, &f3) == MPI_SUCCESS);
    MPI_Type_size(f3, &sz);
    CHECK(sz == 8);
    double fd[2] = {1.0, 2.0}, fsum[2];
    MPI_Datatype fr;
    MPI_Type_create_f90_real(10, MPI_UNDEFINED, &fr);
    CHECK(MPI_Allreduce(fd, fsum, 2, fr, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(fsum[1] == 2.0 * size);
    CHECK(cls(MPI_Type_create_f90_integer(40, &f1)) == MPI_ERR_ARG);
    CHECK(cls(MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &f1)) == MPI_ERR_ARG);

    /* MPI_Status in Fortran INTEGERs (§17.2.5) and back. */
    MPI_Fint fst[MPI_F_STATUS_SIZE];
    MPI_Status cs = s, cs2;
    cs.MPI_SOURCE = 3;
    cs.MPI_TAG = 99;
    CHECK(MPI_Status_c2f(&cs, fst) == MPI_SUCCESS);
    CHECK(fst[MPI_F_SOURCE] == 3 && fst[MPI_F_TAG] == 99);
    CHECK(MPI_Status_f2c(fst, &cs2) == MPI_SUCCESS);
    CHECK(cs2.MPI_SOURCE == 3 && cs2.MPI_TAG == 99);
    MPI_Get_elements_x(&cs2, MPI_SHORT, &n);
    CHECK(n == 3);
    CHECK(cls(MPI_Status_c2f(MPI_STATUS_IGNORE, fst)) == MPI_ERR_ARG);

    /* MPI_INFO_ENV (§8.7.2): predefined, readable, not freeable. */
    char ev[MPI_MAX_INFO_VAL + 1];
    int efl;
    MPI_Info ienv = MPI_INFO_ENV;
    CHECK(MPI_Info_get(MPI_INFO_ENV, "maxprocs", MPI_MAX_INFO_VAL, ev, &efl) == MPI_SUCCESS && efl);
    CHECK(atoi(ev) == size);
    CHECK(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, ev, &efl) == MPI_SUCCESS && efl);
    CHECK(strstr(ev, "dtypes") != NULL);
    CHECK(MPI_Info_get(MPI_INFO_ENV, "thread_level", MPI_MAX_INFO_VAL, ev, &efl) == MPI_SUCCESS && efl);
    CHECK(strncmp(ev, "MPI_THREAD_", 11) == 0);
    CHECK(cls(MPI_Info_free(&ienv)) == MPI_ERR_INFO && ienv == MPI_INFO_ENV);
    MPI_Info idup;
    CHECK(MPI_Info_dup(MPI_INFO_ENV, &idup) == MPI_SUCCESS);
    CHECK(MPI_Info_get(idup, "wdir", MPI_MAX_INFO_VAL, ev, &efl) == MPI_SUCCESS && efl);
    MPI_Info_free(&idup);

    /* Mixed predefined types (MPI-3.1 §4.1.11, §13.5.2): 17 bytes of struct dc arrive
     * (double, char, double): Get_count is MPI_UNDEFINED, Get_elements 3 (both were
     * MPI_ERR_UNSUPPORTED_OPERATION); Status_set_elements counts predefined elements. */
    unsigned char raw[32], packed[32];
    struct dc two[2] = {{1.25, 'x'}, {2.5, 'y'}}, mg[2];
    int ppos = 0;
    MPI_Pack(two, 2, sdc, packed, sizeof packed, &ppos, MPI_COMM_WORLD);
    CHECK(ppos == 18);
    MPI_Status ms;
    MPI_Sendrecv(packed, 17, MPI_BYTE, rank, 7, mg, 2, sdc, rank, 7, MPI_COMM_WORLD, &ms);
    CHECK(mg[0].d == 1.25 && mg[0].c == 'x' && mg[1].d == 2.5);
    CHECK(MPI_Get_count(&ms, sdc, &cnt) == MPI_SUCCESS && cnt == MPI_UNDEFINED);
    CHECK(MPI_Get_elements(&ms, sdc, &cnt) == MPI_SUCCESS && cnt == 3);
    CHECK(MPI_Get_elements_x(&ms, sdc, &n) == MPI_SUCCESS && n == 3);
    MPI_Sendrecv(packed, 16, MPI_BYTE, rank, 7, mg, 2, sdc, rank, 7, MPI_COMM_WORLD, &ms);
    CHECK(MPI_Get_elements(&ms, sdc, &cnt) == MPI_SUCCESS && cnt == MPI_UNDEFINED);
    CHECK(MPI_Status_set_elements(&ms, sdc, 4) == MPI_SUCCESS);
    CHECK(MPI_Get_elements(&ms, sdc, &cnt) == MPI_SUCCESS && cnt == 4);
    CHECK(MPI_Get_count(&ms, sdc, &cnt) == MPI_SUCCESS && cnt == 2);
    CHECK(MPI_Status_set_elements(&ms, sdc, 3) == MPI_SUCCESS);
    CHECK(MPI_Get_count(&ms, sdc, &cnt) == MPI_SUCCESS && cnt == MPI_UNDEFINED);
    /* A pair type holds two predefined elements (MPICH's get_elements_pairtype): two
     * MPI_DOUBLE_INTs are 4 elements, one and a half (the double of the second) 3. */
    {
        struct { double d; int i; } pr[2] = {{1.5, 1}, {2.5, 2}}, pg[2];
        MPI_Sendrecv(pr, 2, MPI_DOUBLE_INT, rank, 8, pg, 2, MPI_DOUBLE_INT, rank, 8, MPI_COMM_WORLD, &ms);
        CHECK(pg[1].d == 2.5 && pg[1].i == 2);
        CHECK(MPI_Get_elements(&ms, MPI_DOUBLE_INT, &cnt) == MPI_SUCCESS && cnt == 4);
        CHECK(MPI_Get_count(&ms, MPI_DOUBLE_INT, &cnt) == MPI_SUCCESS && cnt == 2);
        CHECK(MPI_Status_set_elements(&ms, MPI_DOUBLE_INT, 3) == MPI_SUCCESS);
        CHECK(MPI_Get_elements(&ms, MPI_DOUBLE_INT, &cnt) == MPI_SUCCESS && cnt == 3);
    }
    MPI_Datatype ci;
    MPI_Type_contiguous(2, MPI_INT, &ci);
    MPI_Type_commit(&ci);
    CHECK(MPI_Status_set_elements(&ms, ci, 3) == MPI_SUCCESS);
    CHECK(MPI_Get_elements(&ms, ci, &cnt) == MPI_SUCCESS && cnt == 3);
    CHECK(MPI_Get_count(&ms, ci, &cnt) == MPI_SUCCESS && cnt == MPI_UNDEFINED);
    MPI_Type_free(&ci);
    /* external32 of the struct: the double big-endian, then the char; 9 bytes each. */
    MPI_Pack_external_size("external32", 2, sdc, &esz);
    CHECK(esz == 18);
    pos = 0;
    CHECK(MPI_Pack_external("external32", two, 2, sdc, raw, sizeof raw, &pos) == MPI_SUCCESS && pos == 18);
    CHECK(raw[0] == 0x3f && raw[1] == 0xf4 && raw[8] == 'x' && raw[9] == 0x40 && raw[17] == 'y');
    memset(mg, 0, sizeof mg);
    pos = 0;
    CHECK(MPI_Unpack_external("external32", raw, 18, &pos, mg, 2, sdc) == MPI_SUCCESS && pos == 18);
    CHECK(mg[0].d == 1.25 && mg[0].c == 'x' && mg[1].d == 2.5 && mg[1].c == 'y');

    MPI_Type_free(&r9);
    MPI_Type_free(&sdc);
    MPI_Type_free(&hb);
    MPI_Type_free(&sub);
    MPI_Finalize();
    return 0;
}
