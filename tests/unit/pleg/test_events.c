/* SPDX-License-Identifier: Apache-2.0 */
/*
 * generateEvents and computeEvents (UPSTREAM.md §3.1–§3.3).
 * F-PLEG-03 (state mapping), F-PLEG-04 (every old×new pair), F-PLEG-05
 * (sandboxes tracked like containers), F-PLEG-06 (union order and
 * de-duplication by ID string).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "internal.h"
#include "pleg/event.h"
#include "runtime/container.h"

#define R KC_PLEG_STATE_RUNNING
#define X KC_PLEG_STATE_EXITED
#define U KC_PLEG_STATE_UNKNOWN
#define N KC_PLEG_STATE_NON_EXISTENT
#define STARTED KC_PLEG_CONTAINER_STARTED
#define DIED KC_PLEG_CONTAINER_DIED
#define REMOVED KC_PLEG_CONTAINER_REMOVED
#define CHANGED KC_PLEG_CONTAINER_CHANGED

/* F-PLEG-03 */
static void test_convert_state(void **state)
{
        (void)state;
        assert_int_equal(kc__pleg_convert_state(KC_CONTAINER_STATE_CREATED), U);
        assert_int_equal(kc__pleg_convert_state(KC_CONTAINER_STATE_RUNNING), R);
        assert_int_equal(kc__pleg_convert_state(KC_CONTAINER_STATE_EXITED), X);
        assert_int_equal(kc__pleg_convert_state(KC_CONTAINER_STATE_UNKNOWN), U);
}

/* F-PLEG-04: all 16 old×new pairs of the generateEvents table. */
static void test_generate_events_table(void **state)
{
        static const struct {
                enum kc_pleg_container_state old_state, new_state;
                size_t n;
                enum kc_pleg_event_type ev[2];
        } table[] = {
                { N, N, 0, { 0 } },
                { N, R, 1, { STARTED } },
                { N, X, 1, { DIED } },
                { N, U, 1, { CHANGED } },
                { R, N, 2, { DIED, REMOVED } },
                { R, R, 0, { 0 } },
                { R, X, 1, { DIED } },
                { R, U, 1, { CHANGED } },
                { X, N, 1, { REMOVED } },
                { X, R, 1, { STARTED } },
                { X, X, 0, { 0 } },
                { X, U, 1, { CHANGED } },
                { U, N, 2, { DIED, REMOVED } },
                { U, R, 1, { STARTED } },
                { U, X, 1, { DIED } },
                { U, U, 0, { 0 } },
        };
        size_t i, k;

        (void)state;
        assert_int_equal(KC_ELEMENTSOF(table), 16);
        for (i = 0; i < KC_ELEMENTSOF(table); i++) {
                enum kc_pleg_event_type out[2] = { -1, -1 };
                size_t n = kc__pleg_generate_events(table[i].old_state, table[i].new_state, out);

                print_message("pair %zu: %d -> %d\n", i, table[i].old_state, table[i].new_state);
                assert_int_equal(n, table[i].n);
                for (k = 0; k < n; k++)
                        assert_int_equal(out[k], table[i].ev[k]);
        }
}

struct ctr {
        const char *id;
        enum kc_container_state state;
};

static struct kc_pod *mkpod(const char *uid, const struct ctr *c, size_t nc, const struct ctr *s,
                            size_t ns)
{
        struct kc_container cs[8] = { 0 }, ss[8] = { 0 };
        struct kc_pod tmpl = {
                .id = uid, .containers = cs, .n_containers = nc, .sandboxes = ss, .n_sandboxes = ns
        };
        struct kc_pod *p = NULL;
        size_t i;

        for (i = 0; i < nc; i++)
                cs[i] = (struct kc_container){ .id = c[i].id, .state = c[i].state };
        for (i = 0; i < ns; i++)
                ss[i] = (struct kc_container){ .id = s[i].id, .state = s[i].state };
        assert_int_equal(kc_pod_new(&tmpl, &p), 0);
        return p;
}

static void expect_events(const struct kc_pod *old, const struct kc_pod *cur, size_t n_want,
                          const enum kc_pleg_event_type *types, const char *const *ids)
{
        struct kc_pleg_event_spec *buf = NULL;
        size_t cap = 0, n = 0, i;

        assert_int_equal(kc__pleg_compute_events(old, cur, &buf, &cap, &n), 0);
        assert_int_equal(n, n_want);
        for (i = 0; i < n; i++) {
                assert_int_equal(buf[i].type, types[i]);
                assert_string_equal(buf[i].container_id, ids[i]);
        }
        free(buf);
}

/* F-PLEG-05, F-PLEG-06: union order old containers, old sandboxes, new
 * containers, new sandboxes; sandboxes produce events like containers. */
