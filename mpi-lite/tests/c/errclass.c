/* Error classes, codes and handlers (MPI-3.1 §8.3-8.5): every class has a string, user
 * classes/codes/strings, user error handlers (called with the library usable: the handler
 * calls MPI), Comm_call_errhandler, the classes of Errhandler_free(NULL), Info_delete of an
 * absent key and Comm_get_attr of a bad keyval, MPI_WEIGHTS_EMPTY graphs, and the error
 * string of an unsupported call naming that call. Any rank count >= 2. */
#include "check.h"
#include <string.h>

static int cls(int code) {
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

static int calls, last_code;
static char last_msg[MPI_MAX_ERROR_STRING];

static void handler(MPI_Comm *comm, int *code, ...) {
    int len, r;
    calls++;
    last_code = *code;
    /* MPI inside a handler: the library's lock is not held. */
    CHECK(MPI_Error_string(*code, last_msg, &len) == MPI_SUCCESS);
    CHECK(MPI_Comm_rank(*comm, &r) == MPI_SUCCESS && r == rank);
}

static void file_handler(MPI_File *f, int *code, ...) {
    calls++;
    last_code = *code;
    CHECK(*f == MPI_FILE_NULL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char msg[MPI_MAX_ERROR_STRING];
    int len;

    /* Every class of MPI-3.1 exists, is its own class and has a string naming it. */
    int all[] = {MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
        MPI_ERR_RANK, MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP, MPI_ERR_TOPOLOGY,
        MPI_ERR_DIMS, MPI_ERR_ARG, MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER, MPI_ERR_INTERN,
        MPI_ERR_IN_STATUS, MPI_ERR_PENDING, MPI_ERR_KEYVAL, MPI_ERR_NO_MEM, MPI_ERR_BASE,
        MPI_ERR_INFO_KEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO_NOKEY, MPI_ERR_SPAWN, MPI_ERR_PORT,
        MPI_ERR_SERVICE, MPI_ERR_NAME, MPI_ERR_WIN, MPI_ERR_SIZE, MPI_ERR_DISP, MPI_ERR_INFO,
        MPI_ERR_LOCKTYPE, MPI_ERR_ASSERT, MPI_ERR_RMA_CONFLICT, MPI_ERR_RMA_SYNC, MPI_ERR_RMA_RANGE,
        MPI_ERR_RMA_ATTACH, MPI_ERR_RMA_SHARED, MPI_ERR_RMA_FLAVOR, MPI_ERR_FILE, MPI_ERR_NOT_SAME,
        MPI_ERR_AMODE, MPI_ERR_UNSUPPORTED_DATAREP, MPI_ERR_UNSUPPORTED_OPERATION,
        MPI_ERR_NO_SUCH_FILE, MPI_ERR_FILE_EXISTS, MPI_ERR_BAD_FILE, MPI_ERR_ACCESS,
        MPI_ERR_NO_SPACE, MPI_ERR_QUOTA, MPI_ERR_READ_ONLY, MPI_ERR_FILE_IN_USE,
        MPI_ERR_DUP_DATAREP, MPI_ERR_CONVERSION, MPI_ERR_IO, MPI_T_ERR_MEMORY,
        MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_CANNOT_INIT, MPI_T_ERR_INVALID_INDEX,
        MPI_T_ERR_INVALID_ITEM, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_OUT_OF_HANDLES,
        MPI_T_ERR_OUT_OF_SESSIONS, MPI_T_ERR_INVALID_SESSION, MPI_T_ERR_CVAR_SET_NOT_NOW,
        MPI_T_ERR_CVAR_SET_NEVER, MPI_T_ERR_PVAR_NO_STARTSTOP, MPI_T_ERR_PVAR_NO_WRITE,
        MPI_T_ERR_PVAR_NO_ATOMIC, MPI_T_ERR_INVALID_NAME, MPI_T_ERR_INVALID};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(all[i] <= MPI_ERR_LASTCODE && cls(all[i]) == all[i]);
        CHECK(MPI_Error_string(all[i], msg, &len) == MPI_SUCCESS && len > 0);
        for (unsigned j = 0; j < i; j++) CHECK(all[i] != all[j]);
    }
    MPI_Error_string(MPI_ERR_KEYVAL, msg, &len);
    CHECK(strstr(msg, "MPI_ERR_KEYVAL") != NULL);

    /* User classes, codes, strings; MPI_LASTUSEDCODE follows them. */
    int c1, k1, k2, *last, flag;
    CHECK(MPI_Add_error_class(&c1) == MPI_SUCCESS);
    CHECK(MPI_Add_error_code(c1, &k1) == MPI_SUCCESS && MPI_Add_error_code(c1, &k2) == MPI_SUCCESS);
    CHECK(c1 > MPI_ERR_LASTCODE && k1 != c1 && k2 != k1 && cls(k1) == c1 && cls(k2) == c1);
    CHECK(MPI_Add_error_string(k1, "my own error") == MPI_SUCCESS);
    MPI_Error_string(k1, msg, &len);
    CHECK(strcmp(msg, "my own error") == 0 && len == 12);
    CHECK(cls(MPI_Add_error_string(MPI_ERR_TAG, "no")) == MPI_ERR_ARG);
    CHECK(cls(MPI_Add_error_code(12345, &k2)) == MPI_ERR_ARG);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag) == MPI_SUCCESS);
    CHECK(flag && *last >= k2);

    /* A user handler: called with (comm, code), may call MPI, the call returns the code. */
    MPI_Errhandler eh, got;
    CHECK(MPI_Comm_create_errhandler(handler, &eh) == MPI_SUCCESS);
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    CHECK(MPI_Comm_set_errhandler(d, eh) == MPI_SUCCESS);
    MPI_Comm_get_errhandler(d, &got);
    CHECK(got == eh);
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, d);
    CHECK(cls(rc) == MPI_ERR_RANK && calls == 1 && last_code == rc && strstr(last_msg, "RANK") != NULL);
    CHECK(MPI_Comm_call_errhandler(d, k1) == MPI_SUCCESS);
    CHECK(calls == 2 && last_code == k1 && strcmp(last_msg, "my own error") == 0);
    CHECK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_TAG) == MPI_SUCCESS); /* ERRORS_RETURN */
    CHECK(MPI_Errhandler_free(&eh) == MPI_SUCCESS && eh == MPI_ERRHANDLER_NULL);
    rc = MPI_Send(&x, 1, MPI_INT, -9, 0, d); /* a freed handler stays with its communicator */
    CHECK(calls == 3 && cls(rc) == MPI_ERR_RANK);
    MPI_Comm_free(&d);
    CHECK(cls(MPI_Errhandler_free(&eh)) == MPI_ERR_ARG); /* MPI_ERRHANDLER_NULL */
    CHECK(cls(MPI_Comm_set_errhandler(MPI_COMM_WORLD, 777)) == MPI_ERR_ARG);

    /* Files (none can be opened) and windows (none exist): MPI_FILE_NULL's handler. */
    MPI_Errhandler fe;
    CHECK(MPI_File_get_errhandler(MPI_FILE_NULL, &fe) == MPI_SUCCESS && fe == MPI_ERRORS_RETURN);
    CHECK(MPI_File_create_errhandler(file_handler, &fe) == MPI_SUCCESS);
    CHECK(cls(MPI_Comm_set_errhandler(MPI_COMM_WORLD, fe)) == MPI_ERR_ARG); /* a file handler */
    CHECK(MPI_File_set_errhandler(MPI_FILE_NULL, fe) == MPI_SUCCESS);
    CHECK(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO) == MPI_SUCCESS && calls == 4 && last_code == MPI_ERR_IO);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&fe);
    CHECK(cls(MPI_Win_call_errhandler(MPI_WIN_NULL, MPI_ERR_IO)) == MPI_ERR_WIN);

    /* MPI_Cancel(MPI_REQUEST_NULL) is an error (mpi4py's test_exceptions). */
    MPI_Request rn = MPI_REQUEST_NULL;
    CHECK(cls(MPI_Cancel(&rn)) == MPI_ERR_REQUEST);
    /* MPI_REPLACE / MPI_NO_OP do not commute (were MPI_ERR_OP). */
    int com = -1;
    CHECK(MPI_Op_commutative(MPI_REPLACE, &com) == MPI_SUCCESS && com == 0);

    /* Classes of three fixed defects. */
    MPI_Info info;
    MPI_Info_create(&info);
    CHECK(cls(MPI_Info_delete(info, "absent")) == MPI_ERR_INFO_NOKEY);
    MPI_Info_free(&info);
    void *v;
    CHECK(cls(MPI_Comm_get_attr(MPI_COMM_WORLD, 0x12345, &v, &flag)) == MPI_ERR_KEYVAL);
    /* MPI_WEIGHTS_EMPTY: a weighted graph with no neighbours on this side. */
    MPI_Comm g;
    int nb = (rank + 1) % size, w = 5;
    if (rank == 0) {
        CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL,
              MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &g) == MPI_SUCCESS);
    } else {
        CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 1, &nb, &w,
              MPI_INFO_NULL, 0, &g) == MPI_SUCCESS);
    }
    int indeg, outdeg, weighted;
    MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted);
    CHECK(weighted);
    MPI_Comm_free(&g);
    MPI_Comm_dup(MPI_COMM_WORLD, &g); /* (keeps the collective sequence aligned) */
    MPI_Comm_free(&g);

    /* A window's errors go to its handler (MPI_Win_detach of nothing attached). */
    MPI_Win win;
    char buf[8];
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS);
    CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN) == MPI_SUCCESS);
    rc = MPI_Win_detach(win, buf);
    CHECK(cls(rc) == MPI_ERR_RMA_ATTACH);
    CHECK(MPI_Win_free(&win) == MPI_SUCCESS);

    MPI_Finalize();
    return 0;
}
