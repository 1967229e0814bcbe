/*
 * ring_floor.c -- the shm lane protocol's windowed message rate with nothing else around
 * it: two forked processes pinned to CPUs 0 and 1, one single-producer byte ring of 64 KiB
 * in shared memory written as skifch-drivers' lanes are (a record = an 8-byte header that
 * is the "present" flag, tagged with its position, then the payload padded to 8; the next
 * record's header zeroed before this one's release store; the reader polls the next header,
 * publishes its tail every 4 KiB). The sender writes a window of W messages of SIZE bytes,
 * then waits for an ack word the reader stores after the W-th -- the protocol of
 * benches/c/gasnet_bench.c's `msgrate` test.
 *
 * K: extra work per message in the sender, before the record is written: K iterations of
 * four register operations, and (built -DSTORE=1, the default) one store to the stack,
 * the mix of a library's send path (docs/results-2026-11-30-sender-stores/README.md).
 * RK: the same extra work in the reader, per message. P: the reader pauses P times
 * (`pause`) when, after a message, its first look at the next header finds nothing. PW:
 * the sender prefetches the line of the record it will write (for writing) before its work.
 * CALL (docs/results-2026-11-30-lane-call): 1, the record is written by a function that is
 * not inlined (a library's send: one call a message); 2, an empty function is called
 * before the record is written inline. NS: that many stores a message to a private
 * line before the record's (in the function with CALL=1); 3, a leaf function that takes
 * the two payload words in registers writes the record (16-byte payloads only); 10, the
 * same without zeroing the next record's header word (a correct lane only with RZ=1).
 * RZ=1: the reader zeroes the space it gives back before publishing its tail (layout
 * version 5 of skifch-drivers' lanes), on a line boundary.
 *
 *   cc -O2 ring_floor.c -o ring_floor && cc -O2 -DSTORE=0 ring_floor.c -o ring_floor_nostore
 *   ./ring_floor [W=64] [SIZE=16] [WINDOWS=4000] [PASSES=11] [K=0] [RK=0] [P=0] [PW=0] [CALL=0] [NS=0] [RZ=0]
 * Prints the median of PASSES passes (after one warm-up pass), in M msg/s.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef STORE
#define STORE 1
#endif
enum { RING = 1 << 16 };
static volatile uint64_t priv[16] __attribute__((aligned(64)));
__attribute__((noinline)) static void nothing(void) { __asm__ volatile("" ::: "memory"); }
/* One record: NS private stores, the payload, the next header zeroed, the header released. */
__attribute__((always_inline)) static inline void put_rec(uint64_t *ring, uint64_t pos, size_t size, size_t rec, const uint64_t *payload, int ns) {
    for (int q = 0; q < ns; q++) priv[q & 7] = pos;
    for (size_t k = 0; k < (size + 7) / 8; k++) ring[((pos + 8 + 8 * k) % RING) / 8] = payload[k];
    __atomic_store_n(&ring[((pos + rec) % RING) / 8], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ring[(pos % RING) / 8], (uint64_t)(uint32_t)(pos >> 3) << 32 | size << 1 | 1, __ATOMIC_RELEASE);
}
/* CALL=3 (zero=1) and CALL=10 (zero=0): a 16-byte record from two register words. */
__attribute__((always_inline)) static inline void put_regs(uint64_t *ring, uint64_t pos, uint64_t w0, uint64_t w1, size_t rec, int zero) {
    ring[((pos + 8) % RING) / 8] = w0;
    ring[((pos + 16) % RING) / 8] = w1;
    if (zero) __atomic_store_n(&ring[((pos + rec) % RING) / 8], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ring[(pos % RING) / 8], (uint64_t)(uint32_t)(pos >> 3) << 32 | 16 << 1 | 1, __ATOMIC_RELEASE);
}
__attribute__((noinline)) static void put3(uint64_t *ring, uint64_t pos, uint64_t w0, uint64_t w1, size_t rec) { put_regs(ring, pos, w0, w1, rec, 1); }
__attribute__((noinline)) static void put10(uint64_t *ring, uint64_t pos, uint64_t w0, uint64_t w1, size_t rec) { put_regs(ring, pos, w0, w1, rec, 0); }
__attribute__((noinline)) static void put(uint64_t *ring, uint64_t pos, size_t size, size_t rec, const uint64_t *payload, int ns) {
    put_rec(ring, pos, size, rec, payload, ns);
}
struct sh {
    _Alignas(64) uint64_t ring[RING / 8];
    _Alignas(64) uint64_t tail;
    _Alignas(64) uint64_t ack;
};
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, sizeof s, &s); }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
/* K iterations of the extra work; `stk` is the stack the stores go to. Without STORE an
 * empty asm keeps the loop as it is (no store, nothing folded). */
