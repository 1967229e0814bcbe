/* User-defined reductions (MPI-3.1 §5.9.5): MPI_Op_create / Op_free / Op_commutative,
 * used by Reduce, Allreduce, Scan, Exscan, Reduce_scatter_block and Reduce_local; a
 * non-commutative operation is applied in rank order. Any rank count >= 2. */
#include "check.h"
#include <complex.h>

static int calls;

/* Commutative: sum of ints, checking the datatype handle MPI passes. */
static void isum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    calls++;
    CHECK(*dt == MPI_INT);
    /* MPI inside a user operation (mpi4py's callbacks size their buffers so). */
    MPI_Aint lb, ext;
    int sz;
    CHECK(MPI_Type_get_extent(*dt, &lb, &ext) == MPI_SUCCESS && ext == sizeof(int));
    CHECK(MPI_Type_size(*dt, &sz) == MPI_SUCCESS && sz == sizeof(int));
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* Sum of the column types of the test below (3 doubles, 4 apart), on their own layout:
 * element k's values at k * extent + 0, 4, 8 doubles. */
static MPI_Datatype coltype, coltypes;
static void colsum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    CHECK(*dt == coltype || *dt == coltypes);
    MPI_Aint lb, ext;
    /* A query of the operation's own derived type works inside it. */
    CHECK(MPI_Type_get_extent(*dt, &lb, &ext) == MPI_SUCCESS && lb == 0);
    int st = (int)(ext / sizeof(double));
    double *a = in, *b = inout;
    for (int k = 0; k < *len; k++)
        for (int j = 0; j < 3; j++) b[k * st + j * 4] += a[k * st + j * 4];
}

/* Not commutative: 2x2 integer matrix product inout = in * inout (row-major). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    long *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        long r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        for (int i = 0; i < 4; i++) b[i] = r[i];
    }
}

/* Each rank's matrix: [[1, r+1], [0, 1]] (upper unitriangular: products in order
 * 0..k give [[1, sum], [0, 1]]) times a rank-dependent permutation for ranks >= 1 so
 * that the order matters. */
static void mine(int r, long m[4]) {
    m[0] = 1; m[1] = r + 1; m[2] = 0; m[3] = 1;
    if (r % 2 == 1) { m[0] = 0; m[1] = 1; m[2] = 1; m[3] = r + 1; }
}

