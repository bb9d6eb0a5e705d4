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

/* ---- structured form (klog.InfoS / ErrorS) ---------------------------------- */

/* Captures exactly one line and returns what follows its header (no newline). */
static char *one_line(struct capture *c, int lineno, char sev)
{
        char *nl;

        capture_end(c);
        nl = strchr(c->buf, '\n');
        assert_non_null(nl);
        assert_string_equal(nl, "\n"); /* one line, nothing after it */
        *nl = '\0';
        check_line(c->buf, sev, lineno, c->buf + (strstr(c->buf, "] ") - c->buf) + 2);
        return strstr(c->buf, "] ") + 2;
}

static void check_quote(const char *in, size_t len, const char *want)
{
        char buf[256];
        size_t n = kc_log_quote(buf, sizeof(buf), in, len);

        assert_string_equal(buf, want);
        assert_int_equal(n, strlen(want));
}

/* strconv.Quote's output, byte for byte (the values come from Go 1.22). */
static void test_log_quote(void **state)
{
        char small[6];

        (void)state;
        check_quote("", 0, "\"\"");
        check_quote("plain text", 10, "\"plain text\"");
        check_quote("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
        check_quote("l1\nl2\tx\r", 8, "\"l1\\nl2\\tx\\r\"");
        check_quote("\a\b\f\v", 4, "\"\\a\\b\\f\\v\"");
        check_quote("\x01\x1f\x7f", 3, "\"\\x01\\x1f\\x7f\"");
        check_quote("nul\0in", 6, "\"nul\\x00in\"");
        /* Valid UTF-8 stays as it is. */
        check_quote("h\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80", 12,
                    "\"h\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80\"");
        /* Invalid bytes one by one as \x..: stray, cut, overlong, surrogate, > U+10FFFF. */
        check_quote("\xff\xfe", 2, "\"\\xff\\xfe\"");
        check_quote("a\xe2\x98", 3, "\"a\\xe2\\x98\"");
        check_quote("\xc0\xaf", 2, "\"\\xc0\\xaf\"");
        check_quote("\xed\xa0\x80", 3, "\"\\xed\\xa0\\x80\"");
        check_quote("\xf4\x90\x80\x80", 4, "\"\\xf4\\x90\\x80\\x80\"");
        /* Valid but not printable: \u.... or \U........ */
        check_quote("\xc2\x85", 2, "\"\\u0085\"");
        check_quote("\xc2\xa0", 2, "\"\\u00a0\"");
        check_quote("\xe2\x80\xa8", 3, "\"\\u2028\"");
        check_quote("\xef\xbb\xbf", 3, "\"\\ufeff\"");
        check_quote("\xf3\xb0\x80\x80", 4, "\"\\U000f0000\"");
        /* Like snprintf: cut to the buffer, the full length returned. */
        assert_int_equal(kc_log_quote(small, sizeof(small), "abcdefgh", 8), 10);
        assert_string_equal(small, "\"abcd");
}

static void pod_name_at(const void *array, size_t i, const char **ret_ns, const char **ret_name)
{
        const char *const(*pods)[2] = array;

        *ret_ns = pods[i][0];
        *ret_name = pods[i][1];
}

static void test_log_structured(void **state)
{
        static const char *const pods[][2] = { { "default", "web-node1" }, { "", "bare" } };
        struct capture c;
        int l;

        (void)state;
        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_info_s("SyncLoop ADD", KC_KV_STR("source", "file"),
                      KC_KV_REFS("pods", pods, KC_ELEMENTSOF(pods), pod_name_at));
        assert_string_equal(
                one_line(&c, l, 'I'),
                "\"SyncLoop ADD\" source=\"file\" pods=[\"default/web-node1\" \"bare\"]");
        free(c.buf);

        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_info_s("Numbers", KC_KV_INT("exitCode", -137), KC_KV_UINT("max", UINT64_MAX),
                      KC_KV_BOOL("yes", true), KC_KV_BOOL("no", false),
                      KC_KV_DURATION("took", 1500000000), KC_KV_STR("null", NULL),
                      KC_KV_STR("empty", ""));
        assert_string_equal(one_line(&c, l, 'I'),
                            "\"Numbers\" exitCode=-137 max=18446744073709551615 yes=true no=false "
                            "took=\"1.5s\" null=\"\" empty=\"\"");
        free(c.buf);

        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_error_s("context deadline exceeded", "Error syncing pod, skipping",
                       KC_KV_POD("default", "web"), KC_KV_STR("podUID", "u-1"));
        assert_string_equal(one_line(&c, l, 'E'),
                            "\"Error syncing pod, skipping\" err=\"context deadline exceeded\" "
                            "pod=\"default/web\" podUID=\"u-1\"");
        free(c.buf);

        /* A nil error is left out; a pod without namespace is just its name. */
        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_error_s(NULL, "No error", KC_KV_POD(NULL, "solo"));
        assert_string_equal(one_line(&c, l, 'E'), "\"No error\" pod=\"solo\"");
        free(c.buf);

        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_warn_s("No pairs");
        assert_string_equal(one_line(&c, l, 'W'), "\"No pairs\"");
        free(c.buf);
}

/* A message or value with newlines, quotes or control bytes is still one line. */
static void test_log_structured_one_line(void **state)
{
        struct capture c;
        int l;

        (void)state;
        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_info_s("two\nlines", KC_KV_STR("path", "/etc/\"k\"\n\tx\x1b[31m"),
                      KC_KV_POD("ns\n", "p\\q"), KC_KV_RAW("event", "{\"Data\":\"a\nb\"}"));
        assert_string_equal(one_line(&c, l, 'I'),
                            "\"two\\nlines\" path=\"/etc/\\\"k\\\"\\n\\tx\\x1b[31m\" "
                            "pod=\"ns\\n/p\\\\q\" event={\"Data\":\"a\\x0ab\"}");
        free(c.buf);
}

static int evaluated;

static int count_eval(void)
{
        return ++evaluated;
}

static void test_log_structured_v_errno_long(void **state)
{
        struct capture c;
        char big[5000];
        int r, l;

        (void)state;
        kc_log_set_verbosity(2);
        capture_begin(&c);
        kc_log_v_s(3, "hidden", KC_KV_INT("n", count_eval()));
        kc_log_v_s(2, "shown", KC_KV_INT("n", count_eval()));
        capture_end(&c);
        assert_int_equal(evaluated, 1); /* the hidden line evaluated nothing */
        assert_null(strstr(c.buf, "hidden"));
        assert_non_null(strstr(c.buf, "] \"shown\" n=1\n"));
        free(c.buf);
        kc_log_set_verbosity(0);

        capture_begin(&c);
        errno = EAGAIN;
        l = __LINE__ + 1;
        r = kc_log_errno_s(-ENOENT, "Could not read", KC_KV_STR("path", "/x"));
        assert_int_equal(r, -ENOENT);
        assert_int_equal(errno, EAGAIN); /* logging keeps errno */
        assert_int_equal(kc_log_errno_s(EIO, "Failed"), -EIO);
        capture_end(&c);
        *strchr(c.buf, '\n') = '\0';
        check_line(c.buf, 'E', l,
                   "\"Could not read\" err=\"No such file or directory\" path=\"/x\"");
        assert_non_null(
                strstr(c.buf + strlen(c.buf) + 1, "] \"Failed\" err=\"Input/output error\"\n"));
        free(c.buf);

        /* Longer than the stack buffer. */
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        capture_begin(&c);
        l = __LINE__ + 1;
        kc_log_info_s("Big", KC_KV_STR("v", big));
        capture_end(&c);
        assert_int_equal(c.len, strlen(c.buf));
        assert_string_equal(c.buf + c.len - 4, "xx\"\n");
        c.buf[c.len - 1] = '\0';
        assert_int_equal(strlen(strstr(c.buf, "] ") + 2),
                         strlen("\"Big\" v=\"\"") + sizeof(big) - 1);
        free(c.buf);
        (void)l;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_log_format),
                cmocka_unit_test(test_log_errno_and_long),
                cmocka_unit_test(test_log_verbosity),
                cmocka_unit_test(test_log_concurrent_lines),
                cmocka_unit_test(test_log_quote),
                cmocka_unit_test(test_log_structured),
                cmocka_unit_test(test_log_structured_one_line),
                cmocka_unit_test(test_log_structured_v_errno_long),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
