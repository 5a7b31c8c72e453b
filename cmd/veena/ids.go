package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	veena "github.com/veena-wf/veena"
)

// Ids on the command line may be shortened: any start of a process id that
// only one process has stands for it, and a node token id is its process
// id (or the start of one) with ".n" and the token's number.

// resolveProcess finds the one process whose id starts with arg.
func resolveProcess(ctx context.Context, c *client, arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("veena: a process id is needed")
	}
	var page veena.ProcessPage
	q := url.Values{"id": {arg}, "limit": {"6"}, "total": {"false"}, "order": {"oldest"}}
	if err := c.getJSON(ctx, "/api/v1/processes", q, &page); err != nil {
		return "", err
	}
	var exact bool
	for _, p := range page.Items {
		exact = exact || p.ID == arg
	}
	switch {
	case exact:
		return arg, nil
	case len(page.Items) == 1:
		return page.Items[0].ID, nil
	case len(page.Items) == 0:
		return "", fmt.Errorf("veena: no process id starts with %q (not_found)", arg)
	}
	ids := make([]string, 0, len(page.Items))
	for i, p := range page.Items {
		if i == 5 {
			ids = append(ids, "…")
			break
		}
		ids = append(ids, p.ID)
	}
	return "", fmt.Errorf("veena: %q is the start of more than one process id; give more of it:\n  %s", arg, strings.Join(ids, "\n  "))
}

// resolveToken turns a node token id, whose process part may be shortened,
// into the full id.
func resolveToken(ctx context.Context, c *client, arg string) (string, error) {
	return resolveChild(ctx, c, arg, 'n', "node token")
}

// resolveTask, resolveJob and resolveIncident do the same for the ids of a
// process's work: PROCESS.tN, PROCESS.jN and PROCESS.iN.
func resolveTask(ctx context.Context, c *client, arg string) (string, error) {
	return resolveChild(ctx, c, arg, 't', "task")
}

func resolveJob(ctx context.Context, c *client, arg string) (string, error) {
	return resolveChild(ctx, c, arg, 'j', "job")
}

// resolveArcToken does the same for an arc token id: PROCESS.aN.
func resolveArcToken(ctx context.Context, c *client, arg string) (string, error) {
	return resolveChild(ctx, c, arg, 'a', "arc token")
}

func resolveIncident(ctx context.Context, c *client, arg string) (string, error) {
	return resolveChild(ctx, c, arg, 'i', "incident")
}

// resolveChild turns PROCESS.<kind>N, whose process part may be shortened,
// into the full id.
func resolveChild(ctx context.Context, c *client, arg string, kind byte, what string) (string, error) {
	sep := "." + string(kind)
	i := strings.LastIndex(arg, sep)
	if i <= 0 || i+2 == len(arg) || strings.Trim(arg[i+2:], "0123456789") != "" {
		article := "a"
		if strings.ContainsRune("aeiou", rune(what[0])) {
			article = "an"
		}
		return "", fmt.Errorf("veena: %q is not %s %s id: want PROCESS%sN (the process id, or the start of it, then %s and the %s's number)", arg, article, what, sep, sep, what)
	}
	pid, err := resolveProcess(ctx, c, arg[:i])
	if err != nil {
		return "", err
	}
	return pid + arg[i:], nil
}

// resolveOptionalProcess resolves a --process filter, which may be empty.
func resolveOptionalProcess(ctx context.Context, c *client, arg string) (string, error) {
	if arg == "" {
		return "", nil
	}
	return resolveProcess(ctx, c, arg)
}
