/* Intercommunicators (MPI-3.1 §6.6, §5.2.2): the even and the odd world ranks as two
 * groups (sizes differ with 3 ranks), MPI_Intercomm_create over MPI_COMM_WORLD; test_inter,
 * sizes and the remote group; point-to-point both ways (ranks name the remote group,
 * eager and rendezvous, wildcards); every blocking collective with checked data, the
 * rooted ones with MPI_ROOT / MPI_PROC_NULL in the root's group, from each side;
 * Intercomm_merge with every high ordering; dup (attribute copy), idup, split (an empty
 * side gives MPI_COMM_NULL), create, compare, names; the nonblocking collectives the same
 * way, and two at once; the calls that need an intracommunicator fail with MPI_ERR_COMM. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

static int color, lrank, lsize, rsize;

/* World rank of remote rank j, of local rank j. */
static int rw(int j) { return 2 * j + (1 - color); }
static int lw(int j) { return 2 * j + color; }

/* Each collective blocking, or (nb) its nonblocking form waited for at once. */
static int nb;
static MPI_Request q_;
static int wait_(int e) { return e != MPI_SUCCESS ? e : MPI_Wait(&q_, MPI_STATUS_IGNORE); }
#define CV const void
#define CI const int
typedef MPI_Datatype DT;
static int Barrier(MPI_Comm c) { return nb ? wait_(MPI_Ibarrier(c, &q_)) : MPI_Barrier(c); }
static int Bcast(void *b, int n, DT t, int root, MPI_Comm c) {
    return nb ? wait_(MPI_Ibcast(b, n, t, root, c, &q_)) : MPI_Bcast(b, n, t, root, c);
}
static int Reduce(CV *s, void *r, int n, DT t, MPI_Op o, int root, MPI_Comm c) {
    return nb ? wait_(MPI_Ireduce(s, r, n, t, o, root, c, &q_)) : MPI_Reduce(s, r, n, t, o, root, c);
}
static int Allreduce(CV *s, void *r, int n, DT t, MPI_Op o, MPI_Comm c) {
    return nb ? wait_(MPI_Iallreduce(s, r, n, t, o, c, &q_)) : MPI_Allreduce(s, r, n, t, o, c);
}
static int Gather(CV *s, int sn, DT st, void *r, int rn, DT rt, int root, MPI_Comm c) {
    return nb ? wait_(MPI_Igather(s, sn, st, r, rn, rt, root, c, &q_))
              : MPI_Gather(s, sn, st, r, rn, rt, root, c);
}
static int Gatherv(CV *s, int sn, DT st, void *r, CI *rc, CI *rd, DT rt, int root, MPI_Comm c) {
    return nb ? wait_(MPI_Igatherv(s, sn, st, r, rc, rd, rt, root, c, &q_))
              : MPI_Gatherv(s, sn, st, r, rc, rd, rt, root, c);
}
static int Scatter(CV *s, int sn, DT st, void *r, int rn, DT rt, int root, MPI_Comm c) {
    return nb ? wait_(MPI_Iscatter(s, sn, st, r, rn, rt, root, c, &q_))
              : MPI_Scatter(s, sn, st, r, rn, rt, root, c);
}
static int Scatterv(CV *s, CI *sc, CI *sd, DT st, void *r, int rn, DT rt, int root, MPI_Comm c) {
    return nb ? wait_(MPI_Iscatterv(s, sc, sd, st, r, rn, rt, root, c, &q_))
              : MPI_Scatterv(s, sc, sd, st, r, rn, rt, root, c);
}
static int Allgather(CV *s, int sn, DT st, void *r, int rn, DT rt, MPI_Comm c) {
    return nb ? wait_(MPI_Iallgather(s, sn, st, r, rn, rt, c, &q_)) : MPI_Allgather(s, sn, st, r, rn, rt, c);
}
static int Allgatherv(CV *s, int sn, DT st, void *r, CI *rc, CI *rd, DT rt, MPI_Comm c) {
    return nb ? wait_(MPI_Iallgatherv(s, sn, st, r, rc, rd, rt, c, &q_))
              : MPI_Allgatherv(s, sn, st, r, rc, rd, rt, c);
}
static int Alltoall(CV *s, int sn, DT st, void *r, int rn, DT rt, MPI_Comm c) {
    return nb ? wait_(MPI_Ialltoall(s, sn, st, r, rn, rt, c, &q_)) : MPI_Alltoall(s, sn, st, r, rn, rt, c);
}
static int Alltoallv(CV *s, CI *sc, CI *sd, DT st, void *r, CI *rc, CI *rd, DT rt, MPI_Comm c) {
    return nb ? wait_(MPI_Ialltoallv(s, sc, sd, st, r, rc, rd, rt, c, &q_))
              : MPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, c);
}
static int Alltoallw(CV *s, CI *sc, CI *sd, const DT *st, void *r, CI *rc, CI *rd, const DT *rt, MPI_Comm c) {
    return nb ? wait_(MPI_Ialltoallw(s, sc, sd, st, r, rc, rd, rt, c, &q_))
              : MPI_Alltoallw(s, sc, sd, st, r, rc, rd, rt, c);
}
static int Reduce_scatter(CV *s, void *r, CI *rc, DT t, MPI_Op o, MPI_Comm c) {
    return nb ? wait_(MPI_Ireduce_scatter(s, r, rc, t, o, c, &q_)) : MPI_Reduce_scatter(s, r, rc, t, o, c);
}
static int Reduce_scatter_block(CV *s, void *r, int n, DT t, MPI_Op o, MPI_Comm c) {
    return nb ? wait_(MPI_Ireduce_scatter_block(s, r, n, t, o, c, &q_))
              : MPI_Reduce_scatter_block(s, r, n, t, o, c);
}

