/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a probe worker reads of its container in the pod's v1 status
 * (kubelet/probe_target.c, issue 15): the app statuses then the init ones,
 * only with a containerID; the running state and its start; terminated;
 * started; the pod IP; a terminal phase.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "probe_target.h"

static void test_target_from_status(void **state)
{
        _cleanup_json_ json_t *st = json_loads(
                "{\"phase\": \"Running\", \"podIP\": \"10.88.0.7\","
                " \"initContainerStatuses\": [{\"name\": \"side\", \"containerID\": \"sim://i1\","
                "   \"state\": {\"terminated\": {}}, \"started\": false}],"
                " \"containerStatuses\": ["
                "  {\"name\": \"app\", \"containerID\": \"containerd://abc\","
                "   \"state\": {\"running\": {\"startedAt\": \"2026-11-21T10:00:05Z\"}},"
                "   \"started\": true},"
                "  {\"name\": \"side\", \"state\": {\"waiting\": {}}}]}",
                0, NULL);
        struct kc_probe_target t;

        (void)state;
        assert_non_null(st);
        assert_int_equal(kc__probe_target_from_status(st, "app", &t), 0);
        assert_false(t.pod_terminal);
        assert_string_equal(t.container_id, "abc");
        assert_true(t.running);
        assert_false(t.terminated);
        assert_true(t.started);
        assert_int_equal(t.started_at_ns, INT64_C(1795255205) * KC_NSEC_PER_SEC);
        assert_string_equal(t.pod_ip, "10.88.0.7");
        kc_probe_target_done(&t);

        /* An app status without a containerID: the init list's is used. */
        assert_int_equal(kc__probe_target_from_status(st, "side", &t), 0);
        assert_string_equal(t.container_id, "i1");
        assert_false(t.running);
        assert_true(t.terminated);
        kc_probe_target_done(&t);

        assert_int_equal(kc__probe_target_from_status(st, "nope", &t), 0);
        assert_null(t.container_id);
        kc_probe_target_done(&t);

        json_object_set_new(st, "phase", json_string("Succeeded"));
        assert_int_equal(kc__probe_target_from_status(st, "app", &t), 0);
        assert_true(t.pod_terminal);
        kc_probe_target_done(&t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_target_from_status),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
