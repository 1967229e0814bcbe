/*
 * SkifCh_Init with a launcher environment that names a descriptor which is not a job
 * segment (a stale SKIFCH_FD / SKIFCH_FPGA_FD, e.g. inherited by a child while the number
 * was reused): Init must fail, and the descriptor must stay open and usable — stdin,
 * stdout, stderr, the program's own file, a pipe, memfds that are not segments. Run
 * alone (not under skifrun): the program sets the variables itself. Issue 16, defect 1.
 */
#include "testutil.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

/* The environment of a rank of a 1-rank job whose descriptor variable `var` is `fd`. */
static void set_env(const char *driver, const char *var, int fd) {
    char num[16];
    snprintf(num, sizeof num, "%d", fd);
    unsetenv("SKIFCH_FD");
    unsetenv("SKIFCH_FPGA_FD");
    setenv("SKIFCH_DRIVER", driver, 1);
    setenv("SKIFCH_RANK", "0", 1);
    setenv("SKIFCH_SIZE", "1", 1);
    setenv(var, num, 1);
}

/* Init must fail with `fd` named by `var`, and `fd` must still be open afterwards. */
static void init_fails_and_keeps(const char *driver, const char *var, int fd, const char *what) {
    set_env(driver, var, fd);
    errno = 0;
    int r = SkifCh_Init(NULL, NULL);
    CHECK(r == -1, "%s=%d (%s, driver %s): Init succeeded", var, fd, what, driver);
    CHECK(fcntl(fd, F_GETFD) >= 0, "%s=%d (%s, driver %s): Init closed it", var, fd, what,
          driver);
}

/* A memfd of `len` bytes starting with `head` (8 bytes, or none), size-sealed or not. */
static int make_memfd(size_t len, const char *head, int seal) {
    int fd = memfd_create("not-a-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    CHECK(fd >= 0, "memfd_create: %s", strerror(errno));
    CHECK(ftruncate(fd, (off_t)len) == 0, "ftruncate: %s", strerror(errno));
    if (head) CHECK(pwrite(fd, head, 8, 0) == 8, "pwrite: %s", strerror(errno));
    if (seal) CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0, "seal");
    return fd;
}

static void check_all(const char *driver, const char *var, const char *magic) {
    /* Standard descriptors: still usable after the failed Init. */
    for (int fd = 0; fd <= 2; fd++) init_fails_and_keeps(driver, var, fd, "stdio");
    CHECK(write(1, "", 0) == 0 && write(2, "", 0) == 0, "stdout/stderr unusable");

    /* The program's own file, with its contents and offset intact. */
    char path[] = "/tmp/skifch-badfd-XXXXXX";
    int file = mkstemp(path);
    CHECK(file >= 0, "mkstemp: %s", strerror(errno));
    unlink(path);
    CHECK(write(file, "hello", 5) == 5, "write");
    init_fails_and_keeps(driver, var, file, "own file");
    char buf[8] = {0};
    CHECK(pread(file, buf, 5, 0) == 5 && memcmp(buf, "hello", 5) == 0, "file contents");
    CHECK(lseek(file, 0, SEEK_CUR) == 5, "file offset moved");
    close(file);

    /* Both ends of a pipe, still connected. */
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    init_fails_and_keeps(driver, var, p[0], "pipe read end");
    init_fails_and_keeps(driver, var, p[1], "pipe write end");
    CHECK(write(p[1], "x", 1) == 1 && read(p[0], buf, 1) == 1 && buf[0] == 'x', "pipe");
    close(p[0]);
    close(p[1]);

    /* memfds that are not segments: small and unsealed; sealed without the magic; with
     * the magic but an invalid header (passes the first checks, fails in the attach). */
    int m = make_memfd(100, NULL, 0);
    init_fails_and_keeps(driver, var, m, "small unsealed memfd");
    close(m);
    m = make_memfd(1 << 20, NULL, 1);
    init_fails_and_keeps(driver, var, m, "sealed memfd without magic");
    close(m);
    m = make_memfd(1 << 20, magic, 0);
    init_fails_and_keeps(driver, var, m, "unsealed memfd with magic");
    close(m);
    m = make_memfd(1 << 20, magic, 1);
    init_fails_and_keeps(driver, var, m, "sealed memfd with magic, bad header");
    CHECK(pread(m, buf, 8, 0) == 8 && memcmp(buf, magic, 8) == 0, "memfd contents");
    close(m);

    /* A number that is not open: fails, and stays closed. */
    set_env(driver, var, 1000);
    CHECK(SkifCh_Init(NULL, NULL) == -1, "%s=1000 (closed): Init succeeded", var);
}

int main(void) {
    check_all("shm", "SKIFCH_FD", "SKIFCH\0\x01");
    check_all("fpga-model", "SKIFCH_FPGA_FD", "SKIFNODE");

    /* Init still works afterwards: started alone, a 1-rank job. */
    unsetenv("SKIFCH_FD");
    unsetenv("SKIFCH_FPGA_FD");
    unsetenv("SKIFCH_RANK");
    unsetenv("SKIFCH_SIZE");
    unsetenv("SKIFCH_DRIVER");
    CHECK_OK(SkifCh_Init(NULL, NULL));
    CHECK(SkifCh_Size() == 1, "size %d", SkifCh_Size());
    CHECK_OK(SkifCh_Finalize());
    printf("badfd: ok\n");
    return 0;
}
