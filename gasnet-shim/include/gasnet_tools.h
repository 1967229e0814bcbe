/* gasnet_tools.h -- the conduit-independent GASNet tools (gasnett_*) of gasnet-shim:
 * timers, atomics, memory fences, mutexes/condition variables/thread keys, environment
 * queries, and process utilities. Header-only (static inline over C11/GCC atomics, POSIX
 * and glibc), so it works with or without gasnetex.h, as GASNet's own does. Define
 * GASNETT_THREAD_SAFE (or include gasnetex.h with GASNET_PAR) for thread-safe atomics:
 * these are always thread-safe here. */
#ifndef _GASNET_TOOLS_H
#define _GASNET_TOOLS_H
#define _INCLUDED_GASNET_TOOLS_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <pthread.h>
#include <execinfo.h>

#define GASNETT_RELEASE_VERSION_MAJOR 2023
#define GASNETT_RELEASE_VERSION_MINOR 9
#define GASNETT_RELEASE_VERSION_PATCH 0
#define GASNETT_CONFIG_STRING "gasnet-shim tools, native timers, native atomics"
#define GASNETT_INLINE(fn) static inline
#define GASNETT_NEVER_INLINE(fn, declarator) declarator __attribute__((noinline))
#define GASNETT_PREDICT_TRUE(x) __builtin_expect(!!(x), 1)
#define GASNETT_PREDICT_FALSE(x) __builtin_expect(!!(x), 0)
#define gasnett_unused __attribute__((unused))
#define GASNETT_UNUSED __attribute__((unused))
#define GASNETT_TRACE_ENABLED 0
#define GASNETT_STATS_ENABLED 0
#define GASNETT_DEBUG_ENABLED 0

