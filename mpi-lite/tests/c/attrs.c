/* Attribute caching (MPI-3.1 §6.7): keyvals, copy/delete callbacks on dup and free,
 * predefined keys, type and window keyvals, the MPI-1 names, MPI_COMM_SELF's attributes
 * deleted at MPI_Finalize, wrong keyvals -> MPI_ERR_KEYVAL. */
#include "check.h"
#include <stdint.h>

static int copies, deletes, self_deleted;
static intptr_t last_deleted = -1;

static int copy_fn(MPI_Comm old, int kv, void *extra, void *in, void *out, int *flag) {
    (void)kv;
    CHECK(extra == (void *)&copies);
    /* A callback may call MPI: the library holds no lock while it runs. */
    int r = -1;
    CHECK(MPI_Comm_rank(old, &r) == MPI_SUCCESS && r == rank);
    copies++;
    *(void **)out = (void *)((intptr_t)in + 1000);
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int kv, void *val, void *extra) {
    (void)c; (void)kv; (void)extra;
    deletes++;
    last_deleted = (intptr_t)val;
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Comm old, int kv, void *extra, void *in, void *out, int *flag) {
    (void)old; (void)kv; (void)extra; (void)in; (void)out; (void)flag;
    return MPI_ERR_OTHER;
}

static int self_delete(MPI_Comm c, int kv, void *val, void *extra) {
    (void)kv; (void)extra;
    CHECK(c == MPI_COMM_SELF && (intptr_t)val == 77);
    int r; /* MPI still works during MPI_Finalize's first step */
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS);
    self_deleted++;
    return MPI_SUCCESS;
}

