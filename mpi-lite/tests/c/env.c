/* The environment calls and the remaining point-to-point/datatype calls not covered by
 * the other programs: versions, names, clocks, thread queries, error handlers,
 * Waitsome/Testany/Request_get_status, Ibsend/Irsend, hvector/hindexed/indexed_block,
 * Type_dup/size_x/get_true_extent. Any rank count >= 2. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int flag, provided, v, sv, len;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    CHECK(provided == MPI_THREAD_FUNNELED);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Query_thread(&v);
    CHECK(v == MPI_THREAD_FUNNELED);
    MPI_Is_thread_main(&flag);
    CHECK(flag);
    MPI_Initialized(&flag);
    CHECK(flag);
    MPI_Get_version(&v, &sv);
    CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION && v == 3 && sv == 1);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_library_version(lib, &len);
    CHECK(len > 0 && strstr(lib, "mpi-lite") != NULL);
    MPI_Get_processor_name(host, &len);
    CHECK(len > 0 && (int)strlen(host) == len);
    double t0 = MPI_Wtime(), tick = MPI_Wtick();
    CHECK(tick > 0 && tick < 1e-3);
    double t1 = MPI_Wtime();
    CHECK(t1 >= t0);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL);
    int cls;
    MPI_Error_class(MPI_ERR_RANK, &cls);
    CHECK(cls == MPI_ERR_RANK);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* Ibsend / Irsend / Waitsome / Testany / Request_get_status. */
    int bsz = 2 * (sizeof(int) + MPI_BSEND_OVERHEAD);
    void *bb = malloc(bsz);
    MPI_Buffer_attach(bb, bsz);
    int a = rank, b = rank + 100, ra = -1, rb = -1;
    MPI_Request rq[4];
    MPI_Irecv(&ra, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&rb, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Barrier(MPI_COMM_WORLD); /* the receives are posted everywhere: Irsend is legal */
    MPI_Ibsend(&a, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &rq[2]);
    MPI_Irsend(&b, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[3]);
    int done = 0, outc, idx[4];
    MPI_Status sts[4];
    while (done < 4) {
        MPI_Waitsome(4, rq, &outc, idx, sts);
        CHECK(outc >= 1 && outc != MPI_UNDEFINED);
        done += outc;
    }
    MPI_Waitsome(4, rq, &outc, idx, sts);
    CHECK(outc == MPI_UNDEFINED);
    CHECK(ra == left && rb == left + 100);
    void *back;
    MPI_Buffer_detach(&back, &bsz);
    free(back);
    MPI_Request r;
    int x = -1;
    MPI_Irecv(&x, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &r);
    MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
    MPI_Send(&a, 1, MPI_INT, right, 3, MPI_COMM_WORLD);
    int i;
    do {
        MPI_Testany(1, &r, &i, &flag, &sts[0]);
    } while (!flag);
    CHECK(i == 0 && x == left && r == MPI_REQUEST_NULL && sts[0].MPI_TAG == 3);
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, MPI_STATUS_IGNORE);
    CHECK(flag);

    /* hvector, hindexed, indexed_block, dup, size_x, true extent. */
    double m[3][4];
    for (int p = 0; p < 3; p++) for (int q = 0; q < 4; q++) m[p][q] = rank * 100 + p * 10 + q;
    MPI_Datatype hv, hi, ib, dup;
    MPI_Type_create_hvector(3, 1, 4 * sizeof(double), MPI_DOUBLE, &hv); /* a column */
    int bl[2] = {1, 2};
    MPI_Aint hd[2] = {0, 2 * sizeof(double)};
    MPI_Type_create_hindexed(2, bl, hd, MPI_DOUBLE, &hi);              /* q = 0, 2, 3 */
    int bd[2] = {1, 3};
    MPI_Type_create_indexed_block(2, 1, bd, MPI_DOUBLE, &ib);           /* q = 1, 3 */
    MPI_Type_dup(hv, &dup);
    MPI_Type_commit(&hv); MPI_Type_commit(&hi); MPI_Type_commit(&ib); MPI_Type_commit(&dup);
    MPI_Count sx;
    MPI_Type_size_x(hv, &sx);
    CHECK(sx == 3 * sizeof(double));
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(ib, &tlb, &text);
    CHECK(tlb == sizeof(double) && text == 3 * (MPI_Aint)sizeof(double));
    double col[3], row[3], two[2];
    MPI_Sendrecv(&m[0][1], 1, dup, right, 4, col, 3, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int p = 0; p < 3; p++) CHECK(col[p] == left * 100 + p * 10 + 1);
    MPI_Sendrecv(m[2], 1, hi, right, 5, row, 3, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(row[0] == left * 100 + 20 && row[1] == left * 100 + 22 && row[2] == left * 100 + 23);
    MPI_Sendrecv(m[1], 1, ib, right, 6, two, 2, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(two[0] == left * 100 + 11 && two[1] == left * 100 + 13);
    MPI_Type_free(&hv); MPI_Type_free(&hi); MPI_Type_free(&ib); MPI_Type_free(&dup);

    MPI_Finalize();
    MPI_Finalized(&flag);
    CHECK(flag);
    if (rank == 0) printf("env: %d ranks ok\n", size);
    return 0;
}
