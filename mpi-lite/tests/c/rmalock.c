/* Passive-target lock epochs on every path: the aggregation of lock + operations + unlock
 * on the message path (messages counted with mpi-lite's info key mpi_lite_rma_messages:
 * lock; put; unlock is one message), then correctness under contention — an exclusive
 * read-modify-write counter (get, put), writers putting a pair under an exclusive lock
 * while readers get it under a shared one (never torn), shared accumulates. */
#include "rmacount.h"

#define N 2048
#define ITER 150

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    memset(mem, 0, N * sizeof(long));
    MPI_Barrier(MPI_COMM_WORLD);
    int m;
    rma_messages(w, &m);
    const char *path = m ? "messages" : "direct";

    /* Aggregation: every rank to the next one, its own slots there. */
    int peer = (rank + 1) % size;
    long v = 1000 + rank, got = -1, one = 1;
    static long big[1024], back[1024];
    for (int i = 0; i < 1024; i++) big[i] = rank * 7 + i;
    EXPECT_MSGS(1, 0, {
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_LONG, peer, 8 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(0, 0, {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(peer, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(2, 0, { /* the lock with the get, then the unlock */
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&got, 1, MPI_LONG, peer, 8 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    CHECK(got == v);
    EXPECT_MSGS(3, 0, { /* lock + 2 puts + accumulate at the flush; a put; the unlock */
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_LONG, peer, 16 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_LONG, peer, 24 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&one, 1, MPI_LONG, peer, 16 + rank, 1, MPI_LONG, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(peer, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&one, 1, MPI_LONG, peer, 32 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(3, 0, { /* too big to keep: the lock first, then the put, the unlock */
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(big, 1024, MPI_LONG, peer, 1024, 1024, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(2, 0, { /* lock + fetch-and-op; unlock */
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Fetch_and_op(&one, &got, MPI_LONG, peer, 32 + rank, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    CHECK(got == 1);
    got = -1;
    EXPECT_MSGS(4, 0, { /* lock + get; a flush covered by the get's reply sends nothing;
                           a put; its flush; the unlock */
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&got, 1, MPI_LONG, peer, 8 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(peer, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_LONG, peer, 40 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(peer, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    CHECK(got == v);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Get(back, 1024, MPI_LONG, peer, 1024, 1024, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    for (int i = 0; i < 1024; i++) CHECK(back[i] == big[i]);
    /* lock_all as lock: each other member's lock goes with its first operation that
       waits (or the release), this rank's own is taken at once (local accesses) */
    long all[8];
    EXPECT_MSGS(2 + (size - 1), 0, { /* own lock; lock + put + unlock per other; own unlock */
        CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
        for (int r = 0; r < size; r++)
            if (r != rank) CHECK(MPI_Put(&v, 1, MPI_LONG, r, 48 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(2, 0, {
        CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush_all(w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    });
    got = -1;
    EXPECT_MSGS(2 + 2, 0, { /* lock + fetch-and-op to the peer; its unlock */
        CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
        CHECK(MPI_Fetch_and_op(&one, &got, MPI_LONG, peer, 56 + rank, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    });
    CHECK(got == 0);
    EXPECT_MSGS(2 + 2 * (size - 1), 0, { /* lock + put + get per other; the unlocks */
        CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
        for (int r = 0; r < size && r < 8; r++) {
            all[r] = -1;
            if (r == rank) continue;
            CHECK(MPI_Put(&one, 1, MPI_LONG, r, 64 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Get(&all[r], 1, MPI_LONG, r, 48 + rank, 1, MPI_LONG, w) == MPI_SUCCESS);
        }
        CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    });
    for (int r = 0; r < size && r < 8; r++) CHECK(r == rank || all[r] == v);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w) == MPI_SUCCESS);
    for (int r = 0; r < size; r++)
        CHECK(r == rank || (mem[48 + r] == 1000 + r && mem[64 + r] == 1));
    CHECK(mem[56 + (rank + size - 1) % size] == 1);
    CHECK(MPI_Win_unlock(rank, w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    int from = (rank + size - 1) % size;
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w) == MPI_SUCCESS);
    CHECK(mem[8 + from] == 1000 + from);
    CHECK(mem[16 + from] == 1001 + from && mem[24 + from] == 1000 + from);
    CHECK(mem[32 + from] == 2 && mem[40 + from] == 1000 + from);
    CHECK(MPI_Win_unlock(rank, w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Contention on rank 0: mem[0] counter, mem[1..2] a pair, mem[3] shared sum. */
    for (int i = 0; i < ITER; i++) {
        long c;
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&c, 1, MPI_LONG, 0, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
        c += 1;
        CHECK(MPI_Put(&c, 1, MPI_LONG, 0, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
        if ((i + rank) % 2 == 0) {
            long x = rank * 100000L + i;
            CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w) == MPI_SUCCESS);
            CHECK(MPI_Put(&x, 1, MPI_LONG, 0, 1, 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Put(&x, 1, MPI_LONG, 0, 2, 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
        } else {
            long a = -1, b = -2;
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_SUCCESS);
            CHECK(MPI_Get(&a, 1, MPI_LONG, 0, 1, 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Get(&b, 1, MPI_LONG, 0, 2, 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
            CHECK(a == b);
        }
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&one, 1, MPI_LONG, 0, 3, 1, MPI_LONG, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_SUCCESS);
        CHECK(mem[0] == (long)size * ITER);
        CHECK(mem[3] == (long)size * ITER);
        CHECK(mem[1] == mem[2]);
        CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    if (rank == 0) printf("rmalock: %d ranks, %s path: ok\n", size, path);
    MPI_Finalize();
    return 0;
}