static MPI_Comm handled_on;
static int handled;
static void on_error(MPI_Comm *c, int *code, ...) {
    handled_on = *c;
    handled = *code;
}

static int copies;
static int count_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)k; (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static void point_to_point(MPI_Comm ic) {
    /* Each local rank sends to every remote rank; tag = sender's local rank. */
    MPI_Request rq[8];
    int out[8], in[8];
    for (int j = 0; j < rsize; j++) {
        out[j] = 1000 * rank + j;
        CHECK(MPI_Isend(&out[j], 1, MPI_INT, j, lrank, ic, &rq[j]) == MPI_SUCCESS);
    }
    for (int j = 0; j < rsize; j++) {
        MPI_Status s;
        CHECK(MPI_Recv(&in[j], 1, MPI_INT, j, j, ic, &s) == MPI_SUCCESS);
        CHECK(s.MPI_SOURCE == j && s.MPI_TAG == j && in[j] == 1000 * rw(j) + lrank);
    }
    CHECK(MPI_Waitall(rsize, rq, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    /* Wildcards: every remote rank sends once more; the source tells who. */
    for (int j = 0; j < rsize; j++)
        CHECK(MPI_Isend(&out[j], 1, MPI_INT, j, 77, ic, &rq[j]) == MPI_SUCCESS);
    int seen = 0;
    for (int j = 0; j < rsize; j++) {
        MPI_Status s;
        int v;
        CHECK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 77, ic, &s) == MPI_SUCCESS);
        CHECK(s.MPI_TAG == 77 && s.MPI_SOURCE >= 0 && s.MPI_SOURCE < rsize);
        CHECK(v == 1000 * rw(s.MPI_SOURCE) + lrank);
        seen |= 1 << s.MPI_SOURCE;
    }
    CHECK(seen == (1 << rsize) - 1);
    CHECK(MPI_Waitall(rsize, rq, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    /* Rendezvous both ways between the leaders, with Sendrecv. */
    if (lrank == 0) {
        enum { N = 100000 };
        int *a = malloc(N * sizeof(int)), *b = malloc(N * sizeof(int));
        for (int i = 0; i < N; i++) a[i] = rank * N + i;
        MPI_Status s;
        CHECK(MPI_Sendrecv(a, N, MPI_INT, 0, 5, b, N, MPI_INT, 0, 5, ic, &s) == MPI_SUCCESS);
        CHECK(s.MPI_SOURCE == 0);
        for (int i = 0; i < N; i++) CHECK(b[i] == rw(0) * N + i);
        free(a);
        free(b);
    }
    /* Persistent requests and a matched probe between the leaders. */
    if (lrank == 0) {
        int po = 10 * rank, pi = -1, mo = 20 * rank, mi = -1;
        MPI_Request pr[2], mq;
        CHECK(MPI_Send_init(&po, 1, MPI_INT, 0, 9, ic, &pr[0]) == MPI_SUCCESS);
        CHECK(MPI_Recv_init(&pi, 1, MPI_INT, 0, 9, ic, &pr[1]) == MPI_SUCCESS);
        CHECK(MPI_Startall(2, pr) == MPI_SUCCESS);
        CHECK(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE) == MPI_SUCCESS && pi == 10 * rw(0));
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        CHECK(MPI_Isend(&mo, 1, MPI_INT, 0, 10, ic, &mq) == MPI_SUCCESS);
        MPI_Message msg;
        MPI_Status s;
        CHECK(MPI_Mprobe(0, 10, ic, &msg, &s) == MPI_SUCCESS && s.MPI_SOURCE == 0);
        CHECK(MPI_Mrecv(&mi, 1, MPI_INT, &msg, &s) == MPI_SUCCESS && mi == 20 * rw(0));
        CHECK(MPI_Wait(&mq, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    }
    /* Ranks name the remote group: one past it is MPI_ERR_RANK; PROC_NULL is fine. */
    int v = 0;
    CHECK(MPI_Send(&v, 1, MPI_INT, rsize, 0, ic) == MPI_ERR_RANK);
    CHECK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, ic) == MPI_SUCCESS);
}

/* The rooted collectives with the root at local rank 0 of group `from`. */
static void rooted(MPI_Comm ic, int from) {
    int me_root = color == from && lrank == 0;
    int root = color == from ? (me_root ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int rootw = from; /* world rank of the root */
    int b[4] = {0, 0, 0, 0};
    int *big = calloc(64, sizeof(int));

    /* Bcast. */
    if (me_root) for (int i = 0; i < 4; i++) b[i] = 40 + i + from;
    CHECK(Bcast(b, 4, MPI_INT, root, ic) == MPI_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(b[i] == (color == from && !me_root ? 0 : 40 + i + from));

    /* Reduce: the root gets the other group's sum. */
    int in[2] = {rank, 1}, r[2] = {-1, -1};
    CHECK(Reduce(in, r, 2, MPI_INT, MPI_SUM, root, ic) == MPI_SUCCESS);
    if (me_root) {
        int want = 0;
        for (int j = 0; j < rsize; j++) want += rw(j);
        CHECK(r[0] == want && r[1] == rsize);
    } else {
        CHECK(r[0] == -1);
    }

    /* Gather: the root gets [w, 10w] of every remote rank. */
    int g2[2] = {rank, 10 * rank};
    CHECK(Gather(g2, 2, MPI_INT, big, 2, MPI_INT, root, ic) == MPI_SUCCESS);
    if (me_root)
        for (int j = 0; j < rsize; j++) CHECK(big[2 * j] == rw(j) && big[2 * j + 1] == 10 * rw(j));

    /* Gatherv: remote j sends j + 1 values at displacement 5j. */
    int gv[8], counts[8], displs[8];
    for (int i = 0; i <= lrank; i++) gv[i] = 100 * rank + i;
    for (int j = 0; j < rsize; j++) counts[j] = j + 1, displs[j] = 5 * j;
    memset(big, 0, 64 * sizeof(int));
    CHECK(Gatherv(gv, lrank + 1, MPI_INT, big, counts, displs, MPI_INT, root, ic) == MPI_SUCCESS);
    if (me_root)
        for (int j = 0; j < rsize; j++)
            for (int i = 0; i <= j; i++) CHECK(big[5 * j + i] == 100 * rw(j) + i);

    /* Scatter: block j = [j, w_root]. */
    int s2[2] = {-1, -1};
    if (me_root)
        for (int j = 0; j < rsize; j++) big[2 * j] = j, big[2 * j + 1] = rank;
    CHECK(Scatter(big, 2, MPI_INT, s2, 2, MPI_INT, root, ic) == MPI_SUCCESS);
    if (color != from) CHECK(s2[0] == lrank && s2[1] == rootw);

    /* Scatterv: remote j gets j + 1 values from displacement 5j. */
    if (me_root)
        for (int j = 0; j < rsize; j++)
            for (int i = 0; i <= j; i++) big[5 * j + i] = 7 * j + i;
    int sv[8] = {0};
    CHECK(Scatterv(big, counts, displs, MPI_INT, sv, lrank + 1, MPI_INT, root, ic) == MPI_SUCCESS);
    if (color != from)
        for (int i = 0; i <= lrank; i++) CHECK(sv[i] == 7 * lrank + i);

    /* Rendezvous sizes (above the eager limit) through the root and the leader. */
    enum { L = 50000 };
    int *l = malloc(L * sizeof(int));
    for (int i = 0; i < L; i++) l[i] = me_root ? i * 3 + from : -1;
    CHECK(Bcast(l, L, MPI_INT, root, ic) == MPI_SUCCESS);
    for (int i = 0; i < L; i++) CHECK(l[i] == (color == from && !me_root ? -1 : i * 3 + from));
    free(l);

    /* A root that is neither MPI_ROOT, MPI_PROC_NULL nor a remote rank, everywhere. */
    CHECK(Bcast(b, 1, MPI_INT, rsize, ic) == MPI_ERR_ROOT);
    free(big);
}

static void all_to_all(MPI_Comm ic) {
    int a[16], r[16];

    /* Allreduce: the other group's sum and max. */
    int in = rank + 1, sum = -1, mx = -1;
    CHECK(Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS);
    CHECK(Allreduce(&in, &mx, 1, MPI_INT, MPI_MAX, ic) == MPI_SUCCESS);
    int want = 0;
    for (int j = 0; j < rsize; j++) want += rw(j) + 1;
    CHECK(sum == want && mx == rw(rsize - 1) + 1);
    double d = rank, dsum = 0;
    CHECK(Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, ic) == MPI_SUCCESS);
    CHECK(dsum == want - rsize);

    /* Allgather: every remote rank's [w, -w]. */
    int mine[2] = {rank, -rank};
    CHECK(Allgather(mine, 2, MPI_INT, r, 2, MPI_INT, ic) == MPI_SUCCESS);
    for (int j = 0; j < rsize; j++) CHECK(r[2 * j] == rw(j) && r[2 * j + 1] == -rw(j));

    /* Allgatherv: remote j gives j + 1 values, placed at 4j. */
    int counts[8], displs[8];
    for (int j = 0; j < rsize; j++) counts[j] = j + 1, displs[j] = 4 * j;
    for (int i = 0; i <= lrank; i++) a[i] = 50 * rank + i;
    memset(r, 0, sizeof r);
    CHECK(Allgatherv(a, lrank + 1, MPI_INT, r, counts, displs, MPI_INT, ic) == MPI_SUCCESS);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i <= j; i++) CHECK(r[4 * j + i] == 50 * rw(j) + i);

    /* Alltoall: block j (2 ints) to remote j. */
    for (int j = 0; j < rsize; j++) a[2 * j] = 100 * rank + j, a[2 * j + 1] = rank;
    CHECK(Alltoall(a, 2, MPI_INT, r, 2, MPI_INT, ic) == MPI_SUCCESS);
    for (int j = 0; j < rsize; j++) CHECK(r[2 * j] == 100 * rw(j) + lrank && r[2 * j + 1] == rw(j));

    /* Alltoallv: lrank + 1 values to every remote rank; from remote j, j + 1 values. */
    int sc[8], sd[8], rc[8], rd[8];
    for (int j = 0; j < rsize; j++) {
        sc[j] = lrank + 1, sd[j] = 3 * j;
        rc[j] = j + 1, rd[j] = 3 * j;
        for (int i = 0; i <= lrank; i++) a[3 * j + i] = 1000 * rank + 10 * j + i;
    }
    memset(r, 0, sizeof r);
    CHECK(Alltoallv(a, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ic) == MPI_SUCCESS);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i <= j; i++) CHECK(r[3 * j + i] == 1000 * rw(j) + 10 * lrank + i);

    /* Alltoallw: one int to each remote rank, byte displacements. */
    MPI_Datatype wt[8];
    for (int j = 0; j < rsize; j++) {
        sc[j] = rc[j] = 1, sd[j] = rd[j] = (int)(j * sizeof(int)), wt[j] = MPI_INT;
        a[j] = 10 * rank + j;
    }
    memset(r, 0, sizeof r);
    CHECK(Alltoallw(a, sc, sd, wt, r, rc, rd, wt, ic) == MPI_SUCCESS);
    for (int j = 0; j < rsize; j++) CHECK(r[j] == 10 * rw(j) + lrank);

    /* Reduce_scatter(_block): 4 values in all in each group; the other group's sums,
     * scattered here ([4] with one member, [1, 3] with two). */
    for (int e = 0; e < 4; e++) a[e] = 10 * rank + e;
    int rcs[2] = {lsize == 1 ? 4 : 1, 3}, at = lrank == 0 ? 0 : 1;
    memset(r, 0, sizeof r);
    CHECK(Reduce_scatter(a, r, rcs, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS);
    for (int e = 0; e < rcs[lrank]; e++) {
        int w = 0;
        for (int j = 0; j < rsize; j++) w += 10 * rw(j) + at + e;
        CHECK(r[e] == w);
    }
    int blk = 4 / lsize;
    memset(r, 0, sizeof r);
    CHECK(Reduce_scatter_block(a, r, blk, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS);
    for (int e = 0; e < blk; e++) {
        int w = 0;
        for (int j = 0; j < rsize; j++) w += 10 * rw(j) + lrank * blk + e;
        CHECK(r[e] == w);
    }
    CHECK(Barrier(ic) == MPI_SUCCESS);
}

/* The merged intracommunicator: `first` is the color whose group comes first. */
static void check_merged(MPI_Comm m, int first) {
    int n, r;
    MPI_Comm_size(m, &n);
    MPI_Comm_rank(m, &r);
    int first_size = first == 0 ? (size + 1) / 2 : size / 2;
    CHECK(n == size && r == (color == first ? lrank : first_size + lrank));
    int flag = 1;
    MPI_Comm_test_inter(m, &flag);
    CHECK(flag == 0);
    /* Everyone's world rank at its merged position. */
    int all[8];
    CHECK(Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, m) == MPI_SUCCESS);
    for (int k = 0; k < n; k++) {
        int c = k < first_size ? first : 1 - first, j = k < first_size ? k : k - first_size;
        CHECK(all[k] == 2 * j + c);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2 || size > 4) { /* the buffers below are sized for 2-4 ranks */
        MPI_Finalize();
        return 0;
    }
    color = rank % 2;
    lrank = rank / 2;
    lsize = color == 0 ? (size + 1) / 2 : size / 2;
    rsize = size - lsize;

    MPI_Comm local, ic;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local) == MPI_SUCCESS);
    CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 99, &ic) == MPI_SUCCESS);
    int flag = 0, n = -1, r = -1;
    CHECK(MPI_Comm_test_inter(ic, &flag) == MPI_SUCCESS && flag == 1);
    MPI_Comm_size(ic, &n);
    MPI_Comm_rank(ic, &r);
    CHECK(n == lsize && r == lrank);
    CHECK(MPI_Comm_remote_size(ic, &n) == MPI_SUCCESS && n == rsize);
    MPI_Group rg, wg, lg;
    CHECK(MPI_Comm_remote_group(ic, &rg) == MPI_SUCCESS);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(ic, &lg);
    int idx[8], tw[8];
    for (int j = 0; j < 8; j++) idx[j] = j;
    MPI_Group_translate_ranks(rg, rsize, idx, wg, tw);
    for (int j = 0; j < rsize; j++) CHECK(tw[j] == rw(j));
    MPI_Group_translate_ranks(lg, lsize, idx, wg, tw);
    for (int j = 0; j < lsize; j++) CHECK(tw[j] == lw(j));
    MPI_Group_free(&rg);

    MPI_Comm_set_name(ic, "evens-odds");
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK(MPI_Comm_get_name(ic, name, &len) == MPI_SUCCESS && strcmp(name, "evens-odds") == 0);

    /* A user error handler on the intercommunicator gets it and the code. */
    MPI_Errhandler eh;
    CHECK(MPI_Comm_create_errhandler(on_error, &eh) == MPI_SUCCESS);
    CHECK(MPI_Comm_set_errhandler(ic, eh) == MPI_SUCCESS);
    int v0 = 0, code = MPI_Send(&v0, 1, MPI_INT, rsize, 0, ic), ec = -1;
    MPI_Error_class(code, &ec);
    CHECK(ec == MPI_ERR_RANK && handled == code && handled_on == ic);
    CHECK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN) == MPI_SUCCESS);
    MPI_Errhandler_free(&eh);

    point_to_point(ic);
    for (nb = 0; nb < 2; nb++) {
        rooted(ic, 0);
        rooted(ic, 1);
        all_to_all(ic);
    }
    nb = 0;
    /* Two nonblocking collectives at once, completed in the other order. */
    int bv = color == 0 && lrank == 0 ? 5 : -1, av = rank, asum = -1;
    int broot = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Request two[2];
    CHECK(MPI_Ibcast(&bv, 1, MPI_INT, broot, ic, &two[0]) == MPI_SUCCESS);
    CHECK(MPI_Iallreduce(&av, &asum, 1, MPI_INT, MPI_SUM, ic, &two[1]) == MPI_SUCCESS);
    CHECK(MPI_Wait(&two[1], MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(MPI_Wait(&two[0], MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(bv == (color == 0 && lrank != 0 ? -1 : 5));
    int want = 0;
    for (int j = 0; j < rsize; j++) want += rw(j);
    CHECK(asum == want);

    /* Calls that need an intracommunicator, and nonblocking collectives. */
    int x = 1, y;
    CHECK(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic) == MPI_ERR_COMM);
    MPI_Comm bad;
    int dims[1] = {1}, periods[1] = {0};
    CHECK(MPI_Cart_create(ic, 1, dims, periods, 0, &bad) == MPI_ERR_COMM);
    CHECK(MPI_Comm_create_group(ic, lg, 3, &bad) == MPI_ERR_COMM);
    CHECK(MPI_Intercomm_create(ic, 0, MPI_COMM_WORLD, 1 - color, 98, &bad) == MPI_ERR_COMM);
    CHECK(MPI_Intercomm_merge(local, 0, &bad) == MPI_ERR_COMM);
    CHECK(MPI_Comm_remote_size(local, &n) == MPI_ERR_COMM);
    MPI_Request q;
    CHECK(MPI_Iscan(&x, &y, 1, MPI_INT, MPI_SUM, ic, &q) == MPI_ERR_COMM);

    /* Merge: low group first; the same flag on both sides: the group of world rank 0. */
    MPI_Comm m;
    CHECK(MPI_Intercomm_merge(ic, color, &m) == MPI_SUCCESS);
    check_merged(m, 0);
    MPI_Comm_free(&m);
    CHECK(MPI_Intercomm_merge(ic, 1 - color, &m) == MPI_SUCCESS);
    check_merged(m, 1);
    MPI_Comm_free(&m);
    CHECK(MPI_Intercomm_merge(ic, 1, &m) == MPI_SUCCESS);
    check_merged(m, 0);
    MPI_Comm_free(&m);
    CHECK(MPI_Intercomm_merge(ic, 0, &m) == MPI_SUCCESS);
    check_merged(m, 0);
    MPI_Comm_free(&m);

    /* Dup (with an attribute copied by its callback), idup, compare. */
    int key;
    CHECK(MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &key, NULL) == MPI_SUCCESS);
    static int payload = 42;
    MPI_Comm_set_attr(ic, key, &payload);
    MPI_Comm d, e;
    CHECK(MPI_Comm_dup(ic, &d) == MPI_SUCCESS);
    CHECK(copies == 1);
    void *got = NULL;
    CHECK(MPI_Comm_get_attr(d, key, &got, &flag) == MPI_SUCCESS && flag && got == &payload);
    CHECK(MPI_Comm_test_inter(d, &flag) == MPI_SUCCESS && flag == 1);
    CHECK(MPI_Comm_compare(ic, ic, &r) == MPI_SUCCESS && r == MPI_IDENT);
    CHECK(MPI_Comm_compare(ic, d, &r) == MPI_SUCCESS && r == MPI_CONGRUENT);
    CHECK(MPI_Comm_compare(ic, local, &r) == MPI_SUCCESS && r == MPI_UNEQUAL);
    CHECK(MPI_Comm_idup(ic, &e, &q) == MPI_SUCCESS);
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(copies == 2);
    point_to_point(d);
    all_to_all(e);
    MPI_Comm_free(&e);
    MPI_Comm_free(&d);
    MPI_Comm_free_keyval(&key);

    /* Split: color 0 everywhere, local ranks reversed by key. */
    MPI_Comm s;
    CHECK(MPI_Comm_split(ic, 0, -lrank, &s) == MPI_SUCCESS && s != MPI_COMM_NULL);
    MPI_Comm_size(s, &n);
    MPI_Comm_rank(s, &r);
    CHECK(n == lsize && r == lsize - 1 - lrank);
    CHECK(MPI_Comm_remote_size(s, &n) == MPI_SUCCESS && n == rsize);
    /* Remote rank j of `s` is remote rank rsize - 1 - j of `ic`. */
    int ws[8];
    CHECK(Allgather(&rank, 1, MPI_INT, ws, 1, MPI_INT, s) == MPI_SUCCESS);
    for (int j = 0; j < rsize; j++) CHECK(ws[j] == rw(rsize - 1 - j));
    MPI_Comm_free(&s);
    /* Color by local rank parity: a color with no member on the other side gives
     * MPI_COMM_NULL (3 ranks: world rank 2 alone has color 1); MPI_UNDEFINED too. */
    int sc = lrank == 0 ? 0 : (lrank == 1 ? 1 : MPI_UNDEFINED);
    CHECK(MPI_Comm_split(ic, sc, 0, &s) == MPI_SUCCESS);
    int other_has = sc == 0 || (sc == 1 && rsize > 1);
    CHECK((s != MPI_COMM_NULL) == (sc != MPI_UNDEFINED && other_has));
    if (s != MPI_COMM_NULL) {
        MPI_Comm_size(s, &n);
        CHECK(n == 1);
        int v = rank, w = -1;
        CHECK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 2, &w, 1, MPI_INT, 0, 2, s, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(w == rw(lrank));
        CHECK(Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, s) == MPI_SUCCESS && w == rw(lrank));
        MPI_Comm_free(&s);
    }

    /* Create: each group keeps its leader only. */
    MPI_Group first;
    int zero = 0;
    MPI_Group_incl(lg, 1, &zero, &first);
    CHECK(MPI_Comm_create(ic, first, &s) == MPI_SUCCESS);
    CHECK((s != MPI_COMM_NULL) == (lrank == 0));
    if (s != MPI_COMM_NULL) {
        MPI_Comm_size(s, &n);
        int rs = -1;
        MPI_Comm_remote_size(s, &rs);
        CHECK(n == 1 && rs == 1);
        int v = rank, w = -1;
        CHECK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 3, &w, 1, MPI_INT, 0, 3, s, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(w == 1 - color);
        MPI_Comm_free(&s);
    }
    MPI_Group_free(&first);

    MPI_Group_free(&lg);
    MPI_Group_free(&wg);
    CHECK(MPI_Comm_free(&ic) == MPI_SUCCESS && ic == MPI_COMM_NULL);
    MPI_Comm_free(&local);
    Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("intercomm ok\n");
    MPI_Finalize();
    return 0;
}
