/*
 * hello.c - the SkifCh C ABI in one page.
 *
 * Every rank sends a greeting to the next rank of the ring, as a message gathered from two
 * buffers (no copy on the sender), then receives one greeting and prints it with its
 * sender. A received message may come in several segments (up to SKIFCH_CONT_SIZE: the
 * shm driver splits one that wraps around the end of its ring), so it is read segment by
 * segment.
 *
 * Build and run from the repository root (see examples/c/Makefile):
 *   cargo build --release -p skifch-capi -p skifrun
 *   cc -I include examples/c/hello.c -L target/release -lskifch \
 *      -Wl,-rpath,$PWD/target/release -o hello
 *   target/release/skifrun -n 4 -- ./hello
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "skifch.h"

static int fail(const char *what) {
    fprintf(stderr, "hello: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (SkifCh_Init(&argc, &argv) != 0) return fail("SkifCh_Init");
    int rank = SkifCh_Rank(), size = SkifCh_Size();
    struct SkifCh *ch = SkifCh_Open(0);
    if (!ch) return fail("SkifCh_Open");

    /* Send: one message from two buffers. Send may take a prefix only (like writev) or
     * fail with EAGAIN when the receiver is full; a greeting is short, so retry until the
     * whole of it has gone as one message. */
    char head[] = "Hello from rank ", tail[32];
    int tail_len = snprintf(tail, sizeof tail, "%d of %d", rank, size);
    struct iovec iov[2] = {{head, strlen(head)}, {tail, (size_t)tail_len}};
    netaddr_t next = SkifCh_Addr((rank + 1) % size, 0);
    ssize_t n;
    while ((n = SkifCh_Send(ch, next, iov, 2)) < 0) {
        if (errno != EAGAIN) return fail("SkifCh_Send");
        sched_yield();
    }
    if ((size_t)n != iov[0].iov_len + iov[1].iov_len) {
        fprintf(stderr, "hello: greeting split after %zd bytes\n", n);
        return 1;
    }

    /* Receive: wait (spin briefly, then sleep), then take the message in place. */
    struct iovec cont[SKIFCH_CONT_SIZE];
    int count;
    netaddr_t src;
    ssize_t len;
    while ((len = SkifCh_RecvFrom(ch, cont, &count, &src)) < 0) {
        if (errno != EAGAIN) return fail("SkifCh_RecvFrom");
        if (SkifCh_Wait(ch, -1) != 0) return fail("SkifCh_Wait");
    }
    char text[128];
    size_t off = 0;
    for (int i = 0; i < count; i++) { /* the message is the concatenation of segments */
        size_t k = cont[i].iov_len < sizeof text - 1 - off ? cont[i].iov_len : sizeof text - 1 - off;
        memcpy(text + off, cont[i].iov_base, k);
        off += k;
    }
    text[off] = '\0';
    SkifCh_RecvComp(ch); /* the library may now reuse the message's memory */

    printf("rank %d got \"%s\" (%zd bytes in %d segment%s) from rank %u port %u\n", rank, text,
           len, count, count == 1 ? "" : "s", (unsigned)(src >> 16), (unsigned)(src & 0xffff));

    SkifCh_Close(ch);
    return SkifCh_Finalize() == 0 ? 0 : fail("SkifCh_Finalize");
}
