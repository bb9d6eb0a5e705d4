/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the C integration tests (test_cri.c, test_pleg.c): the
 * containerd that containerd-setup.sh started, found through the file named
 * by $KC_CONTAINERD_ENV, and small wrappers around the CRI calls.
 *
 * Every object a test creates carries the label "cubelet.integration" =
 * "<test binary>-<pid>", so that integ_remove_all() can remove whatever a
 * failed test left behind.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_test.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

#define INTEG_LABEL "cubelet.integration"

struct integ_env {
        char sock[256];
        char endpoint[272];
        char image[256];
        char dir[256];
        char run[64];     /* the value of INTEG_LABEL for this process */
        char version[16]; /* KC_CONTAINERD_VERSION: "1.6" or "1.7" */
        bool cni;         /* KC_CONTAINERD_CNI=1: pods get their own network */
};

/* Reads KEY=VALUE from the setup's file into @p out; false when absent. */
static inline bool integ_env_read(const char *file, const char *key, char *out, size_t n)
{
        char line[1024];
        size_t klen = strlen(key);
        bool found = false;
        FILE *f = fopen(file, "re");

        if (!f)
                return false;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, key, klen) != 0 || line[klen] != '=')
                        continue;
                /* Cut to @p n (a copy, not snprintf: gcc cannot prove that fits). */
                size_t len = strcspn(line + klen + 1, "\n");

                len = len < n ? len : n - 1;
                memcpy(out, line + klen + 1, len);
                out[len] = '\0';
                found = true;
        }
        fclose(f);
        return found;
}

/*
 * Loads the environment or explains, loudly, why it cannot: these tests
 * never skip. Returns 0 or -1 (after printing the reason).
 */
static inline int integ_env_load(struct integ_env *e, const char *prog)
{
        const char *file = getenv("KC_CONTAINERD_ENV");

        memset(e, 0, sizeof(*e));
        if (!file || !*file) {
                fprintf(stderr,
                        "%s: KC_CONTAINERD_ENV is not set: run through CTest (fixture "
                        "integration.setup) or point it at the file "
                        "containerd-setup.sh wrote\n",
                        prog);
                return -1;
        }
        if (!integ_env_read(file, "KC_CONTAINERD_SOCK", e->sock, sizeof(e->sock)) ||
            !integ_env_read(file, "KC_CONTAINERD_IMAGE", e->image, sizeof(e->image)) ||
            !integ_env_read(file, "KC_CONTAINERD_DIR", e->dir, sizeof(e->dir))) {
                fprintf(stderr,
                        "%s: %s does not describe a running containerd (did integration.setup "
                        "fail?)\n",
                        prog, file);
                return -1;
        }
        {
                char cni[8] = "0";

                if (!integ_env_read(file, "KC_CONTAINERD_VERSION", e->version, sizeof(e->version)))
                        snprintf(e->version, sizeof(e->version), "1.6");
                (void)integ_env_read(file, "KC_CONTAINERD_CNI", cni, sizeof(cni));
                e->cni = strcmp(cni, "1") == 0;
        }
        snprintf(e->endpoint, sizeof(e->endpoint), "unix://%s", e->sock);
        snprintf(e->run, sizeof(e->run), "%s-%d", prog, (int)getpid());
        return 0;
}

/* A per-process unique string: "<prefix>-<pid>-<n>". */
static inline void integ_unique(char *out, size_t n, const char *prefix)
{
        static unsigned counter;

        snprintf(out, n, "%s-%d-%u", prefix, (int)getpid(), ++counter);
}

/* A host-network sandbox config labelled for this run (strings borrowed). */
static inline struct kc_pod_sandbox_config integ_sandbox_config(const struct integ_env *e,
                                                                const char *name, const char *uid,
                                                                uint32_t attempt,
                                                                struct kc_label labels[3])
{
        labels[0] = (struct kc_label){ INTEG_LABEL, e->run };
        labels[1] = (struct kc_label){ KC_LABEL_POD_UID, uid };
        labels[2] = (struct kc_label){ "cubelet.test/name", name };
        return (struct kc_pod_sandbox_config){
                .metadata = { .name = name, .uid = uid, .namespace = "integ", .attempt = attempt },
                /* No hostname: with the host's UTS namespace runc refuses one (the
                 * kubelet sets it only for pods with their own network). */
                .host_network = true,
                .labels = labels,
                .n_labels = 3,
                /* As kubelet's namespacesForPod: each container its own PID namespace. */
                .security.namespace_options = { .network = KC_CRI_NAMESPACE_NODE,
                                                .pid = KC_CRI_NAMESPACE_CONTAINER },
        };
}

/* Polls ContainerStatus until @p want or @p ms pass; returns the last status's state. */
static inline int integ_wait_container_state(struct kc_runtime_service svc, const char *id,
                                             enum kc_container_state want, long ms,
                                             struct kc_container_status_result *ret)
{
        int64_t deadline = kc_test_mono_ms() + (int64_t)(ms * kc_test_timeout_multiplier());
        int state = -1;

        for (;;) {
                struct kc_container_status_result st = { 0 };
                struct kc_runtime_error err = { 0 };
                int r = svc.ops->container_status(svc.self, id, &st, &err);

                if (r < 0) {
                        fprintf(stderr, "ContainerStatus(%s): %d %s\n", id, r, err.message);
                        return r;
                }
                state = st.status.state;
                if (state == (int)want || kc_test_mono_ms() >= deadline) {
                        if (ret)
                                *ret = st;
                        else
                                kc_runtime_result_done(&st);
                        return state;
                }
                kc_runtime_result_done(&st);
                kc_test_sleep_ms(20);
        }
}

/*
 * Stops and removes every sandbox (and so every container) labelled for
 * this run. Returns how many it removed.
 */
static inline int integ_remove_all(struct kc_runtime_service svc, const struct integ_env *e)
{
        struct kc_label sel = { INTEG_LABEL, e->run };
        struct kc_pod_sandbox_filter f = { .state = -1,
                                           .label_selector = &sel,
                                           .n_label_selector = 1 };
        struct kc_pod_sandbox_list l = { 0 };
        struct kc_runtime_error err = { 0 };
        int n = 0;

        if (svc.ops->list_pod_sandbox(svc.self, &f, &l, &err) < 0) {
                fprintf(stderr, "cleanup: ListPodSandbox: %s\n", err.message);
                return -1;
        }
        for (size_t i = 0; i < l.n; i++) {
                svc.ops->stop_pod_sandbox(svc.self, l.items[i].id, &err);
                if (svc.ops->remove_pod_sandbox(svc.self, l.items[i].id, &err) == 0)
                        n++;
                else
                        fprintf(stderr, "cleanup: RemovePodSandbox(%s): %s\n", l.items[i].id,
                                err.message);
        }
        kc_runtime_result_done(&l);
        return n;
}

/* A fixture's teardown: removes what a failed test left (saying so), then @p logs_dir. */
static inline void integ_teardown_leftovers(struct kc_runtime_service *svc,
                                            const struct integ_env *e, const char *logs_dir)
{
        char cmd[128];
        int n;

        if (svc) {
                n = integ_remove_all(*svc, e);
                if (n > 0)
                        fprintf(stderr, "removed %d sandbox(es) left by a failed test\n", n);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", logs_dir);
        if (logs_dir[0] && system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", logs_dir);
}