static void test_union_order_and_sandboxes(void **state)
{
        const struct ctr oc[] = { { "c1", KC_CONTAINER_STATE_RUNNING } };
        const struct ctr os[] = { { "s1", KC_CONTAINER_STATE_RUNNING } };
        const struct ctr nc[] = { { "c2", KC_CONTAINER_STATE_RUNNING } };
        const struct ctr ns[] = { { "s1", KC_CONTAINER_STATE_EXITED },
                                  { "s2", KC_CONTAINER_STATE_RUNNING } };
        struct kc_pod *old = mkpod("p", oc, 1, os, 1), *cur = mkpod("p", nc, 1, ns, 2);
        const enum kc_pleg_event_type types[] = { DIED, REMOVED, DIED, STARTED, STARTED };
        const char *const ids[] = { "c1", "c1", "s1", "c2", "s2" };

        (void)state;
        expect_events(old, cur, 5, types, ids);
        kc_pod_unref(old);
        kc_pod_unref(cur);
}

/* F-PLEG-06: an ID present as container and sandbox is compared once; its
 * state is looked up among containers first. */
static void test_union_dedup_by_id(void **state)
{
        const struct ctr c[] = { { "x", KC_CONTAINER_STATE_RUNNING } };
        const struct ctr s[] = { { "x", KC_CONTAINER_STATE_EXITED } };
        struct kc_pod *old = mkpod("p", NULL, 0, NULL, 0), *cur = mkpod("p", c, 1, s, 1);
        const enum kc_pleg_event_type types[] = { STARTED };
        const char *const ids[] = { "x" };

        (void)state;
        expect_events(old, cur, 1, types, ids);
        /* A vanished pod (cur NULL): every live container dies and is removed. */
        {
                const enum kc_pleg_event_type t2[] = { DIED, REMOVED };
                const char *const ids2[] = { "x", "x" };

                expect_events(cur, NULL, 2, t2, ids2);
        }
        /* A new pod (old NULL). */
        expect_events(NULL, cur, 1, types, ids);
        /* Nothing changed. */
        expect_events(cur, cur, 0, NULL, NULL);
        kc_pod_unref(old);
        kc_pod_unref(cur);
}

/* F-PLEG-04: running→created is invisible (Changed), created→running Started. */
static void test_created_transitions(void **state)
{
        const struct ctr run[] = { { "c", KC_CONTAINER_STATE_RUNNING } };
        const struct ctr created[] = { { "c", KC_CONTAINER_STATE_CREATED } };
        struct kc_pod *a = mkpod("p", run, 1, NULL, 0), *b = mkpod("p", created, 1, NULL, 0);
        const enum kc_pleg_event_type changed[] = { CHANGED }, started[] = { STARTED };
        const char *const ids[] = { "c" };

        (void)state;
        expect_events(a, b, 1, changed, ids);
        expect_events(b, a, 1, started, ids);
        kc_pod_unref(a);
        kc_pod_unref(b);
}

/* Many containers: the scratch buffer grows. */
static void test_buffer_growth(void **state)
{
        struct kc_container cs[40];
        struct kc_pod tmpl = { .id = "p", .containers = cs, .n_containers = 40 };
        struct kc_pleg_event_spec *buf = NULL;
        struct kc_pod *p = NULL;
        char ids[40][8];
        size_t cap = 0, n = 0, i;

        (void)state;
        for (i = 0; i < 40; i++) {
                snprintf(ids[i], sizeof(ids[i]), "c%zu", i);
                cs[i] = (struct kc_container){ .id = ids[i], .state = KC_CONTAINER_STATE_RUNNING };
        }
        assert_int_equal(kc_pod_new(&tmpl, &p), 0);
        assert_int_equal(kc__pleg_compute_events(p, NULL, &buf, &cap, &n), 0);
        assert_int_equal(n, 80);
        assert_true(cap >= 80);
        for (i = 0; i < 40; i++) {
                assert_int_equal(buf[2 * i].type, DIED);
                assert_int_equal(buf[2 * i + 1].type, REMOVED);
                assert_string_equal(buf[2 * i].container_id, ids[i]);
        }
        free(buf);
        kc_pod_unref(p);
}

static void test_event_names(void **state)
{
        struct kc_pleg_event *e;

        (void)state;
        assert_string_equal(kc_pleg_event_type_to_string(STARTED), "ContainerStarted");
        assert_string_equal(kc_pleg_event_type_to_string(DIED), "ContainerDied");
        assert_string_equal(kc_pleg_event_type_to_string(REMOVED), "ContainerRemoved");
        assert_string_equal(kc_pleg_event_type_to_string(KC_PLEG_POD_SYNC), "PodSync");
        assert_string_equal(kc_pleg_event_type_to_string(CHANGED), "ContainerChanged");
        assert_null(kc_pleg_event_type_to_string(_KC_PLEG_EVENT_TYPE_MAX));
        e = kc_pleg_event_new("uid-1", KC_PLEG_POD_SYNC, NULL);
        assert_non_null(e);
        assert_string_equal(e->pod_id, "uid-1");
        assert_string_equal(e->data, "");
        kc_pleg_event_free(e);
}