/* ---- timers: CLOCK_MONOTONIC in nanoseconds (ticks are ns) ----------------------- */
typedef uint64_t gasnett_tick_t;
#define GASNETT_TICK_MIN ((gasnett_tick_t)0)
#define GASNETT_TICK_MAX (~(gasnett_tick_t)0)
static inline gasnett_tick_t gasnett_ticks_now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static inline uint64_t gasnett_ticks_to_ns(gasnett_tick_t t) { return t; }
#define gasnett_ticks_to_us(t) (gasnett_ticks_to_ns(t) / 1000)
static inline double gasnett_tick_granularityus(void) { return 0.001; }
static inline double gasnett_tick_overheadus(void) {
    gasnett_tick_t a = gasnett_ticks_now(); int i;
    for (i = 0; i < 99; i++) (void)gasnett_ticks_now();
    return (double)(gasnett_ticks_now() - a) / 100.0 / 1000.0;
}
static inline uint64_t gasnett_gettimeofday_us(void) {
    struct timespec t; clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* ---- memory fences ------------------------------------------------------------------ */
#define gasnett_local_mb()  __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define gasnett_local_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define gasnett_local_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define gasnett_compiler_fence() __asm__ __volatile__("" ::: "memory")
#define gasnett_weakatomic_mb gasnett_local_mb

/* ---- atomics: (counter, flags); flags GASNETT_ATOMIC_{REL,ACQ,MB_*} order the access -- */
#define GASNETT_ATOMIC_NONE      0x00
#define GASNETT_ATOMIC_RMB_PRE   0x01
#define GASNETT_ATOMIC_WMB_PRE   0x02
#define GASNETT_ATOMIC_RMB_POST  0x04
#define GASNETT_ATOMIC_WMB_POST  0x08
#define GASNETT_ATOMIC_RMB_POST_IF_TRUE  0x10
#define GASNETT_ATOMIC_RMB_POST_IF_FALSE 0x20
#define GASNETT_ATOMIC_MB_PRE  (GASNETT_ATOMIC_WMB_PRE | GASNETT_ATOMIC_RMB_PRE)
#define GASNETT_ATOMIC_MB_POST (GASNETT_ATOMIC_WMB_POST | GASNETT_ATOMIC_RMB_POST)
#define GASNETT_ATOMIC_REL GASNETT_ATOMIC_WMB_PRE
#define GASNETT_ATOMIC_ACQ GASNETT_ATOMIC_RMB_POST
#define GASNETT_ATOMIC_ACQ_IF_TRUE GASNETT_ATOMIC_RMB_POST_IF_TRUE
#define GASNETT_ATOMIC_ACQ_IF_FALSE GASNETT_ATOMIC_RMB_POST_IF_FALSE
#define GASNETT_ATOMIC_MAX ((gasnett_atomic_val_t)~0u)
#define GASNETT_ATOMIC_SIGNED_MIN INT32_MIN
#define GASNETT_ATOMIC_SIGNED_MAX INT32_MAX
#define GASNETT_HAVE_ATOMIC_CAS 1
#define GASNETT_HAVE_ATOMIC_ADD_SUB 1
#define GASNETT_STRONGATOMIC_NOT_SIGNALSAFE 0
/* Every access is sequentially consistent: stronger than any flag asks for. */
#define GASNETC_ATOMIC_TYPES(T, VT, ST, N) \
typedef struct { volatile VT ctr; } T; \
typedef VT N##_val_t; typedef ST N##_sval_t; \
static inline VT N##_read(T *p, int f) { (void)f; return __atomic_load_n(&p->ctr, __ATOMIC_SEQ_CST); } \
static inline void N##_set(T *p, VT v, int f) { (void)f; __atomic_store_n(&p->ctr, v, __ATOMIC_SEQ_CST); } \
static inline void N##_increment(T *p, int f) { (void)f; __atomic_add_fetch(&p->ctr, 1, __ATOMIC_SEQ_CST); } \
static inline void N##_decrement(T *p, int f) { (void)f; __atomic_sub_fetch(&p->ctr, 1, __ATOMIC_SEQ_CST); } \
static inline int N##_decrement_and_test(T *p, int f) { (void)f; return __atomic_sub_fetch(&p->ctr, 1, __ATOMIC_SEQ_CST) == 0; } \
static inline VT N##_add(T *p, VT v, int f) { (void)f; return __atomic_add_fetch(&p->ctr, v, __ATOMIC_SEQ_CST); } \
static inline VT N##_subtract(T *p, VT v, int f) { (void)f; return __atomic_sub_fetch(&p->ctr, v, __ATOMIC_SEQ_CST); } \
static inline VT N##_swap(T *p, VT v, int f) { (void)f; return __atomic_exchange_n(&p->ctr, v, __ATOMIC_SEQ_CST); } \
static inline int N##_compare_and_swap(T *p, VT o, VT n, int f) { (void)f; return __atomic_compare_exchange_n(&p->ctr, &o, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); } \
static inline VT N##_signed(VT v) { return v; }
GASNETC_ATOMIC_TYPES(gasnett_atomic_t, uint32_t, int32_t, gasnett_atomic)
GASNETC_ATOMIC_TYPES(gasnett_strongatomic_t, uint32_t, int32_t, gasnett_strongatomic)
GASNETC_ATOMIC_TYPES(gasnett_atomic32_t, uint32_t, int32_t, gasnett_atomic32)
GASNETC_ATOMIC_TYPES(gasnett_atomic64_t, uint64_t, int64_t, gasnett_atomic64)
#define gasnett_atomic_init(v) { (v) }
#define gasnett_strongatomic_init(v) { (v) }
#define gasnett_atomic32_init(v) { (v) }
#define gasnett_atomic64_init(v) { (v) }
#define gasnett_atomic_signed(v) ((int32_t)(v))
#define gasnett_atomic32_signed(v) ((int32_t)(v))
#define gasnett_atomic64_signed(v) ((int64_t)(v))
#define GASNETT_ATOMIC_HAVE_32 1
#define GASNETT_ATOMIC_HAVE_64 1

/* ---- threads ---------------------------------------------------------------------- */
typedef pthread_mutex_t gasnett_mutex_t;
#define GASNETT_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define gasnett_mutex_init(pm)    pthread_mutex_init((pm), 0)
#define gasnett_mutex_destroy(pm) pthread_mutex_destroy(pm)
#define gasnett_mutex_lock(pm)    pthread_mutex_lock(pm)
#define gasnett_mutex_unlock(pm)  pthread_mutex_unlock(pm)
#define gasnett_mutex_trylock(pm) pthread_mutex_trylock(pm)
#define gasnett_mutex_assertlocked(pm)   ((void)0)
#define gasnett_mutex_assertunlocked(pm) ((void)0)
typedef pthread_cond_t gasnett_cond_t;
#define GASNETT_COND_INITIALIZER PTHREAD_COND_INITIALIZER
#define gasnett_cond_init(pc)      pthread_cond_init((pc), 0)
#define gasnett_cond_destroy(pc)   pthread_cond_destroy(pc)
#define gasnett_cond_signal(pc)    pthread_cond_signal(pc)
#define gasnett_cond_broadcast(pc) pthread_cond_broadcast(pc)
#define gasnett_cond_wait(pc, pm)  pthread_cond_wait((pc), (pm))
typedef pthread_rwlock_t gasnett_rwlock_t;
#define GASNETT_RWLOCK_INITIALIZER PTHREAD_RWLOCK_INITIALIZER
#define gasnett_rwlock_init(pl)    pthread_rwlock_init((pl), 0)
#define gasnett_rwlock_destroy(pl) pthread_rwlock_destroy(pl)
#define gasnett_rwlock_rdlock(pl)  pthread_rwlock_rdlock(pl)
#define gasnett_rwlock_wrlock(pl)  pthread_rwlock_wrlock(pl)
#define gasnett_rwlock_unlock(pl)  pthread_rwlock_unlock(pl)
/* Thread keys: lazily created on first use. */
typedef struct { pthread_once_t once; pthread_key_t key; } gasnett_threadkey_t;
#define GASNETT_THREADKEY_INITIALIZER { PTHREAD_ONCE_INIT, 0 }
#define GASNETT_THREADKEY_DECLARE(key) extern gasnett_threadkey_t key
#define GASNETT_THREADKEY_DEFINE(key) gasnett_threadkey_t key = GASNETT_THREADKEY_INITIALIZER
static inline void gasnett_threadkey_init(gasnett_threadkey_t *k) {
    if (pthread_key_create(&k->key, 0)) { fprintf(stderr, "gasnett_threadkey_init: pthread_key_create failed\n"); abort(); }
}
static inline pthread_key_t gasnetc_threadkey(gasnett_threadkey_t *k) {
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    if (k->once == PTHREAD_ONCE_INIT) { gasnett_threadkey_init(k); k->once = !PTHREAD_ONCE_INIT; }
    pthread_mutex_unlock(&m);
    return k->key;
}
#define gasnett_threadkey_get(key)            pthread_getspecific(gasnetc_threadkey(&(key)))
#define gasnett_threadkey_set(key, val)       ((void)pthread_setspecific(gasnetc_threadkey(&(key)), (val)))
#define gasnett_threadkey_get_noinit(key)     pthread_getspecific((key).key)
#define gasnett_threadkey_set_noinit(key,val) ((void)pthread_setspecific((key).key, (val)))

/* ---- environment, process ---------------------------------------------------------- */
static inline char *gasnett_getenv(const char *name) { return getenv(name); }
static inline int gasnett_getenv_yesno_withdefault(const char *name, int dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    return v[0] == 'y' || v[0] == 'Y' || v[0] == '1' || v[0] == 't' || v[0] == 'T';
}
static inline int64_t gasnett_getenv_int_withdefault(const char *name, int64_t dflt, uint64_t mem_size_multiplier) {
    const char *v = getenv(name); char *end; int64_t x;
    if (!v || !*v) return dflt;
    x = strtoll(v, &end, 0);
    /* A memory size (mem_size_multiplier != 0): a k/m/g suffix, else units of the
     * multiplier. */
    if (mem_size_multiplier) switch (*end) {
        case 'k': case 'K': x <<= 10; break;
        case 'm': case 'M': x <<= 20; break;
        case 'g': case 'G': x <<= 30; break;
        default: x *= (int64_t)mem_size_multiplier; break;
    }
    return x;
}
static inline double gasnett_getenv_dbl_withdefault(const char *name, double dflt) {
    const char *v = getenv(name); return (v && *v) ? strtod(v, 0) : dflt;
}
static inline const char *gasnett_getenv_str_withdefault(const char *name, const char *dflt) {
    const char *v = getenv(name); return v ? v : dflt;
}
static inline int gasnett_setenv(const char *k, const char *v) { return setenv(k, v, 1); }
static inline int gasnett_unsetenv(const char *k) { return unsetenv(k); }
#define gasnett_sched_yield() sched_yield()
static inline int gasnett_cpu_count(void) { long n = sysconf(_SC_NPROCESSORS_ONLN); return n > 0 ? (int)n : 1; }
static inline uint64_t gasnett_getPhysMemSz(int failureIsFatal) {
    long p = sysconf(_SC_PHYS_PAGES), s = sysconf(_SC_PAGESIZE);
    if ((p <= 0 || s <= 0) && failureIsFatal) { fprintf(stderr, "gasnett_getPhysMemSz: unknown\n"); abort(); }
    return (p > 0 && s > 0) ? (uint64_t)p * (uint64_t)s : 0;
}
static inline const char *gasnett_gethostname(void) {
    static char name[256];
    if (!name[0] && gethostname(name, sizeof name - 1)) strcpy(name, "unknown");
    return name;
}
static inline void gasnett_flush_streams(void) { fflush(stdout); fflush(stderr); fsync(1); fsync(2); }
static inline int gasnett_print_backtrace(int fd) {
    void *frames[64]; int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, fd);
    return 0;
}
static inline int gasnett_print_backtrace_ifenabled(int fd) {
    return gasnett_getenv_yesno_withdefault("GASNET_BACKTRACE", 0) ? gasnett_print_backtrace(fd) : 1;
}
static inline void gasnett_backtrace_init(const char *exename) { (void)exename; }
__attribute__((noreturn, format(printf, 1, 2)))
static inline void gasnett_fatalerror(const char *msg, ...) {
    va_list ap; char buf[1024];
    va_start(ap, msg); vsnprintf(buf, sizeof buf, msg, ap); va_end(ap);
    fflush(stdout);
    fprintf(stderr, "*** FATAL ERROR: %s\n", buf);
    gasnett_print_backtrace_ifenabled(2);
    fflush(stderr);
    abort();
}
__attribute__((noreturn))
static inline void gasnett_fatalerror_nopos(const char *msg) { gasnett_fatalerror("%s", msg); }
static inline void gasnett_killmyprocess(int exitcode) { _exit(exitcode); }
#define gasnett_current_loc ""
#define gasnett_spinloop_hint() __builtin_ia32_pause()
#define gasnett_set_affinity(rank) ((void)(rank))
#define gasnett_maxpagesize 4096
#endif /* _GASNET_TOOLS_H */
