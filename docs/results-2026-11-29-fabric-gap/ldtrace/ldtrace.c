// LD_PRELOAD shim: TSC stamps of sendto entry, recvfrom exit (>0), epoll_wait exit (>0); counts empty epolls.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <x86intrin.h>
#include <sys/syscall.h>
enum { N = 1 << 20 };
static uint64_t ts[N]; static unsigned char ty[N]; static volatile long n; static long empty;
static pid_t main_tid;
static ssize_t (*r_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*r_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
static int (*r_epoll_wait)(int, struct epoll_event *, int, int);
static ssize_t (*r_send)(int, const void *, size_t, int);
static ssize_t (*r_recv)(int, void *, size_t, int);
static ssize_t (*r_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*r_recvmsg)(int, struct msghdr *, int);
static __thread int me_ = -1;
static inline int mine(void) { if (me_ < 0) me_ = main_tid && syscall(SYS_gettid) == main_tid; return me_; }
static void rec(int t) { long i = n; if (i < N) { ts[i] = __rdtsc(); ty[i] = t; n = i + 1; } }
__attribute__((constructor)) static void init(void) {
    r_sendto = dlsym(RTLD_NEXT, "sendto"); r_recvfrom = dlsym(RTLD_NEXT, "recvfrom"); r_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
    r_send = dlsym(RTLD_NEXT, "send"); r_recv = dlsym(RTLD_NEXT, "recv"); r_sendmsg = dlsym(RTLD_NEXT, "sendmsg"); r_recvmsg = dlsym(RTLD_NEXT, "recvmsg");
    main_tid = getpid();
}
__attribute__((destructor)) static void fini(void) {
    char fn[64]; snprintf(fn, sizeof fn, "/tmp/ldt.%d", (int)getpid());
    FILE *f = fopen(fn, "w"); if (!f) return;
    fprintf(f, "# empty %ld\n", empty);
    for (long i = 0; i < n; i++) fprintf(f, "%lu %d\n", (unsigned long)ts[i], ty[i]);
    fclose(f);
}
ssize_t sendto(int fd, const void *b, size_t l, int fl, const struct sockaddr *a, socklen_t al) {
    int m = mine(); if (m) rec(1);
    ssize_t r = r_sendto(fd, b, l, fl, a, al);
    if (m) rec(4);
    return r;
}
ssize_t recvfrom(int fd, void *b, size_t l, int fl, struct sockaddr *a, socklen_t *al) {
    ssize_t r = r_recvfrom(fd, b, l, fl, a, al);
    if (r > 0 && mine()) rec(2);
    return r;
}
int epoll_wait(int ep, struct epoll_event *e, int m, int to) {
    int r = r_epoll_wait(ep, e, m, to);
    if (mine()) { if (r > 0) rec(3); else empty++; }
    return r;
}

ssize_t send(int fd, const void *b, size_t l, int fl) { int m = mine(); if (m) rec(1); ssize_t r = r_send(fd, b, l, fl); if (m) rec(4); return r; }
ssize_t recv(int fd, void *b, size_t l, int fl) { ssize_t r = r_recv(fd, b, l, fl); if (r > 0 && mine()) rec(2); return r; }
ssize_t sendmsg(int fd, const struct msghdr *m, int fl) { int me = mine(); if (me) rec(1); ssize_t r = r_sendmsg(fd, m, fl); if (me) rec(4); return r; }
ssize_t recvmsg(int fd, struct msghdr *m, int fl) { ssize_t r = r_recvmsg(fd, m, fl); if (r > 0 && mine()) rec(2); return r; }