/* The upstream algorithm as written: the union, de-duplicated, each ID's state looked up. */
static enum kc_pleg_container_state ref_state(const struct kc_pod *p, const char *id)
{
        size_t i;

        for (i = 0; i < p->n_containers; i++)
                if (strcmp(p->containers[i].id, id) == 0)
                        return kc__pleg_convert_state(p->containers[i].state);
        for (i = 0; i < p->n_sandboxes; i++)
                if (strcmp(p->sandboxes[i].id, id) == 0)
                        return kc__pleg_convert_state(p->sandboxes[i].state);
        return N;
}

static size_t ref_compute_events(const struct kc_pod *old, const struct kc_pod *cur,
                                 struct kc_pleg_event_spec *out)
{
        const char *seen[32];
        size_t n_seen = 0, n = 0, l, i, j, k;

        for (l = 0; l < 4; l++) {
                const struct kc_pod *p = l < 2 ? old : cur;
                const struct kc_container *v = l % 2 ? p->sandboxes : p->containers;
                size_t cnt = l % 2 ? p->n_sandboxes : p->n_containers;

                for (i = 0; i < cnt; i++) {
                        enum kc_pleg_event_type t[2];
                        size_t m;

                        for (j = 0; j < n_seen && strcmp(seen[j], v[i].id) != 0; j++)
                                ;
                        if (j < n_seen)
                                continue;
                        seen[n_seen++] = v[i].id;
                        m = kc__pleg_generate_events(ref_state(old, v[i].id),
                                                     ref_state(cur, v[i].id), t);
                        for (k = 0; k < m; k++)
                                out[n++] = (struct kc_pleg_event_spec){ t[k], v[i].id };
                }
        }
        return n;
}

/*
 * Issue 18: a pair of snapshots listing the same IDs in the same places (the
 * usual change, a state flipped) takes a shorter path; it must give what the
 * full union gives, duplicated IDs included, and so must every other pair.
 * Random pods over a small ID pool, so duplicates and shared IDs are common.
 */
static void test_same_ids_matches_union(void **state)
{
        static const char *const pool[] = { "a", "b", "c", "d", "e" };
        static const enum kc_container_state states[] = {
                KC_CONTAINER_STATE_CREATED,
                KC_CONTAINER_STATE_RUNNING,
                KC_CONTAINER_STATE_EXITED,
                KC_CONTAINER_STATE_UNKNOWN,
        };
        struct kc_pleg_event_spec *buf = NULL, want[32];
        size_t cap = 0, n, n_want, same = 0, i, k;
        unsigned seed = 18;

        (void)state;
        for (i = 0; i < 20000; i++) {
                struct ctr oc[4], os[3], nc[4], ns[3];
                size_t noc = (size_t)rand_r(&seed) % 5, nos = (size_t)rand_r(&seed) % 4;
                bool keep_ids = rand_r(&seed) % 4 != 0;
                struct kc_pod *old, *cur;

                for (k = 0; k < noc; k++)
                        oc[k] = (struct ctr){ pool[rand_r(&seed) % 5], states[rand_r(&seed) % 4] };
                for (k = 0; k < nos; k++)
                        os[k] = (struct ctr){ pool[rand_r(&seed) % 5], states[rand_r(&seed) % 4] };
                for (k = 0; k < noc; k++)
                        nc[k] = (struct ctr){ keep_ids ? oc[k].id : pool[rand_r(&seed) % 5],
                                              states[rand_r(&seed) % 4] };
                for (k = 0; k < nos; k++)
                        ns[k] = (struct ctr){ keep_ids ? os[k].id : pool[rand_r(&seed) % 5],
                                              states[rand_r(&seed) % 4] };
                old = mkpod("p", oc, noc, os, nos);
                cur = mkpod("p", nc, noc, ns, nos);
                same += keep_ids;
                n_want = ref_compute_events(old, cur, want);
                assert_int_equal(kc__pleg_compute_events(old, cur, &buf, &cap, &n), 0);
                assert_int_equal(n, n_want);
                for (k = 0; k < n; k++) {
                        assert_int_equal(buf[k].type, want[k].type);
                        assert_string_equal(buf[k].container_id, want[k].container_id);
                }
                kc_pod_unref(old);
                kc_pod_unref(cur);
        }
        assert_true(same > 10000);
        free(buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_convert_state),
                cmocka_unit_test(test_generate_events_table),
                cmocka_unit_test(test_union_order_and_sandboxes),
                cmocka_unit_test(test_union_dedup_by_id),
                cmocka_unit_test(test_created_transitions),
                cmocka_unit_test(test_buffer_growth),
                cmocka_unit_test(test_event_names),
                cmocka_unit_test(test_same_ids_matches_union),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
