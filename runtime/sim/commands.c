/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a simulated container's process does. The command is split the way
 * busybox ash would (kc__sim_script_parse: the one splitter of the sim's
 * interpreter, shell.c) and read as a sequence: `sleep N` takes time,
 * builtins (echo, touch, true, false, ...) return at once, `exit N` ends it,
 * anything else runs until stopped. Time comes only from the injected
 * clock, and exits that fall due are applied lazily, whenever a call looks
 * at the state, so a fake clock drives the sim deterministically.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/array.h"
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

static bool is_shell(const char *w)
{
        const char *b = base_name(w);

        return strcmp(b, "sh") == 0 || strcmp(b, "ash") == 0 || strcmp(b, "bash") == 0;
}

/* ------------------------------------------------------------------------ */
/* Scripts: the words of simple commands, as busybox ash splits them         */

const char *kc__sim_env_get(const struct sim_env *env, const char *name, size_t len)
{
        for (size_t i = env->n; i-- > 0;)
                if (strlen(env->v[i].key) == len && strncmp(env->v[i].key, name, len) == 0)
                        return env->v[i].value;
        return NULL;
}

/* The word being built. */
struct lexer {
        struct kc_arena *a;
        const struct sim_env *env;
        char word[SIM_PATH_MAX * 2];
        size_t len;
        bool in_word;
        bool overflow;
};

static void lex_put(struct lexer *lx, const char *s, size_t n)
{
        if (lx->len + n >= sizeof(lx->word)) {
                lx->overflow = true;
                return;
        }
        memcpy(lx->word + lx->len, s, n);
        lx->len += n;
        lx->in_word = true;
}

static bool is_name_char(char c, bool first)
{
        return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               (!first && c >= '0' && c <= '9');
}

/* $NAME or ${NAME} at *@p p: appends its value, moves *@p p past it. */
static void lex_var(struct lexer *lx, const char **p)
{
        const char *name = *p + 1;
        bool braced = *name == '{';
        const char *v;
        size_t n = 0;

        if (braced)
                name++;
        while (is_name_char(name[n], n == 0))
                n++;
        if (n == 0 || (braced && name[n] != '}')) {
                lex_put(lx, "$", 1); /* a lone '$' is itself */
                *p += 1;
                return;
        }
        v = kc__sim_env_get(lx->env, name, n);
        lx->in_word = true;
        if (v)
                lex_put(lx, v, strlen(v));
        *p = name + n + (braced ? 1 : 0);
}

static int step_new(struct sim_script *sc)
{
        if (KC_ARRAY_GROW(sc->steps, sc->cap, sc->n + 1, 4) < 0)
                return -ENOMEM;
        sc->steps[sc->n++] = (struct sim_step){ 0 };
        return 0;
}

/* Appends @p w to the words of @p st (NULL-terminated). */
static int step_add_word(struct sim_step *st, char *w)
{
        if (KC_ARRAY_GROW(st->words, st->cap, st->n + 2, 4) < 0)
                return -ENOMEM;
        st->words[st->n++] = w;
        st->words[st->n] = NULL;
        return 0;
}

/* Ends the word being built: a new word of the last step. */
static int lex_end_word(struct lexer *lx, struct sim_script *sc)
{
        char *w;

        if (!lx->in_word)
                return 0;
        if (lx->overflow)
                return -E2BIG;
        w = kc_arena_alloc(lx->a, lx->len + 1);
        if (!w)
                return -ENOMEM;
        memcpy(w, lx->word, lx->len);
        w[lx->len] = '\0';
        lx->len = 0;
        lx->in_word = false;
        return step_add_word(&sc->steps[sc->n - 1], w);
}

/* An operator at *@p p (; && || newline > >> 2> 2>> 2>&1): its token, moving *@p p. */
static const char *lex_operator(const char **p, bool at_word_start)
{
        static const char *const ops[] = { "2>&1", "2>>", "&&", "||", ">>", "2>", ";", "\n", ">" };

        for (size_t i = 0; i < KC_ELEMENTSOF(ops); i++) {
                size_t n = strlen(ops[i]);

                if (ops[i][0] == '2' && !at_word_start)
                        continue;
                if (strncmp(*p, ops[i], n) == 0) {
                        *p += n;
                        return ops[i];
                }
        }
        return NULL;
}

