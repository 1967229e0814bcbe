/*
 * Partial sends: each rank sends a buffer larger than any lane (1 MiB + 13 bytes, given as
 * an iovec of 7 uneven parts) to the next rank of the ring (itself in a 1-rank job), like
 * writev: after each Send it advances the iovec past the bytes sent and calls again. The
 * receiver reassembles the messages and checks every byte, the sender of each message, and
 * that the data needed more than one message.
 */
#include "testutil.h"

#define BIG ((1u << 20) + 13)
#define PARTS 7

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    struct SkifCh *ch = t_open(0);
    netaddr_t me = SkifCh_MyAddr(ch);
    netaddr_t dst = SkifCh_Addr((t_rank + 1) % size, 0);
    netaddr_t from = SkifCh_Addr((t_rank + size - 1) % size, 0);

    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    CHECK(out && in, "out of memory");
    for (size_t i = 0; i < BIG; i++) out[i] = t_byte(me, dst, i);
    memset(in, 0, BIG);

    /* Uneven parts, one of them empty. */
    static const size_t cuts[PARTS - 1] = {1, 4097, 4097, 300000, 700001, 1000000};
    struct iovec iov[PARTS];
    size_t prev = 0;
    for (int i = 0; i < PARTS; i++) {
        size_t end = i < PARTS - 1 ? cuts[i] : BIG;
        iov[i].iov_base = out + prev;
        iov[i].iov_len = end - prev;
        prev = end;
    }
    struct iovec *cur = iov;
    int ncur = PARTS;
    size_t sent = 0, got = 0;
    long sends = 0, recvs = 0;

    while (sent < BIG || got < BIG) {
        if (sent < BIG) {
            ssize_t n = SkifCh_Send(ch, dst, cur, ncur);
            if (n < 0) {
                CHECK(errno == EAGAIN, "Send: errno %d (%s)", errno, strerror(errno));
            } else {
                CHECK(n > 0 && (size_t)n <= BIG - sent, "Send returned %zd, %zu left", n, BIG - sent);
                sent += (size_t)n;
                sends++;
                /* Advance the iovec past n bytes. */
                size_t k = (size_t)n;
                while (ncur > 0 && k >= cur->iov_len) {
                    k -= cur->iov_len;
                    cur++;
                    ncur--;
                }
                if (k > 0) {
                    cur->iov_base = (char *)cur->iov_base + k;
                    cur->iov_len -= k;
                }
            }
        }
        for (;;) {
            struct iovec cont[SKIFCH_CONT_SIZE];
            int cnt;
            netaddr_t src;
            ssize_t len = SkifCh_RecvFrom(ch, cont, &cnt, &src);
            if (len < 0) {
                CHECK(errno == EAGAIN, "RecvFrom: errno %d (%s)", errno, strerror(errno));
                break;
            }
            CHECK(src == from, "message from %#x, want %#x", (unsigned)src, (unsigned)from);
            CHECK((size_t)len <= BIG - got, "message of %zd bytes, %zu expected", len, BIG - got);
            size_t off = got;
            for (int i = 0; i < cnt; i++) {
                memcpy(in + off, cont[i].iov_base, cont[i].iov_len);
                off += cont[i].iov_len;
            }
            CHECK(off - got == (size_t)len, "segments total %zu, length %zd", off - got, len);
            CHECK_OK(SkifCh_RecvComp(ch));
            got = off;
            recvs++;
        }
        if (sent == BIG) CHECK(ncur == 0, "%d iovec parts left after all bytes", ncur);
        sched_yield();
    }
    for (size_t i = 0; i < BIG; i++)
        CHECK(in[i] == t_byte(from, me, i), "byte %zu is %u, want %u", i, in[i], t_byte(from, me, i));
    /* No lane holds 1 MiB (default lanes are at most 256 KiB), so both sides need several. */
    CHECK(sends >= 2 && recvs >= 2, "%ld sends, %ld messages received", sends, recvs);
    if (t_rank == 0) printf("partial: %u bytes in %ld messages\n", BIG, sends);
    free(out);
    free(in);
    t_finish(&ch, 1);
    return 0;
}