static void expect_prefix(int upto, const long got[4]) {
    long acc[4] = {1, 0, 0, 1}, m[4];
    for (int r = 0; r <= upto; r++) {
        mine(r, m);
        /* acc = acc * m (rank order: lower ranks on the left) */
        long t[4] = {acc[0] * m[0] + acc[1] * m[2], acc[0] * m[1] + acc[1] * m[3],
                     acc[2] * m[0] + acc[3] * m[2], acc[2] * m[1] + acc[3] * m[3]};
        for (int i = 0; i < 4; i++) acc[i] = t[i];
    }
    for (int i = 0; i < 4; i++) CHECK(got[i] == acc[i]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Op sum, mm;
    CHECK(MPI_Op_create(isum, 1, &sum) == MPI_SUCCESS);
    CHECK(MPI_Op_create(matmul, 0, &mm) == MPI_SUCCESS);
    int c;
    MPI_Op_commutative(sum, &c);
    CHECK(c == 1);
    MPI_Op_commutative(mm, &c);
    CHECK(c == 0);
    MPI_Op_commutative(MPI_SUM, &c);
    CHECK(c == 1);

    int v[3] = {rank, 2 * rank, 1}, out[3];
    CHECK(MPI_Allreduce(v, out, 3, MPI_INT, sum, MPI_COMM_WORLD) == MPI_SUCCESS);
    int tot = size * (size - 1) / 2;
    CHECK(out[0] == tot && out[1] == 2 * tot && out[2] == size);
    int root = size - 1;
    out[0] = -1;
    CHECK(MPI_Reduce(v, out, 3, MPI_INT, sum, root, MPI_COMM_WORLD) == MPI_SUCCESS);
    if (rank == root) CHECK(out[0] == tot && out[2] == size);
    CHECK(MPI_Scan(v, out, 3, MPI_INT, sum, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(out[0] == rank * (rank + 1) / 2 && out[2] == rank + 1);
    CHECK(MPI_Exscan(v, out, 3, MPI_INT, sum, MPI_COMM_WORLD) == MPI_SUCCESS);
    if (rank > 0) CHECK(out[0] == rank * (rank - 1) / 2 && out[2] == rank);
    int blk[64], got1;
    for (int i = 0; i < size; i++) blk[i] = i + rank;
    CHECK(MPI_Reduce_scatter_block(blk, &got1, 1, MPI_INT, sum, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(got1 == size * rank + tot);
    int a[2] = {5, 6}, b[2] = {1, 2};
    CHECK(MPI_Reduce_local(a, b, 2, MPI_INT, sum) == MPI_SUCCESS);
    CHECK(b[0] == 6 && b[1] == 8);

    /* Non-commutative, on a derived type (4 longs): rank order is kept. */
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_LONG, &mat);
    MPI_Type_commit(&mat);
    long m[2][4], r2[2][4];
    mine(rank, m[0]);
    mine(rank, m[1]);
    CHECK(MPI_Allreduce(m, r2, 2, mat, mm, MPI_COMM_WORLD) == MPI_SUCCESS);
    expect_prefix(size - 1, r2[0]);
    expect_prefix(size - 1, r2[1]);
    CHECK(MPI_Reduce(m, r2, 2, mat, mm, 0, MPI_COMM_WORLD) == MPI_SUCCESS);
    if (rank == 0) expect_prefix(size - 1, r2[1]);
    CHECK(MPI_Scan(m, r2, 2, mat, mm, MPI_COMM_WORLD) == MPI_SUCCESS);
    expect_prefix(rank, r2[0]);
    MPI_Type_free(&mat);

    CHECK(MPI_Op_free(&sum) == MPI_SUCCESS && sum == MPI_OP_NULL);
    int e;
    MPI_Error_class(MPI_Op_free(&sum), &e);
    CHECK(e == MPI_ERR_OP);
    MPI_Error_class(MPI_Op_free(&(MPI_Op){MPI_SUM}), &e);
    CHECK(e == MPI_ERR_OP);
    MPI_Error_class(MPI_Allreduce(v, out, 3, MPI_INT, 77, MPI_COMM_WORLD), &e);
    CHECK(e == MPI_ERR_OP);
    MPI_Op_free(&mm);

    /* Predefined reductions on the complex types (MPI_SUM, MPI_PROD only). */
    double _Complex z = (double)(rank + 1) + 1.0 * I, zs, zp;
    CHECK(MPI_Allreduce(&z, &zs, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(creal(zs) == size * (size + 1) / 2.0 && cimag(zs) == size);
    CHECK(MPI_Allreduce(&z, &zp, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD) == MPI_SUCCESS);
    double _Complex want = 1;
    for (int r = 0; r < size; r++) want *= (double)(r + 1) + 1.0 * I;
    double _Complex d = zp - want;
    double n2 = creal(want) * creal(want) + cimag(want) * cimag(want);
    CHECK(creal(d) * creal(d) + cimag(d) * cimag(d) <= 1e-18 * n2);
    float _Complex fz[2] = {1.0f + 2.0f * I, (float)rank}, fs[2];
    CHECK(MPI_Reduce(fz, fs, 2, MPI_C_FLOAT_COMPLEX, MPI_SUM, 0, MPI_COMM_WORLD) == MPI_SUCCESS);
    if (rank == 0) CHECK(crealf(fs[0]) == size && cimagf(fs[0]) == 2 * size && crealf(fs[1]) == tot);
    MPI_Error_class(MPI_Allreduce(&z, &zs, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD), &e);
    CHECK(e == MPI_ERR_OP);
    double _Complex l = 2.0 * I;
    zs = 3.0;
    CHECK(MPI_Reduce_local(&l, &zs, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD) == MPI_SUCCESS && zs == 6.0 * I);

    /* long double: the C operators' results (x87 extended precision). */
    long double ld = 1.0L + (long double)rank / 3.0L, lsum, lprod, lmin, lmax;
    long double wsum = 0, wprod = 1;
    for (int r = 0; r < size; r++) { wsum += 1.0L + (long double)r / 3.0L; wprod *= 1.0L + (long double)r / 3.0L; }
    CHECK(MPI_Allreduce(&ld, &lsum, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(MPI_Allreduce(&ld, &lprod, 1, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(MPI_Allreduce(&ld, &lmin, 1, MPI_LONG_DOUBLE, MPI_MIN, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(MPI_Allreduce(&ld, &lmax, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS);
    long double tol = 1e-15L;
    CHECK((lsum - wsum) / wsum < tol && (wsum - lsum) / wsum < tol);
    CHECK((lprod - wprod) / wprod < tol && (wprod - lprod) / wprod < tol);
    CHECK(lmin == 1.0L && lmax == 1.0L + (long double)(size - 1) / 3.0L);
    long double _Complex lz = (long double)(rank + 1) + 1.0L * I, lzs, lzp;
    CHECK(MPI_Allreduce(&lz, &lzs, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(creall(lzs) == size * (size + 1) / 2.0L && cimagl(lzs) == size);
    CHECK(MPI_Allreduce(&lz, &lzp, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD) == MPI_SUCCESS);
    long double _Complex lw = 1;
    for (int r = 0; r < size; r++) lw *= (long double)(r + 1) + 1.0L * I;
    CHECK(creall(lzp) == creall(lw) && cimagl(lzp) == cimagl(lw)); /* small integers: exact */
    struct { long double v; int i; } li = {(long double)(rank % 2), rank}, lo;
    CHECK(MPI_Allreduce(&li, &lo, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(lo.v == (size > 1 ? 1.0L : 0.0L) && lo.i == (size > 1 ? 1 : 0));
    CHECK(MPI_Allreduce(&li, &lo, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(lo.v == 0.0L && lo.i == 0);
    MPI_Error_class(MPI_Allreduce(&ld, &lsum, 1, MPI_LONG_DOUBLE, MPI_BAND, MPI_COMM_WORLD), &e);
    CHECK(e == MPI_ERR_OP);

    /* A non-dense derived type of one predefined type (a column of a 3x4 matrix of
     * doubles) reduces element by element, the holes untouched, in every reduction call
     * (MPI_ERR_TYPE before); a user operation on it is called with the type, on memory in
     * the type's layout (MPI_ERR_TYPE before). */
    {
        MPI_Datatype col;
        MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &col);
        MPI_Type_commit(&col);
        double m[12], out[12], sc[12], rs[12], loc[12], nb[12];
        for (int i = 0; i < 12; i++) {
            m[i] = rank + i;
            out[i] = sc[i] = rs[i] = nb[i] = -1;
            loc[i] = 100 + i;
        }
        double s0 = size * (size - 1) / 2.0;
        CHECK(MPI_Allreduce(m, out, 1, col, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
        for (int i = 0; i < 12; i++) CHECK(out[i] == (i % 4 == 0 ? s0 + size * i : -1));
        for (int i = 0; i < 12; i++) out[i] = -1;
        CHECK(MPI_Reduce(m, out, 1, col, MPI_MAX, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS);
        if (rank == size - 1)
            for (int i = 0; i < 12; i++) CHECK(out[i] == (i % 4 == 0 ? size - 1 + i : -1));
        CHECK(MPI_Scan(m, sc, 1, col, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
        for (int i = 0; i < 12; i++)
            CHECK(sc[i] == (i % 4 == 0 ? rank * (rank + 1) / 2.0 + (rank + 1) * i : -1));
        /* Reduce_scatter_block of one column per member: a vector of `size` columns. */
        MPI_Datatype cols;
        MPI_Type_create_resized(col, 0, sizeof(double), &cols);
        MPI_Type_commit(&cols);
        double big[12 * 4], got[12];
        for (int i = 0; i < 48; i++) big[i] = rank + i;
        for (int i = 0; i < 12; i++) got[i] = -1;
        (void)rs;
        CHECK(MPI_Reduce_scatter_block(big, got, 1, cols, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
        for (int i = 0; i < 12; i++)
            CHECK(got[i] == (i % 4 == 0 ? s0 + size * (i + rank) : -1));
        MPI_Request q;
        CHECK(MPI_Iallreduce(m, nb, 1, col, MPI_SUM, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < 12; i++) CHECK(nb[i] == (i % 4 == 0 ? s0 + size * i : -1));
        CHECK(MPI_Reduce_local(m, loc, 1, col, MPI_SUM) == MPI_SUCCESS);
        for (int i = 0; i < 12; i++) CHECK(loc[i] == 100 + i + (i % 4 == 0 ? rank + i : 0));
        MPI_Op uop;
        coltype = col;
        coltypes = cols;
        MPI_Op_create(colsum, 1, &uop);
        for (int i = 0; i < 12; i++) out[i] = nb[i] = -1;
        CHECK(MPI_Allreduce(m, out, 1, col, uop, MPI_COMM_WORLD) == MPI_SUCCESS);
        for (int i = 0; i < 12; i++) CHECK(out[i] == (i % 4 == 0 ? s0 + size * i : -1));
        CHECK(MPI_Iallreduce(m, nb, 1, col, uop, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < 12; i++) CHECK(nb[i] == (i % 4 == 0 ? s0 + size * i : -1));
        for (int i = 0; i < 12; i++) loc[i] = 100 + i;
        CHECK(MPI_Reduce_local(m, loc, 1, col, uop) == MPI_SUCCESS);
        for (int i = 0; i < 12; i++) CHECK(loc[i] == 100 + i + (i % 4 == 0 ? rank + i : 0));
        /* Two interleaved elements (the column resized to one double). */
        double two[20], two_out[20];
        for (int i = 0; i < 20; i++) {
            two[i] = rank;
            two_out[i] = -1;
        }
        CHECK(MPI_Reduce(two, two_out, 2, cols, uop, 0, MPI_COMM_WORLD) == MPI_SUCCESS);
        if (rank == 0)
            for (int i = 0; i < 20; i++)
                CHECK(two_out[i] == ((i % 4 == 0 && i <= 8) || (i % 4 == 1 && i <= 9) ? s0 : -1));
        MPI_Op_free(&uop);
        MPI_Type_free(&cols);
        MPI_Type_free(&col);
    }
    MPI_Finalize();
    return 0;
}