/* Operator @p op: a new step after a separator, else a redirection word. */
static int lex_apply(struct lexer *lx, struct sim_script *sc, const char *op)
{
        struct sim_step *st = &sc->steps[sc->n - 1];

        if (strcmp(op, "&&") == 0 || strcmp(op, "||") == 0 || strcmp(op, ";") == 0 ||
            strcmp(op, "\n") == 0) {
                st->join = op[0] == '&' ? SIM_JOIN_AND : op[0] == '|' ? SIM_JOIN_OR : SIM_JOIN_SEQ;
                return st->n > 0 ? step_new(sc) : 0;
        }
        /* A redirection: the operator is a word of its own, the file the next. */
        lex_put(lx, op, strlen(op));
        return lex_end_word(lx, sc);
}

int kc__sim_script_parse(struct kc_arena *a, const char *text, const struct sim_env *env,
                         struct sim_script *sc)
{
        struct lexer lx = { .a = a, .env = env };
        const char *p = text;
        char quote = 0;
        int r = step_new(sc);

        while (r >= 0 && *p) {
                const char *op;

                if (quote) {
                        if (*p == quote)
                                quote = 0, p++;
                        else if (*p == '$' && quote == '"')
                                lex_var(&lx, &p);
                        else
                                lex_put(&lx, p++, 1);
                        lx.in_word = true;
                } else if (*p == '\'' || *p == '"') {
                        quote = *p++;
                        lx.in_word = true;
                } else if (*p == '\\' && p[1]) {
                        lex_put(&lx, p + 1, 1);
                        p += 2;
                } else if (*p == '$') {
                        lex_var(&lx, &p);
                } else if ((op = lex_operator(&p, !lx.in_word))) {
                        r = lex_end_word(&lx, sc);
                        if (r >= 0)
                                r = lex_apply(&lx, sc, op);
                } else if (*p == ' ' || *p == '\t') {
                        r = lex_end_word(&lx, sc);
                        p++;
                } else {
                        lex_put(&lx, p++, 1);
                }
        }
        if (r >= 0)
                r = lex_end_word(&lx, sc);
        if (r >= 0 && quote)
                r = -EINVAL; /* sh: syntax error: unterminated quoted string */
        if (r >= 0 && sc->n > 0 && sc->steps[sc->n - 1].n == 0)
                sc->n--; /* a trailing separator */
        return r;
}

int kc__sim_script_from_argv(struct kc_arena *a, const char *const *argv, size_t argc,
                             bool split_single, const struct sim_env *env, struct sim_script *sc)
{
        int r;

        if (argc >= 3 && is_shell(argv[0]) && strcmp(argv[1], "-c") == 0)
                return kc__sim_script_parse(a, argv[2], env, sc);
        if (argc == 1 && split_single && strpbrk(argv[0], " \t"))
                return kc__sim_script_parse(a, argv[0], env, sc);
        if (argc == 0)
                return 0;
        r = step_new(sc);
        for (size_t i = 0; r >= 0 && i < argc; i++)
                r = step_add_word(&sc->steps[0], (char *)argv[i]);
        return r;
}

void kc__sim_script_done(struct sim_script *sc)
{
        for (size_t i = 0; i < sc->n; i++)
                free(sc->steps[i].words);
        free(sc->steps);
        *sc = (struct sim_script){ 0 };
}

/* ------------------------------------------------------------------------ */
/* What a container's own command does over time                             */

int kc__sim_step_sleep(const struct sim_step *st, int64_t *ret_ns)
{
        int r;

        if (st->n == 0 || strcmp(base_name(st->words[0]), "sleep") != 0)
                return 0;
        r = st->n == 2 ? parse_sleep(st->words[1], ret_ns) : -EINVAL;
        if (r == -ERANGE) /* infinity, or longer than the clock goes */
                *ret_ns = INT64_MAX;
        return r == 0 || r == -ERANGE ? 1 : -EINVAL;
}

int32_t kc__sim_exit_status(const struct sim_step *st)
{
        char *end = NULL;
        long v = st->n >= 2 ? strtol(st->words[1], &end, 10) : 0;

        /* sh: exit: Illegal number */
        return (int32_t)((st->n >= 2 && (end == st->words[1] || *end) ? 2 : v) & 0xff);
}

