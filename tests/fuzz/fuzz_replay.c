/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_replay: `cubelet pleg-replay FILE` (core/replay.c) on a fuzzed
 * script: the JSON Lines parser, every op (config, runtime, fail, advance,
 * relist, cri_event, events, healthy, metrics, calls, cache, ready) and
 * the GenericPLEG/EventedPLEG, simulated runtime and fake clock behind them.
 * The input is the script file, as is; it is handed over as
 * /proc/self/fd/<memfd> so that the command runs exactly as from the shell.
 * The script's output goes to /dev/null; its exit status must be 0 (ran) or
 * 2 (a bad script, reported on stderr), never 1 (set-up failure) or more.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commands.h"

static int script_fd = -1;
static char script_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        int null;

        (void)argc;
        (void)argv;
        script_fd = memfd_create("fuzz-replay-script", MFD_CLOEXEC);
        null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (script_fd < 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0) {
                perror("fuzz_replay: set-up");
                abort();
        }
        close(null);
        snprintf(script_path, sizeof(script_path), "/proc/self/fd/%d", script_fd);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *argv[] = { "pleg-replay", script_path, NULL };
        int status;

        if (ftruncate(script_fd, 0) < 0 || pwrite(script_fd, data, size, 0) != (ssize_t)size) {
                perror("fuzz_replay: writing the script");
                abort();
        }
        status = kc_cmd_pleg_replay(2, argv);
        if (status != 0 && status != 2) {
                fprintf(stderr, "pleg-replay exited %d\n", status);
                abort();
        }
        return 0;
}
