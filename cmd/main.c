/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet: the node agent's entry point. Without a command it runs the
 * daemon (cmd/daemon.c); `cubelet pleg-replay` drives a PLEG from a script.
 * Flags come first and use kubelet's names (cmd/flags.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/flags.h"
#include "commands.h"
#include "core/log.h"
#include "core/memory.h"

int main(int argc, char **argv)
{
        struct kc_kubelet_flags f = { 0 };
        char *err = NULL;
        int optind_ = 0, r;

        r = kc_kubelet_flags_parse(argc, argv, &f, &optind_, &err);
        if (r < 0) {
                fprintf(stderr, "cubelet: %s\n", err ? err : strerror(-r));
                free(err);
                return 2;
        }
        kc_log_set_verbosity(f.verbosity);
        if (f.help) {
                kc_kubelet_flags_usage(stdout);
                r = 0;
        } else if (f.version) {
                puts("cubelet v" KC_VERSION);
                r = 0;
        } else if (optind_ >= argc) {
                /* Returns only when it did not execute the daemon again (core/memory.h). */
                r = kc_memory_tune_exec(argv);
                if (r == 0)
                        kc_log_v_s(1, "Malloc's per-thread cache count set",
                                   KC_KV_STR("GLIBC_TUNABLES", getenv("GLIBC_TUNABLES")));
                else if (r != -EOPNOTSUPP)
                        kc_log_v_s(1, "Malloc's per-thread caches left on", KC_KV_ERRNO(r));
                r = kc_cmd_daemon(&f);
        } else if (strcmp(argv[optind_], "pleg-replay") == 0) {
                r = kc_cmd_pleg_replay(argc - optind_, argv + optind_);
        } else {
                fprintf(stderr, "cubelet: unknown command \"%s\" (see cubelet --help)\n",
                        argv[optind_]);
                r = 2;
        }
        kc_kubelet_flags_done(&f);
        return r;
}
