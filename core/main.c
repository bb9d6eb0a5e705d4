/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet: the node agent's entry point. Today it runs `pleg-replay`; the
 * daemon (the kubelet's Run and syncLoop) arrives with the node-agent issue.
 */
#include <string.h>

#include "commands.h"
#include "kc_core.h"

static void usage(FILE *f)
{
        fputs("usage: cubelet [-v N] <command> [args]\n"
              "\n"
              "commands:\n"
              "  pleg-replay [FILE|-]   drive a GenericPLEG from a JSON Lines script\n"
              "\n"
              "options:\n"
              "  -v N, --v=N            log verbosity (klog levels, default 0)\n"
              "  -h, --help             show this help\n"
              "  --version              print the version\n",
              f);
}

static int parse_verbosity(const char *s)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 0 || v > 10)
                return -EINVAL;
        return (int)v;
}

int main(int argc, char **argv)
{
        int i = 1, v;

        while (i < argc && argv[i][0] == '-') {
                const char *a = argv[i], *val = NULL;

                if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                        usage(stdout);
                        return 0;
                }
                if (strcmp(a, "--version") == 0) {
                        puts("cubelet 0.1.0");
                        return 0;
                }
                if (strcmp(a, "-v") == 0 || strcmp(a, "--v") == 0) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "cubelet: %s needs a value\n", a);
                                return 2;
                        }
                        val = argv[++i];
                } else if (strncmp(a, "-v=", 3) == 0 || strncmp(a, "--v=", 4) == 0) {
                        val = strchr(a, '=') + 1;
                } else {
                        fprintf(stderr, "cubelet: unknown flag %s (see cubelet --help)\n", a);
                        return 2;
                }
                v = parse_verbosity(val);
                if (v < 0) {
                        fprintf(stderr, "cubelet: invalid verbosity \"%s\" (want 0 to 10)\n", val);
                        return 2;
                }
                kc_log_set_verbosity(v);
                i++;
        }
        if (i >= argc) {
                usage(stderr);
                return 2;
        }
        if (strcmp(argv[i], "pleg-replay") == 0)
                return kc_cmd_pleg_replay(argc - i, argv + i);
        fprintf(stderr, "cubelet: unknown command \"%s\" (see cubelet --help)\n", argv[i]);
        return 2;
}
