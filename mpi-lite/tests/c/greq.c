/* Generalized requests (MPI-3.1 §12.2): MPI_Grequest_start / Grequest_complete; the
 * query function fills the status (with MPI calls) in the wait or test that completes the
 * request (and in MPI_Request_get_status), not in MPI_Grequest_complete; the free function
 * runs once when the request is released (a cancel after completion still sees
 * extra_state); an error code of either is returned by that call (MPI_ERR_IN_STATUS and
 * the status' MPI_ERROR for Waitall); wait, test and the multiple-completion calls treat
 * them like any request. Any rank count. */
#include "check.h"

static int queries, frees;

static int query(void *extra, MPI_Status *s) {
    queries++;
    int n = *(int *)extra;
    CHECK(MPI_Status_set_elements(s, MPI_INT, n) == MPI_SUCCESS); /* MPI inside: no lock held */
    MPI_Status_set_cancelled(s, 0);
    s->MPI_SOURCE = rank;
    s->MPI_TAG = 42;
    return MPI_SUCCESS;
}

static int release(void *extra) {
    (void)extra;
    frees++;
    return MPI_SUCCESS;
}

/* Fail with the code at extra (mpi4py's callbacks return the class of a Python error). */
static int query_fails(void *extra, MPI_Status *s) {
    (void)s;
    queries++;
    return *(int *)extra;
}

static int release_fails(void *extra) {
    frees++;
    return *(int *)extra;
}

static int cancels, last_complete = -1;

static int cancel(void *extra, int complete) {
    (void)extra;
    cancels++;
    last_complete = complete;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int five = 5, flag = -1;
    MPI_Request g;
    CHECK(MPI_Grequest_start(query, release, cancel, &five, &g) == MPI_SUCCESS);
    CHECK(g != MPI_REQUEST_NULL);
    MPI_Status s;
    CHECK(MPI_Test(&g, &flag, &s) == MPI_SUCCESS && flag == 0); /* pending */
    CHECK(MPI_Cancel(&g) == MPI_SUCCESS && cancels == 1 && last_complete == 0);
    CHECK(MPI_Grequest_complete(g) == MPI_SUCCESS && queries == 0 && frees == 0); /* the wait queries */
    CHECK(MPI_Cancel(&g) == MPI_SUCCESS && cancels == 2 && last_complete == 1);
    CHECK(MPI_Request_get_status(g, &flag, &s) == MPI_SUCCESS && flag == 1 && queries == 1);
    CHECK(s.MPI_TAG == 42 && g != MPI_REQUEST_NULL);
    CHECK(MPI_Wait(&g, &s) == MPI_SUCCESS && g == MPI_REQUEST_NULL && queries == 2);
    CHECK(frees == 1); /* freed by the wait */
    int n;
    MPI_Get_count(&s, MPI_INT, &n);
    CHECK(n == 5 && s.MPI_SOURCE == rank && s.MPI_TAG == 42);

    /* Mixed with a receive in Waitall. */
    int seven = 7, x = rank, y = -1;
    MPI_Request rs[2];
    MPI_Grequest_start(query, release, cancel, &seven, &rs[0]);
    MPI_Irecv(&y, 1, MPI_INT, (rank + size - 1) % size, 1, MPI_COMM_WORLD, &rs[1]);
    MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD);
    MPI_Grequest_complete(rs[0]);
    MPI_Status ss[2];
    CHECK(MPI_Waitall(2, rs, ss) == MPI_SUCCESS);
    MPI_Get_count(&ss[0], MPI_INT, &n);
    CHECK(n == 7 && ss[0].MPI_TAG == 42 && y == (rank + size - 1) % size && frees == 2);

    /* Freed before completion: completing it later still runs the functions. */
    MPI_Grequest_start(query, release, cancel, &five, &g);
    MPI_Request keep = g;
    CHECK(MPI_Request_free(&g) == MPI_SUCCESS && g == MPI_REQUEST_NULL);
    CHECK(MPI_Grequest_complete(keep) == MPI_SUCCESS && frees == 3);
    int e;
    MPI_Error_class(MPI_Grequest_complete(keep), &e);
    CHECK(e == MPI_ERR_REQUEST);

    /* Errors of the functions are the completing call's (mpi4py's test_grequest). */
    int bad = MPI_ERR_BUFFER, ok = MPI_SUCCESS, e2;
    frees = queries = 0;
    MPI_Grequest_start(query_fails, release, cancel, &bad, &g);
    MPI_Grequest_complete(g); /* not the query's error: the wait's */
    MPI_Error_class(MPI_Wait(&g, MPI_STATUS_IGNORE), &e2);
    CHECK(e2 == MPI_ERR_BUFFER && queries == 1 && frees == 1 && g == MPI_REQUEST_NULL);
    MPI_Grequest_start(query, release_fails, cancel, &bad, &g);
    MPI_Grequest_complete(g);
    MPI_Error_class(MPI_Test(&g, &flag, &s), &e2);
    CHECK(e2 == MPI_ERR_BUFFER && frees == 2 && g == MPI_REQUEST_NULL);
    MPI_Grequest_start(query_fails, release_fails, cancel, &ok, &rs[0]);
    MPI_Grequest_start(query_fails, release, cancel, &bad, &rs[1]);
    MPI_Grequest_complete(rs[1]);
    MPI_Grequest_complete(rs[0]);
    CHECK(MPI_Waitall(2, rs, ss) == MPI_ERR_IN_STATUS);
    CHECK(ss[0].MPI_ERROR == MPI_SUCCESS && ss[1].MPI_ERROR == MPI_ERR_BUFFER && frees == 4);
    CHECK(queries == 4);
    MPI_Grequest_start(query_fails, release_fails, cancel, &bad, &g);
    keep = g;
    CHECK(MPI_Request_free(&g) == MPI_SUCCESS && frees == 4); /* pending: free_fn comes later */
    MPI_Error_class(MPI_Grequest_complete(keep), &e2); /* last of the two: free_fn, no query */
    CHECK(e2 == MPI_ERR_BUFFER && frees == 5 && queries == 4);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