static int type_copies, type_deletes;
static int type_copy(MPI_Datatype t, int kv, void *extra, void *in, void *out, int *flag) {
    (void)t; (void)kv; (void)extra;
    type_copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int type_delete(MPI_Datatype t, int kv, void *val, void *extra) {
    (void)t; (void)kv; (void)val; (void)extra;
    type_deletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    void *v;
    int flag;

    /* Predefined keys. */
    int *ub;
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && *ub >= 32767);
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL) == MPI_ERR_KEYVAL);
    CHECK(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB) == MPI_ERR_KEYVAL);

    /* A user key with callbacks. */
    int kv = MPI_KEYVAL_INVALID;
    CHECK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &copies) == MPI_SUCCESS);
    CHECK(kv != MPI_KEYVAL_INVALID);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, kv, &v, &flag) == MPI_SUCCESS && flag == 0);
    MPI_Comm a;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    CHECK(MPI_Comm_set_attr(a, kv, (void *)(intptr_t)5) == MPI_SUCCESS);
    CHECK(MPI_Comm_get_attr(a, kv, &v, &flag) == MPI_SUCCESS && flag && (intptr_t)v == 5);
    /* Setting again deletes the old value first. */
    CHECK(MPI_Comm_set_attr(a, kv, (void *)(intptr_t)7) == MPI_SUCCESS);
    CHECK(deletes == 1 && last_deleted == 5);
    /* Dup: the copy callback decides the new value. */
    MPI_Comm b;
    CHECK(MPI_Comm_dup(a, &b) == MPI_SUCCESS);
    CHECK(copies == 1);
    CHECK(MPI_Comm_get_attr(b, kv, &v, &flag) == MPI_SUCCESS && flag && (intptr_t)v == 1007);
    CHECK(MPI_Comm_get_attr(a, kv, &v, &flag) == MPI_SUCCESS && flag && (intptr_t)v == 7);
    /* Delete_attr calls the delete callback; the attribute is gone. */
    CHECK(MPI_Comm_delete_attr(a, kv) == MPI_SUCCESS && deletes == 2 && last_deleted == 7);
    CHECK(MPI_Comm_get_attr(a, kv, &v, &flag) == MPI_SUCCESS && flag == 0);
    /* Freeing the keyval keeps b's attribute until b is freed. */
    CHECK(MPI_Comm_free_keyval(&kv) == MPI_SUCCESS && kv == MPI_KEYVAL_INVALID);
    CHECK(MPI_Comm_free(&b) == MPI_SUCCESS && b == MPI_COMM_NULL);
    CHECK(deletes == 3 && last_deleted == 1007);

    /* MPI_COMM_DUP_FN copies, MPI_COMM_NULL_COPY_FN does not. */
    int kd, kn;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kd, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kn, NULL);
    MPI_Comm_set_attr(a, kd, (void *)(intptr_t)11);
    MPI_Comm_set_attr(a, kn, (void *)(intptr_t)12);
    MPI_Comm c;
    MPI_Comm_dup(a, &c);
    CHECK(MPI_Comm_get_attr(c, kd, &v, &flag) == MPI_SUCCESS && flag && (intptr_t)v == 11);
    CHECK(MPI_Comm_get_attr(c, kn, &v, &flag) == MPI_SUCCESS && flag == 0);
    MPI_Comm_free(&c);

    /* A failing copy callback fails the dup. */
    int kf;
    MPI_Comm_create_keyval(failing_copy, MPI_COMM_NULL_DELETE_FN, &kf, NULL);
    MPI_Comm_set_attr(a, kf, NULL);
    MPI_Comm d = MPI_COMM_NULL;
    CHECK(MPI_Comm_dup(a, &d) != MPI_SUCCESS);
    MPI_Comm_delete_attr(a, kf);
    MPI_Comm_free_keyval(&kf);

    /* Wrong keyvals. */
    CHECK(MPI_Comm_get_attr(a, 12345, &v, &flag) == MPI_ERR_KEYVAL);
    CHECK(MPI_Comm_set_attr(a, 12345, NULL) == MPI_ERR_KEYVAL);
    int freed = kd;
    MPI_Comm_free_keyval(&kd);
    MPI_Comm_free(&a); /* a's kd attribute goes with it: the keyval is gone now */
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, freed, NULL) == MPI_ERR_KEYVAL);
    CHECK(MPI_Comm_free_keyval(&freed) == MPI_ERR_KEYVAL);

    /* Datatype keyvals: copied by Type_dup, deleted by Type_free; not for communicators. */
    int kt;
    CHECK(MPI_Type_create_keyval(type_copy, type_delete, &kt, NULL) == MPI_SUCCESS);
    MPI_Datatype t, t2;
    MPI_Type_contiguous(2, MPI_INT, &t);
    CHECK(MPI_Type_set_attr(t, kt, (void *)(intptr_t)3) == MPI_SUCCESS);
    CHECK(MPI_Type_dup(t, &t2) == MPI_SUCCESS && type_copies == 1);
    CHECK(MPI_Type_get_attr(t2, kt, &v, &flag) == MPI_SUCCESS && flag && (intptr_t)v == 3);
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, kt, NULL) == MPI_ERR_KEYVAL);
    MPI_Type_free(&t);
    MPI_Type_free(&t2);
    CHECK(type_deletes == 2);
    CHECK(MPI_Type_delete_attr(MPI_INT, kt) == MPI_SUCCESS); /* not set: nothing to do */
    MPI_Type_free_keyval(&kt);

    /* Window keyvals exist; no window does yet. */
    int kw;
    CHECK(MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &kw, NULL) == MPI_SUCCESS);
    CHECK(MPI_Win_set_attr(MPI_WIN_NULL, kw, NULL) == MPI_ERR_WIN);
    CHECK(MPI_Win_free_keyval(&kw) == MPI_SUCCESS);

    /* MPI-1 names. */
    int k1;
    CHECK(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &k1, NULL) == MPI_SUCCESS);
    CHECK(MPI_Attr_put(MPI_COMM_WORLD, k1, (void *)(intptr_t)9) == MPI_SUCCESS);
    CHECK(MPI_Attr_get(MPI_COMM_WORLD, k1, &v, &flag) == MPI_SUCCESS && flag && (intptr_t)v == 9);
    CHECK(MPI_Attr_delete(MPI_COMM_WORLD, k1) == MPI_SUCCESS);
    CHECK(MPI_Attr_get(MPI_COMM_WORLD, k1, &v, &flag) == MPI_SUCCESS && !flag);
    CHECK(MPI_Keyval_free(&k1) == MPI_SUCCESS);

    /* MPI_COMM_SELF's attributes are deleted by MPI_Finalize. */
    int ks;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &ks, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, ks, (void *)(intptr_t)77);
    MPI_Finalize();
    if (self_deleted != 1) {
        fprintf(stderr, "attrs: rank %d: MPI_COMM_SELF attribute deleted %d times\n", rank, self_deleted);
        return 1;
    }
    return 0;
}
