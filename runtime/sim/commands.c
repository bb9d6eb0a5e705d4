/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a simulated container's process does. The command is read the way
 * busybox would run it: `sleep N`, `exit N`, `true` and `false` exit on
 * their own, anything else runs until stopped. Time comes only from the
 * injected clock, and exits that fall due are applied lazily, whenever a
 * call looks at the state, so a fake clock drives the sim deterministically.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/sim.h"
#include "sim_internal.h"

/* ------------------------------------------------------------------------ */
/* Busybox-like commands                                                      */

/* "5", "0.5", "5s", "2m", "1h", "1d" -> ns; -EINVAL otherwise. */
static int parse_sleep(const char *s, int64_t *ret)
{
        double v, mult = 1;
        char *end;

        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "infinity") == 0)
                return -ERANGE;
        v = strtod(s, &end);
        if (end == s || v < 0)
                return -EINVAL;
        if (*end) {
                if (end[1])
                        return -EINVAL;
                switch (*end) {
                case 's':
                        break;
                case 'm':
                        mult = 60;
                        break;
                case 'h':
                        mult = 3600;
                        break;
                case 'd':
                        mult = 86400;
                        break;
                default:
                        return -EINVAL;
                }
        }
        v *= mult * (double)KC_NSEC_PER_SEC;
        if (!(v < 9.2e18))
                return -ERANGE;
        *ret = (int64_t)v;
        return 0;
}

static const char *base_name(const char *s)
{
        const char *slash = strrchr(s, '/');

        return slash ? slash + 1 : s;
}

/* Interprets the words of one simple command. */
static struct sim_program program_from_words(char **w, size_t n)
{
        struct sim_program forever = { .exits = false };
        const char *cmd;
        int64_t ns;

        if (n == 0)
                return forever;
        cmd = base_name(w[0]);
        if (strcmp(cmd, "true") == 0)
                return (struct sim_program){ .exits = true, .exit_code = 0 };
        if (strcmp(cmd, "false") == 0)
                return (struct sim_program){ .exits = true, .exit_code = 1 };
        if (strcmp(cmd, "exit") == 0) {
                long code = 0;
                char *end = NULL;

                if (n >= 2) {
                        code = strtol(w[1], &end, 10);
                        if (end == w[1] || *end)
                                code = 2; /* sh: exit: Illegal number */
                }
                return (struct sim_program){ .exits = true, .exit_code = (int32_t)(code & 0xff) };
        }
        if (strcmp(cmd, "sleep") == 0 && n == 2 && parse_sleep(w[1], &ns) == 0)
                return (struct sim_program){ .exits = true, .run_ns = ns, .exit_code = 0 };
        return forever;
}

/* Splits @p s on blanks into @p words (pointers into @p buf, a copy of s). */
static size_t split_words(const char *s, char *buf, size_t buf_size, char **words, size_t max)
{
        size_t n = 0;
        char *p, *save = NULL;

        snprintf(buf, buf_size, "%s", s);
        for (p = strtok_r(buf, " \t\n", &save); p && n < max; p = strtok_r(NULL, " \t\n", &save))
                words[n++] = p;
        return n;
}

/*
 * Reads command + args like busybox would run them: `sleep N`, `exit N`,
 * `true`, `false`, directly or through `sh -c "..."` (a one-element command
 * with blanks is split too). Anything else runs until stopped.
 */
struct sim_program kc__sim_program_parse(const char *const *argv, size_t argc)
{
        char buf[256], *words[8];
        const char *script = NULL;
        size_t i, n;

        if (argc == 0)
                return (struct sim_program){ .exits = false };
        if (argc >= 3 && strcmp(argv[1], "-c") == 0 &&
            (strcmp(base_name(argv[0]), "sh") == 0 || strcmp(base_name(argv[0]), "ash") == 0 ||
             strcmp(base_name(argv[0]), "bash") == 0))
                script = argv[2];
        else if (argc == 1)
                script = argv[0];
        if (script) {
                if (strlen(script) >= sizeof(buf))
                        return (struct sim_program){ .exits = false };
                n = split_words(script, buf, sizeof(buf), words, KC_ELEMENTSOF(words));
                return program_from_words(words, n);
        }
        if (argc > KC_ELEMENTSOF(words))
                return (struct sim_program){ .exits = false };
        for (i = 0; i < argc; i++)
                words[i] = (char *)argv[i];
        return program_from_words(words, argc);
}

/* ------------------------------------------------------------------------ */
/* Processes and the lazy clock                                               */

void kc__sim_container_exit(struct sim_container *c, int32_t code, int64_t at, const char *reason)
{
        c->v.state = KC_CONTAINER_STATE_EXITED;
        c->v.exit_code = code;
        c->v.finished_at = at;
        c->v.reason = reason ? reason : code == 0 ? "Completed" : "Error";
        kc__sim_pod_touch(c->o.pod);
}

void kc__sim_container_start_locked(struct kc_sim *s, struct sim_container *c)
{
        int64_t now = kc_clock_now(s->clock);

        c->v.state = KC_CONTAINER_STATE_RUNNING;
        c->v.started_at = now;
        kc__sim_pod_touch(c->o.pod);
        if (!c->prog.exits)
                return;
        c->deadline = c->prog.run_ns > INT64_MAX - now ? INT64_MAX - 1 : now + c->prog.run_ns;
        if (c->deadline <= now)
                kc__sim_container_exit(c, c->prog.exit_code, c->deadline, NULL);
        else if (c->deadline < s->st.next_deadline)
                s->st.next_deadline = c->deadline;
}

void kc__sim_container_stop_locked(struct kc_sim *s, struct sim_container *c)
{
        if (c->v.state == KC_CONTAINER_STATE_RUNNING || c->v.state == KC_CONTAINER_STATE_UNKNOWN)
                kc__sim_container_exit(c, SIM_EXIT_KILLED, kc_clock_now(s->clock), "Error");
}

void kc__sim_advance_locked(struct kc_sim *s)
{
        struct sim_state *st = &s->st;
        struct sim_container *c;
        struct sim_pod *p;
        int64_t now, next = INT64_MAX;

        if (st->next_deadline == INT64_MAX)
                return;
        now = kc_clock_now(s->clock);
        if (now < st->next_deadline)
                return;
        sim_for_each_pod(p, st) sim_for_each_container(c, p)
        {
                if (c->v.state != KC_CONTAINER_STATE_RUNNING || !c->prog.exits)
                        continue;
                if (c->deadline <= now)
                        kc__sim_container_exit(c, c->prog.exit_code, c->deadline, NULL);
                else if (c->deadline < next)
                        next = c->deadline;
        }
        st->next_deadline = next;
}

int kc_sim_crash_container(struct kc_sim *s, const char *pod_uid, const char *name,
                           int32_t exit_code)
{
        struct sim_container *c;
        struct sim_pod *p;
        int n = 0;

        if (!s || !pod_uid)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        /* Exits due by now happen first: a crash cannot overtake them. */
        kc__sim_advance_locked(s);
        p = kc_map_get(s->st.pods, pod_uid);
        if (!p)
                return -ENOENT;
        sim_for_each_container(c, p)
        {
                if (c->v.state != KC_CONTAINER_STATE_RUNNING ||
                    (name && !kc__streq(c->v.metadata.name, name)))
                        continue;
                kc__sim_container_exit(c, exit_code, kc_clock_now(s->clock),
                                       exit_code ? "Error" : NULL);
                n++;
        }
        s->crashes += (uint64_t)n;
        return n;
}
