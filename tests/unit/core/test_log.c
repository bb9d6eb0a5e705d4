/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/log.h"

/* "Lmmdd hh:mm:ss.uuuuuu TTTTTTT file:line] msg" */
#define HEADER_RE                                                                                  \
        "^([IWEF])([0-9]{2})([0-9]{2}) [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} ([ 0-9]{7}) "         \
        "test_log\\.c:([0-9]+)\\] "

struct capture {
        char *buf;
        size_t len;
        FILE *f;
};

static void capture_begin(struct capture *c)
{
        *c = (struct capture){ 0 };
        c->f = open_memstream(&c->buf, &c->len);
        assert_non_null(c->f);
        kc_log_set_output(c->f);
}

static void capture_end(struct capture *c)
{
        kc_log_set_output(NULL);
        assert_int_equal(fclose(c->f), 0);
}

static void check_line(const char *line, char sev, int lineno, const char *msg)
{
        regex_t re;
        regmatch_t m[6];
        char tid[16], want_tid[16], num[16];

        assert_int_equal(regcomp(&re, HEADER_RE, REG_EXTENDED), 0);
        if (regexec(&re, line, KC_ELEMENTSOF(m), m, 0) != 0)
                fail_msg("line does not match the klog header: '%s'", line);
        assert_int_equal(line[0], sev);

        /* The thread id is right-aligned in exactly 7 columns. */
        snprintf(tid, sizeof(tid), "%.*s", (int)(m[4].rm_eo - m[4].rm_so), line + m[4].rm_so);
        snprintf(want_tid, sizeof(want_tid), "%7d", (int)gettid());
        assert_string_equal(tid, want_tid);

        snprintf(num, sizeof(num), "%.*s", (int)(m[5].rm_eo - m[5].rm_so), line + m[5].rm_so);
        assert_int_equal(atoi(num), lineno);
        assert_string_equal(line + m[0].rm_eo, msg);
        regfree(&re);
}

static void test_log_format(void **state)
{
        struct capture c;
        int l1, l2, l3;
        time_t now = time(NULL);
        struct tm tm;
        char mmdd[32];

        (void)state;
        capture_begin(&c);
        kc_log_info("hello pod=\"%s\" n=%d", "web-0", 3);
        l1 = __LINE__ - 1;
        kc_log_warn("careful");
        l2 = __LINE__ - 1;
        kc_log_error("broken\n"); /* an explicit newline is not doubled */
        l3 = __LINE__ - 1;
        capture_end(&c);

        char *line1 = c.buf, *line2, *line3;

        line2 = strchr(line1, '\n');
        assert_non_null(line2);
        *line2++ = '\0';
        line3 = strchr(line2, '\n');
        assert_non_null(line3);
        *line3++ = '\0';
        assert_string_equal(line3 + strlen(line3) - 1, "\n");
        line3[strlen(line3) - 1] = '\0';

        check_line(line1, 'I', l1, "hello pod=\"web-0\" n=3");
        check_line(line2, 'W', l2, "careful");
        check_line(line3, 'E', l3, "broken");

        /* Local date (a test run at midnight may see the next day). */
        localtime_r(&now, &tm);
        snprintf(mmdd, sizeof(mmdd), "%02d%02d", tm.tm_mon + 1, tm.tm_mday);
        if (strncmp(line1 + 1, mmdd, 4) != 0)
                print_message("note: date %.4s vs %s (midnight?)\n", line1 + 1, mmdd);
        free(c.buf);
}

static void test_log_errno_and_long(void **state)
{
        struct capture c;
        char big[5000];
        int r, l1, l2;

        (void)state;
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';

        capture_begin(&c);
        errno = ENOENT;
        kc_log_info("open: %m");
        l1 = __LINE__ - 1;
        assert_int_equal(errno, ENOENT); /* logging keeps errno */
        kc_log_info("%s", big);
        l2 = __LINE__ - 1;
        r = kc_log_errno(-EIO, "failed: %m");
        assert_int_equal(r, -EIO);
        assert_int_equal(kc_log_errno(EIO, "failed"), -EIO);
        capture_end(&c);
        /* kc_log_errno sets errno from r, so %m names the error returned. */
        assert_non_null(strstr(c.buf, "] failed: Input/output error\n"));

        char *line1 = c.buf, *line2;

        line2 = strchr(line1, '\n');
        *line2++ = '\0';
        check_line(line1, 'I', l1, "open: No such file or directory");
        *strchr(line2, '\n') = '\0';
        check_line(line2, 'I', l2, big);
        free(c.buf);
}

static void test_log_verbosity(void **state)
{
        struct capture c;

        (void)state;
        kc_log_set_verbosity(1);
        assert_int_equal(kc_log_get_verbosity(), 1);
        capture_begin(&c);
        kc_log_v(2, "hidden");
        kc_log_v(1, "shown-1");
        kc_log_v(0, "shown-0");
        capture_end(&c);
        assert_null(strstr(c.buf, "hidden"));
        assert_non_null(strstr(c.buf, "] shown-1\n"));
        assert_non_null(strstr(c.buf, "] shown-0\n"));
        free(c.buf);

        kc_log_set_verbosity(4);
        capture_begin(&c);
        kc_log_v(2, "now visible");
        capture_end(&c);
        assert_non_null(strstr(c.buf, "] now visible\n"));
        free(c.buf);
        kc_log_set_verbosity(0);
}

#define LOG_THREADS 4
#define LOG_LINES 2000

static void *log_thread(void *arg)
{
        int id = (int)(intptr_t)arg;

        for (int i = 0; i < LOG_LINES; i++)
                kc_log_info("thread=%d seq=%d pad=\"%s\"", id, i,
                            "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
        return NULL;
}

/* Lines from concurrent threads never interleave. */
static void test_log_concurrent_lines(void **state)
{
        pthread_t t[LOG_THREADS];
        int next_seq[LOG_THREADS] = { 0 };
        struct capture c;
        regex_t re;
        char *line, *save = NULL;
        int n = 0;

        (void)state;
        capture_begin(&c);
        for (int i = 0; i < LOG_THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, log_thread, (void *)(intptr_t)i), 0);
        for (int i = 0; i < LOG_THREADS; i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
        capture_end(&c);

        assert_int_equal(regcomp(&re, HEADER_RE "thread=([0-9]) seq=([0-9]+) pad=\"[a-z]{52}\"$",
                                 REG_EXTENDED | REG_NEWLINE),
                         0);
        for (line = strtok_r(c.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                regmatch_t m[8];
                int id, seq;

                if (regexec(&re, line, KC_ELEMENTSOF(m), m, 0) != 0)
                        fail_msg("mangled line: '%s'", line);
                id = atoi(line + m[6].rm_so);
                seq = atoi(line + m[7].rm_so);
                assert_in_range(id, 0, LOG_THREADS - 1);
                assert_int_equal(seq, next_seq[id]);
                next_seq[id]++;
                n++;
        }
        assert_int_equal(n, LOG_THREADS * LOG_LINES);
        regfree(&re);
        free(c.buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_log_format),
                cmocka_unit_test(test_log_errno_and_long),
                cmocka_unit_test(test_log_verbosity),
                cmocka_unit_test(test_log_concurrent_lines),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