#if STORE
#define KEEP(x) (stk[k & 7] = (x))
#else
#define KEEP(x) __asm__ volatile("" : "+r"(x))
#endif
#define WORK(K) for (int k = 0; k < (K); k++) { a0 += k; a1 ^= a0; a2 += a1; a3 ^= k; KEEP(a2); }
int main(int argc, char **argv) {
    int w = argc > 1 ? atoi(argv[1]) : 64;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 16;
    long wins = argc > 3 ? atol(argv[3]) : 4000;
    int passes = argc > 4 ? atoi(argv[4]) : 11;
    int K = argc > 5 ? atoi(argv[5]) : 0, RK = argc > 6 ? atoi(argv[6]) : 0;
    int P = argc > 7 ? atoi(argv[7]) : 0, PW = argc > 8 ? atoi(argv[8]) : 0;
    int CALL = argc > 9 ? atoi(argv[9]) : 0, NS = argc > 10 ? atoi(argv[10]) : 0, RZ = argc > 11 ? atoi(argv[11]) : 0;
    if (passes < 1 || passes > 64 || size > 256 || w < 1 || ((CALL == 3 || CALL == 10) && size != 16)) { fprintf(stderr, "ring_floor: bad arguments\n"); return 2; }
    volatile uint64_t stk[8];
    (void)stk;
    uint64_t a0 = 1, a1 = 2, a2 = 3, a3 = 4;
    struct sh *s = mmap(0, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) { perror("mmap"); return 1; }
    size_t rec = 8 + ((size + 7) & ~(size_t)7);
    uint64_t payload[32];
    memset(payload, 1, sizeof payload);
    pid_t pid = fork();
    int me = pid == 0;
    pin(me);
    long total = (long)(passes + 1) * wins;
    if (me == 1) { /* the reader */
        uint64_t pos = 0, published = 0, acks = 0, sink = 0;
        for (long i = 0; i < total; i++) {
            for (int j = 0; j < w; j++) {
                uint64_t *h = &s->ring[(pos % RING) / 8], v;
                int first = 1;
                while (!((v = __atomic_load_n(h, __ATOMIC_ACQUIRE)) & 1) || (v >> 32) != (uint32_t)(pos >> 3)) {
                    if (first && j > 0) for (int q = 0; q < P; q++) __builtin_ia32_pause();
                    first = 0;
                }
                size_t len = (v >> 1) & 0x7fffffff;
                WORK(RK);
                for (size_t k = 0; k < (len + 7) / 8; k++) sink += s->ring[((pos + 8 + 8 * k) % RING) / 8];
                pos += 8 + ((len + 7) & ~(size_t)7);
                if (pos - published >= RING / 16) {
                    uint64_t upto = RZ ? pos & ~(uint64_t)63 : pos;
                    for (uint64_t z = published; RZ && z < upto; z += 8) s->ring[(z % RING) / 8] = 0;
                    __atomic_store_n(&s->tail, upto, __ATOMIC_RELEASE);
                    published = upto;
                }
            }
            __atomic_store_n(&s->ack, ++acks, __ATOMIC_RELEASE);
        }
        return (int)(sink & 0) + (int)((a0 + a1 + a2 + a3) & 0);
    }
    uint64_t pos = 0, tail = 0;
    double r[64];
    for (int p = 0; p < passes + 1; p++) {
        double t0 = now();
        for (long i = 0; i < wins; i++) {
            for (int j = 0; j < w; j++) {
                if (PW) __builtin_prefetch(&s->ring[(pos % RING) / 8], 1, 3);
                WORK(K);
                while (pos + rec + 8 - tail > RING) tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
                if (CALL == 3 || CALL == 10) {
                    (CALL == 3 ? put3 : put10)(s->ring, pos, payload[0], payload[1], rec);
                } else if (CALL == 1) {
                    put(s->ring, pos, size, rec, payload, NS);
                } else {
                    if (CALL == 2) nothing();
                    put_rec(s->ring, pos, size, rec, payload, NS);
                }
                pos += rec;
            }
            uint64_t want = (uint64_t)p * wins + i + 1;
            while (__atomic_load_n(&s->ack, __ATOMIC_ACQUIRE) != want)
                ;
        }
        double t = now() - t0;
        if (p) r[p - 1] = wins * w / t;
    }
    qsort(r, passes, sizeof r[0], cmp);
    printf("RZ=%d CALL=%d NS=%d P=%d PW=%d ring_floor store=%d K=%d RK=%d w=%d size=%zu: %.2f M msg/s median (min %.2f, max %.2f) [%lu]\n", RZ, CALL, NS, P, PW, STORE, K, RK, w, size,
           r[passes / 2] / 1e6, r[0] / 1e6, r[passes - 1] / 1e6, (unsigned long)((a0 + a1 + a2 + a3) & 1));
    waitpid(pid, 0, 0);
    return 0;
}
