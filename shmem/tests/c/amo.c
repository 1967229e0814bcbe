/* Atomics: every operation on the standard, extended and bitwise AMO types, atomic with
 * respect to each other under contention from all PEs; nbi and ctx forms; the
 * deprecated names; C11 generic selection. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

#define ROUNDS 200

#define STD(NAME, T) \
    do { \
        T *x = shmem_calloc(4, sizeof(T)); \
        shmem_barrier_all(); \
        for (int r = 0; r < ROUNDS; r++) { \
            shmem_##NAME##_atomic_inc(&x[0], 0); \
            (void)shmem_##NAME##_atomic_fetch_inc(&x[0], 0); \
            shmem_##NAME##_atomic_add(&x[1], (T)2, 0); \
            (void)shmem_##NAME##_atomic_fetch_add(&x[1], (T)1, 0); \
        } \
        /* compare-swap: exactly one PE wins the election */ \
        T old = shmem_##NAME##_atomic_compare_swap(&x[2], (T)0, (T)(me + 1), 0); \
        T won = (T)(old == (T)0); \
        shmem_##NAME##_atomic_add(&x[3], won, 0); \
        shmem_barrier_all(); \
        if (me == 0) { \
            CHECK(x[0] == (T)(2 * ROUNDS * n)); \
            CHECK(x[1] == (T)(3 * ROUNDS * n)); \
            CHECK(x[2] >= (T)1 && x[2] <= (T)n); \
            CHECK(x[3] == (T)1); \
        } \
        CHECK(shmem_##NAME##_atomic_fetch(&x[0], 0) == (T)(2 * ROUNDS * n)); \
        shmem_barrier_all(); \
        T f; \
        shmem_##NAME##_atomic_set(&x[me % 4], (T)(me + 5), me); \
        CHECK(shmem_##NAME##_atomic_swap(&x[me % 4], (T)9, me) == (T)(me + 5)); \
        shmem_##NAME##_atomic_fetch_nbi(&f, &x[me % 4], me); \
        shmem_quiet(); \
        CHECK(f == (T)9); \
        shmem_##NAME##_atomic_fetch_add_nbi(&f, &x[me % 4], (T)1, me); \
        shmem_##NAME##_atomic_compare_swap_nbi(&f, &x[me % 4], (T)10, (T)11, me); \
        shmem_quiet(); \
        CHECK(f == (T)10); \
        shmem_##NAME##_atomic_fetch_inc_nbi(&f, &x[me % 4], me); \
        shmem_##NAME##_atomic_swap_nbi(&f, &x[me % 4], (T)3, me); \
        shmem_quiet(); \
        CHECK(f == (T)12 && x[me % 4] == (T)3); \
        CHECK(shmem_ctx_##NAME##_atomic_fetch_add(SHMEM_CTX_DEFAULT, &x[me % 4], (T)1, me) == (T)3); \
        shmem_barrier_all(); \
        shmem_free(x); \
    } while (0)

#define BIT(NAME, T) \
    do { \
        T *b = shmem_calloc(2, sizeof(T)); \
        shmem_barrier_all(); \
        shmem_##NAME##_atomic_or(&b[0], (T)1 << me, 0); \
        (void)shmem_##NAME##_atomic_fetch_xor(&b[1], (T)3 << (2 * me), 0); \
        shmem_barrier_all(); \
        T all = (T)(((T)1 << n) - 1); \
        CHECK(shmem_##NAME##_atomic_fetch(&b[0], 0) == all); \
        shmem_barrier_all(); \
        shmem_##NAME##_atomic_and(&b[0], (T)~((T)1 << me), 0); \
        (void)shmem_##NAME##_atomic_fetch_or(&b[1], 0, 0); \
        shmem_barrier_all(); \
        CHECK(shmem_##NAME##_atomic_fetch(&b[0], 0) == (T)0); \
        T f; \
        shmem_##NAME##_atomic_fetch_and_nbi(&f, &b[0], (T)0, 0); \
        shmem_quiet(); \
        CHECK(f == (T)0); \
        (void)shmem_##NAME##_atomic_fetch_and(&b[1], (T)~0, 0); \
        (void)shmem_##NAME##_atomic_xor; \
        shmem_barrier_all(); \
        shmem_free(b); \
    } while (0)

#define EXT(NAME, T) \
    do { \
        T *e = shmem_calloc(1, sizeof(T)); \
        shmem_barrier_all(); \
        shmem_##NAME##_atomic_set(e, (T)1.5, (me + 1) % n); \
        shmem_barrier_all(); \
        CHECK(*e == (T)1.5); \
        CHECK(shmem_##NAME##_atomic_swap(e, (T)2.25, me) == (T)1.5); \
        CHECK(shmem_##NAME##_atomic_fetch(e, me) == (T)2.25); \
        shmem_barrier_all(); \
        shmem_free(e); \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    STD(int, int); STD(long, long); STD(longlong, long long); STD(uint, unsigned int);
    STD(ulong, unsigned long); STD(ulonglong, unsigned long long); STD(int32, int32_t);
    STD(int64, int64_t); STD(uint32, uint32_t); STD(uint64, uint64_t); STD(size, size_t);
    STD(ptrdiff, ptrdiff_t);
    BIT(uint, unsigned int); BIT(ulong, unsigned long); BIT(ulonglong, unsigned long long);
    BIT(int32, int32_t); BIT(int64, int64_t); BIT(uint32, uint32_t); BIT(uint64, uint64_t);
    EXT(float, float); EXT(double, double);

    /* deprecated names and generic selection */
    long *d = shmem_calloc(4, sizeof(long));
    int *di = shmem_calloc(2, sizeof(int));
    shmem_barrier_all();
    shmem_long_inc(&d[0], 0);
    (void)shmem_long_finc(&d[0], 0);
    shmem_long_add(&d[1], 5, 0);
    (void)shmem_long_fadd(&d[1], 5, 0);
    (void)shmem_int_fadd(&di[0], 1, 0);
    shmem_atomic_add(&di[1], 2, 0);
    (void)shmem_atomic_fetch_inc(&d[2], 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(d[0] == 2L * n && d[1] == 10L * n && di[0] == n && di[1] == 2 * n && d[2] == n);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_long_cswap(&d[3], 0, 7, 0) == 0);
        CHECK(shmem_long_swap(&d[3], 8, 0) == 7);
        CHECK(shmem_long_fetch(&d[3], 0) == 8);
        shmem_long_set(&d[3], 9, 0);
        CHECK(shmem_atomic_fetch(&d[3], 0) == 9);
        CHECK(shmem_atomic_compare_swap(&d[3], 9L, 1L, 0) == 9);
        CHECK(shmem_atomic_swap(&d[3], 2L, 0) == 1);
        CHECK(shmem_swap(&d[3], 3L, 0) == 2);
        CHECK(shmem_double_swap((double *)&d[3], 1.0, 0) != 1.0);
    }
    shmem_barrier_all();
    shmem_free(di);
    shmem_free(d);
    shmem_finalize();
    return 0;
}