/*
 * The course of one step for the program: its time, whether it never ends,
 * and its status as far as it can be known without running it (builtins
 * other than false and exit succeed).
 */
static void step_course(const struct sim_step *st, int64_t *ns, bool *forever, bool *exits,
                        int32_t *code)
{
        const char *cmd = base_name(st->words[0]);

        *ns = 0;
        *code = 0;
        if (kc__sim_step_sleep(st, ns) == 1) {
                *forever = *ns == INT64_MAX;
                return;
        }
        if (strcmp(cmd, "false") == 0) {
                *code = 1;
        } else if (strcmp(cmd, "exit") == 0) {
                *exits = true;
                *code = kc__sim_exit_status(st);
        } else if (!kc__sim_is_builtin(cmd)) {
                *forever = true; /* a server, `sleep infinity`, a nested shell */
        }
}

bool kc__sim_next_runs(enum sim_join join, int32_t code)
{
        return join == SIM_JOIN_SEQ || (join == SIM_JOIN_AND) == (code == 0);
}

/*
 * Reads command + args like busybox would run them: a sequence of simple
 * commands (directly, through `sh -c "..."`, or a one-element command with
 * blanks) where `sleep N` takes time, builtins return at once, `exit N`
 * ends it, and anything else runs until stopped.
 */
struct sim_program kc__sim_program_parse(const char *const *argv, size_t argc)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct sim_program prog = { .exits = true };
        struct sim_script sc = { 0 };
        bool skip = false;
        int32_t code = 0;

        if (argc == 0 || kc_arena_new(&a) < 0 ||
            kc__sim_script_from_argv(a, argv, argc, true, &(struct sim_env){ 0 }, &sc) < 0 ||
            sc.n == 0) {
                kc__sim_script_done(&sc);
                return (struct sim_program){ .exits = false };
        }
        for (size_t i = 0; i < sc.n; i++) {
                bool forever = false, exits = false;
                int64_t ns;

                if (!skip) {
                        step_course(&sc.steps[i], &ns, &forever, &exits, &code);
                        if (forever) {
                                prog.exits = false;
                                break;
                        }
                        prog.run_ns = ns > INT64_MAX - prog.run_ns ? INT64_MAX : prog.run_ns + ns;
                        if (exits)
                                break;
                }
                skip = !kc__sim_next_runs(sc.steps[i].join, code);
        }
        prog.exit_code = code;
        kc__sim_script_done(&sc);
        return prog;
}

/* ------------------------------------------------------------------------ */
/* Processes and the lazy clock                                               */

void kc__sim_container_exit(struct kc_sim *s, struct sim_container *c, int32_t code, int64_t at,
                            const char *reason)
{
        c->v.state = KC_CONTAINER_STATE_EXITED;
        c->v.exit_code = code;
        c->v.finished_at = at;
        c->v.reason = reason ? reason : code == 0 ? "Completed" : "Error";
        kc__sim_container_exited_locked(s, c);
        kc__sim_object_touch(&c->o, true);
}

void kc__sim_container_start_locked(struct kc_sim *s, struct sim_container *c)
{
        int64_t now = kc_clock_now(s->clock);

        c->v.state = KC_CONTAINER_STATE_RUNNING;
        c->v.started_at = now;
        kc__sim_object_touch(&c->o, true);
        if (!c->prog.exits)
                return;
        c->deadline = c->prog.run_ns > INT64_MAX - now ? INT64_MAX - 1 : now + c->prog.run_ns;
        if (c->deadline <= now)
                kc__sim_container_exit(s, c, c->prog.exit_code, c->deadline, NULL);
        else if (c->deadline < s->st.next_deadline)
                s->st.next_deadline = c->deadline;
}

void kc__sim_container_stop_locked(struct kc_sim *s, struct sim_container *c)
{
        if (c->v.state == KC_CONTAINER_STATE_RUNNING || c->v.state == KC_CONTAINER_STATE_UNKNOWN)
                kc__sim_container_exit(s, c, SIM_EXIT_KILLED, kc_clock_now(s->clock), "Error");
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
                        kc__sim_container_exit(s, c, c->prog.exit_code, c->deadline, NULL);
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
                kc__sim_container_exit(s, c, exit_code, kc_clock_now(s->clock),
                                       exit_code ? "Error" : NULL);
                n++;
        }
        s->crashes += (uint64_t)n;
        return n;
}
